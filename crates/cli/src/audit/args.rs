//! `bmb-monitor audit`'s flags, and the auditor it runs when none is named.

use std::path::PathBuf;
use std::time::Duration;

use ::audit::plan;

use crate::alert::AlertFormat;

/// Claude Code in print mode with read-only tools only, checked against the
/// pinned 2.1.332 (`--help`, and tests/audit_claude.rs against the mock API):
/// - `--tools Read,Grep,Glob`: the only tools offered (no Bash, Edit, Write);
/// - `--permission-mode dontAsk`: what would ask is refused, and what is
///   allowed without asking is reading inside the working directory, the
///   project. No `--allowedTools`: pre-approving Read, Grep and Glob lets them
///   read the whole machine (/etc, ~/.ssh) without asking;
/// - `--setting-sources user`: the project's own `.claude/settings*.json` are
///   not loaded, so its hooks (which run shell commands, e.g. at
///   SessionStart) do not run; the user's settings (credentials, model) are;
/// - `--no-session-persistence`: no session file is kept for the audit.
pub(super) const DEFAULT_AGENT_CMD: &str = "claude -p --tools Read,Grep,Glob --permission-mode dontAsk --setting-sources user --no-session-persistence";

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The project to audit (its own rules decide the dimensions).
    #[arg(value_name = "PROJECT_DIR")]
    pub(super) project: PathBuf,
    /// Print the dimensions and their rules, what was read and skipped, and the
    /// cost, and run nothing (with --json: as one JSON object).
    #[arg(long)]
    pub(super) plan: bool,
    /// With --plan: the watcher's --audit-every, for the cost per day (6h when not given).
    #[arg(long, value_name = "PERIOD", value_parser = ::audit::cadence::parse_every, requires = "plan")]
    pub(super) audit_every: Option<Duration>,
    /// The auditor: `sh -c CMD` in the project, the prompt on stdin,
    /// BMB_AUDIT_DIMENSION set; it answers in JSON lines (README).
    #[arg(long, value_name = "CMD", default_value = DEFAULT_AGENT_CMD)]
    pub(super) agent_cmd: String,
    /// Auditors run at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(super) parallel: u32,
    /// Seconds each auditor may take before its process group is ended.
    #[arg(long, value_name = "SECS", default_value_t = 900, value_parser = crate::secs(1))]
    pub(super) timeout: u64,
    /// Audit at most this many dimensions: past it, the least checkable are merged or left out (said in --plan).
    #[arg(long, value_name = "N", default_value_t = plan::DEFAULT_MAX_DIMENSIONS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) max_dimensions: u32,
    /// Shell command that receives the news of this audit on stdin (BMB_PROJECT, BMB_REASON=audit set).
    #[arg(long, value_name = "CMD")]
    pub(super) alert_cmd: Option<String>,
    /// How the alert command receives the message.
    #[arg(long, value_enum, default_value = "text")]
    pub(super) alert_format: AlertFormat,
    /// Print the report as one JSON object instead of markdown.
    #[arg(long)]
    pub(super) json: bool,
    /// `watch --audit`'s way in: the agent and alert commands come on stdin
    /// as JSON (`{"agent_cmd": …, "alert_cmd": …}`), never in this
    /// process's argv, where `ps` would show a token they carry.
    #[arg(long, hide = true)]
    pub(super) commands_on_stdin: bool,
}
