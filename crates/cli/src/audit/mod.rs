//! `bmb-monitor audit`: the seed's second layer, the deep audit team. The
//! project's own stated rules become dimensions; one read-only auditor per
//! dimension runs in parallel; every citation is checked here, never
//! trusted; the report says only what changed since the last audit.

pub(crate) mod files;
mod prompt;
pub(crate) mod store;
mod team;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ::audit::cite;
use ::audit::plan;
use ::audit::report::{self, DimensionResult, Outcome, Previous};

use crate::alert::{AlertFormat, run_alert_cmd};
use crate::output::{escape_c1, print, print_checked, say, usage_error};

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
pub(crate) const DEFAULT_AGENT_CMD: &str = "claude -p --tools Read,Grep,Glob --permission-mode dontAsk --setting-sources user --no-session-persistence";

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The project to audit (its own rules decide the dimensions).
    #[arg(value_name = "PROJECT_DIR")]
    project: PathBuf,
    /// Print the dimensions and their rules, what was read and skipped, and the
    /// cost, and run nothing (with --json: as one JSON object).
    #[arg(long)]
    plan: bool,
    /// With --plan: the watcher's --audit-every, for the cost per day (6h when not given).
    #[arg(long, value_name = "PERIOD", value_parser = ::audit::cadence::parse_every, requires = "plan")]
    audit_every: Option<Duration>,
    /// The auditor: `sh -c CMD` in the project, the prompt on stdin,
    /// BMB_AUDIT_DIMENSION set; it answers in JSON lines (README).
    #[arg(long, value_name = "CMD", default_value = DEFAULT_AGENT_CMD)]
    agent_cmd: String,
    /// Auditors run at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    parallel: u32,
    /// Seconds each auditor may take before its process group is ended.
    #[arg(long, value_name = "SECS", default_value_t = 900, value_parser = crate::secs(1))]
    timeout: u64,
    /// Audit at most this many dimensions: past it, the least checkable are merged or left out (said in --plan).
    #[arg(long, value_name = "N", default_value_t = plan::DEFAULT_MAX_DIMENSIONS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    max_dimensions: u32,
    /// Shell command that receives the news of this audit on stdin (BMB_PROJECT, BMB_REASON=audit set).
    #[arg(long, value_name = "CMD")]
    alert_cmd: Option<String>,
    /// How the alert command receives the message.
    #[arg(long, value_enum, default_value = "text")]
    alert_format: AlertFormat,
    /// Print the report as one JSON object instead of markdown.
    #[arg(long)]
    json: bool,
    /// `watch --audit`'s way in: the agent and alert commands come on stdin
    /// as JSON (`{"agent_cmd": …, "alert_cmd": …}`), never in this
    /// process's argv, where `ps` would show a token they carry.
    #[arg(long, hide = true)]
    commands_on_stdin: bool,
}

/// What `watch --audit` hands its audit on stdin.
#[derive(serde::Serialize, serde::Deserialize, Default)]
pub(crate) struct PipedCommands {
    pub(crate) agent_cmd: Option<String>,
    pub(crate) alert_cmd: Option<String>,
}

/// The most read of `--commands-on-stdin`.
const PIPED_COMMANDS_CAP: u64 = 1 << 20;

fn read_piped_commands(args: &mut Args) -> Result<(), String> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .take(PIPED_COMMANDS_CAP)
        .read_to_string(&mut text)
        .map_err(|e| format!("--commands-on-stdin: cannot read stdin: {e}"))?;
    let piped: PipedCommands = serde_json::from_str(&text)
        .map_err(|e| format!("--commands-on-stdin: stdin is not the commands' JSON: {e}"))?;
    if let Some(command) = piped.agent_cmd {
        args.agent_cmd = command;
    }
    if piped.alert_cmd.is_some() {
        args.alert_cmd = piped.alert_cmd;
    }
    Ok(())
}

pub(crate) fn run(mut args: Args) -> ExitCode {
    if args.commands_on_stdin
        && let Err(why) = read_piped_commands(&mut args)
    {
        return usage_error("audit", why);
    }
    let root = match files::project_root(&args.project) {
        Ok(root) => root,
        Err(why) => return usage_error("audit", why),
    };
    let sources = match probes::project::rules::discover(&root) {
        Ok(found) => found,
        Err(why) => return usage_error("audit", format_args!("{}: {why}", root.display())),
    };
    let plan = plan::plan(&sources.pairs(), Some(args.max_dimensions as usize));
    if args.plan {
        // What was skipped is part of the plan's answer, not a warning.
        let notes = plan::Notes {
            read: sources
                .files
                .iter()
                .map(|file| (file.path.clone(), file.from.clone()))
                .collect(),
            skipped: sources
                .skipped
                .iter()
                .map(|skip| (skip.path.clone(), skip.why.to_string()))
                .collect(),
            audit_every: args.audit_every,
        };
        if args.json {
            print(plan.to_json(&notes));
        } else {
            print(plan.render_with(&notes).trim_end());
        }
        return crate::exit::code(crate::exit::OK);
    }
    for skipped in &sources.skipped {
        say(format_args!(
            "bmb-monitor: audit: skipped {}: {}",
            skipped.path, skipped.why
        ));
    }
    for left in &plan.left_out {
        say(format_args!(
            "bmb-monitor: audit: not audited: {} ({} rules): {}; see --plan",
            left.name, left.rules, left.why
        ));
    }
    probes::os::signals::install_stop_handler();
    let folder = store::folder(&crate::state_dir(), &root);
    let _lock = match store::lock(&folder) {
        Ok(lock) => lock,
        Err(why) => {
            say(format_args!(
                "bmb-monitor: audit: {}: {why}",
                root.display()
            ));
            return crate::exit::code(crate::exit::FAILURE);
        }
    };
    let project = root.to_string_lossy().into_owned();
    let git_timeout = Duration::from_secs(60);
    let before = probes::project::git::audit_fingerprint(&root, git_timeout);
    let jobs: Vec<team::Job> = plan
        .dimensions
        .iter()
        .map(|dimension| team::Job {
            dimension: dimension.name.clone(),
            prompt: prompt::prompt(&project, dimension, plan.fallback),
        })
        .collect();
    let answers = team::run_all(
        &args.agent_cmd,
        &root,
        &jobs,
        args.parallel as usize,
        Duration::from_secs(args.timeout),
    );
    if probes::os::signals::stop_requested() {
        // Stopped (SIGTERM, SIGINT) while auditors ran: what they said is
        // not an audit, and must not replace the last one.
        say(format_args!(
            "bmb-monitor: audit: stopped before every auditor answered; this audit is not kept"
        ));
        return crate::exit::code(crate::exit::OK);
    }
    let after = probes::project::git::audit_fingerprint(&root, git_timeout);
    let (changed, unverified) = match (&before, &after) {
        (Ok(before), Ok(after)) if before != after => (
            Some(
                "the project's git state (HEAD, `git status` with ignored files, .git/config or its hooks) changed while the auditors ran: an auditor wrote to it, or something else did meanwhile".to_string(),
            ),
            None,
        ),
        (Ok(_), Ok(_)) => (None, None),
        (Err(why), _) | (_, Err(why)) => (
            None,
            Some(format!(
                "the auditors' writes cannot be seen ({why}), so this audit's read-only use is not verified"
            )),
        ),
    };
    let mut tree = files::ProjectTree::new(root.clone());
    let plan_rules: Vec<plan::Rule> = plan
        .dimensions
        .iter()
        .flat_map(|d| d.rules.iter().cloned())
        .collect();
    let results: Vec<DimensionResult> = plan
        .dimensions
        .iter()
        .zip(answers)
        .map(|(dimension, answer)| {
            let scope = cite::Scope {
                rules: &dimension.rules,
                plan_rules: &plan_rules,
            };
            let outcome = match answer {
                team::Answer::Said(text) => Outcome::Checked(cite::check(&text, scope, &mut tree)),
                team::Answer::Failed(why) => Outcome::Failed(why),
            };
            DimensionResult {
                name: dimension.name.clone(),
                rules: dimension.rules.iter().map(cite::rule_ref).collect(),
                outcome,
            }
        })
        .collect();
    let previous = match store::last(&folder) {
        Ok(last) => last.and_then(|json| match Previous::from_json(&json) {
            Ok(previous) => Some(previous),
            Err(why) => {
                say(format_args!(
                    "bmb-monitor: audit: the last audit cannot be compared with: {why}; {}",
                    store::set_aside(&folder)
                ));
                None
            }
        }),
        Err(why) => {
            say(format_args!(
                "bmb-monitor: audit: the last audit cannot be read: {why}; {}",
                store::set_aside(&folder)
            ));
            None
        }
    };
    let mut report = report::synthesise(results, previous.as_ref(), changed, &mut tree);
    report.unverified = unverified;
    report.project = project.clone();
    let json = report.to_json();
    let markdown = report.markdown();
    if let Err(why) = store::keep(&folder, &json, &markdown) {
        say(format_args!(
            "bmb-monitor: audit: this audit is not kept: {why}"
        ));
    }
    let printed = if args.json {
        // No C1 control reaches a terminal from a quote (serde_json escapes C0 only).
        print_checked(escape_c1(&json.to_string()))
    } else {
        print_checked(markdown.trim_end())
    };
    if let (Some(command), Some(news)) = (&args.alert_cmd, report.alert()) {
        send_alert(command, args.alert_format, &project, &news);
    }
    match printed {
        Ok(()) => crate::exit::code(crate::exit::OK),
        Err(why) => {
            say(format_args!(
                "bmb-monitor: audit: the report could not be printed ({why}); it is kept in {}",
                folder.display()
            ));
            crate::exit::code(crate::exit::FAILURE)
        }
    }
}

/// The audit's news through the alert command, bounded, never fatal.
fn send_alert(command: &str, format: AlertFormat, project: &str, news: &str) {
    let env = [
        ("BMB_PROJECT", project.to_string()),
        ("BMB_REASON", "audit".to_string()),
    ];
    if let Err(how) = run_alert_cmd(command, &env, news, format, Duration::from_secs(60)) {
        say(format_args!(
            "bmb-monitor: audit: alert command {how}; the report is kept"
        ));
    }
}
