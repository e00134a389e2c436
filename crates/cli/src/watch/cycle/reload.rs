//! Opening a target's memory and lock, at start and when a reloaded config
//! file adds it, and the reload itself (SIGHUP): targets added start, targets
//! removed are released (their lock and journal closed, never deleted),
//! targets that stay keep their monitor, so what it remembers (the nudges
//! spent, the escalations sent, the echo ledger, what it last read) stays.

use std::path::Path;

use ledger::journal::Journal;
use probes::fs::lock::LockError;

use super::{Watch, Watched};
use crate::output::say;
use crate::watch::settings::Settings;
use crate::watch::target_settings::TargetSettings;

impl Watched {
    /// Loads the target's memory from its journal in `dir` and takes its
    /// lock: a target another monitor watches on this server is refused (two
    /// would each spend the nudge budget), and so is one whose journal is
    /// there but cannot be read (its memory would be lost).
    pub(super) fn open(dir: &Path, settings: TargetSettings) -> Result<Watched, String> {
        let target = settings.target.clone();
        // A target on a tmux server of its own keeps its memory and lock in
        // that server's folder, beside its monitors' (`-S` that server).
        let own_dir;
        let dir = match &settings.server {
            Some(server) => {
                let sessions = dir.parent().unwrap_or(dir);
                own_dir = sessions.join(crate::server_args::state_key_of(server));
                let root = sessions.parent().unwrap_or(sessions);
                match probes::fs::folder::ensure_private_under(root, &own_dir) {
                    Ok(()) => {}
                    Err(probes::fs::folder::FolderError::Refused(why)) => {
                        return Err(format!("{target}: the state folder will not do: {why}"));
                    }
                    Err(err) => say(format_args!(
                        "bmb-monitor: watch: {target}: {err}; state will not survive a restart"
                    )),
                }
                own_dir.as_path()
            }
            None => dir,
        };
        let key = target.file_key();
        let lock = match probes::fs::lock::try_lock(&dir.join(format!("{key}.lock"))) {
            Ok(lock) => {
                crate::output::end_orphans(&lock, "watch");
                Some(lock)
            }
            Err(LockError::Held(pid)) => {
                let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
                return Err(format!(
                    "{target} is already watched by another bmb-monitor{by} on this server"
                ));
            }
            Err(LockError::Failed(why)) => {
                say(format_args!(
                    "bmb-monitor: watch: {target}: {why}; not guarded against a second monitor"
                ));
                None
            }
        };
        // Unreadable is refused, not started fresh: a fresh memory would
        // spend the budget again and re-send every alert (and its appends
        // would be replayed after the old records at the next start).
        let opened = Journal::open(dir.join(format!("{key}.jsonl")))
            .map_err(|problem| format!("{target}: {problem}"))?;
        for problem in &opened.problems {
            say(format_args!("bmb-monitor: watch: {problem}"));
        }
        let monitor = watchdog::session::TargetMonitor::new(
            target.to_string(),
            settings.session_config(),
            opened.memory,
        );
        Ok(Watched {
            target,
            settings,
            monitor,
            journal: opened.journal,
            journal_error: None,
            pane_id: None,
            searched: false,
            key_time: None,
            _lock: lock,
            socket: Default::default(),
        })
    }
}

/// What a reload changed, as it is said.
#[derive(Debug, Default)]
pub(in crate::watch) struct Reloaded {
    pub(in crate::watch) added: Vec<String>,
    pub(in crate::watch) removed: Vec<String>,
    /// Targets that stay with other settings (probes, budget, nudge, profile).
    pub(in crate::watch) changed: Vec<String>,
}

impl Watch<'_> {
    /// Runs with `settings` from the next cycle on, in their order. A target
    /// the new file adds but another monitor holds is said and left out (a
    /// later reload tries again); the tmux server cannot change under a
    /// running monitor (its targets' memory lives in that server's folder),
    /// so a new `[server]` is said and the old one kept.
    pub(in crate::watch) fn reload(&mut self, mut settings: Settings) -> Reloaded {
        if settings.args.metrics_listen != self.args.metrics_listen {
            say(
                "bmb-monitor: watch: the config file names another metrics address; \
                 the listener keeps its own (restart to move it)",
            );
            settings.args.metrics_listen = self.args.metrics_listen.clone();
        }
        // The control sockets' folder is the process's, chosen at its start.
        settings.args.server.multiplex = self.args.server.multiplex.clone();
        if settings.args.server.state_key() != self.args.server.state_key() {
            say(
                "bmb-monitor: watch: the config file names another tmux server; \
                 a running monitor keeps its own (restart it to watch the other)",
            );
            settings.args.server = self.args.server.clone();
        }
        for (host, server) in &settings.args.server.per_host {
            let before = self.args.server.per_host.get(host);
            if before.is_some_and(|before| before != server) {
                say(format_args!(
                    "bmb-monitor: watch: [hosts.{host}] names another tmux server or binary: \
                     its targets are read and typed into there from the next cycle"
                ));
            }
        }
        self.discovery
            .set(settings.targets, std::mem::take(&mut settings.patterns));
        let targets = self.discovery.expand();
        let reloaded = self.set_targets(targets);
        if let Some(sink) = &mut self.alertmanager {
            sink.set_interval(std::time::Duration::from_secs(settings.args.interval));
        }
        if settings.args.alertmanager != self.args.alertmanager {
            // Another Alertmanager, or none: what was firing at the old one
            // is resolved there (its endsAt is hours ahead), and the new one
            // gets what still fires under the same starts.
            if let Some(old) = &mut self.alertmanager {
                old.retire();
            }
            self.alertmanager = settings.args.alertmanager.as_deref().map(|url| {
                crate::watch::alertmanager::Alertmanager::new(
                    url,
                    std::time::Duration::from_secs(settings.args.interval),
                    self.args.server.identity(),
                    Some(&self.state_dir),
                )
            });
            if let Some(sink) = &mut self.alertmanager {
                sink.own_servers = own_servers(&self.watched);
            }
        }
        self.args = std::borrow::Cow::Owned(settings.args);
        self.sync_masters();
        let names: Vec<watchdog::session::target::Target> =
            self.watched.iter().map(|w| w.target.clone()).collect();
        self.fleet
            .retarget(&names, self.args.interval, self.args.nudge_budget);
        // Now, not at the next cycle, which a longer interval puts later than
        // what was published last promised: the board's interval (or it reads
        // stale), and the firing alerts' new hold (or Alertmanager resolves
        // a question still on screen).
        self.fleet.publish();
        if let Some(sink) = &mut self.alertmanager {
            sink.post_due();
        }
        reloaded
    }

    /// Watches `settings`' targets from the next cycle on, in their order:
    /// one that stays keeps its monitor (its new settings applied), one
    /// added is opened (unless another monitor holds it: said, left out),
    /// one gone is released. The masters and the board follow at the caller.
    pub(super) fn set_targets(&mut self, settings: Vec<TargetSettings>) -> Reloaded {
        // The cycle in force ends first, over the targets it asked for; a
        // host's reading for it that comes later is not acted on.
        self.complete_round();
        self.round = None;
        self.targets_changed = self.hosts.cycle;
        let mut reloaded = Reloaded::default();
        let mut before: Vec<Option<Watched>> = std::mem::take(&mut self.watched)
            .into_iter()
            .map(Some)
            .collect();
        for target in settings {
            let staying = before
                .iter_mut()
                .find(|w| w.as_ref().is_some_and(|w| w.target == target.target))
                .and_then(Option::take);
            match staying {
                Some(mut watched) => {
                    if watched.settings != target {
                        reloaded.changed.push(target.target.to_string());
                        watched.monitor.set_config(target.session_config());
                        watched.settings = target;
                    }
                    self.watched.push(watched);
                }
                None => {
                    let name = target.target.to_string();
                    match Watched::open(&self.state_dir, target) {
                        Ok(mut watched) => {
                            watched.monitor.set_profiles(self.current_profiles.clone());
                            reloaded.added.push(name);
                            self.watched.push(watched);
                        }
                        Err(message) => {
                            if self.discovery.say_refused(&name) {
                                say(format_args!("bmb-monitor: watch: not watching {message}"))
                            }
                        }
                    }
                }
            }
        }
        // Dropped here: each lock and journal is closed, its files kept, so
        // a target added back later resumes from what it remembered.
        for watched in before.into_iter().flatten() {
            reloaded.removed.push(watched.target.to_string());
        }
        self.fleet.own_servers = own_servers(&self.watched);
        if let Some(sink) = &mut self.alertmanager {
            sink.own_servers = own_servers(&self.watched);
        }
        reloaded
    }
}

/// The targets on a tmux server of their own, with its name for the board.
pub(super) fn own_servers(watched: &[Watched]) -> Vec<(watchdog::session::target::Target, String)> {
    watched
        .iter()
        .filter_map(|w| {
            let server = w.settings.server.as_ref()?;
            Some((w.target.clone(), crate::server_args::identity_of(server)))
        })
        .collect()
}
