//! One ssh round trip per remote host per cycle: the pane listing, every
//! watched pane's capture and every pane's processes (its foreground and
//! Claude Code's session file) in ONE remote shell script.
//!
//! Locally a capture is two tmux invocations (`list-panes -a`, then one
//! chain), the second built from the first's answer. Over ssh each would be
//! a round trip, and the processes a third; so here the remote shell makes
//! the choice the chain needs (the remembered pane while it is still its
//! session's with the same first process, else `=session:`) from the listing
//! it just read, and this side reads the same listing back to tell "no such
//! session" from a failed capture, with the same rule ([`tmux::wanted_targets`]).
//! The witness reads the pane the listing named (for `=session:`, the
//! session's current window's active pane); a capture that found another
//! pane there (the user switched in between) gets no reading
//! ([`HostRead::processes`] says whose pid was read).
//!
//! Every line the script prints that is not a pane's text starts with this
//! cycle's 128-bit nonce, so a pane cannot forge the end of a section; an
//! end marker seen more often than the script prints it voids every capture
//! of the host.

use crate::claude::PaneProcesses;
use crate::remote_procs::{self, AgentMemory};
use crate::run::{Captured, CommandFailed, Invocation, Limits, Outcome, run};
use crate::ssh::quote_literal;
use crate::tmux::{self, KnownPane, PaneCapture, Tmux, TmuxError};

/// What one host's round trip read.
#[derive(Debug)]
pub struct HostRead {
    /// Per target, as [`Tmux::capture_panes`] gives them.
    pub captures: Result<Vec<Result<PaneCapture, TmuxError>>, TmuxError>,
    /// Per target: the pane processes read, and the first process of the
    /// pane they belong to (`None`: the call failed before it said, and the
    /// reading says why).
    pub processes: Vec<Option<(Option<u32>, PaneProcesses)>>,
    /// Every session the host's pane listing named, once each, in its
    /// order; `None` when the listing itself failed. What a target that
    /// names a pattern of sessions is discovered from, without a call of its own.
    pub sessions: Option<Vec<String>>,
}

/// A label for the one call in error messages, instead of the whole script.
const SCRIPT_LABEL: &str = "<list-panes, capture-pane and the panes' processes>";

impl Tmux {
    /// [`Tmux::capture_panes`] and [`crate::claude::remote_panes`] in one
    /// ssh call on this client's remote host. `memory` is the host's known
    /// agents, read and updated. On this machine it is the capture alone.
    pub fn read_remote_host(
        &self,
        targets: &[(String, Option<KnownPane>)],
        nonce: &str,
        with_session: bool,
        memory: &mut AgentMemory,
    ) -> HostRead {
        let Some(remote) = &self.remote else {
            let (captures, sessions) = match self.capture_panes_listed(targets, nonce) {
                Ok((captures, sessions)) => (Ok(captures), Some(sessions)),
                Err(error) => (Err(error), None),
            };
            return HostRead {
                captures,
                processes: vec![None; targets.len()],
                sessions,
            };
        };
        let batches = host_batches(targets);
        let script = host_script(self, targets, &batches, nonce, with_session, memory);
        let limits = Limits {
            max_output: tmux::CAPTURE_BASE_BYTES + targets.len() * tmux::CAPTURE_PER_PANE_BYTES,
            ..Limits::with_timeout(self.timeout)
        };
        let outcome = run(&remote.invocation(&script), &limits);
        let shown = remote.invocation(SCRIPT_LABEL);
        let read = self.read_host_output(targets, &batches, nonce, with_session, &outcome, &shown);
        for (root, processes) in read.processes.iter().flatten() {
            if let (Some(root), true) = (root, with_session) {
                memory.learn(*root, &processes.session);
            }
        }
        let roots: Vec<u32> = read
            .processes
            .iter()
            .flatten()
            .filter_map(|(r, _)| *r)
            .collect();
        if read.captures.is_ok() {
            memory.keep_only(&roots);
        }
        read
    }

    fn read_host_output(
        &self,
        targets: &[(String, Option<KnownPane>)],
        batches: &[std::ops::Range<usize>],
        nonce: &str,
        with_session: bool,
        outcome: &Outcome,
        shown: &Invocation,
    ) -> HostRead {
        let (stdout, stderr) = match outcome {
            Outcome::Exited { stdout, stderr, .. } | Outcome::TimedOut { stdout, stderr, .. } => {
                (stdout.text(), stderr.clone())
            }
            Outcome::FailedToSpawn { .. } => (String::new(), Captured::default()),
        };
        // What a part the script did not finish gets: why the call ended.
        let overall: Option<TmuxError> = match outcome {
            Outcome::Exited {
                code: Some(0),
                stdout,
                ..
            } if stdout.truncated => Some(TmuxError::CaptureCut {
                max_output: stdout.bytes.len(),
            }),
            Outcome::Exited { code: Some(0), .. } => None,
            _ => Some(self.failure(shown, outcome, None)),
        };
        let processes_failed = overall.as_ref().map(|_| {
            format!(
                "the session-file search on {} {}",
                self.remote.as_ref().map_or("", |r| r.alias.as_str()),
                outcome.describe()
            )
        });
        let failed_processes = || -> Vec<Option<(Option<u32>, PaneProcesses)>> {
            targets
                .iter()
                .map(|_| {
                    Some((
                        None,
                        remote_procs::pane_processes(
                            None,
                            with_session,
                            processes_failed.as_deref(),
                        ),
                    ))
                })
                .collect()
        };
        let list_head = format!("BMB-{nonce}-LIST ");
        let list_end = format!("\nBMB-{nonce}-LISTEND\n");
        // What a chatty startup file of the remote shell printed first is skipped.
        let head_at = if stdout.starts_with(&list_head) {
            Some(0)
        } else {
            stdout.find(&format!("\n{list_head}")).map(|at| at + 1)
        };
        let Some(after_head) = head_at.map(|at| &stdout[at + list_head.len()..]) else {
            let error = overall.unwrap_or_else(|| self.failure(shown, outcome, None));
            return HostRead {
                captures: Err(error),
                processes: failed_processes(),
                sessions: None,
            };
        };
        let Some((listing, rest)) = after_head.split_once(&list_end) else {
            let error = overall.unwrap_or_else(|| self.failure(shown, outcome, None));
            return HostRead {
                captures: Err(error),
                processes: failed_processes(),
                sessions: None,
            };
        };
        let (code, rows) = listing.split_once('\n').unwrap_or((listing, ""));
        let panes = if code == "0" {
            tmux::parse_list(rows)
        } else {
            let listed = exited_with(code.parse().ok(), rows.as_bytes(), &stderr);
            match self.failure(shown, &listed, None) {
                TmuxError::NoServer { .. } => Vec::new(),
                error => {
                    return HostRead {
                        captures: Err(error),
                        processes: vec![None; targets.len()],
                        sessions: None,
                    };
                }
            }
        };
        let sessions = Some(tmux::listed_sessions(&panes));
        let mut results = self.no_session_results(targets);
        let wanted = tmux::wanted_targets(targets, &panes);

        // The chains, each closed by `\nEND <code>\n`.
        let end = format!("\nBMB-{nonce}-END ");
        let ends = rest.matches(&end).count();
        if ends > batches.len() {
            for (index, _) in &wanted {
                results[*index] = Err(TmuxError::MarkerRepeated { count: ends });
            }
            return HostRead {
                captures: Ok(results),
                processes: vec![None; targets.len()],
                sessions,
            };
        }
        let mut rest = rest;
        let mut finished = true;
        for batch in batches {
            let in_batch: Vec<(usize, String)> = wanted
                .iter()
                .filter(|(index, _)| batch.contains(index))
                .cloned()
                .collect();
            let markers: Vec<String> = in_batch
                .iter()
                .map(|(index, _)| tmux::chain_marker(nonce, *index))
                .collect();
            let (section, failure) = match rest.split_once(&end) {
                Some((section, after)) if finished => {
                    let (code, after) = after.split_once('\n').unwrap_or((after, ""));
                    rest = after;
                    let failure = (code != "0").then(|| {
                        self.failure(shown, &exited_with(code.parse().ok(), b"", &stderr), None)
                    });
                    (section.to_string(), failure)
                }
                _ => {
                    let cut = if finished {
                        rest.to_string()
                    } else {
                        String::new()
                    };
                    finished = false;
                    let failure = overall.clone().unwrap_or_else(|| {
                        TmuxError::Failed(CommandFailed {
                            command: shown.display(),
                            outcome: "ended before its capture did".to_string(),
                        })
                    });
                    (cut, Some(failure))
                }
            };
            // An empty chain printed nothing but the newline before its end.
            let section = if in_batch.is_empty() {
                String::new()
            } else {
                section
            };
            tmux::read_chain(
                targets,
                &in_batch,
                &markers,
                &section,
                failure,
                &mut results,
            );
        }

        let processes = if finished {
            let tag = format!("BMB-{nonce}-P");
            let mut read = remote_procs::parse(&tag, rest);
            (0..targets.len())
                .map(|index| match read.remove(&index) {
                    Some(reading) => Some((
                        reading.root,
                        remote_procs::pane_processes(
                            Some(reading),
                            with_session,
                            processes_failed.as_deref(),
                        ),
                    )),
                    // Cut short before it said anything of this pane.
                    None => processes_failed.as_ref().map(|why| {
                        (
                            None,
                            remote_procs::pane_processes(None, with_session, Some(why)),
                        )
                    }),
                })
                .collect()
        } else {
            failed_processes()
        };
        HostRead {
            captures: Ok(results),
            processes,
            sessions,
        }
    }
}

/// The script's chains: each entry counted as long as the longer of its two
/// possible targets, since the remote shell chooses between them.
fn host_batches(targets: &[(String, Option<KnownPane>)]) -> Vec<std::ops::Range<usize>> {
    tmux::chain_batches(
        targets.iter().map(|(session, known)| {
            (session.len() + 3).max(known.as_ref().map_or(0, |k| k.id.len()))
        }),
    )
}

/// An outcome for one command inside the script: its exit code, and what
/// it (or, lacking that, the whole call) wrote on stderr.
fn exited_with(code: Option<i32>, own_words: &[u8], call_stderr: &Captured) -> Outcome {
    let stderr = if own_words.iter().any(|b| !b.is_ascii_whitespace()) {
        Captured {
            bytes: own_words.to_vec(),
            truncated: false,
        }
    } else {
        call_stderr.clone()
    };
    Outcome::Exited {
        code: code.or(Some(1)),
        signal: None,
        stdout: Captured::default(),
        stderr,
    }
}

/// The remote script: list, choose, capture in chains, then the processes.
fn host_script(
    tmux: &Tmux,
    targets: &[(String, Option<KnownPane>)],
    batches: &[std::ops::Range<usize>],
    nonce: &str,
    with_session: bool,
    memory: &AgentMemory,
) -> String {
    use std::fmt::Write as _;
    let mut script = String::new();
    let _ = write!(
        script,
        "bmb_main() {{\nset -f\n{functions}bmb_tag=BMB-{nonce}-P\nbmb_witness={witness}\n\
         bmb_tmux() {{ {tmux} \"$@\"; }}\n\
         bmb_rows=$(bmb_tmux list-panes -a -F {format} 2>&1)\n\
         bmb_rc=$?\n\
         printf '%s %s\\n%s\\n%s\\n' BMB-{nonce}-LIST \"$bmb_rc\" \"$bmb_rows\" BMB-{nonce}-LISTEND\n\
         [ \"$bmb_rc\" = 0 ] || bmb_rows=\n{pick}bmb_roots=\n",
        functions = remote_procs::functions(),
        witness = u8::from(with_session),
        tmux = tmux.remote_line(&[]),
        format = quote_literal(tmux::LIST_FORMAT),
        pick = PICK,
    );
    for batch in batches {
        script.push_str("set --\n");
        for index in batch.clone() {
            let (session, known) = &targets[index];
            let (id, pid) = known
                .as_ref()
                .map_or(("-".to_string(), "-".to_string()), |k| {
                    (
                        k.id.clone(),
                        k.pid.map_or("-".to_string(), |p| p.to_string()),
                    )
                });
            let marker = tmux::marker_format(&tmux::chain_marker(nonce, index));
            let _ = write!(
                script,
                "if bmb_pick {session} {id} {pid}; then\n\
                 [ $# -eq 0 ] || set -- \"$@\" ';'\n\
                 set -- \"$@\" display-message -p -t \"$bmb_t\" {marker} ';' capture-pane -p -e -t \"$bmb_t\"\n\
                 bmb_roots=\"$bmb_roots {index}:$bmb_r\"\nfi\n",
                session = quote_literal(session),
                id = quote_literal(&id),
                pid = quote_literal(&pid),
                marker = quote_literal(&marker),
            );
        }
        let _ = writeln!(
            script,
            "if [ $# -gt 0 ]; then bmb_tmux \"$@\"; bmb_rc=$?; else bmb_rc=0; fi\n\
             printf '\\n%s %s\\n' BMB-{nonce}-END \"$bmb_rc\""
        );
    }
    script.push_str(&memory.assignments(memory.roots()));
    script.push_str("bmb_procs 2>/dev/null\n}\nbmb_main </dev/null\nexit 0\n");
    script
}

/// `bmb_pick SESSION ID PID`: sets `bmb_t` to the tmux target to read and
/// `bmb_r` to that pane's first process, from `$bmb_rows`; false when the
/// session has no pane. The rule is [`tmux::wanted_targets`]'s.
const PICK: &str = r#"bmb_pick() {
  bmb_t= bmb_r=
  while read -r bmb_id bmb_pid bmb_act bmb_sess; do
    [ "$bmb_sess" = "$1" ] || continue
    if [ "$bmb_id" = "$2" ] && { [ "$3" = - ] || [ "$bmb_pid" = "$3" ]; }; then
      bmb_t=$bmb_id bmb_r=$bmb_pid
      return 0
    fi
    [ -n "$bmb_t" ] || bmb_t="=$1:"
    [ "$bmb_act" = 11 ] && bmb_r=$bmb_pid
  done <<BMB_ROWS
$bmb_rows
BMB_ROWS
  [ -n "$bmb_t" ]
}
"#;

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::ssh::Remote;
    use crate::tmux::Server;

    /// A private tmux server in a temporary folder, ended on drop.
    struct Private {
        tmux: Tmux,
        _dir: tempfile::TempDir,
    }

    impl Drop for Private {
        fn drop(&mut self) {
            let _ = self.tmux.kill_server();
        }
    }

    fn private(sessions: &[(&str, &str)]) -> Private {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock").to_string_lossy().into_owned();
        let tmux = Tmux::new(Server::Path(socket));
        let private = Private { tmux, _dir: dir };
        let shell = |script: &str| vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        let (first, script) = sessions[0];
        private
            .tmux
            .start_private_server(first, (80, 24), &shell(script))
            .unwrap();
        for (name, script) in &sessions[1..] {
            private
                .tmux
                .new_detached_session(name, &shell(script))
                .unwrap();
        }
        private
    }

    /// The host script run by a local `sh` as the remote shell would run
    /// it, and read back as [`Tmux::read_remote_host`] reads it.
    fn read(tmux: &Tmux, targets: &[(String, Option<KnownPane>)], nonce: &str) -> HostRead {
        let remote = Tmux {
            remote: Some(Remote::new("box", None)),
            ..tmux.clone()
        };
        let batches = host_batches(targets);
        let script = host_script(
            &remote,
            targets,
            &batches,
            nonce,
            true,
            &AgentMemory::default(),
        );
        let outcome = run(
            &Invocation::new("sh").arg("-c").arg(&script),
            &Limits::default(),
        );
        let shown = Invocation::new("ssh");
        remote.read_host_output(targets, &batches, nonce, true, &outcome, &shown)
    }

    fn target(session: &str, known: Option<KnownPane>) -> (String, Option<KnownPane>) {
        (session.to_string(), known)
    }

    #[test]
    fn one_script_lists_captures_and_reads_the_processes_of_the_panes_it_chose() {
        let server = private(&[
            ("one", "echo this-is-one; exec sleep 600"),
            ("two", "echo this-is-two; exec sleep 600"),
        ]);
        let deadline = Instant::now() + Duration::from_secs(20);
        let drawn = |name: &str| {
            let shown = server
                .tmux
                .capture_sessions(&[name.to_string()], "x")
                .unwrap();
            shown[0].as_ref().is_ok_and(|c| c.text.contains("this-is-"))
        };
        while !(drawn("one") && drawn("two")) {
            assert!(Instant::now() < deadline, "the panes never drew");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Two's pane is remembered; a pane id that is gone falls back to `=one:`.
        let two = server.tmux.list_panes(Some("=two:")).unwrap().remove(0);
        let targets = [
            target(
                "one",
                Some(KnownPane {
                    id: "%99".into(),
                    pid: None,
                }),
            ),
            target(
                "two",
                Some(KnownPane {
                    id: two.id.clone(),
                    pid: Some(two.pid),
                }),
            ),
            target("gone", None),
        ];
        let nonce = crate::tmux::fresh_nonce();
        let read = read(&server.tmux, &targets, &nonce);
        let captures = read.captures.expect("the host answered");
        let one = captures[0].as_ref().expect("one captured");
        assert!(one.text.contains("this-is-one"), "{one:?}");
        let two_read = captures[1].as_ref().expect("two captured");
        assert!(two_read.text.contains("this-is-two"), "{two_read:?}");
        assert_eq!(two_read.pane_id.as_deref(), Some(two.id.as_str()));
        assert!(
            matches!(&captures[2], Err(TmuxError::NoSession { session, host: Some(h) }) if session == "gone" && h == "box"),
            "{:?}",
            captures[2]
        );
        for (index, capture) in captures.iter().take(2).enumerate() {
            let (root, processes) = read.processes[index].as_ref().expect("read");
            let capture = capture.as_ref().unwrap();
            assert_eq!(
                *root, capture.pane_pid,
                "the witness read the pane captured"
            );
            let front = processes.foreground.as_ref().expect("a foreground");
            assert_eq!(front.comm, "sleep");
            assert!(
                matches!(processes.session, crate::claude::SessionSearch::None),
                "{:?}",
                processes.session
            );
        }
        assert!(read.processes[2].is_none());
    }

    #[test]
    fn what_a_remote_startup_file_prints_first_is_skipped() {
        let server = private(&[("one", "echo this-is-one; exec sleep 600")]);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let shown = server
                .tmux
                .capture_sessions(&["one".to_string()], "x")
                .unwrap();
            if shown[0]
                .as_ref()
                .is_ok_and(|c| c.text.contains("this-is-one"))
            {
                break;
            }
            assert!(Instant::now() < deadline, "the pane never drew");
            std::thread::sleep(Duration::from_millis(20));
        }
        let remote = Tmux {
            remote: Some(Remote::new("box", None)),
            ..server.tmux.clone()
        };
        let targets = [target("one", None)];
        let nonce = crate::tmux::fresh_nonce();
        let batches = host_batches(&targets);
        let script = host_script(
            &remote,
            &targets,
            &batches,
            &nonce,
            true,
            &AgentMemory::default(),
        );
        let chatty = format!(
            "echo 'Welcome to box'; echo 'no newline at the end' | tr -d '\\n'; echo; {script}"
        );
        let outcome = run(
            &Invocation::new("sh").arg("-c").arg(&chatty),
            &Limits::default(),
        );
        let read = remote.read_host_output(
            &targets,
            &batches,
            &nonce,
            true,
            &outcome,
            &Invocation::new("ssh"),
        );
        let captures = read.captures.expect("the host answered");
        assert!(
            captures[0]
                .as_ref()
                .is_ok_and(|c| c.text.contains("this-is-one")),
            "{captures:?}"
        );
    }

    #[test]
    fn a_pane_that_prints_the_end_marker_voids_the_hosts_captures() {
        let nonce = crate::tmux::fresh_nonce();
        let forger = format!("printf '\\nBMB-{nonce}-END 0\\n'; exec sleep 600");
        let server = private(&[("honest", "echo fine; exec sleep 600"), ("forger", &forger)]);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let shown = server
                .tmux
                .capture_sessions(&["forger".to_string()], "x")
                .unwrap();
            if shown[0].as_ref().is_ok_and(|c| c.text.contains("-END 0")) {
                break;
            }
            assert!(Instant::now() < deadline, "the forger never drew");
            std::thread::sleep(Duration::from_millis(20));
        }
        let targets = [target("honest", None), target("forger", None)];
        let captures = read(&server.tmux, &targets, &nonce).captures.unwrap();
        for capture in &captures {
            assert!(
                matches!(capture, Err(TmuxError::MarkerRepeated { count: 2 })),
                "{capture:?}"
            );
        }
    }

    #[test]
    fn a_server_that_is_not_running_has_no_sessions_and_a_missing_tmux_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("none").to_string_lossy().into_owned();
        let tmux = Tmux::new(Server::Path(socket));
        let targets = [target("s", None)];
        let nonce = crate::tmux::fresh_nonce();
        let read_none = read(&tmux, &targets, &nonce);
        assert!(
            matches!(
                &read_none.captures.as_ref().unwrap()[0],
                Err(TmuxError::NoSession { .. })
            ),
            "{:?}",
            read_none.captures
        );
        let missing = Tmux {
            program: "/nonexistent/tmux".to_string(),
            ..tmux
        };
        let failed = read(&missing, &targets, &nonce);
        assert!(
            matches!(&failed.captures, Err(TmuxError::Failed(_))),
            "{:?}",
            failed.captures
        );
    }
}
