//! `bmb-monitor lead`'s flags, and the usage errors in them.

use std::path::PathBuf;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Seconds between passes.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = crate::secs(0))]
    pub(super) interval: u64,
    /// Seconds without metadata progress before a live agent counts as stalled.
    #[arg(long, value_name = "SECS", default_value_t = 180, value_parser = crate::secs(0))]
    pub(super) idle_stall: u64,
    /// The pipeline's state folder.
    #[arg(long, value_name = "DIR", default_value = ".bmb")]
    pub(super) bmb_dir: PathBuf,
    /// Folder of `*.json` control messages [default: <bmb-dir>/monitor-inbox].
    #[arg(long, value_name = "DIR")]
    pub(super) inbox: Option<PathBuf>,
    /// File the Consultant's events are appended to [default: <bmb-dir>/consultant-events.jsonl].
    #[arg(long, value_name = "FILE")]
    pub(super) consultant_out: Option<PathBuf>,
    /// Seconds a `stalled` or `process_died` report waits for an ack before it is repeated.
    #[arg(long, value_name = "SECS", default_value_t = 120, value_parser = crate::secs(0))]
    pub(super) ack_timeout: u64,
    /// Seconds between sweeps of the current tmux window.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = crate::secs(0))]
    pub(super) sweep_interval: u64,
    /// Never sweep tmux panes.
    #[arg(long)]
    pub(super) no_sweep: bool,
    /// Also type each Lead report into this tmux pane.
    #[arg(long, value_name = "PANE")]
    pub(super) lead_pane: Option<String>,
    /// Also type each Consultant event into this tmux pane.
    #[arg(long, value_name = "PANE")]
    pub(super) consultant_pane: Option<String>,
    #[command(flatten)]
    pub(super) socket: crate::server_args::SocketArgs,
}

/// Usage errors in the flags: one line naming the flag, exit 2 (SPEC §7).
/// A zero interval makes no sense: it used to become 1 s silently.
pub(super) fn check_args(args: &Args) -> Result<(), String> {
    for (flag, value) in [
        ("--interval", args.interval),
        ("--idle-stall", args.idle_stall),
        ("--ack-timeout", args.ack_timeout),
        ("--sweep-interval", args.sweep_interval),
    ] {
        if value == 0 {
            return Err(format!("{flag} must be at least 1 second, got 0"));
        }
    }
    Ok(())
}
