//! One poll cycle over every watched target: probes, captures, the pane's
//! processes, the monitor's decision, then its actions in the order it gave them.

use std::time::Duration;

use classify::{Work, parse_count};
use ledger::journal::Journal;
use watchdog::session::target::Target;
use watchdog::session::{Action, Foreground, Now, Observation, TargetMonitor};

mod discover;
mod reload;
mod socket;

use super::Args;
use super::alert::{AlertBudget, Sent, send_alert};
use super::target_settings::TargetSettings;
use crate::output::{SaidOnce, say};

/// One watched target: its monitor, its journal, and the errors last said.
pub(super) struct Watched {
    pub(super) target: Target,
    /// Its probes, budget, nudge and profile (a config file gives each target its own).
    pub(super) settings: TargetSettings,
    pub(super) monitor: TargetMonitor,
    pub(super) journal: Journal,
    pub(super) journal_error: Option<String>,
    /// The pane this cycle read (`%N`): a nudge goes there, not to whatever
    /// pane of the session is active by the time it is sent.
    pub(super) pane_id: Option<String>,
    /// The session's panes were searched for the agent once (at the first
    /// cycle that found no agent in the active pane and none remembered).
    pub(super) searched: bool,
    /// The session's last key time as this cycle's capture read it: a
    /// nudge's Enter is not pressed if a key came since.
    pub(super) key_time: Option<i64>,

    /// Held while this process watches the target.
    pub(super) _lock: Option<probes::fs::lock::Lock>,
    /// The same, under the tmux socket file's device and inode (local targets).
    pub(super) socket: super::socket_lock::SocketGuard,
}

pub(super) struct Watch<'a> {
    /// The process-wide settings; a reloaded config file replaces them.
    pub(super) args: std::borrow::Cow<'a, Args>,
    pub(super) watched: Vec<Watched>,
    pub(super) probe_errors: SaidOnce<String>,
    pub(super) cycle: u64,
    /// The user's profile folder as last read; re-read when it changes.
    pub(super) profiles: crate::profiles::UserProfiles,
    /// The profiles in force (the built-ins and the user's).
    pub(super) current_profiles: std::sync::Arc<classify::Profiles>,
    /// This tmux server's state folder: each target's journal and lock.
    pub(super) state_dir: std::path::PathBuf,
    /// `--alertmanager`: every target's escalations as alerts.
    pub(super) alertmanager: Option<super::alertmanager::Alertmanager>,
    /// The remote hosts' round trips (`hosts.rs`).
    pub(super) hosts: super::hosts::Hosts,
    /// The hosts' ssh master connections: the last field, so they close
    /// after everything else is dropped.
    pub(super) masters: super::hosts::Masters,
    /// The board and metrics this monitor publishes.
    pub(super) fleet: super::metrics::Fleet,
    /// The hosts down, said once per outage.
    pub(super) outages: super::outage::Outages,
    /// What each target's last poll line said (`log = "changes"`).
    pub(super) logged: super::report::Logged,
    /// Targets named by a pattern of sessions (`discover.rs`).
    pub(super) discovery: super::discover::Discovery,
}

impl<'a> Watch<'a> {
    /// Loads each target's memory and takes its lock: a target another
    /// monitor watches on this server is refused (two would each spend the
    /// nudge budget).
    pub(super) fn new(
        args: std::borrow::Cow<'a, Args>,
        targets: Vec<TargetSettings>,
        state_dir: &std::path::Path,
    ) -> Result<Watch<'a>, String> {
        let dir = state_dir.join("session").join(args.server.state_key());
        let legacy = state_dir
            .join("session")
            .join(args.server.legacy_state_key());
        if legacy != dir && legacy.is_dir() && !dir.exists() {
            // Memory kept under the spelling's key before the socket named it.
            if let Err(err) = std::fs::rename(&legacy, &dir) {
                say(format_args!(
                    "bmb-monitor: watch: cannot move the saved state {} to {}: {err}",
                    legacy.display(),
                    dir.display()
                ));
            }
        }
        // Private or refused: a journal another user could write would steer the nudges.
        match probes::fs::folder::ensure_private_under(state_dir, &dir) {
            Ok(()) => {}
            Err(probes::fs::folder::FolderError::Refused(why)) => {
                return Err(format!("the state folder will not do: {why}"));
            }
            Err(err) => say(format_args!(
                "bmb-monitor: watch: {err}; state will not survive a restart"
            )),
        }
        let names: Vec<Target> = targets.iter().map(|t| t.target.clone()).collect();
        let mut fleet = super::metrics::Fleet::new(
            &names,
            args.interval,
            args.nudge_budget,
            state_dir,
            args.server.identity(),
        );
        let mut watched = Vec::new();
        for settings in targets {
            watched.push(Watched::open(&dir, settings)?);
        }
        fleet.own_servers = reload::own_servers(&watched);
        let names: Vec<Target> = watched.iter().map(|w| w.target.clone()).collect();
        fleet.retarget(&names, args.interval, args.nudge_budget);
        let alertmanager = args.alertmanager.as_deref().map(|url| {
            super::alertmanager::Alertmanager::new(
                url,
                Duration::from_secs(args.interval),
                args.server.identity(),
                Some(&dir),
            )
        });
        let mut watch = Watch {
            args,
            watched,
            probe_errors: SaidOnce::default(),
            cycle: 0,
            profiles: crate::profiles::UserProfiles::default(),
            current_profiles: watchdog::session::builtin_profiles(),
            state_dir: dir,
            alertmanager,
            hosts: super::hosts::Hosts::default(),
            masters: super::hosts::Masters::default(),
            fleet,
            outages: super::outage::Outages::default(),
            logged: super::report::Logged::default(),
            discovery: super::discover::Discovery::default(),
        };
        if let Some(sink) = &mut watch.alertmanager {
            sink.own_servers = reload::own_servers(&watch.watched);
        }
        super::socket_lock::sweep(&watch.state_dir);
        if let Some(refused) = watch.guard_socket().into_iter().next() {
            return Err(refused);
        }
        watch.sync_masters();
        watch.reload_profiles();
        Ok(watch)
    }

    /// One ssh master per remote host watched now, none for a host that is not.
    pub(super) fn sync_masters(&mut self) {
        let hosts = self.watched.iter().filter_map(|w| w.target.host.as_deref());
        self.hosts.keep_hosts(hosts.clone());
        self.masters.sync(&self.args.server, hosts);
    }

    /// The user's profiles reach every monitor, and a change to their folder
    /// (a profile added, fixed or removed) takes effect without a restart.
    pub(super) fn reload_profiles(&mut self) {
        if let Some(profiles) = self.profiles.reload_if_changed() {
            for watched in &mut self.watched {
                watched.monitor.set_profiles(profiles.clone());
            }
            self.current_profiles = profiles;
        }
    }

    /// One poll of every target; true when it ran to its end (a stop
    /// request can cut it short before anything is acted on).
    pub(super) fn cycle(&mut self) -> bool {
        self.cycle += 1;
        self.fleet.cycle_started();
        for refused in self.guard_socket() {
            say(format_args!("bmb-monitor: watch: not watching {refused}"));
        }
        self.reload_profiles();
        // The probes first: they may take seconds, and the screen must be
        // read as close as possible to the keys that act on it. This
        // machine's run side by side; a host's ride in its request, before
        // its panes are read there.
        let plan = self.probe_plan();
        let local = self.run_local_probes(&plan);
        let mut captures = self.capture_all_with(&plan.remote);
        let (works, progresses) = self.probe_answers(&plan, &local);
        self.find_agent_panes(&mut captures);
        let processes = self.pane_processes(&captures);
        if probes::os::signals::stop_requested() {
            // A SIGTERM cut this cycle's probes or captures short: what they
            // said is not an answer (an unknown work count would be read as
            // work and nudged), so act on none of it.
            return false;
        }
        let foregrounds: Vec<Option<Foreground>> = captures
            .iter()
            .zip(&processes)
            .map(|(capture, processes)| {
                let front = processes.foreground.as_ref();
                let capture = capture.as_ref().ok()?;
                Some(Foreground {
                    command: capture.current_command.clone()?,
                    process: front.map(|f| f.comm.clone()),
                    running_child: front.map(|f| f.running_child),
                    dead: capture.dead,
                    in_mode: capture.in_mode,
                    synchronized: capture.synchronized,
                    children_in_front: front
                        .map(|f| f.children_in_front.clone())
                        .unwrap_or_default(),
                    outer: front.map(|f| f.outer.clone()).unwrap_or_default(),
                })
            })
            .collect();
        let polls = host_polls(&self.watched, &self.hosts.answered, &captures);
        let host_down = self.outages.cycle(&polls);
        let local = probes::os::clock::local_now();
        let now = Now {
            local: &local,
            zones: &probes::os::clock::zone,
        };
        let mut alert_budget = AlertBudget::new(Duration::from_secs(self.args.probe_timeout));
        for (index, capture) in captures.into_iter().enumerate() {
            if self.discovery.ended(&self.watched[index].target) {
                // Its session ended: dropped by `discover` below, not polled.
                continue;
            }
            if !self.hosts.polled.get(index).copied().unwrap_or(true) {
                // Its host is still on an earlier request: polled when it
                // answers, or failed at its own deadline.
                continue;
            }
            let work = works[index].as_deref().map_or(Work::Unknown, Work::parse);
            let progress = progresses[index].as_deref().and_then(parse_count);
            let watched = &mut self.watched[index];
            watched.pane_id = capture.as_ref().ok().and_then(|c| c.pane_id.clone());
            watched.key_time = capture.as_ref().ok().and_then(|c| c.activity);
            let observation = Observation {
                capture: capture
                    .as_ref()
                    .map(|c| c.text.as_str())
                    .map_err(String::as_str),
                work,
                progress,
                witness: processes[index]
                    .witness
                    .as_ref()
                    .map(|(witness, _)| witness),
                foreground: foregrounds[index].as_ref(),
                cli_version: processes[index]
                    .witness
                    .as_ref()
                    .and_then(|(_, version)| version.as_deref()),
                pane_id: watched.pane_id.as_deref(),
                pane_pid: capture.as_ref().ok().and_then(|c| c.pane_pid),
                activity: watched.key_time,
                focused: capture.as_ref().ok().map(|c| c.focused),
                now: Some(now),
            };
            let (report, actions) = watched.monitor.poll(observation);
            let probe_failures =
                u32::from(watched.settings.work_probe.is_some() && works[index].is_none())
                    + u32::from(
                        watched.settings.progress_probe.is_some() && progresses[index].is_none(),
                    );
            self.fleet.observe(
                index,
                watchdog::session::board::Observed {
                    report: &report,
                    actions: &actions,
                    cli: watched.monitor.profile(),
                    capture_error: capture.as_ref().err().map(String::as_str),
                    probe_failures,
                    host_answered: self.hosts.answered.get(index).copied().unwrap_or(false),
                },
            );
            if let Some(error) = &report.error
                && !host_down[index]
            {
                say(format_args!(
                    "bmb-monitor: watch: {}: {error}",
                    watched.target
                ));
            }
            if let Some(sink) = &mut self.alertmanager {
                sink.raised(&watched.target, &actions, &watched.monitor);
            }
            for action in actions {
                if !execute(&self.args, watched, action, &mut alert_budget) {
                    let sink = if self.args.alert_cmd.is_some() {
                        "alert_cmd"
                    } else {
                        "stderr"
                    };
                    *self
                        .fleet
                        .operations
                        .delivery_failures
                        .entry(sink)
                        .or_default() += 1;
                }
            }
            if let Some(sink) = &mut self.alertmanager {
                sink.settle(&watched.target, &report, &watched.monitor);
            }
            self.logged.print(&report, self.args.log, self.args.json);
        }
        if let Some(sink) = &mut self.alertmanager {
            sink.hosts(self.fleet.host_errors());
            let before = sink.failed_posts;
            sink.post();
            *self
                .fleet
                .operations
                .delivery_failures
                .entry("alertmanager")
                .or_default() += sink.failed_posts - before;
        }
        self.fleet.cycle_done();
        self.discover();
        true
    }
}

/// Per target: its host, whether the host answered, and the capture's error.
fn host_polls<'c>(
    watched: &'c [Watched],
    answered: &[bool],
    captures: &'c [Result<probes::tmux::PaneCapture, String>],
) -> Vec<(Option<&'c str>, bool, Option<&'c str>)> {
    watched
        .iter()
        .zip(captures)
        .enumerate()
        .map(|(index, (watched, capture))| {
            let answered = answered.get(index).copied().unwrap_or(false);
            let error = capture.as_ref().err().map(String::as_str);
            (watched.target.host.as_deref(), answered, error)
        })
        .collect()
}

/// Carries out one action (an alert within this cycle's `alerts` budget);
/// false when it was an alert its command failed to deliver (counted in the
/// metrics).
pub(super) fn execute(
    args: &Args,
    watched: &mut Watched,
    action: Action,
    alerts: &mut AlertBudget,
) -> bool {
    match action {
        Action::Record(record) => {
            let result = watched.journal.append(&record);
            let error = result.err().map(|e| e.to_string());
            if error.is_some() && error != watched.journal_error {
                say(format_args!(
                    "bmb-monitor: watch: {}: state not saved: {}",
                    watched.target,
                    error.as_deref().unwrap_or("")
                ));
            }
            watched.journal_error = error;
        }
        Action::Send(text) => {
            let tmux = args.server.tmux_on(
                watched.target.host.as_deref(),
                watched.settings.server.as_ref(),
                Duration::from_secs(args.capture_timeout),
            );
            let pane = watched
                .pane_id
                .clone()
                .unwrap_or_else(|| format!("={}:", watched.target.session));
            if let Err(error) = send_nudge(watched, &tmux, &pane, &text) {
                say(format_args!(
                    "bmb-monitor: watch: {}: nudge not delivered: {error}",
                    watched.target
                ));
            }
        }
        Action::Alert(alert) => {
            let sent = send_alert(
                args,
                &watched.target,
                watched.settings.server.as_ref(),
                &alert,
                alerts,
            );
            if sent == Sent::Delivered {
                // Delivered: only now is it "sent" across a restart.
                execute(args, watched, Action::Record(alert.record), alerts);
            } else {
                // Nobody got it: the monitor sends it again next poll (and
                // the journal never said it was sent).
                for record in watched.monitor.alert_failed(&alert) {
                    execute(args, watched, Action::Record(record), alerts);
                }
                return sent == Sent::Deferred;
            }
        }
    }
    true
}

/// The nudge's text, then its Enter [`probes::tmux::ENTER_AFTER`] later
/// (sooner, a TUI takes the Enter as part of a paste), unless a person
/// pressed a key in that half second: the box then holds more than our text
/// (or the session's key time moved), and an Enter would send their words
/// and ours as one. The text then stays in the box, unsent, and the next
/// poll reads it as a draft: escalated, not typed over. Once the text is
/// typed the check and the Enter run even while the monitor stops, so a
/// SIGTERM never leaves a half-typed nudge behind.
fn send_nudge(
    watched: &Watched,
    tmux: &probes::tmux::Tmux,
    pane: &str,
    text: &str,
) -> Result<(), String> {
    tmux.send_text(pane, text).map_err(|e| e.to_string())?;
    std::thread::sleep(probes::tmux::ENTER_AFTER);
    let (key_time, screen) = tmux.key_time_and_pane(pane).map_err(|e| e.to_string())?;
    let key_since =
        watched.key_time.is_some() && key_time.is_some() && key_time != watched.key_time;
    if key_since || !watched.monitor.box_holds_only(&screen, text) {
        return Err("a key was pressed in the pane while it was typed, so its Enter was not pressed (the text stays in the box)".to_string());
    }
    tmux.press_enter(pane).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::settings::Settings;
    use clap::Parser;
    use probes::tmux::{Server, Tmux};

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: Args,
    }

    /// SPEC §9: a cycle costs at most two tmux invocations per server,
    /// whatever the number of panes, counted through the probes layer.
    #[test]
    fn a_cycle_over_50_panes_costs_two_tmux_invocations() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock").to_string_lossy().into_owned();
        let tmux = Tmux::new(Server::Path(socket.clone()));
        // Ends the private server even when an assertion fails.
        struct KillOnDrop(Tmux);
        impl Drop for KillOnDrop {
            fn drop(&mut self) {
                let _ = self.0.kill_server();
            }
        }
        let tmux = KillOnDrop(tmux);
        let working = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/panes/claude/working-bash-sleep/plain.txt");
        let names: Vec<String> = (0..50).map(|i| format!("pane{i}")).collect();
        for name in &names {
            let script = format!("cat '{}'; exec sleep 600", working.display());
            tmux.0
                .new_detached_session(name, &["sh".to_string(), "-c".to_string(), script])
                .unwrap();
        }
        let mut argv = vec!["test".to_string(), "-S".to_string(), socket];
        argv.extend(names.iter().cloned());
        let args = TestCli::parse_from(argv).args;
        let targets = Settings::from_args(&args).unwrap().targets;
        let mut watch = Watch::new(
            std::borrow::Cow::Borrowed(&args),
            targets,
            &dir.path().join("state"),
        )
        .unwrap();
        // Let every pane draw its screen, so no cycle below has a reason to act.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while watch.capture_all().iter().any(|c| {
            !c.as_ref()
                .is_ok_and(|p| p.text.contains("esc to interrupt"))
        }) {
            assert!(
                std::time::Instant::now() < deadline,
                "the panes never drew their screens"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        for _ in 0..3 {
            let before = probes::run::spawned_by_this_thread();
            watch.cycle();
            assert_eq!(
                probes::run::spawned_by_this_thread() - before,
                2,
                "subprocesses in one cycle over 50 panes"
            );
        }
        assert!(
            watch
                .watched
                .iter()
                .all(|w| w.monitor.memory().nudges_used == 0)
        );
    }
}
