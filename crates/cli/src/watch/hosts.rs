//! ssh that scales with hosts, not panes: one master connection per alias
//! reused across cycles (closed when the monitor ends), each remote host's
//! capture and pane processes in one round trip
//! (`probes::remote_host`), hosts side by side on a bounded set of threads.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use probes::claude::PaneProcesses;
use probes::remote_procs::AgentMemory;
use probes::ssh::{Multiplex, Remote};
use probes::tmux::{KnownPane, PaneCapture};

use super::Args;
use crate::output::say;

/// At most this many hosts are asked at once; the rest wait for a free thread.
const MAX_HOST_THREADS: usize = 16;

/// The folder for this monitor's control sockets, when it watches a remote
/// target; `None` (each call its own connection, as before) when no folder
/// will do, which is said once.
pub(super) fn multiplex(args: &Args, any_remote: bool) -> Option<Multiplex> {
    if !any_remote {
        return None;
    }
    // An idle master ends on its own after this: past two intervals, or a
    // minute, at most a quarter of an hour (for a monitor killed before it
    // could close them).
    let persist = (2 * args.interval + args.capture_timeout).clamp(60, 900);
    let candidates = Multiplex::candidates(&crate::state_dir());
    match Multiplex::prepare(&candidates, Duration::from_secs(persist)) {
        Ok(multiplex) => Some(multiplex),
        Err(error) => {
            say(format_args!(
                "bmb-monitor: watch: {error}; each ssh call opens a connection of its own"
            ));
            None
        }
    }
}

/// The master connections of this monitor's hosts, closed (`ssh -O exit`,
/// the socket removed) when it is dropped: at the end of `watch`, after a
/// SIGTERM or SIGINT as after `--once`; and a host's as soon as a reload
/// leaves it no target.
#[derive(Default)]
pub(super) struct Masters {
    remotes: Vec<Remote>,
}

impl Masters {
    /// Keeps a master for each of `hosts` (when `server` multiplexes) and
    /// closes the ones of hosts no longer watched.
    pub(super) fn sync<'h>(
        &mut self,
        server: &crate::server_args::ServerArgs,
        hosts: impl Iterator<Item = &'h str>,
    ) {
        let hosts: Vec<&str> = hosts.collect();
        self.remotes.retain(|remote| {
            let kept = hosts.contains(&remote.alias.as_str());
            if !kept {
                remote.close_master();
            }
            kept
        });
        if server.multiplex.is_none() {
            return;
        }
        for host in hosts {
            if !self.remotes.iter().any(|r| r.alias == host) {
                self.remotes.push(server.remote(host));
            }
        }
    }
}

impl Drop for Masters {
    fn drop(&mut self) {
        for remote in &self.remotes {
            remote.close_master();
        }
    }
}

/// What the hosts' round trips remember and read.
#[derive(Default)]
pub(super) struct Hosts {
    /// Each remote host's known agents (`probes::remote_procs`).
    memory: BTreeMap<String, AgentMemory>,
    /// Per target, this cycle: the processes read in its host's capture
    /// call, with the pid of the pane they belong to.
    pub(super) processes: Vec<Option<(Option<u32>, PaneProcesses)>>,
    /// Per target, this cycle: its host answered (the pane was read, or the
    /// host said it has no such session), whatever became of the pane.
    pub(super) answered: Vec<bool>,
    /// Per host asked this cycle, the sessions its pane listing named
    /// (`None`: the listing failed), for the patterns of sessions.
    pub(super) listed: Vec<(Option<String>, Option<Vec<String>>)>,
}

/// One server's targets: the host (`None`: this machine) and the indices.
pub(super) type Group<'g> = (Option<&'g str>, Vec<usize>);

impl Hosts {
    /// Captures every group, side by side on at most [`MAX_HOST_THREADS`]
    /// threads (one group alone on the calling thread), and on a remote
    /// host reads its panes' processes in the same call. Per target, in
    /// the targets' order.
    pub(super) fn capture(
        &mut self,
        args: &Args,
        groups: &[Group<'_>],
        targets: &[(String, Option<KnownPane>)],
    ) -> Vec<Result<PaneCapture, String>> {
        let nonce = probes::tmux::fresh_nonce();
        let with_session = !args.no_witness;
        let memories: Vec<Mutex<AgentMemory>> = groups
            .iter()
            .map(|(host, _)| {
                Mutex::new(host.and_then(|h| self.memory.remove(h)).unwrap_or_default())
            })
            .collect();
        let capture_group = |at: usize| {
            let (host, indices) = &groups[at];
            let tmux = args
                .server
                .tmux(*host, Duration::from_secs(args.capture_timeout));
            let asked: Vec<(String, Option<KnownPane>)> =
                indices.iter().map(|&i| targets[i].clone()).collect();
            let mut memory = memories[at].lock().unwrap_or_else(|e| e.into_inner());
            let read = tmux.read_remote_host(&asked, &nonce, with_session, &mut memory);
            let captures: Vec<(Result<PaneCapture, String>, bool)> = match read.captures {
                Ok(captures) => captures
                    .into_iter()
                    .map(|capture| {
                        let answered = !matches!(
                            capture,
                            Err(ref e) if !matches!(e, probes::tmux::TmuxError::NoSession { .. })
                        );
                        (capture.map_err(|e| e.to_string()), answered)
                    })
                    .collect(),
                Err(error) => vec![(Err(error.to_string()), false); indices.len()],
            };
            (captures, read.processes, read.sessions)
        };
        type Answer = (
            Vec<(Result<PaneCapture, String>, bool)>,
            Vec<Option<(Option<u32>, PaneProcesses)>>,
            Option<Vec<String>>,
        );
        let answers: Vec<Answer> = if groups.len() == 1 {
            vec![capture_group(0)]
        } else {
            let slots: Vec<Mutex<Option<Answer>>> =
                groups.iter().map(|_| Mutex::new(None)).collect();
            let next = AtomicUsize::new(0);
            let tally = probes::run::ThreadTally::of_this_thread();
            std::thread::scope(|scope| {
                for _ in 0..groups.len().min(MAX_HOST_THREADS) {
                    scope.spawn(|| {
                        tally.count_here();
                        loop {
                            let at = next.fetch_add(1, Ordering::Relaxed);
                            if at >= groups.len() {
                                return;
                            }
                            let answer = capture_group(at);
                            *slots[at].lock().unwrap_or_else(|e| e.into_inner()) = Some(answer);
                        }
                    });
                }
            });
            slots
                .into_iter()
                .zip(groups)
                .map(|(slot, (_, indices))| {
                    slot.into_inner()
                        .unwrap_or_else(|e| e.into_inner())
                        .unwrap_or_else(|| {
                            (
                                vec![
                                    (Err("the capture thread failed".to_string()), false);
                                    indices.len()
                                ],
                                vec![None; indices.len()],
                                None,
                            )
                        })
                })
                .collect()
        };
        for ((host, _), memory) in groups.iter().zip(memories) {
            if let Some(host) = host {
                let memory = memory.into_inner().unwrap_or_else(|e| e.into_inner());
                self.memory.insert(host.to_string(), memory);
            }
        }
        let mut results: Vec<Result<PaneCapture, String>> = vec![Err(String::new()); targets.len()];
        self.processes = vec![None; targets.len()];
        self.answered = vec![false; targets.len()];
        self.listed.clear();
        for ((host, indices), (captures, processes, sessions)) in groups.iter().zip(answers) {
            self.listed.push((host.map(str::to_string), sessions));
            for ((&index, (capture, answered)), read) in indices.iter().zip(captures).zip(processes)
            {
                results[index] = capture;
                self.answered[index] = answered;
                self.processes[index] = read;
            }
        }
        results
    }

    /// The processes this cycle's capture call read for target `index`,
    /// when they belong to the pane captured (first process `pane_pid`), or
    /// when the call failed and they say why.
    pub(super) fn processes_of(&self, index: usize, pane_pid: u32) -> Option<PaneProcesses> {
        match self.processes.get(index)?.as_ref()? {
            (Some(root), processes) if *root == pane_pid => Some(processes.clone()),
            (None, processes) => Some(processes.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
