//! Reading the panes: every target's pane in two tmux invocations per
//! server, hosts side by side, and the first-sight search for the agent's pane.

use std::collections::BTreeMap;
use std::time::Duration;

use probes::tmux::PaneCapture;
use watchdog::session::shows_an_agent;

use super::cycle::Watch;

impl Watch<'_> {
    /// Once per target, when no pane is remembered for it and its active
    /// pane shows no agent any profile knows (the user's focus on a shell
    /// beside the agent, when the monitor starts), the session's other panes
    /// are read and the first where a profile recognises an agent is taken:
    /// otherwise the shell in front would be paged as an exited agent and the
    /// agent never watched. Costs two invocations, once.
    pub(super) fn find_agent_panes(&mut self, captures: &mut [Result<PaneCapture, String>]) {
        let profiles = self.current_profiles.clone();
        for (index, capture) in captures.iter_mut().enumerate() {
            let watched = &mut self.watched[index];
            if watched.searched
                || watched.monitor.memory().agent_pane.is_some()
                || !self.hosts.polled.get(index).copied().unwrap_or(true)
            {
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

    /// Every target's pane, grouped by host so each server costs two
    /// invocations locally and one ssh round trip remotely (where the
    /// panes' processes are read in the same call: `hosts.rs`).
    /// Each host's `probes` ride in its request.
    pub(super) fn capture_all_with(
        &mut self,
        probes: &BTreeMap<String, Vec<probes::remote::host::RemoteProbe>>,
    ) -> Vec<Result<PaneCapture, String>> {
        let mut by_host: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
        // Targets on a tmux server of their own: two calls per server, here.
        let mut by_server: Vec<(&probes::tmux::Server, Vec<usize>)> = Vec::new();
        for (index, watched) in self.watched.iter().enumerate() {
            if let Some(server) = &watched.settings.server {
                match by_server.iter_mut().find(|(s, _)| *s == server) {
                    Some((_, indices)) => indices.push(index),
                    None => by_server.push((server, vec![index])),
                }
                continue;
            }
            by_host
                .entry(watched.target.host.as_deref())
                .or_default()
                .push(index);
        }
        let targets: Vec<(String, Option<probes::tmux::KnownPane>)> = self
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
        // Each remote host is asked on its own thread, so a hung one costs its
        // own deadline, and no cycle waits for it once it was late.
        // A pattern's host is listed every cycle, however few of its
        // sessions are watched yet: the listing is what finds them.
        for host in self.discovery.hosts() {
            by_host.entry(host).or_default();
        }
        let groups: Vec<super::hosts::Group<'_>> = by_host.into_iter().collect();
        let mut captures = self.hosts.capture(&self.args, &groups, &targets, probes);
        let timeout = Duration::from_secs(self.args.capture_timeout);
        for (server, indices) in by_server {
            let tmux = self.args.server.tmux_on(None, Some(server), timeout);
            let asked: Vec<(String, Option<probes::tmux::KnownPane>)> =
                indices.iter().map(|&i| targets[i].clone()).collect();
            let nonce = probes::tmux::fresh_nonce();
            let read = probes::remote::host::HostRead {
                captures: tmux.capture_panes(&asked, &nonce),
                processes: vec![None; asked.len()],
                probes: Vec::new(),
                sessions: None,
                reused: Vec::new(),
            };
            for (&index, (capture, answered)) in indices
                .iter()
                .zip(super::hosts::captures_of(&read, indices.len()))
            {
                captures[index] = capture;
                self.hosts.answered[index] = answered;
                self.hosts.polled[index] = true;
            }
        }
        self.discovery.cycle_started();
        for (host, sessions) in std::mem::take(&mut self.hosts.listed) {
            self.discovery.learn(host.as_deref(), sessions);
        }
        captures
    }

    /// [`Watch::capture_all_with`] with no probe.
    #[cfg(test)]
    pub(super) fn capture_all(&mut self) -> Vec<Result<PaneCapture, String>> {
        self.capture_all_with(&BTreeMap::new())
    }
}
