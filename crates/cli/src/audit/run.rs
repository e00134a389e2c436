//! The audit, step by step: the project's rules planned into dimensions, the
//! team run under the project's lock, each answer's citations checked, the
//! report compared with the last one, kept, printed and sent.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ::audit::cite;
use ::audit::plan::{self, Plan};
use ::audit::report::{self, DimensionResult, Outcome, Previous};
use probes::project::git::{self, GitError};
use probes::project::rules::Discovery;

use super::args::Args;
use super::news::send_alert;
use super::piped::read_piped_commands;
use super::{files, prompt, store, team};
use crate::output::{escape_c1, print, print_checked, say, usage_error};

/// How long each read of the project's git state may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// `bmb-monitor audit`: with `--plan` the plan alone, else the audit itself.
pub(crate) fn run(mut args: Args) -> ExitCode {
    if args.commands_on_stdin
        && let Err(why) = read_piped_commands(&mut args)
    {
        return usage_error("audit", why);
    }
    let (root, sources) = match project_rules(&args.project) {
        Ok(found) => found,
        Err(why) => return usage_error("audit", why),
    };
    let plan = plan::plan(&sources.pairs(), Some(args.max_dimensions as usize));
    if args.plan {
        print_plan(&args, &sources, &plan);
        return crate::exit::code(crate::exit::OK);
    }
    say_what_is_not_audited(&sources, &plan);
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
    let before = git::audit_fingerprint(&root, GIT_TIMEOUT);
    let answers = ask_the_team(&args, &root, &project, &plan);
    if probes::os::signals::stop_requested() {
        // Stopped (SIGTERM, SIGINT) while auditors ran: what they said is
        // not an audit, and must not replace the last one.
        say(format_args!(
            "bmb-monitor: audit: stopped before every auditor answered; this audit is not kept"
        ));
        return crate::exit::code(crate::exit::OK);
    }
    let after = git::audit_fingerprint(&root, GIT_TIMEOUT);
    let (changed, unverified) = writes_seen(&before, &after);
    let mut tree = files::ProjectTree::new(root.clone());
    let results = check_answers(&plan, answers, &mut tree);
    let previous = previous_audit(&folder);
    let mut report = report::synthesise(results, previous.as_ref(), changed, &mut tree);
    report.unverified = unverified;
    report.project = project.clone();
    deliver(&args, &folder, &project, &report)
}

/// The project's root and its own stated rules, or the usage error that says why not.
fn project_rules(project: &Path) -> Result<(PathBuf, Discovery), String> {
    let root = files::project_root(project)?;
    match probes::project::rules::discover(&root) {
        Ok(found) => Ok((root, found)),
        Err(why) => Err(format!("{}: {why}", root.display())),
    }
}

/// `--plan`: the dimensions, what was read and skipped, and the cost, as text or JSON.
fn print_plan(args: &Args, sources: &Discovery, plan: &Plan) {
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
}

/// The rule files skipped and the dimensions left out, each said on stderr before the audit.
fn say_what_is_not_audited(sources: &Discovery, plan: &Plan) {
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
}

/// One auditor per dimension, `--parallel` at a time, each answer in the plan's order.
fn ask_the_team(args: &Args, root: &Path, project: &str, plan: &Plan) -> Vec<team::Answer> {
    let jobs: Vec<team::Job> = plan
        .dimensions
        .iter()
        .map(|dimension| team::Job {
            dimension: dimension.name.clone(),
            prompt: prompt::prompt(project, dimension, plan.fallback),
        })
        .collect();
    team::run_all(
        &args.agent_cmd,
        root,
        &jobs,
        args.parallel as usize,
        Duration::from_secs(args.timeout),
    )
}

/// The project's git state before and after the auditors, compared: what changed (for the
/// report), or why their read-only use cannot be verified.
fn writes_seen(
    before: &Result<String, GitError>,
    after: &Result<String, GitError>,
) -> (Option<String>, Option<String>) {
    match (before, after) {
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
    }
}

/// Each dimension's answer, its citations checked against the project's files (never trusted).
fn check_answers(
    plan: &Plan,
    answers: Vec<team::Answer>,
    tree: &mut files::ProjectTree,
) -> Vec<DimensionResult> {
    let plan_rules: Vec<plan::Rule> = plan
        .dimensions
        .iter()
        .flat_map(|d| d.rules.iter().cloned())
        .collect();
    plan.dimensions
        .iter()
        .zip(answers)
        .map(|(dimension, answer)| {
            let scope = cite::Scope {
                rules: &dimension.rules,
                plan_rules: &plan_rules,
            };
            let outcome = match answer {
                team::Answer::Said(text) => Outcome::Checked(cite::check(&text, scope, tree)),
                team::Answer::Failed(why) => Outcome::Failed(why),
            };
            DimensionResult {
                name: dimension.name.clone(),
                rules: dimension.rules.iter().map(cite::rule_ref).collect(),
                outcome,
            }
        })
        .collect()
}

/// The last kept audit to compare with; one that cannot be read or compared with is set aside
/// (and said), and this audit reports everything as new.
fn previous_audit(folder: &Path) -> Option<Previous> {
    match store::last(folder) {
        Ok(last) => last.and_then(|json| match Previous::from_json(&json) {
            Ok(previous) => Some(previous),
            Err(why) => {
                say(format_args!(
                    "bmb-monitor: audit: the last audit cannot be compared with: {why}; {}",
                    store::set_aside(folder)
                ));
                None
            }
        }),
        Err(why) => {
            say(format_args!(
                "bmb-monitor: audit: the last audit cannot be read: {why}; {}",
                store::set_aside(folder)
            ));
            None
        }
    }
}

/// The report kept in the project's folder, printed (markdown, or JSON with `--json`) and its
/// news sent to the alert command; failure only when it could not be printed.
fn deliver(args: &Args, folder: &Path, project: &str, report: &report::Report) -> ExitCode {
    let json = report.to_json();
    let markdown = report.markdown();
    if let Err(why) = store::keep(folder, &json, &markdown) {
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
        send_alert(command, args.alert_format, project, &news);
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
