//! `watch`'s command line: every flag and its help, and where a remote
//! target's probes run (`--probes-on`).

use std::time::Duration;

use watchdog::session::DEFAULT_NUDGE_TEXT;

use super::report;
use crate::alert::AlertFormat;
use crate::server_args::ServerArgs;

/// Where a remote target's probes run (a local target's run here either way).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum ProbesOn {
    /// On this machine, a process per run (a remote target's `BMB_TARGET` is `host:session`).
    #[default]
    Monitor,
    /// On the target's ssh host, inside the cycle's one request to it: no process here.
    Host,
}

// Every setting a config file gives conflicts with `--config`: the file says it.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Sessions to watch: `session` on this machine, or `host:session` on an ssh alias.
    #[arg(
        value_name = "TARGET",
        required_unless_present = "config",
        conflicts_with = "config"
    )]
    pub(super) targets: Vec<String>,
    /// Seconds between polls.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = crate::secs(1), conflicts_with = "config")]
    pub(super) interval: u64,
    /// Shell command printing the amount of work left (any form, sign-offs included); 0 means none.
    #[arg(long, value_name = "CMD", conflicts_with = "config")]
    pub(super) work_probe: Option<String>,
    /// Shell command printing a monotonic progress count; each advance resets the nudge budget.
    #[arg(long, value_name = "CMD", conflicts_with = "config")]
    pub(super) progress_probe: Option<String>,
    /// Where a remote target's probes run: on this machine, or on its host inside the cycle's one request.
    #[arg(
        long,
        value_enum,
        value_name = "WHERE",
        default_value = "monitor",
        conflicts_with = "config"
    )]
    pub(super) probes_on: ProbesOn,
    /// Nudges without progress before the monitor stops nudging and escalates.
    #[arg(long, value_name = "N", default_value_t = 5, conflicts_with = "config")]
    pub(super) nudge_budget: u32,
    /// The nudge typed into a STALLED pane (then Enter, as a separate key).
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_NUDGE_TEXT, conflicts_with = "config")]
    pub(super) nudge_text: String,
    /// Shell command that receives each escalation on stdin, with BMB_TARGET, BMB_STATE, BMB_REASON, BMB_SERVER set.
    #[arg(long, value_name = "CMD", conflicts_with = "config")]
    pub(super) alert_cmd: Option<String>,
    /// Seconds a capture (local or over ssh) may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1), conflicts_with = "config")]
    pub(super) capture_timeout: u64,
    /// Seconds a probe or the alert command may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1), conflicts_with = "config")]
    pub(super) probe_timeout: u64,
    /// How the alert command receives the message.
    #[arg(long, value_enum, default_value = "text", conflicts_with = "config")]
    pub(super) alert_format: AlertFormat,
    #[command(flatten)]
    pub(super) server: ServerArgs,
    /// Poll once, print the lines, exit 0.
    #[arg(long)]
    pub(super) once: bool,
    /// Print JSON Lines instead of the MONITOR lines.
    #[arg(long)]
    pub(super) json: bool,
    /// Run each target's monitor in its own detached tmux session (`monitor-<session>`).
    #[arg(long, conflicts_with = "config")]
    pub(super) detach: bool,
    /// Read the pane alone: do not consult Claude Code's own session file
    /// (`<claude-dir>/sessions/<pid>.json`) as a second witness.
    #[arg(long)]
    pub(super) no_witness: bool,
    /// Read the targets and their settings from a TOML file (README, "Config file"),
    /// checked up front and re-read on SIGHUP; no target or setting flag with it.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<std::path::PathBuf>,
    /// With --config: only check the file (exit 0 with `ok: N targets`, or its mistakes and exit 2).
    #[arg(long)]
    pub(super) check: bool,
    /// A project to audit on its own cadence beside the poll loop, as `bmb-monitor audit` does (repeatable).
    #[arg(long, value_name = "PROJECT_DIR", requires = "audit_every")]
    pub(super) audit: Vec<std::path::PathBuf>,
    /// How often each --audit project is audited (6h, 90m, 1d). The first audit starts at once,
    /// unless the last one started within this period, even before a restart.
    #[arg(long, value_name = "PERIOD", value_parser = ::audit::cadence::parse_every, requires = "audit")]
    pub(super) audit_every: Option<Duration>,
    /// The auditor command of each --audit run (`bmb-monitor audit --agent-cmd`; its default if not given).
    #[arg(long, value_name = "CMD", requires = "audit")]
    pub(super) audit_agent_cmd: Option<String>,
    /// Alertmanager to post each escalation to, as an alert that fires until the verdict
    /// moves on (`http://127.0.0.1:9093`; its v2 API). Plain http only: this build has no TLS.
    /// `--alert-cmd` still runs; both may be given.
    /// Checked in `run`, not by clap, whose error would quote the value (a
    /// password in its userinfo) verbatim.
    #[arg(long, value_name = "URL")]
    pub(super) alertmanager: Option<String>,
    /// Serve `/metrics` (Prometheus text format) and `/board.json` on this
    /// address (`127.0.0.1:9184`; port 0 picks a free one, said on stderr).
    #[arg(long, value_name = "ADDR")]
    pub(super) metrics_listen: Option<String>,
    /// Which poll lines are printed: a config file's `log` (no flag: the
    /// command line prints the seed's line per poll).
    #[arg(skip)]
    pub(super) log: report::LogMode,
}
