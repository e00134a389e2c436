//! The work and progress probes: run per cycle, a bad answer said once per change.

use std::time::Duration;

use classify::parse_count;
use probes::run::{self, Invocation, Limits};

use super::settings::TargetSettings;
use super::*;

impl Watch<'_> {
    /// A probe's stdout per target, each target with its own command
    /// (`command_of` picks it from the target's settings). A command that
    /// does not mention `BMB_TARGET` cannot differ per target, so it runs
    /// once per cycle, for every target that has it.
    pub(super) fn probe_all(
        &mut self,
        command_of: fn(&TargetSettings) -> Option<&str>,
        what: &str,
    ) -> Vec<Option<String>> {
        let commands: Vec<(String, Option<String>)> = self
            .watched
            .iter()
            .map(|w| {
                let command = command_of(&w.settings).map(str::to_string);
                (w.target.to_string(), command)
            })
            .collect();
        let mut shared: std::collections::HashMap<&str, Option<String>> =
            std::collections::HashMap::new();
        let mut answers = Vec::with_capacity(commands.len());
        for (target, command) in &commands {
            let answer = match command.as_deref() {
                None => None,
                Some(command) if watchdog::session::probe_runs_per_target(command) => {
                    self.probe(command, Some(target), what)
                }
                Some(command) => match shared.get(command) {
                    Some(answer) => answer.clone(),
                    None => {
                        let answer = self.probe(command, None, what);
                        shared.insert(command, answer.clone());
                        answer
                    }
                },
            };
            answers.push(answer);
        }
        answers
    }

    pub(super) fn probe(
        &mut self,
        command: &str,
        target: Option<&str>,
        what: &str,
    ) -> Option<String> {
        let mut invocation = Invocation::shell(command);
        if let Some(target) = target {
            invocation = invocation.env("BMB_TARGET", target);
        }
        let outcome = run::run(
            &invocation,
            &Limits::with_timeout(Duration::from_secs(self.args.probe_timeout)),
        );
        // A shared probe is known by its command: two targets' different
        // shared commands each have their own trouble to say.
        let key = match target {
            Some(target) => format!("{what}:{target}"),
            None => format!("{what}:*{command}"),
        };
        let answer = outcome.success_stdout().map(|out| out.text());
        let problem = match &answer {
            // A probe prints a count; anything else (`seven`, `-1`, two numbers) is unknown.
            Some(text) if parse_count(text).is_some() => None,
            Some(text) => Some(format!(
                "{what} probe printed {:?}, not a count",
                printable_excerpt(text)
            )),
            None => Some(format!("{what} probe {}", outcome.describe())),
        };
        match problem {
            None => {
                self.probe_errors.clear(&key);
                answer
            }
            Some(message) => {
                // Unknown, said once per change: the classifier fails open on it.
                self.probe_errors.say(
                    key,
                    &format!(
                        "bmb-monitor: watch: {}: {message}; reading it as unknown",
                        target.unwrap_or("every target")
                    ),
                );
                None
            }
        }
    }
}

/// The start of a probe's output, for a message: one line, at most 40 characters.
pub(super) fn printable_excerpt(text: &str) -> String {
    sanitize_text(text.trim())
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(40)
        .collect()
}
