//! `bmb-monitor classify` as a user runs it: the real binary, a pane on stdin.
// These tests start the binary under test; that is their whole point.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use proptest::prelude::*;

const STATES: [&str; 4] = ["WORKING", "QUESTION", "STALLED", "BLOCKED"];

fn testdata(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/panes/claude")
        .join(case)
        .join("plain.txt")
}

/// Runs `bmb-monitor classify ARGS` with `stdin` and an empty profile folder.
fn classify(args: &[&str], stdin: &[u8]) -> Output {
    let config = tempfile::tempdir().expect("tempdir");
    classify_with_config(args, stdin, config.path())
}

fn classify_with_config(args: &[&str], stdin: &[u8], config_home: &Path) -> Output {
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("classify")
        .args(args)
        .env("XDG_CONFIG_HOME", config_home);
    bmb_testkit::bin::run(command, stdin, Duration::from_secs(120))
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

/// Exit 0 and exactly one line, the state word.
fn assert_one_word(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let out = stdout(output);
    let word = out
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("one line ending in a newline: {out:?}"));
    assert!(STATES.contains(&word), "not a state word: {out:?}");
    word.to_string()
}

#[test]
fn prints_the_state_of_a_real_capture() {
    let pane = std::fs::read(testdata("question-permission-bash")).expect("capture");
    assert_eq!(assert_one_word(&classify(&[], &pane)), "QUESTION");
    let idle = std::fs::read(testdata("idle-after-text-answer")).expect("capture");
    assert_eq!(assert_one_word(&classify(&[], &idle)), "STALLED");
    assert_eq!(
        assert_one_word(&classify(&["--work", "0"], &idle)),
        "BLOCKED"
    );
    assert_eq!(
        assert_one_word(&classify(&["--work", "-1"], &idle)),
        "STALLED"
    );
    assert_eq!(
        assert_one_word(&classify(&["--work", "seven"], &idle)),
        "STALLED"
    );
}

#[test]
fn hostile_input_exits_zero_with_one_word() {
    let mut big = Vec::with_capacity(50 * 1024 * 1024 + 64);
    while big.len() < 50 * 1024 * 1024 {
        big.extend_from_slice("some pane text \u{1b}[1m❯ \u{1b}[0m 1. Yes ─────\n".as_bytes());
    }
    let one_long_line = vec![b'x'; 8 * 1024 * 1024];
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        (
            "invalid UTF-8",
            vec![0xff, 0xfe, b'\n', 0xc3, 0x28, 0xe2, 0x82],
        ),
        (
            "escape sequences",
            b"\x1b[31mred\x1b[0m\n\x1b]0;t\x07\x1b[\x1b".to_vec(),
        ),
        ("CRLF", b"line one\r\nline two\r\n\r\n".to_vec()),
        ("NUL bytes", vec![0; 4096]),
        ("50 MB", big),
        ("one 8 MB line", one_long_line),
    ];
    for (name, input) in cases {
        let output = classify(&[], &input);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_one_word(&output);
    }
}

#[test]
fn a_bad_flag_exits_2_and_says_what_is_wrong() {
    let output = classify(&["--no-such-flag"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--no-such-flag"));

    let output = classify(&["--profile", "nonesuch"], b"");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown profile `nonesuch`") && stderr.contains("claude"),
        "{stderr}"
    );
}

#[test]
fn json_prints_one_object_with_state_rule_and_evidence() {
    let pane = std::fs::read(testdata("question-permission-bash")).expect("capture");
    let output = classify(&["--json"], &pane);
    assert_eq!(output.status.code(), Some(0));
    let out = stdout(&output);
    assert_eq!(out.lines().count(), 1, "{out}");
    let value: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(value["state"], "QUESTION");
    assert_eq!(value["profile"], "claude");
    assert_eq!(value["rule"], "permission-dialog");
    assert_eq!(value["evidence"]["text"], " Do you want to proceed?");
    let line = value["evidence"]["line"].as_u64().expect("a line number") as usize;
    let text = String::from_utf8_lossy(&pane);
    assert_eq!(text.lines().nth(line - 1), Some(" Do you want to proceed?"));
    assert!(
        value["dialog"]
            .as_array()
            .is_some_and(|d| d.iter().any(|l| l == " ❯ 1. Yes"))
    );
}

#[test]
fn explain_says_the_rule_the_region_and_the_line() {
    let pane = std::fs::read(testdata("working-bash-sleep")).expect("capture");
    let output = classify(&["--explain"], &pane);
    let out = stdout(&output);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("WORKING"));
    assert!(out.contains("\nrule:     "), "{out}");
    assert!(out.contains("\nregion:   "), "{out}");
    assert!(out.contains("\nevidence: line "), "{out}");
}

#[test]
fn a_user_profile_file_overrides_a_builtin_and_a_malformed_one_is_skipped() {
    let config = tempfile::tempdir().expect("tempdir");
    let dir = config.path().join("bmb-monitor/profiles");
    std::fs::create_dir_all(&dir).expect("profile folder");
    std::fs::write(
        dir.join("broken.profile"),
        "name = broken\nspinner = (unclosed\n",
    )
    .expect("write");
    let pane = std::fs::read(testdata("working-bash-sleep")).expect("capture");
    let output = classify_with_config(&[], &pane, config.path());
    assert_eq!(
        assert_one_word(&output),
        "WORKING",
        "the built-ins stay in force"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken.profile:2: `spinner`"), "{stderr}");

    // A user's `claude` that knows no live chrome reads the working pane as a stop.
    std::fs::write(
        dir.join("claude.profile"),
        "name = claude\nbox_top = ^─{8,}$\nbox_bottom = ^─{8,}$\nprompt = ^❯\n",
    )
    .expect("write");
    let output = classify_with_config(&["--profile", "claude"], &pane, config.path());
    assert_eq!(assert_one_word(&output), "STALLED");

    // A malformed file named on the command line is a configuration error.
    let output = classify_with_config(
        &[
            "--profile-file",
            dir.join("broken.profile").to_str().unwrap(),
        ],
        &pane,
        config.path(),
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn echo_slices_given_on_the_command_line_are_excluded() {
    let sent = "q=$(grep -cE 'Enter to select.*to navigate' \"panes/$s.txt\")";
    let pane = format!("$ {sent}\n$\n");
    assert_eq!(assert_one_word(&classify(&[], pane.as_bytes())), "QUESTION");
    assert_eq!(
        assert_one_word(&classify(&["--echo", sent], pane.as_bytes())),
        "STALLED"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn never_exits_non_zero_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..8192)) {
        let output = classify(&[], &bytes);
        prop_assert_eq!(output.status.code(), Some(0));
        let out = String::from_utf8_lossy(&output.stdout).into_owned();
        prop_assert!(STATES.iter().any(|s| out == format!("{s}\n")), "{:?}", out);
    }
}

#[test]
fn a_session_file_is_a_second_witness_shown_beside_the_pane() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("2367.json");
    let write = |status: &str, extra: &str| {
        let text = format!(
            r#"{{"pid":2367,"procStart":"137901","version":"2.1.197","status":"{status}"{extra}}}"#
        );
        std::fs::write(&state, text).expect("write");
    };
    let idle = std::fs::read(testdata("idle-after-text-answer")).expect("capture");
    let path = state.to_str().expect("UTF-8");
    write("busy", "");
    let output = classify(&["--explain", "--session-state", path], &idle);
    let out = stdout(&output);
    assert!(out.starts_with("WORKING\n"), "{out}");
    assert!(
        out.contains("pane:     STALLED") && out.contains("witness:  busy"),
        "{out}"
    );
    write("waiting", r#","waitingFor":"permission prompt""#);
    let value: serde_json::Value = serde_json::from_str(&stdout(&classify(
        &["--json", "--session-state", path],
        &idle,
    )))
    .expect("JSON");
    assert_eq!(
        (value["state"].as_str(), value["pane_state"].as_str()),
        (Some("QUESTION"), Some("STALLED"))
    );
    assert_eq!(value["witness"]["status"], "waiting");
    assert_eq!(value["disagree"], true);
    write("idle", "");
    assert_eq!(
        assert_one_word(&classify(&["--session-state", path], &idle)),
        "STALLED"
    );
    write("reticulating", "");
    assert_eq!(
        assert_one_word(&classify(&["--session-state", path], &idle)),
        "STALLED",
        "an unknown status is no witness"
    );
    let output = classify(&["--session-state", "/nonexistent/x.json"], &idle);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn json_and_explain_say_whether_typing_is_safe_with_what_runs_in_front() {
    let idle = std::fs::read(testdata("idle-after-tool-turn")).unwrap();
    let verdict = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&stdout(&classify(args, &idle))).expect("one JSON object")
    };
    let alone = verdict(&["--json", "--work", "2"]);
    assert_eq!(
        (alone["typing_safe"].clone(), alone["input_box"].clone()),
        (true.into(), true.into())
    );
    assert_eq!(
        verdict(&["--json", "--work", "2", "--pane-command", "claude"])["typing_safe"],
        true
    );
    for (front, why) in [
        ("bash", "the agent exited"),
        ("-zsh", "the agent exited"),
        ("ssh", "relay"),
    ] {
        let read = verdict(&["--json", "--work", "2", "--pane-command", front]);
        assert_eq!(read["typing_safe"], false, "{front}: {read}");
        assert!(
            read["typing_refusal"].as_str().unwrap().contains(why),
            "{front}: {read}"
        );
        // The state word is the seed's, whatever is in front.
        assert_eq!(read["state"], "STALLED");
    }
    let explained = stdout(&classify(&["--explain", "--pane-command", "bash"], &idle));
    assert!(
        explained
            .lines()
            .any(|l| l.starts_with("typing:   not safe: the agent exited")),
        "{explained}"
    );
    let question = std::fs::read(testdata("question-permission-bash")).unwrap();
    let explained = stdout(&classify(&["--explain"], &question));
    assert!(
        explained.contains("typing:   not safe: a dialog waits for a human"),
        "{explained}"
    );
}
