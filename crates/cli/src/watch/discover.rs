//! Targets named by a pattern of sessions (`host = "gpu3"`, `sessions =
//! "agent-*"`): discovered each cycle from the pane listing the cycle's
//! capture makes anyway (no call of their own), a session that appears
//! watched from the next cycle on, one that ends dropped as a reload drops a
//! target (its lock and journal closed, never deleted). A host whose listing
//! failed keeps the sessions it had: an outage is not an end.

use std::collections::{BTreeMap, BTreeSet};

use watchdog::session::target::Target;

use probes::tmux::ListedSession;

use super::target_settings::{SessionPattern, TargetSettings};
use crate::output::say;

/// What the patterns found, and what the file names one by one.
#[derive(Default)]
pub(super) struct Discovery {
    /// The targets the file names one by one, in its order.
    pub(super) explicit: Vec<TargetSettings>,
    /// The file's patterns of sessions, in its order.
    pub(super) patterns: Vec<SessionPattern>,
    /// Per host, the sessions its last listing that worked named.
    listed: BTreeMap<Option<String>, Vec<ListedSession>>,
    /// Per host, whether this cycle's listing worked (the hosts asked this cycle).
    fresh: BTreeSet<Option<String>>,
    /// Discovered targets another monitor holds, said once each.
    refused: BTreeSet<String>,
    /// Sessions a pattern matched whose names the command line would refuse
    /// as a target, said once each and never watched.
    skipped: BTreeSet<String>,
    /// The open-file limit holds fewer targets than the patterns find: said
    /// once, until it holds them all again.
    pub(super) short_of_fds: bool,
    /// The sessions the patterns found at the last expansion (`host:session`
    /// keys): of two twins, the one already watched stays watched.
    found: BTreeSet<String>,
    /// The hosts whose last listing holds a twin ([`ListedSession::shares_with`]).
    twins: BTreeSet<Option<String>>,
}

fn key(host: Option<&str>, session: &str) -> String {
    format!("{host:?}:{session}")
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
    pub(super) fn learn(&mut self, host: Option<&str>, sessions: Option<Vec<ListedSession>>) {
        let host = host.map(str::to_string);
        if let Some(sessions) = sessions {
            match sessions.iter().any(|s| s.shares_with.is_some()) {
                true => self.twins.insert(host.clone()),
                false => self.twins.remove(&host),
            };
            for pattern in self.patterns.iter().filter(|p| p.host == host) {
                for (at, listed) in sessions.iter().enumerate() {
                    if !pattern.matches(&listed.name) {
                        continue;
                    }
                    let session = &listed.name;
                    let why = match self.twin_watched(host.as_deref(), &sessions, at) {
                        Some(of) => Err(format!(
                            "it shows the same panes as {of:?} (a session group), which is watched: \
                             one pane, one watcher"
                        )),
                        None => as_target(host.as_deref(), session).map(|_| ()),
                    };
                    if let Err(why) = why {
                        // Debug-quoted: a name may hold what a terminal obeys;
                        // a very long one cut (its error says how long it is).
                        let mut shown = format!("{session:?}");
                        if let Some((at, _)) = shown.char_indices().nth(60) {
                            shown = format!("{}…", &shown[..at]);
                        }
                        if self.skipped.insert(key(host.as_deref(), session)) {
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

    /// The watched session that shows the same panes as `sessions[at]` (a
    /// twin in a session group): one the file names, or one a pattern found
    /// earlier in the listing. Twins share their first-listed session
    /// ([`ListedSession::shares_with`]).
    fn twin_watched<'l>(
        &self,
        host: Option<&str>,
        sessions: &'l [ListedSession],
        at: usize,
    ) -> Option<&'l str> {
        let root = |s: &'l ListedSession| s.shares_with.as_deref().unwrap_or(&s.name);
        if self.found.contains(&key(host, &sessions[at].name)) {
            return None;
        }
        // The usual listing has no twin: nothing to look for, and no scan of
        // the listing per matched session.
        if !self.twins.contains(&host.map(str::to_string)) {
            return None;
        }
        let class = root(&sessions[at]);
        let named = |name: &str| {
            self.explicit
                .iter()
                .any(|t| t.target.host.as_deref() == host && t.target.session == name)
        };
        let found = |name: &str| {
            self.patterns
                .iter()
                .any(|p| p.host.as_deref() == host && p.matches(name))
                && as_target(host, name).is_ok()
        };
        sessions
            .iter()
            .enumerate()
            .filter(|&(i, s)| i != at && root(s) == class)
            .find(|&(i, s)| {
                named(&s.name)
                    || (found(&s.name) && (i < at || self.found.contains(&key(host, &s.name))))
            })
            .map(|(_, s)| s.name.as_str())
    }

    /// The targets to watch: the file's own, then each pattern's sessions
    /// (in the listing's order) that no earlier line names, but a twin of
    /// one watched ([`ListedSession::shares_with`]).
    pub(super) fn expand(&mut self) -> Vec<TargetSettings> {
        let mut targets = self.explicit.clone();
        let mut found = BTreeSet::new();
        for pattern in &self.patterns {
            let Some(sessions) = self.listed.get(&pattern.host) else {
                continue;
            };
            for (at, listed) in sessions.iter().enumerate() {
                let session = &listed.name;
                if !pattern.matches(session)
                    || as_target(pattern.host.as_deref(), session).is_err()
                    || self
                        .twin_watched(pattern.host.as_deref(), sessions, at)
                        .is_some()
                {
                    continue;
                }
                let settings = pattern.target(session);
                found.insert(key(pattern.host.as_deref(), session));
                if !targets.iter().any(|t| t.target == settings.target) {
                    targets.push(settings);
                }
            }
        }
        self.found = found;
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
                .is_some_and(|sessions| !sessions.iter().any(|s| s.name == target.session))
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
