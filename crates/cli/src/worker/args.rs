//! `bmb-monitor worker`'s flags; each falls back as `settings.rs` says.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Take one sample and exit (a test affordance: one pass can never say `idle`).
    #[arg(long)]
    pub(super) once: bool,
    /// The branch this worker is on [env: PLOT_BRANCH]
    #[arg(long, value_name = "B")]
    pub(super) branch: Option<String>,
    /// The desk it sits at [env: PLOT_WORKTREE]
    #[arg(long, value_name = "DIR")]
    pub(super) worktree: Option<PathBuf>,
    /// Where the wrapper records the agent's pid [env: PLOT_PID_FILE; default: $PLOT_WORKTREE/.plot-worker.pid]
    #[arg(long, value_name = "FILE")]
    pub(super) pid_file: Option<PathBuf>,
    /// Where findings are appended [env: PLOT_MONITOR_FILE; default: $PLOT_WORKTREE/.plot-worker.monitor.worker.jsonl]
    #[arg(long, value_name = "FILE")]
    pub(super) findings: Option<PathBuf>,
    /// Seconds between passes [env: PLOT_MONITOR_INTERVAL; default: 30]
    #[arg(long, value_name = "SECS")]
    pub(super) interval: Option<String>,
    /// Transcript silence before the CPU is asked [env: PLOT_MONITOR_QUIET_SECONDS; default: 900]
    #[arg(long, value_name = "SECS")]
    pub(super) quiet_seconds: Option<String>,
    /// Claude Code's config directory [env: CLAUDE_CONFIG_DIR; default: ~/.claude]
    #[arg(long, value_name = "DIR")]
    pub(super) claude_dir: Option<PathBuf>,
    /// One line per pass on stderr: the verdict, and the /proc scans and git calls it cost
    /// (also on with RUST_LOG=debug).
    #[arg(long, short)]
    pub(super) verbose: bool,
}
