//! Targets named by a pattern of sessions (`host = "gpu3"`, `sessions =
//! "agent-*"`): discovered each cycle from the pane listing the cycle's
//! capture makes anyway (no call of their own), a session that appears
//! watched from the next cycle on, one that ends dropped as a reload drops a
//! target (its lock and journal closed, never deleted). A host whose listing
//! failed keeps the sessions it had: an outage is not an end.

use std::collections::{BTreeMap, BTreeSet};

use watchdog::session::target::Target;

use super::cycle::Watch;
use super::target_settings::{SessionPattern, TargetSettings};
use crate::output::say;

/// What the patterns found, and what the file names one by one.
#[derive(Default)]
pub(super) struct Discovery {
    /// The targets the file names one by one, in its order.
    explicit: Vec<TargetSettings>,
    patterns: Vec<SessionPattern>,
    /// Per host, the sessions its last listing that worked named.
    listed: BTreeMap<Option<String>, Vec<String>>,
    /// Per host, whether this cycle's listing worked (the hosts asked this cycle).
    fresh: BTreeSet<Option<String>>,
    /// Discovered targets another monitor holds, said once each.
    refused: BTreeSet<String>,
    /// Sessions a pattern matched whose names the command line would refuse
    /// as a target, said once each and never watched.
    skipped: BTreeSet<String>,
    /// The open-file limit holds fewer targets than the patterns find: said
    /// once, until it holds them all again.
    short_of_fds: bool,
}

/// A session a pattern found, as a target the command line would take, or
/// why not (a space, a control character, a name tmux cannot address).
fn as_target(host: Option<&str>, session: &str) -> Result<Target, String> {
    let label = match host {
        Some(host) => format!("{host}:{session}"),
        None => session.to_string(),
    };
    match Target::parse(&label) {
        Ok(target) if target.session == session && target.host.as_deref() == host => Ok(target),
        Ok(_) => Err("its name does not read back as one target".to_string()),
        Err(error) => Err(error.to_string()),
    }
}

impl Discovery {
    /// The file's targets and patterns (at the start, at a reload).
    pub(super) fn set(&mut self, explicit: Vec<TargetSettings>, patterns: Vec<SessionPattern>) {
        self.explicit = explicit;
        self.patterns = patterns;
    }

    /// The hosts a pattern names, each once: their listing is made every
    /// cycle even when none of their sessions is watched yet.
    pub(super) fn hosts(&self) -> BTreeSet<Option<&str>> {
        self.patterns.iter().map(|p| p.host.as_deref()).collect()
    }

    pub(super) fn has_patterns(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// This cycle's listing of `host`: its sessions, or `None` when the
    /// listing failed (the host's last good one stands).
    pub(super) fn learn(&mut self, host: Option<&str>, sessions: Option<Vec<String>>) {
        let host = host.map(str::to_string);
        if let Some(sessions) = sessions {
            for pattern in self.patterns.iter().filter(|p| p.host == host) {
                for session in sessions.iter().filter(|s| pattern.matches(s)) {
                    if let Err(why) = as_target(host.as_deref(), session) {
                        // Debug-quoted: a name may hold what a terminal obeys.
                        let shown = format!("{session:?}");
                        if self.skipped.insert(format!("{host:?}:{session}")) {
                            say(format_args!(
                                "bmb-monitor: watch: session {shown} (found by sessions = \"{}\") is not watched: {why}",
                                pattern.shown()
                            ));
                        }
                    }
                }
            }
            self.fresh.insert(host.clone());
            self.listed.insert(host, sessions);
        }
    }

    pub(super) fn cycle_started(&mut self) {
        self.fresh.clear();
    }

    /// The targets to watch: the file's own, then each pattern's sessions
    /// (in the listing's order) that no earlier line names.
    pub(super) fn expand(&self) -> Vec<TargetSettings> {
        let mut targets = self.explicit.clone();
        for pattern in &self.patterns {
            let Some(sessions) = self.listed.get(&pattern.host) else {
                continue;
            };
            for session in sessions.iter().filter(|s| pattern.matches(s)) {
                if as_target(pattern.host.as_deref(), session).is_err() {
                    continue;
                }
                let settings = pattern.target(session);
                if !targets.iter().any(|t| t.target == settings.target) {
                    targets.push(settings);
                }
            }
        }
        targets
    }

    /// A target a pattern found whose session this cycle's listing of its
    /// host no longer has: it ended, and is dropped, not polled.
    pub(super) fn ended(&self, target: &watchdog::session::target::Target) -> bool {
        if self.explicit.iter().any(|t| &t.target == target) {
            return false;
        }
        self.fresh.contains(&target.host)
            && self
                .listed
                .get(&target.host)
                .is_some_and(|sessions| !sessions.contains(&target.session))
    }

    /// Whether a target that cannot be opened is said: a target the file
    /// names, at every reload; a discovered one, once.
    pub(super) fn say_refused(&mut self, name: &str) -> bool {
        if self.explicit.iter().any(|t| t.target.to_string() == name) {
            return true;
        }
        self.refused.insert(name.to_string())
    }
}

impl Watch<'_> {
    /// At the start: each pattern's host listed once (`list-sessions`), so
    /// its sessions are watched from the first cycle; later cycles read the
    /// capture's own listing.
    pub(super) fn discover_first(&mut self) {
        if !self.discovery.has_patterns() {
            return;
        }
        let hosts: Vec<Option<String>> = self
            .discovery
            .hosts()
            .into_iter()
            .map(|h| h.map(str::to_string))
            .collect();
        for host in hosts {
            let tmux = self.args.server.tmux(
                host.as_deref(),
                std::time::Duration::from_secs(self.args.capture_timeout),
            );
            match tmux.list_sessions() {
                Ok(sessions) => self.discovery.learn(host.as_deref(), Some(sessions)),
                Err(error) => say(format_args!(
                    "bmb-monitor: watch: cannot list the sessions of {}: {error}; its patterns are matched from the next cycle's listing",
                    host.as_deref().unwrap_or("this machine")
                )),
            }
        }
        self.discover();
    }

    /// Of `wanted`, the targets the open-file limit holds ([`super::fd_need`],
    /// the check made up front for the file's own targets): every target the
    /// file names and every one already watched, then new sessions while
    /// they fit. A session left out is not opened, so no capture, probe or
    /// lock fails for want of a descriptor; the shortage is said once.
    fn within_fd_limit(&mut self, wanted: Vec<TargetSettings>) -> Vec<TargetSettings> {
        let Some(limit) = probes::os::own::usage().and_then(|u| u.max_fds) else {
            return wanted;
        };
        let explicit = self.discovery.explicit.len();
        let (mut count, mut local) = (0, 0);
        let mut hosts: BTreeSet<&str> = BTreeSet::new();
        let mut kept = vec![false; wanted.len()];
        for (index, settings) in wanted.iter().enumerate() {
            let target = &settings.target;
            if index < explicit || self.watched.iter().any(|w| &w.target == target) {
                kept[index] = true;
                count += 1;
                local += usize::from(target.host.is_none());
                hosts.extend(target.host.as_deref());
            }
        }
        for (index, settings) in wanted.iter().enumerate() {
            if kept[index] {
                continue;
            }
            let target = &settings.target;
            let new_host = target.host.as_deref().filter(|h| !hosts.contains(h));
            let need = super::fd_need(
                count + 1,
                local + usize::from(target.host.is_none()),
                hosts.len() + usize::from(new_host.is_some()),
            );
            if need <= limit {
                kept[index] = true;
                count += 1;
                local += usize::from(target.host.is_none());
                hosts.extend(new_host);
            }
        }
        let left_out = kept.iter().filter(|k| !**k).count();
        if left_out == 0 {
            self.discovery.short_of_fds = false;
        } else if !self.discovery.short_of_fds {
            self.discovery.short_of_fds = true;
            say(format_args!(
                "bmb-monitor: watch: the file and its patterns of sessions name {} targets, but the open-file limit of {limit} \
                 holds {count}: {left_out} session(s) not watched until it is raised \
                 (LimitNOFILE= in the unit, `ulimit -Hn`; about {} open files for all of them)",
                wanted.len(),
                super::fd_need(
                    wanted.len(),
                    wanted.iter().filter(|t| t.target.host.is_none()).count(),
                    wanted
                        .iter()
                        .filter_map(|t| t.target.host.as_deref())
                        .collect::<BTreeSet<_>>()
                        .len()
                )
            ));
        }
        wanted
            .into_iter()
            .zip(kept)
            .filter_map(|(settings, kept)| kept.then_some(settings))
            .collect()
    }

    /// After a cycle: the targets the patterns now name, said when they
    /// change (`watching gpu3:agent-3 (sessions gpu3:agent-*)`, `gpu3:agent-2
    /// ended: no longer watched`).
    pub(super) fn discover(&mut self) {
        if !self.discovery.has_patterns() {
            return;
        }
        let wanted = self.within_fd_limit(self.discovery.expand());
        let same = wanted.len() == self.watched.len()
            && wanted
                .iter()
                .zip(&self.watched)
                .all(|(w, watched)| w.target == watched.target);
        if same {
            return;
        }
        let done = self.set_targets(wanted);
        for name in &done.added {
            let by = self
                .discovery
                .patterns
                .iter()
                .find(|p| {
                    watchdog::session::target::Target::parse(name)
                        .is_ok_and(|t| t.host == p.host && p.matches(&t.session))
                })
                .map(SessionPattern::shown)
                .unwrap_or_default();
            say(format_args!(
                "bmb-monitor: watch: watching {name} (found by sessions = {by:?})"
            ));
        }
        for name in &done.removed {
            say(format_args!(
                "bmb-monitor: watch: {name} ended: no longer watched"
            ));
        }
        self.sync_masters();
        let names: Vec<watchdog::session::target::Target> =
            self.watched.iter().map(|w| w.target.clone()).collect();
        self.fleet
            .retarget(&names, self.args.interval, self.args.nudge_budget);
    }
}
