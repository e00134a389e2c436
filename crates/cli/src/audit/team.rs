//! The auditors, one per dimension, side by side: each `sh -c CMD` with its
//! prompt on stdin, the dimension in its environment and the project as its
//! working directory, under its own wall clock (the process-group kill).

use std::time::Duration;

use probes::run::{self, Invocation, Limits, Outcome};

/// What one auditor said, or how it ended without saying it.
pub(super) enum Answer {
    Said(String),
    Failed(String),
}

/// One auditor's job.
pub(super) struct Job {
    pub(super) dimension: String,
    pub(super) prompt: String,
}

/// Runs `jobs` with at most `parallel` at once, each worker taking the next
/// job as it finishes one (a slow auditor holds up only its own slot);
/// answers in the jobs' order.
pub(super) fn run_all(
    command: &str,
    project: &std::path::Path,
    jobs: &[Job],
    parallel: usize,
    timeout: Duration,
) -> Vec<Answer> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let answers: std::sync::Mutex<Vec<Option<Answer>>> =
        std::sync::Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..parallel.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(job) = jobs.get(index) else { return };
                    let answer = ask(command, project, job, timeout);
                    if let Ok(mut answers) = answers.lock() {
                        answers[index] = Some(answer);
                    }
                }
            });
        }
    });
    answers
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Answer::Failed("the auditor's thread failed".into())))
        .collect()
}

/// The most an auditor may print (its findings are a few kilobytes).
const MAX_ANSWER_BYTES: usize = 4 << 20;

fn ask(command: &str, project: &std::path::Path, job: &Job, timeout: Duration) -> Answer {
    let invocation = Invocation::shell(command)
        .current_dir(project)
        .env("BMB_AUDIT_DIMENSION", &job.dimension)
        .env("BMB_AUDIT_PROJECT", project)
        .stdin(job.prompt.clone().into_bytes());
    let limits = Limits {
        max_output: MAX_ANSWER_BYTES,
        ..Limits::with_timeout(timeout)
    };
    let outcome = run::run(&invocation, &limits);
    match (&outcome, outcome.success_stdout()) {
        (_, Some(out)) => Answer::Said(out.text()),
        (Outcome::TimedOut { stopping: true, .. }, None) => {
            Answer::Failed("the auditor was ended because the audit was stopped".to_string())
        }
        (Outcome::TimedOut { .. }, None) => Answer::Failed(format!(
            "the auditor did not finish in {} s and was ended",
            timeout.as_secs()
        )),
        _ => Answer::Failed(format!("the auditor {}", outcome.describe())),
    }
}
