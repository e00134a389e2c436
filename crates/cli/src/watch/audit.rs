//! `watch --audit DIR --audit-every PERIOD`: the audit team on its own slow
//! cadence beside the poll loop (seed: "Two layers, two cadences"). Each
//! audit is `bmb-monitor audit DIR` in a process of its own, waited on by a
//! thread of its own; the loop only asks, once per cycle, whether one is due
//! or has ended, so no poll waits on an auditor.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

use ::audit::cadence::{Cadence, Turn};
use ::audit::report::Status;
use ::audit::wire::{DimensionJson, ReportJson};
use probes::run::{Invocation, Limits, Outcome};
use watchdog::Clock;

use super::Args;
use crate::alert::{AlertFormat, sanitize_text};
use crate::audit::{files, store};
use crate::clock::SystemClock;
use crate::output::say;

/// The whole audit's wall clock: each auditor has its own (`audit --timeout`),
/// so this only ends an audit that hangs outside them.
const AUDIT_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// The most of an audit's JSON report read back.
const MAX_REPORT_BYTES: usize = 64 << 20;

/// The projects audited beside the loop.
pub(super) struct Audits {
    projects: Vec<Project>,
    /// The `audit` command line common to every project (after `audit DIR`).
    flags: Vec<String>,
    /// What goes on the audit's stdin: the agent and alert commands, which
    /// may carry a token and so never go in its argv.
    commands: Vec<u8>,
}

struct Project {
    root: PathBuf,
    folder: PathBuf,
    cadence: Cadence,
    running: Option<JoinHandle<Outcome>>,
}

impl Audits {
    /// Every `--audit` folder, checked now; each project's schedule resumes
    /// from its last audit's start, kept across restarts.
    pub(super) fn new(args: &Args) -> Result<Audits, String> {
        let Some(every) = args.audit_every else {
            return Ok(Audits {
                projects: Vec::new(),
                flags: Vec::new(),
                commands: Vec::new(),
            });
        };
        let now = SystemClock.now();
        let mut projects: Vec<Project> = Vec::new();
        for dir in &args.audit {
            let root = files::project_root(dir).map_err(|why| format!("--audit {why}"))?;
            if projects.iter().any(|p| p.root == root) {
                return Err(format!("--audit {} is given twice", dir.display()));
            }
            let folder = store::folder(&crate::state_dir(), &root);
            let last = store::last_started(&folder).unwrap_or_else(|why| {
                say(format_args!(
                    "bmb-monitor: watch: the last audit's start is not known ({why}); auditing {} at once",
                    root.display()
                ));
                None
            });
            projects.push(Project {
                cadence: Cadence::new(every, last, now),
                root,
                folder,
                running: None,
            });
        }
        let format = match args.alert_format {
            AlertFormat::Text => "text",
            AlertFormat::Html => "html",
        };
        let flags = vec![
            "--json".to_string(),
            "--alert-format".to_string(),
            format.to_string(),
            "--commands-on-stdin".to_string(),
        ];
        let commands = serde_json::to_vec(&crate::audit::PipedCommands {
            agent_cmd: args.audit_agent_cmd.clone(),
            alert_cmd: args.alert_cmd.clone(),
        })
        .map_err(|e| format!("the audit's commands: {e}"))?;
        Ok(Audits {
            projects,
            flags,
            commands,
        })
    }

    /// Once per cycle, and never blocking: says each audit that ended,
    /// starts each that is due, and skips (saying so) one that is due while
    /// the last still runs.
    pub(super) fn tick(&mut self) {
        let now = SystemClock.now();
        for project in &mut self.projects {
            if project
                .running
                .as_ref()
                .is_some_and(JoinHandle::is_finished)
            {
                if let Some(thread) = project.running.take() {
                    match thread.join() {
                        Ok(outcome) => say_ended(&project.root, &project.folder, &outcome),
                        Err(_) => say(format_args!(
                            "bmb-monitor: watch: the audit of {} ended without an answer",
                            project.root.display()
                        )),
                    }
                }
                project.cadence.finished();
            }
            match project.cadence.turn(now) {
                Turn::Wait => {}
                Turn::Skip { running_since } => say(format_args!(
                    "bmb-monitor: watch: the audit of {} is due, but the one started at {} still runs; skipped",
                    project.root.display(),
                    SystemClock.hhmmss(running_since)
                )),
                Turn::Start => {
                    if let Err(why) = store::mark_started(&project.folder, now) {
                        say(format_args!(
                            "bmb-monitor: watch: the audit's start is not kept ({why}); a restarted watcher audits {} at once",
                            project.root.display()
                        ));
                    }
                    match start(&project.root, &self.flags, &self.commands) {
                        Ok(thread) => {
                            say(format_args!(
                                "bmb-monitor: watch: audit of {} started; next due at {}",
                                project.root.display(),
                                SystemClock.hhmmss(project.cadence.next_due())
                            ));
                            project.running = Some(thread);
                        }
                        Err(why) => {
                            say(format_args!(
                                "bmb-monitor: watch: the audit of {} cannot start: {why}",
                                project.root.display()
                            ));
                            project.cadence.finished();
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

impl Drop for Audits {
    /// A stopping watcher ends its audits (their runs see the stop request
    /// and end their process groups) before it exits.
    fn drop(&mut self) {
        for project in &mut self.projects {
            if let Some(thread) = project.running.take() {
                let _ = thread.join();
            }
        }
    }
}

/// `bmb-monitor audit ROOT FLAGS…`, its commands on stdin, in a thread of its own.
fn start(root: &Path, flags: &[String], commands: &[u8]) -> Result<JoinHandle<Outcome>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let invocation = Invocation::new(exe)
        .arg("audit")
        .arg(root)
        .args(flags)
        .stdin(commands.to_vec());
    let limits = Limits {
        timeout: AUDIT_LIMIT,
        max_output: MAX_REPORT_BYTES,
        ..Limits::default()
    };
    std::thread::Builder::new()
        .name("audit".to_string())
        .spawn(move || probes::run::run(&invocation, &limits))
        .map_err(|e| format!("a thread: {e}"))
}

/// One line for an audit that ended, then the audit's own lines (files it
/// skipped, an alert command that failed), as it said them.
fn say_ended(root: &Path, folder: &Path, outcome: &Outcome) {
    let report = outcome
        .success_stdout()
        .and_then(|out| serde_json::from_slice::<ReportJson>(&out.bytes).ok());
    let kept = folder.join("report.md");
    match &report {
        Some(report) => say(format_args!(
            "bmb-monitor: watch: audit of {} done: {}; {}",
            root.display(),
            summary(report),
            if kept.is_file() {
                format!("report: {}", kept.display())
            } else {
                "the report is not kept".to_string()
            }
        )),
        None => say(format_args!(
            "bmb-monitor: watch: the audit of {} {}",
            root.display(),
            outcome.describe()
        )),
    }
    let stderr = match outcome {
        Outcome::Exited { stderr, .. } | Outcome::TimedOut { stderr, .. } => stderr.text(),
        Outcome::FailedToSpawn { .. } => String::new(),
    };
    // A failure's first line is already in its description.
    let skip = usize::from(report.is_none());
    for line in stderr.lines().filter(|l| !l.trim().is_empty()).skip(skip) {
        say(sanitize_text(line));
    }
}

/// The counts of an audit's report: its findings by status, the holding
/// rules, the rejected items and the auditors that failed.
fn summary(report: &ReportJson) -> String {
    let dimensions = &report.dimensions;
    let findings = || dimensions.iter().flat_map(|d| &d.findings);
    let count_of =
        |list: fn(&DimensionJson) -> usize| -> usize { dimensions.iter().map(list).sum() };
    let new = findings().filter(|f| f.status == Status::New).count();
    let open = findings().filter(|f| f.status == Status::StillOpen).count();
    let failed = dimensions.iter().filter(|d| d.failed.is_some()).count();
    let mut parts = vec![
        format!("{new} new"),
        format!("{open} still open"),
        format!("{} gone", count_of(|d| d.gone.len())),
        format!("{} holding", count_of(|d| d.holds.len())),
        format!("{} rejected", count_of(|d| d.rejected.len())),
    ];
    if failed > 0 {
        parts.push(format!("{failed} of {} auditors failed", dimensions.len()));
    }
    if report.unverified.is_some() {
        parts.insert(0, "not verified read-only".to_string());
    }
    if report.changed_by_auditors.is_some() {
        parts.insert(0, "THE AUDITORS CHANGED THE PROJECT".to_string());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(status: &str) -> String {
        format!(
            r#"{{"severity":"high","rank":1,"claim":"c","file":"f","line":1,"quote":"q","status":"{status}","key":"k","also_in":[]}}"#
        )
    }

    fn dimension(name: &str, failed: &str, findings: &[String], holds: usize) -> String {
        let holds = vec![r#"{"holds":"h","file":"f","line":1,"rule":null}"#; holds].join(",");
        format!(
            r#"{{"name":"{name}","failed":{failed},"findings":[{}],"gone":[{{"severity":"low","rank":1,"claim":"c","file":"f","line":2,"quote":"q","why":"quote_left"}}],"holds":[{holds}],"rejected":[],"ignored_lines":0,"rules_checked":[],"rules_unchecked":[]}}"#,
            findings.join(",")
        )
    }

    fn report(changed: &str, dimensions: &[String]) -> ReportJson {
        let text = format!(
            r#"{{"version":1,"project":"p","changed_by_auditors":{changed},"unverified":null,"dimensions":[{}],"carried":[]}}"#,
            dimensions.join(",")
        );
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn the_summary_counts_the_typed_report() {
        let report = report(
            "null",
            &[
                dimension(
                    "storage",
                    "null",
                    &[finding("new"), finding("still_open"), finding("new")],
                    2,
                ),
                dimension("api", r#""timed out""#, &[], 0),
            ],
        );
        assert_eq!(
            summary(&report),
            "2 new, 1 still open, 2 gone, 2 holding, 0 rejected, 1 of 2 auditors failed"
        );
    }

    #[test]
    fn the_summary_leads_with_a_changed_project() {
        let report = report(r#""HEAD moved""#, &[dimension("storage", "null", &[], 1)]);
        assert_eq!(
            summary(&report),
            "THE AUDITORS CHANGED THE PROJECT, 0 new, 0 still open, 1 gone, 1 holding, 0 rejected"
        );
    }
}
