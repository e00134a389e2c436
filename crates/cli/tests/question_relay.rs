//! Issue 21, item 6: a question alert relays the question as the capture
//! shows it, for every CLI with a profile. The real binary watches a private
//! tmux pane replaying a real capture, and the message its alert command
//! receives is checked against that capture: the question and what it is
//! about (the command, the file) are there, every line of it is a line of
//! the capture, and the transcript above the dialog is not.
// These tests start the binary and tmux; that is their point.

use std::path::{Path, PathBuf};

use bmb_testkit::tmux::PrivateTmux;

/// One capture of the golden corpus and what its relayed question must and must not hold.
struct Case {
    cli: &'static str,
    case: &'static str,
    /// Lines of the capture the relay carries (the question, its command or file).
    holds: &'static [&'static str],
    /// Lines of the capture above the dialog (the transcript) that it does not.
    leaves_out: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        cli: "claude",
        case: "question-permission-bash",
        holds: &["Do you want to proceed?", "python3 -m pytest -q tests/"],
        leaves_out: &[],
    },
    Case {
        cli: "codex",
        case: "question-exec-approval",
        holds: &[
            "Would you like to run the following command?",
            "Reason: Run the test suite outside the sandbox?",
            "$ python3 -m pytest -q",
            "1. Yes, proceed (y)",
        ],
        leaves_out: &[
            "• I will run the tests outside the sandbox.",
            "› run the tests",
        ],
    },
    Case {
        cli: "codex",
        case: "question-exec-approval-80x24",
        holds: &[
            "Would you like to run the following command?",
            "$ python3 -m pytest -q",
        ],
        leaves_out: &["• Running python3 -m pytest -q"],
    },
    Case {
        cli: "codex",
        case: "question-patch-approval",
        holds: &[
            "Would you like to make the following edits?",
            "Destination: /tmp/bmbcap_codex_9dlvjjro/proj/app.py",
        ],
        leaves_out: &["• Edited app.py (+1 -1)"],
    },
    Case {
        cli: "codex",
        case: "question-request-user-input",
        holds: &[
            "Question 1/1 (1 unanswered)",
            "Where should the monitor keep its state?",
            "2. JSON files            Plain files per pane",
        ],
        leaves_out: &[],
    },
    Case {
        cli: "codex",
        case: "question-plan-implement",
        holds: &[
            "Implement this plan?",
            "3. No, stay in Plan mode             Continue planning with the model",
        ],
        leaves_out: &["• Here is the plan."],
    },
    Case {
        cli: "opencode",
        case: "question-permission-bash",
        holds: &["△ Permission required", "$ python3 -m pytest -q"],
        leaves_out: &[
            "I'll run the tests.",
            "run the tests",
            "▣  Build · GPT-4o (mock)",
        ],
    },
    Case {
        cli: "opencode",
        case: "question-ask",
        holds: &[
            "Where should the monitor store its state?",
            "4. Type your own answer",
        ],
        leaves_out: &["One decision first.", "→ Asked 1 question"],
    },
    Case {
        cli: "opencode",
        case: "question-permission-edit",
        holds: &["△ Permission required", "→ Edit app.py"],
        leaves_out: &["I'll make the greeting friendlier.", "← Edit app.py"],
    },
    Case {
        cli: "gemini",
        case: "question-shell-confirm",
        holds: &["Allow execution of [Shell]?", "python3 -m pytest -q"],
        leaves_out: &[],
    },
    Case {
        cli: "aider",
        case: "question-run-command",
        holds: &[
            "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
            "python3 app.py",
        ],
        leaves_out: &[],
    },
];

fn capture(case: &Case) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/panes")
        .join(case.cli)
        .join(case.case)
        .join("plain.txt")
}

/// The message the alert command received for `case`'s pane, after the
/// monitor's own first paragraph: the relayed dialog, line by line.
fn relayed(case: &Case) -> Vec<String> {
    let tmux = PrivateTmux::new();
    let received = tmux.dir.path().join("received");
    tmux.replay("agent", &capture(case), &received);
    let messages = tmux.dir.path().join("messages");
    let state = tempfile::tempdir().expect("tempdir");
    let alert = format!("cat >> '{}'", messages.display());
    let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args([
            "agent",
            "--once",
            "--work-probe",
            "echo 1",
            "--alert-cmd",
            &alert,
        ])
        .env("XDG_STATE_HOME", state.path())
        .output()
        .expect("bmb-monitor runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}/{}: {stdout}\n{}",
        case.cli,
        case.case,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(" · QUESTION · "),
        "{}/{}: {stdout}",
        case.cli,
        case.case
    );
    let message = std::fs::read_to_string(&messages).unwrap_or_default();
    let (head, dialog) = message
        .split_once("\n\n")
        .unwrap_or_else(|| panic!("{}/{}: no dialog in {message:?}", case.cli, case.case));
    assert!(head.contains("NOT answered"), "{head}");
    assert_eq!(
        std::fs::read_to_string(&received).unwrap_or_default(),
        "",
        "a key reached the question"
    );
    dialog.lines().map(|l| l.trim_end().to_string()).collect()
}

#[test]
fn every_clis_question_alert_relays_the_question_of_its_capture_and_only_its_dialog() {
    for case in CASES {
        let name = format!("{}/{}", case.cli, case.case);
        let screen = std::fs::read_to_string(capture(case)).expect("capture");
        let screen: Vec<&str> = screen.lines().map(str::trim).collect();
        let dialog = relayed(case);
        let text = dialog.join("\n");
        for line in &dialog {
            assert!(
                screen.contains(&line.trim()),
                "{name}: the relay holds a line the capture has not: {line:?}\n{text}"
            );
        }
        for want in case.holds {
            assert!(
                dialog.iter().any(|l| l.contains(want)),
                "{name}: the relay lacks {want:?}:\n{text}"
            );
        }
        for unwanted in case.leaves_out {
            assert!(
                screen.iter().any(|l| l.contains(unwanted)),
                "{name}: {unwanted:?} is not on the capture (the test is wrong)"
            );
            assert!(
                !dialog.iter().any(|l| l.contains(unwanted)),
                "{name}: the relay carries the transcript line {unwanted:?}:\n{text}"
            );
        }
        // A dialog, not a screen: no run of blank rows, no blank edge.
        assert!(
            !text.contains("\n\n\n"),
            "{name}: blank rows relayed:\n{text}"
        );
        assert!(
            dialog.first().is_some_and(|l| !l.trim().is_empty())
                && dialog.last().is_some_and(|l| !l.trim().is_empty()),
            "{name}: the relay starts or ends blank:\n{text}"
        );
    }
}
