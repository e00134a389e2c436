//! `bmb-monitor watch`, `list` and `stop`: the session monitor (seed
//! `omega-session-monitor.txt`) on real tmux, local and over ssh.
//!
//! Glue around [`watchdog::session::TargetMonitor`]: each cycle captures every
//! watched pane (two tmux invocations per server), runs the probes, lets the
//! monitor decide, then persists, sends and alerts in the order it said.
//! The loop never exits on a runtime error: each is rendered and survived.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use classify::{Work, parse_count};
use ledger::findings::FindingsLog;
use ledger::session::{SessionMemory, parse_records, record_line};
use probes::lock::LockError;
use probes::run::{self, Invocation, Limits, Outcome};
use probes::tmux::PaneCapture;
use watchdog::session::{
    Action, Alert, DEFAULT_NUDGE_TEXT, Foreground, Observation, PollReport, SessionConfig,
    TargetMonitor,
};
use watchdog::target::Target;
use watchdog::witness::{Witness, session_version};

use crate::output::{SaidOnce, print, say, usage_error};
use crate::server_args::ServerArgs;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertFormat {
    /// Plain text, control characters removed.
    Text,
    /// HTML-escaped, for HTML funnels such as a chat bot.
    Html,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Sessions to watch: `session` on this machine, or `host:session` on an ssh alias.
    #[arg(value_name = "TARGET", required = true)]
    targets: Vec<String>,
    /// Seconds between polls.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = crate::secs(1))]
    interval: u64,
    /// Shell command printing the amount of work left (any form, sign-offs included); 0 means none.
    #[arg(long, value_name = "CMD")]
    work_probe: Option<String>,
    /// Shell command printing a monotonic progress count; each advance resets the nudge budget.
    #[arg(long, value_name = "CMD")]
    progress_probe: Option<String>,
    /// Nudges without progress before the monitor stops nudging and escalates.
    #[arg(long, value_name = "N", default_value_t = 5)]
    nudge_budget: u32,
    /// The nudge typed into a STALLED pane (then Enter, as a separate key).
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_NUDGE_TEXT)]
    nudge_text: String,
    /// Shell command that receives each escalation on stdin, with BMB_TARGET, BMB_STATE, BMB_REASON set.
    #[arg(long, value_name = "CMD")]
    alert_cmd: Option<String>,
    /// Seconds a capture (local or over ssh) may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1))]
    capture_timeout: u64,
    /// Seconds a probe or the alert command may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1))]
    probe_timeout: u64,
    /// How the alert command receives the message.
    #[arg(long, value_enum, default_value = "text")]
    alert_format: AlertFormat,
    #[command(flatten)]
    server: ServerArgs,
    /// Poll once, print the lines, exit 0.
    #[arg(long)]
    once: bool,
    /// Print JSON Lines instead of the MONITOR lines.
    #[arg(long)]
    json: bool,
    /// Run each target's monitor in its own detached tmux session (`monitor-<session>`).
    #[arg(long)]
    detach: bool,
    /// Read the pane alone: do not consult Claude Code's own session file
    /// (`<claude-dir>/sessions/<pid>.json`) as a second witness.
    #[arg(long)]
    no_witness: bool,
}

pub fn run(args: Args) -> ExitCode {
    let targets = match parse_targets(&args.targets) {
        Ok(targets) => targets,
        Err(message) => return usage_error("watch", &message),
    };
    if args.nudge_text.trim().is_empty() || args.nudge_text.chars().any(char::is_control) {
        return usage_error(
            "watch",
            "--nudge-text must be one non-empty line without control characters",
        );
    }
    if args.detach {
        return detach(&args, &targets);
    }
    probes::signals::install_stop_handler();
    let mut watch = match Watch::new(&args, targets, &state_dir()) {
        Ok(watch) => watch,
        Err(message) => return usage_error("watch", &message),
    };
    loop {
        watch.cycle();
        if args.once || !probes::signals::sleep_unless_stopped(Duration::from_secs(args.interval)) {
            return ExitCode::SUCCESS;
        }
    }
}

fn parse_targets(texts: &[String]) -> Result<Vec<Target>, String> {
    let mut targets: Vec<Target> = Vec::new();
    for text in texts {
        let target = Target::parse(text)?;
        if targets.contains(&target) {
            return Err(format!("target `{target}` is given twice"));
        }
        targets.push(target);
    }
    Ok(targets)
}

/// One watched target: its monitor, its journal, and the errors last said.
struct Watched {
    target: Target,
    monitor: TargetMonitor,
    journal: FindingsLog,
    journal_error: Option<String>,
    /// The pane this cycle read (`%N`): a nudge goes there, not to whatever
    /// pane of the session is active by the time it is sent.
    pane_id: Option<String>,
    /// The session's panes were searched for the agent once (at the first
    /// cycle that found no agent in the active pane and none remembered).
    searched: bool,

    /// Held while this process watches the target.
    _lock: Option<probes::lock::Lock>,
}

struct Watch<'a> {
    args: &'a Args,
    watched: Vec<Watched>,
    probe_errors: SaidOnce<String>,
    cycle: u64,
    /// The user's profile folder as last read; re-read when it changes.
    profiles: crate::profiles::UserProfiles,
    /// The profiles in force (the built-ins and the user's).
    current_profiles: std::sync::Arc<classify::Profiles>,
}

impl<'a> Watch<'a> {
    /// Loads each target's memory and takes its lock: a target another
    /// monitor watches on this server is refused (two would each spend the
    /// nudge budget).
    fn new(
        args: &'a Args,
        targets: Vec<Target>,
        state_dir: &std::path::Path,
    ) -> Result<Watch<'a>, String> {
        let config = SessionConfig {
            budget: args.nudge_budget,
            nudge_text: args.nudge_text.clone(),
            ..SessionConfig::default()
        };
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
        if let Err(err) = std::fs::create_dir_all(&dir) {
            say(format_args!(
                "bmb-monitor: watch: cannot create the state folder {}: {err}; state will not survive a restart",
                dir.display()
            ));
        }
        let mut watched = Vec::new();
        for target in targets {
            let key = state_file_key(&target);
            let lock = match probes::lock::try_lock(&dir.join(format!("{key}.lock"))) {
                Ok(lock) => Some(lock),
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
            let path = dir.join(format!("{key}.jsonl"));
            let memory = load_memory(&path);
            let monitor = TargetMonitor::new(target.to_string(), config.clone(), memory);
            watched.push(Watched {
                target,
                monitor,
                journal: FindingsLog::new(path),
                journal_error: None,
                pane_id: None,
                searched: false,
                _lock: lock,
            });
        }
        let mut watch = Watch {
            args,
            watched,
            probe_errors: SaidOnce::default(),
            cycle: 0,
            profiles: crate::profiles::UserProfiles::default(),
            current_profiles: watchdog::session::builtin_profiles(),
        };
        watch.reload_profiles();
        Ok(watch)
    }

    /// The user's profiles reach every monitor, and a change to their folder
    /// (a profile added, fixed or removed) takes effect without a restart.
    fn reload_profiles(&mut self) {
        if let Some(profiles) = self.profiles.reload_if_changed() {
            for watched in &mut self.watched {
                watched.monitor.set_profiles(profiles.clone());
            }
            self.current_profiles = profiles;
        }
    }

    fn cycle(&mut self) {
        self.cycle += 1;
        self.reload_profiles();
        // The probes first: they may take seconds, and the screen must be
        // read as close as possible to the keys that act on it.
        let works = self.probe_all(self.args.work_probe.as_deref(), "work");
        let progresses = self.probe_all(self.args.progress_probe.as_deref(), "progress");
        let mut captures = self.capture_all();
        self.find_agent_panes(&mut captures);
        let processes = self.pane_processes(&captures);
        if probes::signals::stop_requested() {
            // A SIGTERM cut this cycle's probes or captures short: what they
            // said is not an answer (an unknown work count would be read as
            // work and nudged), so act on none of it.
            return;
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
        for (index, capture) in captures.into_iter().enumerate() {
            let work = works[index].as_deref().map_or(Work::Unknown, Work::parse);
            let progress = progresses[index].as_deref().and_then(parse_count);
            let watched = &mut self.watched[index];
            watched.pane_id = capture.as_ref().ok().and_then(|c| c.pane_id.clone());
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
            };
            let (report, actions) = watched.monitor.poll(observation);
            if let Some(error) = &report.error {
                say(format_args!(
                    "bmb-monitor: watch: {}: {error}",
                    watched.target
                ));
            }
            for action in actions {
                execute(self.args, watched, action);
            }
            print_report(&report, self.args.json);
        }
    }

    /// What each pane's processes tell: the agent's own account (Claude
    /// Code's session file, with the CLI version it records) and whether
    /// anything runs under the pane's foreground process. Read directly on
    /// this machine, and with one bounded ssh call per remote host, made
    /// only when it has something to ask.
    fn pane_processes(&self, captures: &[Result<PaneCapture, String>]) -> Vec<PaneProcesses> {
        let mut found: Vec<PaneProcesses> = vec![PaneProcesses::default(); captures.len()];
        let mut remote: BTreeMap<&str, Vec<(usize, u32)>> = BTreeMap::new();
        for (index, capture) in captures.iter().enumerate() {
            let Some(capture) = capture.as_ref().ok() else {
                continue;
            };
            let Some(pane_pid) = capture.pane_pid else {
                continue;
            };
            match self.watched[index].target.host.as_deref() {
                None => {
                    found[index].foreground = probes::procfs::foreground_of(
                        pane_pid,
                        watchdog::session::TERMINAL_WRAPPERS,
                    );
                    if !self.args.no_witness {
                        found[index].witness = Some(local_witness(pane_pid));
                    }
                }
                Some(host) => remote.entry(host).or_default().push((index, pane_pid)),
            }
        }
        for (host, panes) in remote {
            let pids: Vec<u32> = panes.iter().map(|&(_, pid)| pid).collect();
            let mut script = probes::procfs::remote_foreground_script(&pids);
            if !self.args.no_witness {
                script.push_str(&probes::claude::remote_script(&pids));
            }
            let ssh = self.args.server.remote(host);
            let outcome = run::run(
                &ssh.invocation(&script),
                &Limits::with_timeout(Duration::from_secs(self.args.capture_timeout)),
            );
            let text = outcome.success_stdout().map(|out| out.text());
            let files = text
                .as_deref()
                .map(probes::claude::parse_remote)
                .unwrap_or_default();
            let mut fronts = text
                .as_deref()
                .map(probes::procfs::parse_remote_foreground)
                .unwrap_or_default();
            for (index, pane_pid) in panes {
                found[index].foreground = fronts
                    .iter()
                    .position(|(pid, _)| *pid == pane_pid)
                    .map(|at| fronts.swap_remove(at).1);
                if self.args.no_witness {
                    continue;
                }
                let witness = match files.iter().find(|(root, _)| *root == pane_pid) {
                    Some((_, file)) => (
                        Witness::from_session_file(&file.text, file.start_ticks),
                        session_version(&file.text),
                    ),
                    None if text.is_some() => (Witness::Absent(NO_SESSION_FILE.to_string()), None),
                    None => (
                        Witness::Absent(format!(
                            "the session-file search on {host} {}",
                            outcome.describe()
                        )),
                        None,
                    ),
                };
                found[index].witness = Some(witness);
            }
        }
        found
    }

    /// Once per target, when no pane is remembered for it and its active
    /// pane shows no agent any profile knows (the user's focus on a shell
    /// beside the agent, when the monitor starts), the session's other panes
    /// are read and the first where a profile recognises an agent is taken:
    /// otherwise the shell in front would be paged as an exited agent and the
    /// agent never watched. Costs two invocations, once.
    fn find_agent_panes(&mut self, captures: &mut [Result<PaneCapture, String>]) {
        let profiles = self.current_profiles.clone();
        for (index, capture) in captures.iter_mut().enumerate() {
            let watched = &mut self.watched[index];
            if watched.searched || watched.monitor.memory().agent_pane.is_some() {
                continue;
            }
            watched.searched = true;
            let Ok(shown) = capture.as_ref() else {
                continue;
            };
            if classify::detect_profile(&shown.text, &profiles).is_some() && !shows_a_shell(shown) {
                continue;
            }
            let tmux = self.args.server.tmux(
                watched.target.host.as_deref(),
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
                classify::detect_profile(&other.text, &profiles).is_some() && !shows_a_shell(other)
            });
            if let Some(agent) = agent {
                *capture = Ok(agent);
            }
        }
    }

    /// Every target's pane, grouped by host so each server costs two invocations.
    fn capture_all(&self) -> Vec<Result<PaneCapture, String>> {
        let mut results: Vec<Result<PaneCapture, String>> =
            vec![Err(String::new()); self.watched.len()];
        let mut by_host: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
        for (index, watched) in self.watched.iter().enumerate() {
            by_host
                .entry(watched.target.host.as_deref())
                .or_default()
                .push(index);
        }
        // Fresh and unpredictable each cycle: a pane that prints a marker
        // line must not be able to pose as another pane's capture.
        let nonce = probes::tmux::fresh_nonce();
        let capture_host = |host: Option<&str>, indices: &[usize]| {
            let timeout = Duration::from_secs(self.args.capture_timeout);
            let tmux = self.args.server.tmux(host, timeout);
            let targets: Vec<(String, Option<probes::tmux::KnownPane>)> = indices
                .iter()
                .map(|&i| {
                    let watched = &self.watched[i];
                    // The pane the agent was last seen in, whichever pane is
                    // active (a split, a second window): looking at another
                    // pane is no "agent exited".
                    let agent_pane = watched.monitor.memory().agent_pane.clone();
                    let known = agent_pane.map(|(id, pid)| probes::tmux::KnownPane { id, pid });
                    (watched.target.session.clone(), known)
                })
                .collect();
            match tmux.capture_panes(&targets, &nonce) {
                Ok(captures) => captures,
                Err(error) => vec![Err(error); indices.len()],
            }
        };
        // Hosts are asked side by side, so a hung one costs its own timeout, not
        // everyone's; a single server is asked from this thread.
        let groups: Vec<(Option<&str>, Vec<usize>)> = by_host.into_iter().collect();
        let answers: Vec<Vec<Result<PaneCapture, String>>> = if groups.len() == 1 {
            groups
                .iter()
                .map(|(host, indices)| capture_host(*host, indices))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = groups
                    .iter()
                    .map(|(host, indices)| scope.spawn(move || capture_host(*host, indices)))
                    .collect();
                handles
                    .into_iter()
                    .zip(&groups)
                    .map(|(handle, (_, indices))| {
                        handle.join().unwrap_or_else(|_| {
                            vec![Err("the capture thread failed".to_string()); indices.len()]
                        })
                    })
                    .collect()
            })
        };
        for ((_, indices), captures) in groups.iter().zip(answers) {
            for (&index, capture) in indices.iter().zip(captures) {
                results[index] = capture;
            }
        }
        results
    }

    /// A probe's stdout per target. A command that does not mention
    /// `BMB_TARGET` cannot differ per target, so it runs once per cycle.
    fn probe_all(&mut self, command: Option<&str>, what: &str) -> Vec<Option<String>> {
        let Some(command) = command else {
            return vec![None; self.watched.len()];
        };
        if !command.contains("BMB_TARGET") {
            let answer = self.probe(command, None, what);
            return vec![answer; self.watched.len()];
        }
        let targets: Vec<String> = self.watched.iter().map(|w| w.target.to_string()).collect();
        targets
            .iter()
            .map(|target| self.probe(command, Some(target), what))
            .collect()
    }

    fn probe(&mut self, command: &str, target: Option<&str>, what: &str) -> Option<String> {
        let mut invocation = Invocation::shell(command);
        if let Some(target) = target {
            invocation = invocation.env("BMB_TARGET", target);
        }
        let outcome = run::run(
            &invocation,
            &Limits::with_timeout(Duration::from_secs(self.args.probe_timeout)),
        );
        let key = format!("{what}:{}", target.unwrap_or("*"));
        let answer = outcome.success_stdout().map(|out| out.text());
        let problem = match &answer {
            // A probe prints a count; anything else (`seven`, `-1`, two numbers) is unknown.
            Some(text) if parse_count(text).is_some() => None,
            Some(text) => Some(format!(
                "{what} probe printed {:?}, not a count",
                printable_excerpt(text)
            )),
            None => Some(format!("{what} probe {}", outcome.describe())),
        };
        match problem {
            None => {
                self.probe_errors.clear(&key);
                answer
            }
            Some(message) => {
                // Unknown, said once per change: the classifier fails open on it.
                self.probe_errors.say(
                    key,
                    &format!(
                        "bmb-monitor: watch: {}: {message}; reading it as unknown",
                        target.unwrap_or("every target")
                    ),
                );
                None
            }
        }
    }
}

/// The start of a probe's output, for a message: one line, at most 40 characters.
fn printable_excerpt(text: &str) -> String {
    sanitize_text(text.trim())
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(40)
        .collect()
}

const NO_SESSION_FILE: &str = "no Claude Code session file among the pane's processes";

/// Claude Code's session file for a local pane, read as a witness, and the
/// version it records.
fn local_witness(pane_pid: u32) -> (Witness, Option<String>) {
    match probes::claude::find_session_file(pane_pid) {
        Some(file) => (
            Witness::from_session_file(&file.text, file.start_ticks),
            session_version(&file.text),
        ),
        None => (Witness::Absent(NO_SESSION_FILE.to_string()), None),
    }
}

/// tmux says a shell is the pane's foreground program.
fn shows_a_shell(capture: &PaneCapture) -> bool {
    capture.current_command.as_ref().is_some_and(|command| {
        Foreground {
            command: command.clone(),
            ..Foreground::default()
        }
        .idle_shell()
        .is_some()
    })
}

/// What a pane's processes told this cycle.
#[derive(Debug, Clone, Default)]
struct PaneProcesses {
    /// The session file's account and the CLI version it records; `None`
    /// with `--no-witness` or when the pane had no pid.
    witness: Option<(Witness, Option<String>)>,
    /// The process in the pane's foreground as `/proc` tells it; `None`
    /// when not read (a shell in front of a pane whose processes could not
    /// be read then counts as idle: typing into a shell runs a command).
    foreground: Option<probes::procfs::ForegroundProcess>,
}

fn execute(args: &Args, watched: &mut Watched, action: Action) {
    match action {
        Action::Record(record) => {
            let result = watched.journal.append(&record_line(&record));
            let error = result.err();
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
            let tmux = args.server.tmux(
                watched.target.host.as_deref(),
                Duration::from_secs(args.capture_timeout),
            );
            let pane = watched
                .pane_id
                .clone()
                .unwrap_or_else(|| format!("={}:", watched.target.session));
            if let Err(error) = tmux.send_line(&pane, &text) {
                say(format_args!(
                    "bmb-monitor: watch: {}: nudge not delivered: {error}",
                    watched.target
                ));
            }
        }
        Action::Alert(alert) => {
            if send_alert(args, &watched.target, &alert) {
                // Delivered: only now is it "sent" across a restart.
                execute(args, watched, Action::Record(alert.record));
            } else {
                // Nobody got it: the monitor sends it again next poll (and
                // the journal never said it was sent).
                for record in watched.monitor.alert_failed(&alert) {
                    execute(args, watched, Action::Record(record));
                }
            }
        }
    }
}

/// The alert funnel: `sh -c CMD` with the message on stdin, bounded, never
/// fatal. Whether it was delivered (without `--alert-cmd`, stderr is the funnel).
fn send_alert(args: &Args, target: &Target, alert: &Alert) -> bool {
    let message = match args.alert_format {
        AlertFormat::Text => sanitize_text(&alert.message),
        AlertFormat::Html => escape_html(&sanitize_text(&alert.message)),
    };
    let Some(command) = &args.alert_cmd else {
        say(format_args!(
            "bmb-monitor: alert ({}): {}",
            alert.reason,
            sanitize_text(&alert.message).replace('\n', "\n    ")
        ));
        return true;
    };
    let invocation = Invocation::shell(command)
        .env("BMB_TARGET", target.to_string())
        .env("BMB_STATE", alert.state.as_str())
        .env("BMB_REASON", alert.reason)
        .stdin(message.into_bytes());
    let outcome = run::run(
        &invocation,
        &Limits::with_timeout(Duration::from_secs(args.probe_timeout)),
    );
    let delivered = matches!(outcome, Outcome::Exited { code: Some(0), .. });
    if !delivered {
        say(format_args!(
            "bmb-monitor: watch: {target}: alert command {}; it will be sent again next poll",
            outcome.describe()
        ));
    }
    delivered
}

/// No control character or escape sequence reaches a terminal or a chat:
/// every line as the classifier reads it (escapes and controls removed).
pub fn sanitize_text(text: &str) -> String {
    classify::plain_text(text)
}

pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn print_report(report: &PollReport, json: bool) {
    let clock = probes::clock::local_hhmmss(probes::clock::now_epoch());
    let line = if json {
        let value = serde_json::json!({
            "target": report.target,
            "state": report.state.map(|s| s.as_str()),
            "work": report.work.count(),
            "progress": report.progress,
            "nudges": report.nudges_used,
            "budget": report.budget,
            "done": report.done,
            "rule": report.rule,
            "evidence": report.evidence,
            "error": report.error,
            "pane_state": report.pane_state.map(|s| s.as_str()),
            "witness": report.witness,
            "disagreements": report.disagreements,
            "typing_safe": report.typing_safe,
            "not_typed_because": report.refusal.map(|r| r.word()),
            "unrecognised": report.unrecognised,
            "time": clock,
        });
        value.to_string()
    } else {
        sanitize_text(&report.line(&clock))
    };
    // A closed stdout must not end the monitor (seed: the loop never exits on error).
    print(line);
}

/// A journal larger than this is not ours (a few records a poll at most).
const JOURNAL_MAX_BYTES: u64 = 256 << 20;

fn load_memory(path: &std::path::Path) -> SessionMemory {
    let text = match probes::file::read_regular_text(path, JOURNAL_MAX_BYTES) {
        Ok(text) => text,
        Err(probes::file::ReadError::Missing) => return SessionMemory::default(),
        Err(err) => {
            say(format_args!(
                "bmb-monitor: watch: cannot read saved state {}: it {err}; starting fresh",
                path.display()
            ));
            return SessionMemory::default();
        }
    };
    let (records, errors) = parse_records(&text);
    for error in errors {
        say(format_args!(
            "bmb-monitor: watch: {}: {error}; that record is skipped",
            path.display()
        ));
    }
    let memory = SessionMemory::replay(&records);
    if records.len() > COMPACT_AFTER_RECORDS {
        compact(path, &memory);
    }
    memory
}

/// A journal longer than this is rewritten, at start, as the few records
/// that replay to the same memory, so replay stays bounded however long a
/// target is watched.
const COMPACT_AFTER_RECORDS: usize = 1000;

/// Replaces the journal with `memory`'s compacted records: written beside it
/// and renamed over it, so a crash leaves one or the other, whole.
fn compact(path: &std::path::Path, memory: &SessionMemory) {
    let mut text = String::new();
    for record in memory.compacted() {
        text.push_str(&record_line(&record));
        text.push('\n');
    }
    let fresh = path.with_extension("jsonl.compact");
    let written = std::fs::File::create(&fresh)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            // On disk before it replaces the journal, or a power cut could
            // leave an empty one.
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&fresh, path));
    if let Err(err) = written {
        let _ = std::fs::remove_file(&fresh);
        say(format_args!(
            "bmb-monitor: watch: cannot compact {}: {err}; it is replayed whole",
            path.display()
        ));
    }
}

/// The name of a target's journal and lock files: the target with `:` as
/// `~`, or, for a name too long for a file name (255 bytes with the
/// extension), its first 100 bytes and a hash of the whole, so every target
/// tmux accepts gets files that can be created.
fn state_file_key(target: &Target) -> String {
    let key = target.to_string().replace(':', "~");
    if key.len() <= 200 {
        return key;
    }
    let mut cut = 100;
    while !key.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{}", &key[..cut], watchdog::session::fingerprint(&key))
}

/// `$XDG_STATE_HOME/bmb-monitor`, else `~/.local/state/bmb-monitor`.
fn state_dir() -> PathBuf {
    match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("bmb-monitor"),
        None => {
            let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
            PathBuf::from(home).join(".local/state/bmb-monitor")
        }
    }
}

/// `--detach`: one detached session per target, running this same command without `--detach`.
fn detach(args: &Args, targets: &[Target]) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe.to_string_lossy().into_owned(),
        Err(err) => {
            return usage_error(
                "watch",
                format!("cannot find this program's path to detach: {err}"),
            );
        }
    };
    let tmux = args
        .server
        .tmux(None, Duration::from_secs(args.capture_timeout));
    let existing = match tmux.list_sessions() {
        Ok(sessions) => sessions,
        Err(err) => return usage_error("watch", &err),
    };
    let mut failed = false;
    for target in targets {
        let name = target.monitor_session();
        if existing.contains(&name) {
            say(format_args!(
                "bmb-monitor: watch: {target} is already watched by session `{name}` (end it with `bmb-monitor stop {target}`)"
            ));
            failed = true;
            continue;
        }
        // The detached session gets the tmux server's environment, not ours:
        // carry the state folder so the monitor remembers what this one would.
        let mut command = Vec::new();
        if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            command.extend([
                "env".to_string(),
                format!("XDG_STATE_HOME={}", state.to_string_lossy()),
            ]);
        }
        command.extend([exe.clone(), "watch".to_string(), target.to_string()]);
        command.extend(forwarded(args));
        match tmux.new_detached_session(&name, &command) {
            Ok(()) => print(format_args!("started {name} watching {target}")),
            Err(err) => {
                say(format_args!(
                    "bmb-monitor: watch: {target}: cannot start `{name}`: {err}"
                ));
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn forwarded(args: &Args) -> Vec<String> {
    let mut out = vec![
        "--interval".to_string(),
        args.interval.to_string(),
        "--nudge-budget".to_string(),
        args.nudge_budget.to_string(),
        "--nudge-text".to_string(),
        args.nudge_text.clone(),
        "--capture-timeout".to_string(),
        args.capture_timeout.to_string(),
        "--probe-timeout".to_string(),
        args.probe_timeout.to_string(),
        "--alert-format".to_string(),
        match args.alert_format {
            AlertFormat::Text => "text".to_string(),
            AlertFormat::Html => "html".to_string(),
        },
    ];
    for (flag, value) in [
        ("--work-probe", &args.work_probe),
        ("--progress-probe", &args.progress_probe),
        ("--alert-cmd", &args.alert_cmd),
    ] {
        if let Some(value) = value {
            out.extend([flag.to_string(), value.clone()]);
        }
    }
    out.extend(args.server.forward());
    if args.json {
        out.push("--json".to_string());
    }
    if args.no_witness {
        out.push("--no-witness".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let targets = parse_targets(&args.targets).unwrap();
        let mut watch = Watch::new(&args, targets, dir.path()).unwrap();
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

    #[test]
    fn alert_text_loses_escapes_and_controls_and_html_is_escaped() {
        assert_eq!(
            sanitize_text("a\u{1b}[31mred\u{1b}[0m\u{7}\nb\tc\r"),
            "ared\nb c"
        );
        assert_eq!(
            sanitize_text("\u{1b}]0;pwned\u{7}title\u{1b}]8;;x\u{1b}\\link\nok"),
            "titlelink\nok"
        );
        // A right-to-left override would make `No` read as `oN`-spoofed text in a chat.
        assert_eq!(
            sanitize_text("Allow \u{202e}?seY\u{202c} \u{2066}x\u{2069}"),
            "Allow ?seY x"
        );
        assert_eq!(
            escape_html("<b>\"x\" & 'y'</b>"),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;"
        );
    }
}
