//! Reading the panes: every target's pane in two tmux invocations per
//! server, hosts side by side, and the first-sight search for the agent's pane.

use std::collections::BTreeMap;
use std::time::Duration;

use probes::tmux::PaneCapture;
use watchdog::session::shows_an_agent;

use super::Watch;

impl Watch<'_> {
    /// Once per target, when no pane is remembered for it and its active
    /// pane shows no agent any profile knows (the user's focus on a shell
    /// beside the agent, when the monitor starts), the session's other panes
    /// are read and the first where a profile recognises an agent is taken:
    /// otherwise the shell in front would be paged as an exited agent and the
    /// agent never watched. Costs two invocations, once.
    /// `indices` says whose each capture is.
    pub(in crate::watch) fn find_agent_panes(
        &mut self,
        indices: &[usize],
        captures: &mut [Result<PaneCapture, String>],
    ) {
        let profiles = self.current_profiles.clone();
        for (&index, capture) in indices.iter().zip(captures.iter_mut()) {
            let watched = &mut self.watched[index];
            if watched.searched || watched.monitor.memory().agent_pane.is_some() {
                continue;
            }
            watched.searched = true;
            let Ok(shown) = capture.as_ref() else {
                continue;
            };
            if shows_an_agent(&shown.text, shown.current_command.as_deref(), &profiles) {
                continue;
            }
            let tmux = self.args.server.tmux_on(
                watched.target.host.as_deref(),
                watched.settings.server.as_ref(),
                Duration::from_secs(self.args.capture_timeout),
            );
            let Ok(panes) = tmux.session_panes(&watched.target.session) else {
                continue;
            };
            let targets: Vec<(String, Option<probes::tmux::KnownPane>)> = panes
                .iter()
                .filter(|id| shown.pane_id.as_ref() != Some(*id))
                .map(|id| {
                    let known = probes::tmux::KnownPane {
                        id: id.clone(),
                        pid: None,
                    };
                    (watched.target.session.clone(), Some(known))
                })
                .collect();
            if targets.is_empty() {
                continue;
            }
            let nonce = probes::tmux::fresh_nonce();
            let Ok(others) = tmux.capture_panes(&targets, &nonce) else {
                continue;
            };
            let agent = others.into_iter().flatten().find(|other| {
                shows_an_agent(&other.text, other.current_command.as_deref(), &profiles)
            });
            if let Some(agent) = agent {
                *capture = Ok(agent);
            }
        }
    }

    /// Every target's session and the pane its agent was last seen in,
    /// and its name, in the targets' order.
    fn asked(&self) -> Asked {
        let targets = self
            .watched
            .iter()
            .map(|watched| {
                // The pane the agent was last seen in, whichever pane is
                // active (a split, a second window): looking at another
                // pane is no "agent exited".
                let agent_pane = watched.monitor.memory().agent_pane.clone();
                let known = agent_pane.map(|(id, pid)| probes::tmux::KnownPane { id, pid });
                (watched.target.session.clone(), known)
            })
            .collect();
        let names = self.watched.iter().map(|w| w.target.clone()).collect();
        Asked { targets, names }
    }

    /// Starts reading every target's pane, grouped by host so each server
    /// costs two invocations locally and one ssh round trip remotely
    /// (where the panes' processes are read in the same call: `hosts.rs`):
    /// each remote host's request is sent now, on its own thread, with
    /// its `probes` in it; this machine's panes are read by
    /// [`Watch::capture_here`] with what this returns.
    pub(in crate::watch) fn ask_hosts(
        &mut self,
        probes: &BTreeMap<String, Vec<probes::remote::host::RemoteProbe>>,
    ) -> Here {
        let mut by_host: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
        // Targets on a tmux server of their own: two calls per server, here.
        let mut by_server: Vec<(probes::tmux::Server, Vec<usize>)> = Vec::new();
        for (index, watched) in self.watched.iter().enumerate() {
            if let Some(server) = &watched.settings.server {
                match by_server.iter_mut().find(|(s, _)| s == server) {
                    Some((_, indices)) => indices.push(index),
                    None => by_server.push((server.clone(), vec![index])),
                }
                continue;
            }
            by_host
                .entry(watched.target.host.as_deref())
                .or_default()
                .push(index);
        }
        // A pattern's host is listed every cycle, however few of its
        // sessions are watched yet: the listing is what finds them.
        for host in self.discovery.hosts() {
            by_host.entry(host).or_default();
        }
        let here = by_host.remove(&None);
        let groups: Vec<super::super::hosts::Group<'_>> = by_host.into_iter().collect();
        let asked = self.asked();
        let nonce = probes::tmux::fresh_nonce();
        self.hosts.ask(
            &self.args,
            &groups,
            (&asked.targets, &asked.names),
            probes,
            &nonce,
        );
        self.discovery.cycle_started();
        Here {
            main: here,
            by_server,
            asked,
            nonce,
        }
    }

    /// This machine's panes (the `[server]`'s, and each target's own
    /// server's), read on the calling thread while the hosts work on
    /// their requests: one group, polled at once.
    pub(in crate::watch) fn capture_here(&mut self, here: Here) -> GroupRead {
        let timeout = Duration::from_secs(self.args.capture_timeout);
        let mut group = GroupRead {
            host: None,
            indices: Vec::new(),
            captures: Vec::new(),
            answered: Vec::new(),
            current: true,
        };
        let mut reads = Vec::new();
        if let Some(indices) = here.main {
            let tmux = self.args.server.tmux(None, timeout);
            let asked: Vec<(String, Option<probes::tmux::KnownPane>)> = indices
                .iter()
                .map(|&i| here.asked.targets[i].clone())
                .collect();
            let (captures, sessions) = match tmux.capture_panes_listed(&asked, &here.nonce) {
                Ok((captures, sessions)) => (Ok(captures), Some(sessions)),
                Err(error) => (Err(error), None),
            };
            self.discovery.learn(None, sessions);
            reads.push((indices, captures));
        }
        for (server, indices) in here.by_server {
            let tmux = self.args.server.tmux_on(None, Some(&server), timeout);
            let asked: Vec<(String, Option<probes::tmux::KnownPane>)> = indices
                .iter()
                .map(|&i| here.asked.targets[i].clone())
                .collect();
            let nonce = probes::tmux::fresh_nonce();
            reads.push((indices, tmux.capture_panes(&asked, &nonce)));
        }
        for (indices, captures) in reads {
            let read = probes::remote::host::HostRead {
                captures,
                processes: vec![None; indices.len()],
                probes: Vec::new(),
                sessions: None,
                reused: Vec::new(),
            };
            for (&index, (capture, answered)) in indices
                .iter()
                .zip(super::super::hosts::captures_of(&read, indices.len()))
            {
                self.hosts.answered[index] = answered;
                self.hosts.polled[index] = true;
                group.indices.push(index);
                group.captures.push(capture);
                group.answered.push(answered);
            }
        }
        group
    }

    /// A host's answer (within its deadline, whichever cycle asked) as a
    /// group to poll, its targets found by name in the targets watched
    /// now, with its probes' outcomes and its listing: `None` when it read
    /// the screens of the targets watched before they changed (not acted
    /// on; its failure is: the host's targets go stale on its deadline).
    pub(in crate::watch) fn answer_read(
        &mut self,
        answer: super::super::hosts::Answer,
    ) -> Option<GroupRead> {
        let current = answer.asked_after(self.targets_changed) && self.round.is_some();
        if !current && answer.read.captures.is_ok() {
            return None;
        }
        let mut read = answer.read;
        if current {
            self.discovery
                .learn(Some(&answer.host), std::mem::take(&mut read.sessions));
            self.hosts
                .probes
                .insert(answer.host.clone(), std::mem::take(&mut read.probes));
        }
        let mut group = GroupRead {
            host: Some(answer.host),
            indices: Vec::new(),
            captures: Vec::new(),
            answered: Vec::new(),
            current,
        };
        let count = answer.names.len();
        let mut processes = std::mem::take(&mut read.processes);
        processes.resize(count, None);
        let mut reused = std::mem::take(&mut read.reused);
        reused.resize(count, false);
        for (((name, (capture, answered)), processes), reused) in answer
            .names
            .iter()
            .zip(super::super::hosts::captures_of(&read, count))
            .zip(processes)
            .zip(reused)
        {
            let Some(index) = self.watched.iter().position(|w| &w.target == name) else {
                continue;
            };
            if let Some(slot) = self.hosts.answered.get_mut(index) {
                *slot = answered;
                self.hosts.polled[index] = true;
                self.hosts.processes[index] = if current { processes } else { None };
                self.hosts.reused[index] = current && reused;
            }
            group.indices.push(index);
            group.captures.push(capture);
            group.answered.push(answered);
        }
        Some(group)
    }

    /// A host's targets (by name) that its deadline failed, as a group to poll.
    pub(in crate::watch) fn expired_read(
        &mut self,
        host: Option<String>,
        names: &[watchdog::session::target::Target],
        error: &str,
    ) -> GroupRead {
        let mut group = GroupRead {
            host,
            indices: Vec::new(),
            captures: Vec::new(),
            answered: Vec::new(),
            current: false,
        };
        for name in names {
            let Some(index) = self.watched.iter().position(|w| &w.target == name) else {
                continue;
            };
            if let Some(slot) = self.hosts.polled.get_mut(index) {
                *slot = true;
                self.hosts.answered[index] = false;
            }
            group.indices.push(index);
            group.captures.push(Err(error.to_string()));
            group.answered.push(false);
        }
        group
    }

    /// Every target's pane as [`Watch::ask_hosts`] and the hosts' answers
    /// give it, nothing polled: each host within its own deadline. Each
    /// host's `probes` ride in its request.
    #[cfg(test)]
    pub(in crate::watch) fn capture_all_with(
        &mut self,
        probes: &BTreeMap<String, Vec<probes::remote::host::RemoteProbe>>,
    ) -> Vec<Result<PaneCapture, String>> {
        let mut captures: Vec<Result<PaneCapture, String>> =
            vec![Err(String::new()); self.watched.len()];
        let here = self.ask_hosts(probes);
        let mut groups = vec![self.capture_here(here)];
        // Read as this cycle's (a test's round stands in for a cycle's).
        let round = self.round.replace(super::Round::new(
            super::probe::Plan::default(),
            Vec::new(),
            Duration::ZERO,
        ));
        while self.hosts.awaited() {
            match self
                .hosts
                .next(std::time::Instant::now() + Duration::from_secs(3600))
            {
                Some(super::super::hosts::Event::Answered(answer)) => {
                    groups.extend(self.answer_read(answer));
                }
                Some(super::super::hosts::Event::Expired { host, names, error }) => {
                    groups.push(self.expired_read(Some(host), &names, &error));
                }
                None => break,
            }
        }
        self.round = round;
        for group in groups {
            for (index, capture) in group.indices.into_iter().zip(group.captures) {
                captures[index] = capture;
            }
        }
        captures
    }

    /// [`Watch::capture_all_with`] with no probe.
    #[cfg(test)]
    pub(in crate::watch) fn capture_all(&mut self) -> Vec<Result<PaneCapture, String>> {
        self.capture_all_with(&BTreeMap::new())
    }
}

/// What a cycle asks for, per target in the targets' order.
pub(in crate::watch) struct Asked {
    targets: Vec<(String, Option<probes::tmux::KnownPane>)>,
    names: Vec<watchdog::session::target::Target>,
}

/// This machine's groups of a cycle, to read once the hosts are asked.
pub(in crate::watch) struct Here {
    main: Option<Vec<usize>>,
    by_server: Vec<(probes::tmux::Server, Vec<usize>)>,
    asked: Asked,
    nonce: String,
}

/// One group of targets read together (this machine's, or one host's
/// answer), polled together as soon as it is read.
pub(in crate::watch) struct GroupRead {
    /// The host (`None`: this machine).
    pub(in crate::watch) host: Option<String>,
    /// The targets, by their index in the watched list now.
    pub(in crate::watch) indices: Vec<usize>,
    pub(in crate::watch) captures: Vec<Result<PaneCapture, String>>,
    /// Per target, whether its host answered.
    pub(in crate::watch) answered: Vec<bool>,
    /// Read for this cycle: its probes' answers are this cycle's.
    pub(in crate::watch) current: bool,
}
