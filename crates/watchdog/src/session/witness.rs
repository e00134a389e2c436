//! A second witness for the session monitor: Claude Code's own session file
//! (`<claude-dir>/sessions/<pid>.json`, observed on 2.1.x), combined with the
//! pane verdict.
//!
//! The pane stays the primary reading: it works for every CLI and where no
//! session file exists. The file only corrects a stop the pane cannot see
//! through, and every disagreement is counted, so a UI change that fools the
//! pane reader shows up on the first day instead of as a wrong nudge.
//!
//! The rule:
//! | pane | file | verdict |
//! |---|---|---|
//! | WORKING or QUESTION | anything | the pane's |
//! | a stop (STALLED/BLOCKED) | `busy` | WORKING: a turn is running the pane does not show |
//! | a stop | `waiting` | QUESTION, never nudged: pending while a box is still on screen (the dialog is not drawn yet), escalated once it is; with no box on screen (a dialog taller than the pane) escalated at once with the screen's bottom lines |
//! | a stop | `idle` or no file | the pane's |
//!
//! Any pairing other than WORKING/busy, QUESTION/waiting, stop/idle is a disagreement.

use classify::State;

/// What the session file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Witness {
    /// A turn is running (streaming included).
    Busy,
    /// At the prompt.
    Idle,
    /// Waiting for a human; `waitingFor` (e.g. `permission prompt`), also for AskUserQuestion.
    Waiting(String),
    /// No usable file: none found, unreadable, a reused pid, or a status this
    /// monitor does not know. Never evidence.
    Absent(String),
}

/// The CLI version a session file records (`"version": "2.1.332"`), if any,
/// for saying which release a screen the profile no longer reads came from.
pub fn session_version(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let version = value.get("version")?.as_str()?;
    let plain = version.len() <= 64
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'));
    plain.then(|| version.to_string())
}

impl Witness {
    /// The word for reports: `busy`, `idle`, `waiting`, `none`.
    pub fn word(&self) -> &'static str {
        match self {
            Witness::Busy => "busy",
            Witness::Idle => "idle",
            Witness::Waiting(_) => "waiting",
            Witness::Absent(_) => "none",
        }
    }

    /// Reads a session file. `start_ticks` is the process's start time, which
    /// must equal the file's `procStart`, or the pid was reused.
    pub fn from_session_file(text: &str, start_ticks: Option<u64>) -> Witness {
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => return Witness::Absent(format!("the session file is not JSON: {err}")),
        };
        let proc_start = value.get("procStart").and_then(|v| match v {
            serde_json::Value::String(s) => s.parse::<u64>().ok(),
            other => other.as_u64(),
        });
        match (proc_start, start_ticks) {
            (Some(file), Some(process)) if file != process => {
                return Witness::Absent(format!(
                    "the session file's procStart {file} is not the process's start {process}: a reused pid"
                ));
            }
            (None, _) => return Witness::Absent("the session file has no procStart".to_string()),
            _ => {}
        }
        match value.get("status").and_then(|s| s.as_str()) {
            Some("busy") => Witness::Busy,
            Some("idle") => Witness::Idle,
            Some("waiting") => {
                let what = value
                    .get("waitingFor")
                    .and_then(|w| w.as_str())
                    .unwrap_or("a human");
                Witness::Waiting(what.to_string())
            }
            Some(other) => Witness::Absent(format!("unknown status `{other}`")),
            None => Witness::Absent("the session file has no status".to_string()),
        }
    }
}

/// The pane verdict and the witness together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Combined {
    /// The state taken.
    pub state: State,
    /// The witness changed the pane's verdict.
    pub overruled: bool,
    /// The two readings differ (counted, whether or not it overruled).
    pub disagree: bool,
}

/// The state taken from the pane's verdict and the witness (the rule in this module's docs).
pub fn combine(pane: State, witness: &Witness) -> Combined {
    let stop = matches!(pane, State::Stalled | State::Blocked);
    let (state, overruled) = match witness {
        Witness::Busy if stop => (State::Working, true),
        Witness::Waiting(_) if stop => (State::Question, true),
        _ => (pane, false),
    };
    let agree = match witness {
        Witness::Absent(_) => true,
        Witness::Busy => pane == State::Working,
        Witness::Waiting(_) => pane == State::Question,
        Witness::Idle => stop,
    };
    Combined {
        state,
        overruled,
        disagree: !agree,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{"pid":2367,"sessionId":"15e4","procStart":"137901","version":"2.1.197","status":"STATUS","updatedAt":1}"#;

    fn file(status: &str) -> String {
        FILE.replace("STATUS", status)
    }

    #[test]
    fn a_real_session_file_reads_as_its_status() {
        assert_eq!(
            Witness::from_session_file(&file("busy"), Some(137901)),
            Witness::Busy
        );
        assert_eq!(
            Witness::from_session_file(&file("idle"), Some(137901)),
            Witness::Idle
        );
        let waiting = file("waiting").replace(
            r#""updatedAt""#,
            r#""waitingFor":"permission prompt","updatedAt""#,
        );
        assert_eq!(
            Witness::from_session_file(&waiting, Some(137901)),
            Witness::Waiting("permission prompt".into())
        );
    }

    #[test]
    fn a_reused_pid_an_unknown_status_or_garbage_is_no_witness() {
        assert!(
            matches!(Witness::from_session_file(&file("busy"), Some(5)), Witness::Absent(why) if why.contains("reused pid"))
        );
        assert!(
            matches!(Witness::from_session_file(&file("compacting"), Some(137901)), Witness::Absent(why) if why.contains("unknown status"))
        );
        assert!(matches!(
            Witness::from_session_file("seven", None),
            Witness::Absent(_)
        ));
        assert!(matches!(
            Witness::from_session_file(r#"{"status":"busy"}"#, Some(1)),
            Witness::Absent(_)
        ));
    }

    #[test]
    fn the_file_overrules_only_a_stop() {
        let waiting = Witness::Waiting("permission prompt".into());
        let cases = [
            (State::Stalled, Witness::Busy, State::Working, true, true),
            (State::Blocked, Witness::Busy, State::Working, true, true),
            (State::Stalled, waiting.clone(), State::Question, true, true),
            (State::Stalled, Witness::Idle, State::Stalled, false, false),
            (State::Working, Witness::Busy, State::Working, false, false),
            (State::Working, Witness::Idle, State::Working, false, true),
            (
                State::Question,
                waiting.clone(),
                State::Question,
                false,
                false,
            ),
            (State::Question, Witness::Busy, State::Question, false, true),
            (
                State::Stalled,
                Witness::Absent("none".into()),
                State::Stalled,
                false,
                false,
            ),
        ];
        for (pane, witness, state, overruled, disagree) in cases {
            assert_eq!(
                combine(pane, &witness),
                Combined {
                    state,
                    overruled,
                    disagree
                },
                "{pane} + {witness:?}"
            );
        }
    }
}
