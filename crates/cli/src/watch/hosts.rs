//! ssh that scales with hosts, not panes: one master connection per alias
//! reused across cycles (closed when the monitor ends), and over it one
//! long-lived session per host that takes each cycle's request (the
//! capture and the pane processes, `probes::remote::host`); each host on a
//! thread of its own, with its own deadline.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration;

use probes::agent::claude::PaneProcesses;
use probes::remote::host::RemoteProbe;
use probes::remote::procs::AgentMemory;
use probes::run::Outcome;
use probes::ssh::{Multiplex, Remote};
use probes::tmux::{KnownPane, PaneCapture};

use super::Args;
use crate::output::say;

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
        Ok(multiplex) => {
            for (dir, why) in &multiplex.passed_over {
                say(format_args!(
                    "bmb-monitor: watch: not keeping the ssh control sockets in {}: {why}",
                    dir.display()
                ));
            }
            Some(multiplex)
        }
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

/// One remote host's worker: a thread of its own holding the host's
/// long-lived session (`probes::remote::host::HostSession`) and its known
/// agents, asked once per cycle. Hosts are independent: each answers, or
/// fails, on its own deadline, on its own thread.
struct Worker {
    jobs: mpsc::Sender<Job>,
    /// The cycle of the request it is working on, if any.
    busy: Option<u64>,
    /// Its last answer failed, or came after its cycle had stopped waiting
    /// for it: no cycle waits for it until it answers in time again.
    late: bool,
}

struct Job {
    tmux: probes::tmux::Tmux,
    targets: Vec<(String, Option<KnownPane>)>,
    indices: Vec<usize>,
    nonce: String,
    with_session: bool,
    cycle: u64,
    /// The probes that ride in this request, each under `probe_timeout` there.
    probes: Vec<RemoteProbe>,
    probe_timeout: Duration,
}

struct Answer {
    host: String,
    cycle: u64,
    indices: Vec<usize>,
    read: probes::remote::host::HostRead,
}

/// What the hosts' round trips remember and read.
pub(super) struct Hosts {
    workers: BTreeMap<String, Worker>,
    answers_tx: mpsc::Sender<Answer>,
    answers: mpsc::Receiver<Answer>,
    cycle: u64,
    /// Per target, this cycle: the processes read in its host's capture
    /// call, with the pid of the pane they belong to.
    pub(super) processes: Vec<Option<(Option<u32>, PaneProcesses)>>,
    /// Per target, this cycle: its host answered (the pane was read, or the
    /// host said it has no such session), whatever became of the pane.
    pub(super) answered: Vec<bool>,
    /// Per target, this cycle: read (or failed) this cycle; false for the
    /// targets of a host still working on an earlier request, which are
    /// not polled until it answers or its deadline passes.
    pub(super) polled: Vec<bool>,
    /// Per target, this cycle: its host did not capture its pane again, its
    /// screen unchanged since the capture whose text it holds (`probes::remote::host`).
    pub(super) reused: Vec<bool>,
    /// Per host read this cycle, the sessions its pane listing named
    /// (`None`: the listing failed), for the patterns of sessions.
    pub(super) listed: Vec<(Option<String>, Option<Vec<String>>)>,
    /// Per host that answered this cycle's request: its probes' outcomes,
    /// in the order asked (all failed when its request failed).
    pub(super) probes: BTreeMap<String, Vec<Outcome>>,
}

impl Default for Hosts {
    fn default() -> Hosts {
        let (answers_tx, answers) = mpsc::channel();
        Hosts {
            workers: BTreeMap::new(),
            answers_tx,
            answers,
            cycle: 0,
            processes: Vec::new(),
            answered: Vec::new(),
            polled: Vec::new(),
            reused: Vec::new(),
            listed: Vec::new(),
            probes: BTreeMap::new(),
        }
    }
}

/// What a cycle waits for a host beyond its capture deadline (and its
/// probes'): the host's own 3 s grace, and time for its session to open.
pub(super) const HOST_SLACK: Duration = Duration::from_secs(5);

/// One server's targets: the host (`None`: this machine) and the indices.
pub(super) type Group<'g> = (Option<&'g str>, Vec<usize>);

/// A host's answer as the cycle reads it: per target, its capture (or why
/// not) and whether the host answered.
pub(super) fn captures_of(
    read: &probes::remote::host::HostRead,
    count: usize,
) -> Vec<(Result<PaneCapture, String>, bool)> {
    match &read.captures {
        Ok(captures) => captures
            .iter()
            .map(|capture| {
                let answered = !matches!(
                    capture,
                    Err(e) if !matches!(e, probes::tmux::TmuxError::NoSession { .. })
                );
                (capture.clone().map_err(|e| e.to_string()), answered)
            })
            .collect(),
        Err(error) => vec![(Err(error.to_string()), false); count],
    }
}

impl Hosts {
    /// The worker of `host`, started on first use: its spawns count for
    /// the thread that started it (tests count a cycle's).
    fn worker(&mut self, host: &str) -> &mut Worker {
        let answers = self.answers_tx.clone();
        self.workers.entry(host.to_string()).or_insert_with(|| {
            let (jobs, queue) = mpsc::channel::<Job>();
            let tally = probes::run::ThreadTally::of_this_thread();
            let name = host.to_string();
            let spawned = std::thread::Builder::new()
                .name(format!("host {name}"))
                .spawn(move || {
                    tally.count_here();
                    let mut session = probes::remote::host::HostSession::default();
                    let mut memory = AgentMemory::default();
                    for job in queue {
                        let read = job.tmux.read_remote_host(
                            &mut session,
                            &job.targets,
                            &job.nonce,
                            job.with_session,
                            &mut memory,
                            &job.probes,
                            job.probe_timeout,
                        );
                        let answer = Answer {
                            host: name.clone(),
                            cycle: job.cycle,
                            indices: job.indices,
                            read,
                        };
                        if answers.send(answer).is_err() {
                            break;
                        }
                    }
                    session.close();
                });
            if let Err(error) = spawned {
                say(format_args!(
                    "bmb-monitor: watch: no thread for host {host}: {error}"
                ));
            }
            Worker {
                jobs,
                busy: None,
                late: false,
            }
        })
    }

    /// Ends the workers (and their sessions) of hosts no longer watched.
    pub(super) fn keep_hosts<'h>(&mut self, hosts: impl Iterator<Item = &'h str>) {
        let hosts: Vec<&str> = hosts.collect();
        self.workers
            .retain(|host, _| hosts.contains(&host.as_str()));
    }

    /// Captures every group: each remote host on its worker (its request
    /// sent at once, side by side), this machine's on the calling thread,
    /// then the remote answers, each host within its own deadline. A host
    /// still working on an earlier cycle's request is not asked again, and
    /// a host that was late is not waited for: their targets are not
    /// polled this cycle ([`Hosts::polled`]) unless an answer comes while
    /// the others are awaited. Per target, in the targets' order. Each
    /// host's `probes` ride in its request; their outcomes are in
    /// [`Hosts::probes`].
    pub(super) fn capture(
        &mut self,
        args: &Args,
        groups: &[Group<'_>],
        targets: &[(String, Option<KnownPane>)],
        probes: &BTreeMap<String, Vec<RemoteProbe>>,
    ) -> Vec<Result<PaneCapture, String>> {
        self.cycle += 1;
        let cycle = self.cycle;
        let nonce = probes::tmux::fresh_nonce();
        let with_session = !args.no_witness;
        let timeout = Duration::from_secs(args.capture_timeout);
        let mut results: Vec<Result<PaneCapture, String>> = vec![Err(String::new()); targets.len()];
        self.processes = vec![None; targets.len()];
        self.answered = vec![false; targets.len()];
        self.polled = vec![false; targets.len()];
        self.reused = vec![false; targets.len()];
        self.listed.clear();
        self.probes.clear();
        let probe_timeout = Duration::from_secs(args.probe_timeout);
        let mut awaited: Vec<String> = Vec::new();
        let mut probe_rounds = 0;
        for (host, indices) in groups {
            let Some(host) = host else { continue };
            let tmux = args.server.tmux(Some(host), timeout);
            let asked: Vec<(String, Option<KnownPane>)> =
                indices.iter().map(|&i| targets[i].clone()).collect();
            let worker = self.worker(host);
            if worker.busy.is_some() {
                continue;
            }
            let asked_probes = probes.get(*host).cloned().unwrap_or_default();
            let rounds = probes::remote::host::probe_rounds(asked_probes.len());
            let job = Job {
                tmux,
                targets: asked,
                indices: indices.clone(),
                nonce: nonce.clone(),
                with_session,
                cycle,
                probes: asked_probes,
                probe_timeout,
            };
            if worker.jobs.send(job).is_ok() {
                worker.busy = Some(cycle);
                if !worker.late {
                    awaited.push(host.to_string());
                    probe_rounds = probe_rounds.max(rounds);
                }
            }
        }
        // Each host's own deadline (its probes' too, when some ride in its
        // request: a deadline per round of PROBES_AT_ONCE), with room for
        // its session to open: counted from now, while this machine's panes
        // are read, not after.
        let wait_until =
            std::time::Instant::now() + timeout + probe_timeout * probe_rounds + HOST_SLACK;
        for (host, indices) in groups {
            if host.is_some() {
                continue;
            }
            let tmux = args.server.tmux(None, timeout);
            let asked: Vec<(String, Option<KnownPane>)> =
                indices.iter().map(|&i| targets[i].clone()).collect();
            let (captures, sessions) = match tmux.capture_panes_listed(&asked, &nonce) {
                Ok((captures, sessions)) => (Ok(captures), Some(sessions)),
                Err(error) => (Err(error), None),
            };
            self.listed.push((None, sessions));
            let read = probes::remote::host::HostRead {
                captures,
                processes: vec![None; asked.len()],
                probes: Vec::new(),
                sessions: None,
                reused: Vec::new(),
            };
            for (&index, (capture, answered)) in
                indices.iter().zip(captures_of(&read, indices.len()))
            {
                results[index] = capture;
                self.answered[index] = answered;
                self.polled[index] = true;
            }
        }
        loop {
            let ready = self.answers.try_recv();
            let mut answer = match ready {
                Ok(answer) => answer,
                Err(_) if awaited.is_empty() => break,
                Err(_) => {
                    if probes::os::signals::stop_requested()
                        || std::time::Instant::now() >= wait_until
                    {
                        break;
                    }
                    match self.answers.recv_timeout(Duration::from_millis(100)) {
                        Ok(answer) => answer,
                        Err(_) => continue,
                    }
                }
            };
            awaited.retain(|h| *h != answer.host);
            let Some(worker) = self.workers.get_mut(&answer.host) else {
                continue;
            };
            worker.busy = None;
            let current = answer.cycle == cycle;
            // A host that failed (timed out, refused) is not waited for
            // again until it answers: a hung host's deadline is paid once.
            worker.late = !current || answer.read.captures.is_err();
            // An earlier cycle's reading of a screen is not acted on now;
            // its failure is (the host's targets go stale on its deadline).
            if !current && answer.read.captures.is_ok() {
                continue;
            }
            if current {
                self.listed
                    .push((Some(answer.host.clone()), answer.read.sessions.clone()));
                self.probes
                    .insert(answer.host.clone(), std::mem::take(&mut answer.read.probes));
            }
            for ((&index, (capture, answered)), read) in answer
                .indices
                .iter()
                .zip(captures_of(&answer.read, answer.indices.len()))
                .zip(answer.read.processes)
            {
                if index >= targets.len() {
                    continue;
                }
                results[index] = capture;
                self.answered[index] = answered;
                self.processes[index] = read;
                self.polled[index] = true;
            }
            for (&index, &reused) in answer.indices.iter().zip(&answer.read.reused) {
                if let Some(slot) = self.reused.get_mut(index) {
                    *slot = reused;
                }
            }
        }
        // Whoever did not answer in time is late: the next cycles do not wait for it.
        for host in awaited {
            if let Some(worker) = self.workers.get_mut(&host) {
                worker.late = true;
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
