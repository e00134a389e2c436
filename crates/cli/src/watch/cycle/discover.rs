//! The cycle's discovery steps: at the start, each pattern's host listed
//! once; after each cycle, the targets the patterns now name watched (within
//! the open-file limit) and those that ended dropped. What the patterns
//! found is `discover.rs`'s [`Discovery`](crate::watch::discover::Discovery).

use std::collections::BTreeSet;

use super::Watch;
use crate::output::say;
use crate::watch::target_settings::{SessionPattern, TargetSettings};

impl Watch<'_> {
    /// At the start: each pattern's host listed once (`list-sessions`), so
    /// its sessions are watched from the first cycle; later cycles read the
    /// capture's own listing.
    pub(in crate::watch) fn discover_first(&mut self) {
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
            match tmux.listed_sessions() {
                Ok(sessions) => self.discovery.learn(host.as_deref(), Some(sessions)),
                Err(error) => say(format_args!(
                    "bmb-monitor: watch: cannot list the sessions of {}: {error}; its patterns are matched from the next cycle's listing",
                    host.as_deref().unwrap_or("this machine")
                )),
            }
        }
        self.discover();
    }

    /// Of `wanted`, the targets the open-file limit holds ([`crate::watch::fd_budget::fd_need`],
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
            let need = crate::watch::fd_budget::fd_need(
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
                crate::watch::fd_budget::fd_need(
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
        let expanded = self.discovery.expand();
        let wanted = self.within_fd_limit(expanded);
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
