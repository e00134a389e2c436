//! The demo's script: the real screens the pane plays, what the probes say
//! at each step, and what the monitor must do about it.

/// The nudge typed into the STALLED pane: the text the captured
/// `working-after-nudge` screen shows echoed, so the story is one session.
pub(super) const NUDGE: &str =
    "continue with the next step of the plan; if nothing is left, say DONE";
/// Ends each alert in the alert file (the alert command appends one after the message).
pub(super) const ALERT_END: &str = "\n--8<-- end of alert\n";
/// The four states the demo must show, in the order it shows them.
pub(super) const FOUR: [&str; 4] = ["WORKING", "QUESTION", "STALLED", "BLOCKED"];

/// One step of the script: what the agent does, the real screen it shows,
/// what the probes say, and what the monitor must do about it.
pub(super) struct Step {
    pub(super) doing: &'static str,
    pub(super) case: &'static str,
    pub(super) screen: &'static str,
    pub(super) work: u32,
    pub(super) progress: u64,
    pub(super) expect: &'static str,
    /// How many polls the step gets: a stop is typed into only once it held
    /// still for one whole interval, so the STALLED step is polled twice.
    pub(super) polls: u32,
}

pub(super) const STEPS: [Step; 5] = [
    Step {
        doing: "delegates a survey of the repository to a sub-agent (3 items of work left)",
        case: "working-subagent",
        screen: include_str!("../../demo/working-subagent.txt"),
        work: 3,
        progress: 41,
        expect: "WORKING",
        polls: 1,
    },
    Step {
        doing: "opens an AskUserQuestion dialog: it needs a human's decision",
        case: "GOLDEN-question-real",
        screen: include_str!("../../demo/GOLDEN-question-real.txt"),
        work: 3,
        progress: 41,
        expect: "QUESTION",
        polls: 1,
    },
    Step {
        doing: "ends its turn (its background agents have finished) and waits at an empty prompt, though the work probe says 3 items are left",
        case: "GOLDEN-stalled-real",
        screen: include_str!("../../demo/GOLDEN-stalled-real.txt"),
        work: 3,
        progress: 41,
        expect: "STALLED",
        polls: 2,
    },
    Step {
        doing: "took the nudge and is working again; the progress probe moved 41 -> 42",
        case: "working-after-nudge",
        screen: include_str!("../../demo/working-after-nudge.txt"),
        work: 2,
        progress: 42,
        expect: "WORKING",
        polls: 1,
    },
    Step {
        doing: "finishes the last item and stops; the work probe now says 0 left",
        case: "idle-after-tool-turn",
        screen: include_str!("../../demo/idle-after-tool-turn.txt"),
        work: 0,
        progress: 43,
        expect: "BLOCKED",
        polls: 1,
    },
];

/// Did the monitor see the expected state and do the right thing about it?
pub(super) fn check(
    step: &Step,
    states: &[String],
    alerts: &[(String, String, String)],
    typed: &str,
) -> Result<&'static str, String> {
    if !states.iter().any(|s| s == step.expect) {
        return Err(format!(
            "the monitor said {}, not {}",
            if states.is_empty() {
                "nothing".to_string()
            } else {
                states.join(", ")
            },
            step.expect
        ));
    }
    let alerted = |state: &str| alerts.iter().any(|(s, _, _)| s == state);
    match step.expect {
        "WORKING" if typed.is_empty() && alerts.is_empty() => Ok("left alone: no key, no alert"),
        "QUESTION" if typed.is_empty() && alerted("QUESTION") => {
            Ok("relayed to the operator verbatim; no key was sent to the dialog")
        }
        "STALLED" if typed.contains(NUDGE) && typed.ends_with('\r') => {
            Ok("nudged: the text, then Enter, arrived in the pane")
        }
        "BLOCKED" if typed.is_empty() && alerted("BLOCKED") => {
            Ok("escalated to the operator and NOT nudged")
        }
        expect => Err(format!(
            "the monitor did not act as {expect} requires (alerts: {}, typed: {typed:?})",
            alerts.len()
        )),
    }
}

/// `(BMB_STATE, BMB_REASON, message)` of each alert in `text`.
pub(super) fn parse_alerts(text: &str) -> Vec<(String, String, String)> {
    text.split(ALERT_END)
        .filter(|chunk| !chunk.trim().is_empty())
        .map(|chunk| {
            let (head, message) = chunk.split_once('\n').unwrap_or((chunk, ""));
            let (state, reason) = head.split_once(' ').unwrap_or((head, ""));
            (
                state.to_string(),
                reason.to_string(),
                message.trim_end().to_string(),
            )
        })
        .collect()
}

/// A screen as a pane shows it: no trailing spaces, no trailing blank lines,
/// no final newline (which would scroll the top line off a full pane).
pub(super) fn trim_screen(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    lines[..end].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_split_into_state_reason_and_message() {
        let text = format!(
            "QUESTION question\nline one\nline two\n{ALERT_END}BLOCKED blocked\nx{ALERT_END}"
        );
        let alerts = parse_alerts(&text);
        assert_eq!(alerts.len(), 2);
        assert_eq!(alerts[0].0, "QUESTION");
        assert_eq!(alerts[0].1, "question");
        assert_eq!(alerts[0].2, "line one\nline two");
        assert_eq!(alerts[1], ("BLOCKED".into(), "blocked".into(), "x".into()));
    }

    #[test]
    fn screens_lose_trailing_blanks_and_every_step_is_a_real_capture() {
        assert_eq!(trim_screen("a  \nb\n\n  \n"), "a\nb");
        for step in &STEPS {
            assert!(
                trim_screen(step.screen).lines().count() > 5,
                "{}",
                step.case
            );
        }
        for state in FOUR {
            assert!(STEPS.iter().any(|s| s.expect == state), "{state}");
        }
    }

    /// A re-captured screen that no longer means what its step says would
    /// make the demo fail: catch it here, without tmux.
    #[test]
    fn every_screen_classifies_as_its_step_expects_with_its_work_reading() {
        for step in &STEPS {
            let work = classify::Work::parse(&step.work.to_string());
            let verdict = classify::classify(&trim_screen(step.screen), work);
            assert_eq!(verdict.state.as_str(), step.expect, "{}", step.case);
        }
    }
}
