//! The worker's settings: each flag, else the seed's environment variable,
//! else the seed's default, so a wrapper that started the bash script can
//! start this instead, unchanged.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use probes::agent::transcript;
use watchdog::worker::WorkerConfig;

use super::args::Args;

/// Everything resolved: flags, then environment, then the seed's defaults.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) config: WorkerConfig,
    /// `None` when neither `--worktree` nor `PLOT_WORKTREE` names one: the
    /// seed then runs with `worktree=""`, watching the pid alone.
    pub(super) worktree: Option<PathBuf>,
    /// `None` is the seed's empty `pid_file`: the pid is never recorded.
    pub(super) pid_file: Option<PathBuf>,
    /// `None` is the seed's empty `findings`: findings go to stdout only.
    pub(super) findings: Option<PathBuf>,
    pub(super) claude_dir: Option<PathBuf>,
    pub(super) once: bool,
    pub(super) verbose: bool,
}

/// The seed reads `${VAR:-default}`: an empty variable is an unset one.
fn env(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

pub(super) fn settings(args: Args) -> Result<Settings, String> {
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
