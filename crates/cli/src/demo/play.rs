//! The script played step by step: each screen shown, the real monitor polled,
//! and what it printed, alerted and typed narrated and checked.

use std::time::Duration;

use probes::run::{self, Invocation, Limits, Outcome};
use probes::ssh::quote_literal;

use super::narrate::say;
use super::sandbox::{SESSION, Sandbox};
use super::script::{STEPS, check, parse_alerts};
use crate::alert::sanitize_text;

/// Plays the script; returns the states the monitor was seen to handle right.
pub(super) fn play(sandbox: &mut Sandbox) -> Result<Vec<&'static str>, String> {
    sandbox.start_server()?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let watch = sandbox.watch_args();
    say!("bmb-monitor demo: a scripted Claude Code session, watched by the real monitor");
    say!(
        "  private tmux server: -S {}, pid {}",
        sandbox.socket.display(),
        sandbox
            .server_pid
            .map_or("?".to_string(), |p| p.to_string())
    );
    say!(
        "  session `{SESSION}` (120x40) plays real Claude Code 2.1.197 screens from testdata/panes/claude/"
    );
    let dir = sandbox.dir.to_string_lossy().into_owned();
    let command = watch
        .iter()
        .map(|w| quote_literal(w))
        .collect::<Vec<_>>()
        .join(" ")
        .replace(&dir, "$DEMO");
    say!("  each step polls once with the real monitor (DEMO={dir}):");
    say!("    XDG_STATE_HOME=$DEMO/state bmb-monitor {command}");
    say!("  (its state lives in $DEMO/state: your own monitor state is not touched)");

    let mut shown: Vec<&'static str> = Vec::new();
    for (number, step) in STEPS.iter().enumerate() {
        if probes::os::signals::stop_requested() {
            say!("\ninterrupted: stopping before step {}", number + 1);
            break;
        }
        say!(
            "\n== step {}/{} · the agent {}",
            number + 1,
            STEPS.len(),
            step.doing
        );
        say!(
            "   pane: testdata/panes/claude/{}/plain.txt · work probe prints {} · progress probe prints {}",
            step.case,
            step.work,
            step.progress
        );
        if let Err(error) = sandbox.show(number, step) {
            say!("   !! {error}");
        }
        let typed_before = sandbox.typed().len();
        let alerts_before = sandbox.alerts().len();

        if step.polls > 1 {
            say!(
                "   (a stop is typed into only once it held still one whole interval: polled {} times)",
                step.polls
            );
        }
        let mut states = Vec::new();
        for _ in 0..step.polls {
            let outcome = run::run(
                &Invocation::new(&exe)
                    .args(&watch)
                    .env("XDG_STATE_HOME", sandbox.state_dir()),
                &Limits::with_timeout(Duration::from_secs(30)),
            );
            states.extend(report_monitor(&outcome));
        }

        let typed = match sandbox.typed_since(typed_before, number) {
            Ok(typed) => typed,
            Err(error) => {
                // Unverified is not shown: what reached the pane is unknown.
                say!("   ✗ {}: {error}", step.expect);
                continue;
            }
        };
        let alerts = parse_alerts(&sandbox.alerts()[alerts_before..]);
        for (state, reason, message) in &alerts {
            say!("   alert sent (BMB_STATE={state}, BMB_REASON={reason}):");
            for line in message.lines() {
                say!("   │ {line}");
            }
        }
        if alerts.is_empty() {
            say!("   alert sent: none");
        }
        if typed.is_empty() {
            say!("   typed into the pane: nothing");
        } else {
            say!(
                "   typed into the pane: {}",
                sanitize_text(&typed.replace('\r', " [Enter]\n"))
                    .trim_end()
                    .replace('\n', " / ")
            );
        }

        let verdict = check(step, &states, &alerts, &typed);
        match verdict {
            Ok(what) => {
                say!("   ✓ {}: {what}", step.expect);
                if !shown.contains(&step.expect) {
                    shown.push(step.expect);
                }
            }
            Err(why) => say!("   ✗ {}: {why}", step.expect),
        }
    }
    Ok(shown)
}

/// Prints the monitor's own lines verbatim; returns the states they name.
fn report_monitor(outcome: &Outcome) -> Vec<String> {
    let (stdout, stderr) = match outcome {
        Outcome::Exited { stdout, stderr, .. } | Outcome::TimedOut { stdout, stderr, .. } => {
            (stdout.text(), stderr.text())
        }
        Outcome::FailedToSpawn { .. } => (String::new(), String::new()),
    };
    let mut states = Vec::new();
    for line in stdout.lines() {
        say!("{line}");
        if let Some(rest) = line.strip_prefix("MONITOR · ") {
            // `MONITOR · <target> · <STATE> · …`
            states.extend(rest.split(" · ").nth(1).map(str::to_string));
        }
    }
    for line in stderr.lines() {
        say!("   (monitor stderr) {line}");
    }
    if !matches!(outcome, Outcome::Exited { code: Some(0), .. }) {
        say!("   !! the monitor {}", outcome.describe());
    }
    states
}
