//! `bmb-monitor worker`: the worker monitor, a drop-in for `plot-worker-monitor.sh`.
//!
//! Every flag falls back to the seed's environment variable, then to the
//! seed's default, so a wrapper that started the bash script can start this
//! instead, unchanged. The real adapters for [`WorkerPorts`] are here; the
//! rules are in `watchdog::worker`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ledger::findings::FindingsLog;
use probes::git;
use probes::process::{self, Pid, PidFileState};
use probes::procfs::ProcessTable;
use probes::transcript;
use watchdog::worker::{
    CommitsReading, CpuClocks, PidReading, RememberedPid, Verdict, WorkerConfig, WorkerMonitor,
    WorkerPorts,
};

/// How often, between passes, the pid is checked so the monitor ends the
/// moment its agent does (a liveness check is a file read and a kill(0)).
const PID_POLL: Duration = Duration::from_millis(200);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Take one sample and exit (a test affordance: one pass can never say `idle`).
    #[arg(long)]
    once: bool,
    /// The branch this worker is on [env: PLOT_BRANCH]
    #[arg(long, value_name = "B")]
    branch: Option<String>,
    /// The desk it sits at [env: PLOT_WORKTREE]
    #[arg(long, value_name = "DIR")]
    worktree: Option<PathBuf>,
    /// Where the wrapper records the agent's pid [env: PLOT_PID_FILE; default: $PLOT_WORKTREE/.plot-worker.pid]
    #[arg(long, value_name = "FILE")]
    pid_file: Option<PathBuf>,
    /// Where findings are appended [env: PLOT_MONITOR_FILE; default: $PLOT_WORKTREE/.plot-worker.monitor.worker.jsonl]
    #[arg(long, value_name = "FILE")]
    findings: Option<PathBuf>,
    /// Seconds between passes [env: PLOT_MONITOR_INTERVAL; default: 30]
    #[arg(long, value_name = "SECS")]
    interval: Option<String>,
    /// Transcript silence before the CPU is asked [env: PLOT_MONITOR_QUIET_SECONDS; default: 900]
    #[arg(long, value_name = "SECS")]
    quiet_seconds: Option<String>,
    /// Claude Code's config directory [env: CLAUDE_CONFIG_DIR; default: ~/.claude]
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// One line per pass on stderr: the verdict, and the /proc scans and git calls it cost
    /// (also on with RUST_LOG=debug).
    #[arg(long, short)]
    verbose: bool,
}

/// Everything resolved: flags, then environment, then the seed's defaults.
#[derive(Debug)]
struct Settings {
    config: WorkerConfig,
    /// `None` when neither `--worktree` nor `PLOT_WORKTREE` names one: the
    /// seed then runs with `worktree=""`, watching the pid alone.
    worktree: Option<PathBuf>,
    /// `None` is the seed's empty `pid_file`: the pid is never recorded.
    pid_file: Option<PathBuf>,
    /// `None` is the seed's empty `findings`: findings go to stdout only.
    findings: Option<PathBuf>,
    claude_dir: Option<PathBuf>,
    once: bool,
    verbose: bool,
}

/// The seed reads `${VAR:-default}`: an empty variable is an unset one.
fn env(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

fn settings(args: Args) -> Result<Settings, String> {
    // As the seed's `worktree="${PLOT_WORKTREE:-}"`: no worktree is allowed.
    // A wrapper may give only the pid file and the findings file; then
    // `gone` still works, and what needs the worktree (the transcript, the
    // tree, the commits) is unknown or unanswerable, so `idle` never fires.
    let worktree = args
        .worktree
        .or_else(|| env("PLOT_WORKTREE").map(PathBuf::from));
    let branch = args
        .branch
        .or_else(|| env("PLOT_BRANCH").map(|b| b.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let pid_file = args
        .pid_file
        .or_else(|| env("PLOT_PID_FILE").map(PathBuf::from))
        .or_else(|| worktree.as_ref().map(|w| w.join(".plot-worker.pid")));
    // A name under `.plot-worker.` so the fleet's one exclusion pattern (and
    // this monitor's own tree fingerprint) skips it.
    let findings = args
        .findings
        .or_else(|| env("PLOT_MONITOR_FILE").map(PathBuf::from))
        .or_else(|| {
            worktree
                .as_ref()
                .map(|w| w.join(".plot-worker.monitor.worker.jsonl"))
        });
    if worktree.is_none() && pid_file.is_none() && findings.is_none() {
        return Err(
            "no worktree to watch: pass --worktree or set PLOT_WORKTREE (or at least PLOT_PID_FILE / PLOT_MONITOR_FILE)"
                .to_owned(),
        );
    }

    let interval_text = args
        .interval
        .or_else(|| env("PLOT_MONITOR_INTERVAL").map(|v| v.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "30".to_owned());
    let interval = interval_text
        .trim()
        .parse::<f64>()
        .ok()
        // Under a second, the passes (a /proc scan and git calls each) would
        // be most of a core; the seed's default is 30.
        .filter(|s| s.is_finite() && (1.0..=crate::MAX_SECS as f64).contains(s))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            format!(
                "interval (--interval / PLOT_MONITOR_INTERVAL) must be a number of seconds from 1 to {}, got {interval_text:?}",
                crate::MAX_SECS
            )
        })?;
    let quiet_text = args
        .quiet_seconds
        .or_else(|| env("PLOT_MONITOR_QUIET_SECONDS").map(|v| v.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "900".to_owned());
    let quiet_seconds = quiet_text
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|&secs| secs <= crate::MAX_SECS)
        .ok_or_else(|| {
            format!(
                "quiet window (--quiet-seconds / PLOT_MONITOR_QUIET_SECONDS) must be a whole number of seconds up to {}, got {quiet_text:?}",
                crate::MAX_SECS
            )
        })?;

    let claude_dir = transcript::claude_dir(
        args.claude_dir,
        std::env::var_os("CLAUDE_CONFIG_DIR"),
        std::env::var_os("HOME"),
    );
    let verbose = args.verbose
        || std::env::var("RUST_LOG").is_ok_and(|v| v.contains("debug") || v.contains("trace"));

    Ok(Settings {
        config: WorkerConfig {
            branch,
            worktree: worktree
                .as_ref()
                .map(|w| w.to_string_lossy().into_owned())
                .unwrap_or_default(),
            interval,
            quiet_seconds,
        },
        worktree,
        pid_file,
        findings,
        claude_dir,
        once: args.once,
        verbose,
    })
}

pub fn run(args: Args) -> ExitCode {
    let settings = match settings(args) {
        Ok(settings) => settings,
        Err(message) => {
            say(format_args!("{message}"));
            return crate::exit::code(crate::exit::USAGE);
        }
    };
    if let Some(worktree) = &settings.worktree
        && let Err(why) = probes::git::check_repository(worktree)
    {
        // Said once: with no tree to fingerprint and no commits to count,
        // `idle` can never hold; `gone` still does.
        say(format_args!(
            "{why}: it can never be judged idle (no tree or commits to read); gone is still reported"
        ));
    }
    let log = settings.findings.as_ref().map(FindingsLog::new);
    let mut ports = RealPorts::new(&settings);
    let mut monitor = WorkerMonitor::new(settings.config.clone());
    let mut session = Session {
        log,
        verbose: settings.verbose,
        passes: 0,
        last_unknown: None,
    };

    session.pass(&mut monitor, &mut ports);
    // `--once` is a test affordance, not a mode: `idle` needs two readings.
    if settings.once {
        return ExitCode::SUCCESS;
    }
    // It ends with its agent: the wait returns the moment the pid names no
    // live process, and the FINAL PASS is what publishes `gone` on the way
    // out (exiting without it would lose the loudest finding).
    while wait_for_next_pass(settings.config.interval, &mut ports.pid_watch) {
        session.pass(&mut monitor, &mut ports);
    }
    session.pass(&mut monitor, &mut ports);
    ExitCode::SUCCESS
}

/// Publishing and logging around the state machine.
struct Session {
    /// `None`: no findings file, as the seed's `[ -n "$findings" ]`; stdout only.
    log: Option<FindingsLog>,
    verbose: bool,
    passes: u64,
    /// The last "cannot see" reason said on stderr, so it is said once, not every pass.
    last_unknown: Option<String>,
}

impl Session {
    fn pass(&mut self, monitor: &mut WorkerMonitor, ports: &mut RealPorts) {
        self.passes += 1;
        ports.scans = 0;
        ports.git_calls = 0;
        let started = Instant::now();
        let pass = monitor.pass(ports);
        let spent = started.elapsed();

        if let Some(report) = &pass.report {
            // Both destinations, deliberately: the file is what a subscriber
            // reads; stdout lands in the worker's log where an operator looks.
            if let Some(log) = &self.log
                && let Err(message) = log.append(&report.json)
            {
                say(format_args!("{message}; the finding still goes to stdout"));
            }
            // A closed stdout is not a reason to stop watching.
            crate::output::print(report.stdout_line());
        }

        match &pass.verdict {
            Verdict::Unknown { why } if self.last_unknown.as_deref() != Some(why) => {
                say(format_args!("cannot judge yet: {why}"));
                self.last_unknown = Some(why.clone());
            }
            Verdict::Unknown { .. } => {}
            _ => self.last_unknown = None,
        }
        if self.verbose {
            let note = pass
                .note
                .as_ref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default();
            say(format_args!(
                "pass {}: {}{note} [{} /proc scan, {} git calls, {} µs]",
                self.passes,
                pass.verdict,
                ports.scans,
                ports.git_calls,
                spent.as_micros()
            ));
        }
    }
}

/// One line on stderr, in the worker's own prefix.
fn say(message: std::fmt::Arguments<'_>) {
    crate::output::say(format_args!("bmb-monitor worker: {message}"));
}

/// Sleep until the next pass, checking the pid as it goes. False when the
/// agent is dead (then one final pass runs).
fn wait_for_next_pass(interval: Duration, pid_watch: &mut PidWatch) -> bool {
    let deadline = Instant::now() + interval;
    loop {
        if matches!(pid_watch.read(), PidReading::Dead(_)) {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(PID_POLL));
    }
}

/// The pid file, read fresh each time, and the pid last seen alive.
struct PidWatch {
    /// `None`: no pid file at all, the seed's empty `pid_file` (always "not yet").
    path: Option<PathBuf>,
    remembered: RememberedPid,
}

impl PidWatch {
    fn read(&mut self) -> PidReading {
        let Some(path) = &self.path else {
            return PidReading::NotRecorded {
                reason: "no pid file: pass --pid-file or set PLOT_PID_FILE (or PLOT_WORKTREE)"
                    .to_owned(),
            };
        };
        let file = match process::read_pid_file(path) {
            PidFileState::Alive(pid) => PidReading::Alive(pid.get()),
            PidFileState::Dead(pid) => PidReading::Dead(pid.get()),
            PidFileState::NotRecorded { reason } => PidReading::NotRecorded { reason },
        };
        self.remembered
            .read(file, |pid| Pid::new(pid).is_some_and(process::is_alive))
    }
}

/// The machine, as the worker monitor's ports see it.
struct RealPorts {
    pid_watch: PidWatch,
    /// `None`: no worktree (see [`Settings::worktree`]).
    worktree: Option<PathBuf>,
    /// The worktree made absolute: Claude Code's slug is of its absolute cwd.
    worktree_abs: Option<PathBuf>,
    claude_dir: Option<PathBuf>,
    /// This pass's cost, for the verbose line and the benchmark.
    scans: u32,
    git_calls: u32,
}

impl RealPorts {
    fn new(settings: &Settings) -> Self {
        RealPorts {
            pid_watch: PidWatch {
                path: settings.pid_file.clone(),
                remembered: RememberedPid::new(),
            },
            worktree: settings.worktree.clone(),
            worktree_abs: settings
                .worktree
                .as_ref()
                .map(|w| std::path::absolute(w).unwrap_or_else(|_| w.clone())),
            claude_dir: settings.claude_dir.clone(),
            scans: 0,
            git_calls: 0,
        }
    }
}

impl WorkerPorts for RealPorts {
    fn pid(&mut self) -> PidReading {
        self.pid_watch.read()
    }

    fn transcript_quiet_seconds(&mut self) -> Option<u64> {
        let dir = self.claude_dir.as_deref()?;
        // No worktree, no project directory to look in: unknown.
        let worktree = self.worktree_abs.as_deref()?;
        transcript::quiet_seconds(dir, worktree, SystemTime::now())
    }

    fn descendant_cpu(&mut self, pid: u32) -> Option<CpuClocks> {
        self.scans += 1;
        let pid = Pid::new(pid)?;
        ProcessTable::scan()
            .ok()
            .map(|table| table.descendants_cpu(pid))
    }

    fn tree_fingerprint(&mut self) -> Result<String, String> {
        let Some(worktree) = &self.worktree else {
            return Err("no worktree".to_owned());
        };
        if !worktree.is_dir() {
            return Err(format!("{} is not a directory", worktree.display()));
        }
        self.git_calls += 1;
        git::tree_fingerprint(worktree, git::GIT_TIMEOUT)
    }

    fn commits(&mut self) -> CommitsReading {
        // No worktree: the seed's `monitor_has_commits` returns 2, unanswerable.
        let Some(worktree) = &self.worktree else {
            return CommitsReading::Unanswerable {
                reason: "no worktree".to_owned(),
            };
        };
        // The base ref is read from ref files; only the count is a git call.
        if let Err(reason) = git::local_base_ref(worktree) {
            return CommitsReading::Unanswerable { reason };
        }
        self.git_calls += 1;
        match git::commits_since_base(worktree, git::GIT_TIMEOUT) {
            Ok(n) => CommitsReading::Count(n),
            Err(reason) => CommitsReading::Unanswerable { reason },
        }
    }

    fn now_unix_seconds(&mut self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        }
    }
}
