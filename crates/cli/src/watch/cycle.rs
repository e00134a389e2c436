//! One poll cycle over every watched target: probes, captures, the pane's
//! processes, the monitor's decision, then its actions in the order it gave them.

use std::time::Duration;

use classify::{Work, parse_count};
use ledger::journal::Journal;
use watchdog::session::target::Target;
use watchdog::session::{Action, Foreground, Now, Observation, TargetMonitor};

mod capture;
mod discover;
mod probe;
mod reload;
mod socket;

pub(super) use probe::{AT_ONCE as PROBES_AT_ONCE, runs as probe_runs};

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
    /// The cycle in force (`None` before the first, and after the targets
    /// changed: a late host's reading is then not acted on).
    pub(super) round: Option<Round>,
    /// The hosts' last cycle before the targets last changed: an answer to
    /// a request of that cycle or before is not a reading of these targets.
    pub(super) targets_changed: u64,
    /// How many cycles ended ([`Watch::complete_round`]): each one a ping
    /// for systemd's watchdog.
    pub(super) completed: u64,
    /// When the cycle in force last polled a group its host answered in
    /// time: the next cycle comes an interval after the last of them, so
    /// each target's polls stay an interval apart (a host that hangs or
    /// passes its deadline does not move it).
    pub(super) read_at: Option<std::time::Instant>,
    /// Every poll in the order made: the target and whether its host
    /// answered (what the hosts' tests read the order of polls from).
    #[cfg(test)]
    pub(super) poll_log: Vec<(Target, bool)>,
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
            round: None,
            targets_changed: 0,
            completed: 0,
            read_at: None,
            #[cfg(test)]
            poll_log: Vec::new(),
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
        let all = self.watched.iter().map(|w| w.target.host.as_deref());
        self.outages.keep_hosts(all);
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

    /// One poll of every target, each host's waited for until it answers
    /// or its deadline passes; true when it ran to its end (a stop request
    /// can cut it short before anything is acted on). The watch loop
    /// starts a cycle ([`Watch::start_cycle`]) and takes the hosts'
    /// answers as they come while it rests ([`Watch::rest`]) instead.
    pub(super) fn cycle(&mut self) -> bool {
        self.start_cycle() && self.finish_cycle()
    }

    /// Starts a cycle: what came in since the last one is polled, and that
    /// one ends ([`Watch::complete_round`]); then every remote host gets its
    /// request at once, this machine's probes run and its panes are read,
    /// and its targets are polled at once. Each host's targets are polled
    /// when its answer comes ([`Watch::take_event`]), or go unreachable at
    /// its own deadline, with no host waiting for another. False when a
    /// stop request cut it short.
    pub(super) fn start_cycle(&mut self) -> bool {
        while let Some(event) = self.hosts.next(std::time::Instant::now()) {
            self.take_event(event);
        }
        self.complete_round();
        self.cycle += 1;
        self.fleet.cycle_started();
        for refused in self.guard_socket() {
            say(format_args!("bmb-monitor: watch: not watching {refused}"));
        }
        self.reload_profiles();
        // The hosts' requests first: each host runs its probes, then reads
        // its panes, on its own. Then this machine's probes, side by side,
        // and its panes, read as close as possible to the keys that act on them.
        let plan = self.probe_plan();
        let here = self.ask_hosts(&plan.remote);
        let local = self.run_local_probes(&plan);
        let read = self.capture_here(here);
        let probe_timeout = Duration::from_secs(self.args.probe_timeout);
        self.round = Some(Round::new(plan, local, probe_timeout));
        if probes::os::signals::stop_requested() {
            // A SIGTERM cut this cycle's probes or captures short: what they
            // said is not an answer (an unknown work count would be read as
            // work and nudged), so act on none of it.
            return false;
        }
        self.poll_group(read);
        if !self.hosts.awaited() {
            self.complete_round();
        }
        true
    }

    /// Waits for every host this cycle asked (each until it answers or its
    /// deadline passes), polling each as it comes, then ends the cycle;
    /// false when a stop request cut it short.
    pub(super) fn finish_cycle(&mut self) -> bool {
        while self.hosts.awaited() {
            if probes::os::signals::stop_requested() {
                return false;
            }
            let far = std::time::Instant::now() + Duration::from_secs(3600);
            if let Some(event) = self.hosts.next(far) {
                self.take_event(event);
            }
        }
        if probes::os::signals::stop_requested() {
            return false;
        }
        self.complete_round();
        true
    }

    /// Rests for `duration` between two cycles, polling each host's answer
    /// (or failing its targets at its deadline) as it comes; with
    /// `reloads`, a SIGHUP ends the rest. The cycle in force ends here
    /// when its last host answers or passes its deadline.
    pub(super) fn rest(&mut self, duration: Duration, reloads: bool) -> Rest {
        let until = std::time::Instant::now() + duration;
        loop {
            if probes::os::signals::stop_requested() {
                return Rest::Stop;
            }
            if reloads && probes::os::signals::take_reload_request() {
                return Rest::Reload;
            }
            let now = std::time::Instant::now();
            if now >= until {
                return Rest::Elapsed;
            }
            let slice = until.min(now + Duration::from_millis(100));
            if !self.hosts.outstanding() {
                std::thread::sleep(slice - now);
                continue;
            }
            if let Some(event) = self.hosts.next(slice) {
                self.take_event(event);
                let open = self.round.as_ref().is_some_and(|r| !r.complete);
                if open && !self.hosts.awaited() && !probes::os::signals::stop_requested() {
                    self.complete_round();
                }
            }
        }
    }

    /// A host's answer or deadline: its targets polled now.
    pub(super) fn take_event(&mut self, event: super::hosts::Event) {
        let read = match event {
            super::hosts::Event::Answered(answer) => self.answer_read(answer),
            super::hosts::Event::Expired { host, names, error } => {
                Some(self.expired_read(Some(host), &names, &error))
            }
        };
        if let Some(read) = read
            && !probes::os::signals::stop_requested()
        {
            self.poll_group(read);
        }
    }

    /// Ends the cycle in force, once: its alerts posted, its time counted
    /// and the board published, the patterns' sessions followed. A target
    /// whose host is still on an earlier request keeps its alerts as they
    /// stand (it is not polled, not gone).
    pub(super) fn complete_round(&mut self) {
        let Some(round) = &mut self.round else { return };
        if round.complete {
            return;
        }
        round.complete = true;
        self.completed += 1;
        if let Some(sink) = &mut self.alertmanager {
            for (index, watched) in self.watched.iter().enumerate() {
                if !self.hosts.polled.get(index).copied().unwrap_or(false) {
                    sink.still_watched(&watched.target);
                }
            }
        }
        self.post_alerts(false);
        self.fleet.cycle_done();
        self.discover();
    }

    /// The Alertmanager sink, if any, told the hosts' errors and posting
    /// (everything at a cycle's end, or only what is due for a late host's
    /// answer), its failed posts counted as delivery failures.
    fn post_alerts(&mut self, due_only: bool) {
        let Some(sink) = &mut self.alertmanager else {
            return;
        };
        sink.hosts(self.fleet.host_errors());
        let before = sink.failed_posts;
        if due_only {
            sink.post_due();
        } else {
            sink.post();
        }
        *self
            .fleet
            .operations
            .delivery_failures
            .entry("alertmanager")
            .or_default() += sink.failed_posts - before;
    }

    /// One group's targets (this machine's, or one host's answer), polled
    /// as soon as it is read: the first-sight search, the panes'
    /// processes, the probes' answers, the monitor's decision, then its
    /// actions in the order it gave them, and each target's report line,
    /// in the targets' order within the group. Polled after its cycle
    /// ended (a late host), its alerts are posted and the board published
    /// at once.
    fn poll_group(&mut self, mut read: capture::GroupRead) {
        let indices = std::mem::take(&mut read.indices);
        if indices.is_empty() {
            // Nothing to poll (a host listed for its patterns only, or one
            // whose targets are no longer watched): its host is not judged.
            return;
        }
        self.find_agent_panes(&indices, &mut read.captures);
        let processes = self.pane_processes(&indices, &read.captures);
        let round = self.round.take();
        let (works, progresses) = match (&round, read.current) {
            (Some(round), true) => self.probe_answers_for(&round.plan, &round.local, &indices),
            _ => (vec![None; indices.len()], vec![None; indices.len()]),
        };
        self.round = round;
        let polls: Vec<(bool, Option<&str>)> = read
            .answered
            .iter()
            .zip(&read.captures)
            .map(|(&answered, capture)| (answered, capture.as_ref().err().map(String::as_str)))
            .collect();
        let host_down = self.outages.host(read.host.as_deref(), &polls);
        let local = probes::os::clock::local_now();
        let now = Now {
            local: &local,
            zones: &probes::os::clock::zone,
        };
        let open = self.round.as_ref().is_some_and(|r| !r.complete);
        if read.current && read.answered.iter().any(|&answered| answered) {
            self.read_at = Some(std::time::Instant::now());
        }
        let fresh = AlertBudget::new(Duration::from_secs(self.args.probe_timeout));
        let mut alert_budget = match self.round.as_mut() {
            Some(round) if open => std::mem::replace(&mut round.alert_budget, fresh),
            _ => fresh,
        };
        for (slot, (index, capture)) in indices.iter().copied().zip(read.captures).enumerate() {
            if self.discovery.ended(&self.watched[index].target) {
                // Its session ended: dropped by `discover` at the cycle's end, not polled.
                continue;
            }
            let work = works[slot].as_deref().map_or(Work::Unknown, Work::parse);
            let progress = progresses[slot].as_deref().and_then(parse_count);
            let processes = &processes[slot];
            let foreground = capture.as_ref().ok().and_then(|capture| {
                let front = processes.foreground.as_ref();
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
            });
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
                witness: processes.witness.as_ref().map(|(witness, _)| witness),
                foreground: foreground.as_ref(),
                cli_version: processes
                    .witness
                    .as_ref()
                    .and_then(|(_, version)| version.as_deref()),
                pane_id: watched.pane_id.as_deref(),
                pane_pid: capture.as_ref().ok().and_then(|c| c.pane_pid),
                activity: watched.key_time,
                last_attached: capture.as_ref().ok().and_then(|c| c.last_attached),
                focused: capture.as_ref().ok().map(|c| c.focused),
                now: Some(now),
            };
            let (report, actions) = watched.monitor.poll(observation);
            #[cfg(test)]
            self.poll_log
                .push((watched.target.clone(), read.answered[slot]));
            let probe_failures =
                u32::from(watched.settings.work_probe.is_some() && works[slot].is_none())
                    + u32::from(
                        watched.settings.progress_probe.is_some() && progresses[slot].is_none(),
                    );
            self.fleet.observe(
                index,
                watchdog::session::board::Observed {
                    report: &report,
                    actions: &actions,
                    cli: watched.monitor.profile(),
                    capture_error: capture.as_ref().err().map(String::as_str),
                    probe_failures,
                    host_answered: read.answered[slot],
                },
            );
            if let Some(error) = &report.error
                && !host_down
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
        match self.round.as_mut() {
            Some(round) if open => round.alert_budget = alert_budget,
            _ => {
                // After its cycle ended: what it changed goes out now, not
                // at the next cycle's end.
                self.post_alerts(true);
                self.fleet.publish();
            }
        }
    }
}

/// The cycle in force: what its groups' polls share.
pub(super) struct Round {
    plan: probe::Plan,
    /// This machine's probe answers, in the plan's order.
    local: Vec<Option<String>>,
    /// The cycle's alert commands share one `probe_timeout`.
    alert_budget: AlertBudget,
    /// Its end ran ([`Watch::complete_round`]): a host polled later is late.
    complete: bool,
}

impl Round {
    /// A cycle's round: its probe plan, this machine's answers to it, and
    /// `probe_timeout` for its alert commands.
    pub(super) fn new(
        plan: probe::Plan,
        local: Vec<Option<String>>,
        probe_timeout: Duration,
    ) -> Round {
        Round {
            plan,
            local,
            alert_budget: AlertBudget::new(probe_timeout),
            complete: false,
        }
    }
}

/// How [`Watch::rest`] ended.
pub(super) enum Rest {
    /// The whole duration passed.
    Elapsed,
    /// SIGINT or SIGTERM.
    Stop,
    /// SIGHUP (only when asked for).
    Reload,
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
