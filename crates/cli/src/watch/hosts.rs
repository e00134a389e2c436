//! ssh that scales with hosts, not panes: one master connection per alias
//! reused across cycles (closed when the monitor ends), and over it one
//! long-lived session per host that takes each cycle's request (the
//! capture and the pane processes, `probes::remote::host`); each host on a
//! thread of its own, with its own deadline.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use probes::agent::claude::PaneProcesses;
use probes::remote::host::RemoteProbe;
use probes::remote::procs::AgentMemory;
use probes::run::Outcome;
use probes::ssh::{Multiplex, Remote};
use probes::tmux::{KnownPane, PaneCapture};
use watchdog::session::target::Target;

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
/// fails, on its own deadline, on its own thread, and its targets are
/// polled when it does, whatever the other hosts are doing.
struct Worker {
    jobs: mpsc::Sender<Job>,
    /// The request it is working on, if any.
    busy: Option<Busy>,
    /// Its last answer failed, or came after its deadline: no cycle waits
    /// for it until it answers in time again (a hung host's deadline is
    /// paid once, and only by its own targets).
    late: bool,
}

/// A request a host has not answered yet.
struct Busy {
    cycle: u64,
    /// When its targets go unreachable if no answer came.
    deadline: Instant,
    /// How long that was from the request.
    allowed: Duration,
    /// The targets asked, by name: the watched list may change (a reload,
    /// a session found or ended) before the answer comes.
    names: Vec<Target>,
    /// Its deadline passed and its targets were failed: the answer, when it
    /// comes, is not acted on.
    expired: bool,
}

struct Job {
    tmux: probes::tmux::Tmux,
    targets: Vec<(String, Option<KnownPane>)>,
    names: Vec<Target>,
    nonce: String,
    with_session: bool,
    cycle: u64,
    /// The probes that ride in this request, each under `probe_timeout` there.
    probes: Vec<RemoteProbe>,
    probe_timeout: Duration,
}

/// A host's answer to one request, as its worker gave it.
pub(super) struct Answer {
    pub(super) host: String,
    cycle: u64,
    /// The targets asked, by name, in the order of `read`'s captures.
    pub(super) names: Vec<Target>,
    pub(super) read: probes::remote::host::HostRead,
}

/// What [`Hosts::next`] saw.
pub(super) enum Event {
    /// A host answered within its deadline: its targets are polled now,
    /// whichever cycle asked (a host slower than the interval is polled
    /// when it answers), unless the targets changed since ([`Answer::asked_after`]).
    Answered(Answer),
    /// A host's deadline passed with no answer: these targets (by name) go
    /// unreachable now, with this error, on their own.
    Expired {
        host: String,
        names: Vec<Target>,
        error: String,
    },
}

impl Answer {
    /// Whether it answers a request made after the cycle `cycle` (the last
    /// one before the targets changed): an answer to an older one is not
    /// a reading of the targets watched now.
    pub(super) fn asked_after(&self, cycle: u64) -> bool {
        self.cycle > cycle
    }
}

/// What the hosts' round trips remember and read.
pub(super) struct Hosts {
    workers: BTreeMap<String, Worker>,
    answers_tx: mpsc::Sender<Answer>,
    answers: mpsc::Receiver<Answer>,
    /// The cycle of the last requests sent.
    pub(super) cycle: u64,
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
    /// Per host that answered this cycle's request: its probes' outcomes,
    /// in the order asked (all failed when its request failed), until its
    /// targets' answers are read from them.
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
                            names: job.names,
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

    /// Starts a cycle over `count` targets: each remote host of `groups`
    /// gets its request on its worker at once (side by side), with its
    /// own deadline counted from now; a host still working on an earlier
    /// cycle's request is not asked again. Each host's `probes` ride in
    /// its request. The answers come through [`Hosts::next`].
    pub(super) fn ask(
        &mut self,
        args: &Args,
        groups: &[Group<'_>],
        (targets, names): (&[(String, Option<KnownPane>)], &[Target]),
        probes: &BTreeMap<String, Vec<RemoteProbe>>,
        nonce: &str,
    ) {
        self.cycle += 1;
        let cycle = self.cycle;
        let count = targets.len();
        self.processes = vec![None; count];
        self.answered = vec![false; count];
        self.polled = vec![false; count];
        self.reused = vec![false; count];
        self.probes.clear();
        let timeout = Duration::from_secs(args.capture_timeout);
        let probe_timeout = Duration::from_secs(args.probe_timeout);
        let with_session = !args.no_witness;
        for (host, indices) in groups {
            let Some(host) = host else { continue };
            let tmux = args.server.tmux(Some(host), timeout);
            let worker = self.worker(host);
            if worker.busy.is_some() {
                continue;
            }
            let asked_probes = probes.get(*host).cloned().unwrap_or_default();
            let rounds = probes::remote::host::probe_rounds(asked_probes.len());
            let asked_names: Vec<Target> = indices.iter().map(|&i| names[i].clone()).collect();
            let job = Job {
                tmux,
                targets: indices.iter().map(|&i| targets[i].clone()).collect(),
                names: asked_names.clone(),
                nonce: nonce.to_string(),
                with_session,
                cycle,
                probes: asked_probes,
                probe_timeout,
            };
            if worker.jobs.send(job).is_ok() {
                // Its own deadline (its probes' too, a deadline per round
                // of PROBES_AT_ONCE), with room for its session to open.
                let allowed = timeout + probe_timeout * rounds + HOST_SLACK;
                worker.busy = Some(Busy {
                    cycle,
                    deadline: Instant::now() + allowed,
                    allowed,
                    names: asked_names,
                    expired: false,
                });
            }
        }
    }

    /// Whether this cycle still waits for a host: one asked this cycle,
    /// not late, that has neither answered nor passed its deadline.
    pub(super) fn awaited(&self) -> bool {
        self.workers.values().any(|worker| {
            !worker.late
                && worker
                    .busy
                    .as_ref()
                    .is_some_and(|busy| busy.cycle == self.cycle && !busy.expired)
        })
    }

    /// Whether any host may still answer or expire (whatever its cycle).
    pub(super) fn outstanding(&self) -> bool {
        self.workers
            .values()
            .any(|worker| worker.busy.as_ref().is_some_and(|busy| !busy.expired))
    }

    /// The next host to answer, or to pass its deadline, before `until`
    /// (`None`: neither came by then, or a stop was requested). An answer
    /// after its host's deadline is not given (its targets were failed at
    /// the deadline, and what it read is as old as that); the host is
    /// asked again next cycle.
    pub(super) fn next(&mut self, until: Instant) -> Option<Event> {
        loop {
            while let Ok(answer) = self.answers.try_recv() {
                if let Some(event) = self.received(answer) {
                    return Some(event);
                }
            }
            let now = Instant::now();
            let expired = self.workers.iter_mut().find_map(|(host, worker)| {
                let busy = worker.busy.as_mut().filter(|b| !b.expired)?;
                if busy.deadline > now {
                    return None;
                }
                busy.expired = true;
                worker.late = true;
                Some((host.clone(), busy.allowed, busy.names.clone()))
            });
            if let Some((host, allowed, names)) = expired {
                let error = format!("host {host} gave no answer within {}s", allowed.as_secs());
                return Some(Event::Expired { host, names, error });
            }
            if now >= until || probes::os::signals::stop_requested() {
                return None;
            }
            let next_deadline = self
                .workers
                .values()
                .filter_map(|w| w.busy.as_ref().filter(|b| !b.expired))
                .map(|b| b.deadline)
                .min()
                .unwrap_or(until);
            let wait = until
                .min(next_deadline)
                .saturating_duration_since(now)
                .min(Duration::from_millis(100));
            if let Ok(answer) = self.answers.recv_timeout(wait)
                && let Some(event) = self.received(answer)
            {
                return Some(event);
            }
        }
    }

    /// A worker's answer: its host is free for the next request, and the
    /// answer is given on unless its deadline already failed its targets.
    fn received(&mut self, answer: Answer) -> Option<Event> {
        let worker = self.workers.get_mut(&answer.host)?;
        let busy = worker.busy.take();
        if busy.is_some_and(|b| b.expired) {
            return None;
        }
        // A host that failed (timed out, refused) is not waited for again
        // until it answers in time: a hung host's deadline is paid once.
        worker.late = answer.read.captures.is_err();
        Some(Event::Answered(answer))
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
