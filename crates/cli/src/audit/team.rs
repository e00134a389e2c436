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

/// Runs `jobs` with at most `parallel` at once; answers in the jobs' order.
pub(super) fn run_all(
    command: &str,
    project: &std::path::Path,
    jobs: &[Job],
    parallel: usize,
    timeout: Duration,
) -> Vec<Answer> {
    let mut answers: Vec<Option<Answer>> = (0..jobs.len()).map(|_| None).collect();
    for (chunk_start, chunk) in jobs
        .chunks(parallel.max(1))
        .enumerate()
        .map(|(i, c)| (i * parallel.max(1), c))
    {
        let done: Vec<Answer> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|job| scope.spawn(move || ask(command, project, job, timeout)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Answer::Failed("the auditor's thread failed".into()))
                })
                .collect()
        });
        for (offset, answer) in done.into_iter().enumerate() {
            answers[chunk_start + offset] = Some(answer);
        }
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Answer::Failed("not run".into())))
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
        (Outcome::TimedOut { .. }, None) => Answer::Failed(format!(
            "the auditor did not finish in {} s and was ended",
            timeout.as_secs()
        )),
        _ => Answer::Failed(format!("the auditor {}", outcome.describe())),
    }
}
