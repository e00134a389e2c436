//! Every question shape in the golden corpus is matched by a structure rule,
//! with a test that names it. A new shape in testdata/ without a test here
//! fails `every_question_shape_in_the_corpus_has_a_test`.

use std::path::{Path, PathBuf};

use bmb_classify as classify;
use classify::{Rule, State, Work};

/// The shapes this file tests, and the structure rule each one is matched by.
const SHAPES: &[(&str, Rule)] = &[
    ("permission-bash", Rule::PermissionDialog),
    ("permission-create-file", Rule::PermissionDialog),
    ("permission-edit-file", Rule::PermissionDialog),
    ("permission-read", Rule::PermissionDialog),
    ("permission-webfetch", Rule::PermissionDialog),
    ("ask-user-question-single", Rule::SelectHint),
    ("ask-user-question-multi", Rule::SelectHint),
    ("ask-user-question-tabs", Rule::SelectHint),
    ("ask-user-question-submit", Rule::PermissionDialog),
    ("ask-user-question-preview", Rule::SelectHint),
    ("select-model", Rule::ChoiceDialog),
    ("plan-approval", Rule::ChoiceDialog),
    ("plan-exit-bare", Rule::ChoiceDialog),
    ("startup-api-key", Rule::PermissionDialog),
    ("startup-bypass-warning", Rule::ChoiceDialog),
    ("startup-theme", Rule::ChoiceDialog),
    ("startup-trust-folder", Rule::ChoiceDialog),
    ("opencode-permission-bash", Rule::SelectHint),
    ("opencode-permission-edit", Rule::SelectHint),
    ("opencode-question", Rule::SelectHint),
    ("opencode-question-multi", Rule::SelectHint),
    ("aider-confirm-gitignore", Rule::InlineQuestion),
    ("aider-confirm-create-file", Rule::InlineQuestion),
    ("aider-confirm-add-file", Rule::InlineQuestion),
    ("aider-confirm-run-command", Rule::InlineQuestion),
    ("codex-exec-approval", Rule::PermissionDialog),
    ("codex-patch-approval", Rule::PermissionDialog),
    ("codex-trust-directory", Rule::PermissionDialog),
    ("gemini-shell-confirm", Rule::PermissionDialog),
    ("gemini-edit-confirm", Rule::PermissionDialog),
    ("gemini-ask-user", Rule::SelectHint),
    ("gemini-trust-folder", Rule::PermissionDialog),
    ("codex-request-user-input", Rule::ChoiceDialog),
    ("codex-request-user-input-multi", Rule::ChoiceDialog),
    ("codex-plan-implement", Rule::ChoiceDialog),
    ("gemini-web-fetch-confirm", Rule::PermissionDialog),
    ("gemini-enter-plan-mode", Rule::PermissionDialog),
    ("gemini-plan-approval", Rule::SelectHint),
    ("gemini-high-demand", Rule::ChoiceDialog),
    ("auto-mode-check-unavailable", Rule::SelectHint),
    ("permission-bash-unnumbered", Rule::PermissionDialog),
    ("ask-user-question-review", Rule::ChoiceDialog),
    ("permission-read-outside-auto", Rule::ChoiceDialog),
    ("notice-enter-to-continue", Rule::SelectHint),
    ("usage-limit-options", Rule::ChoiceDialog),
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/panes")
}

fn meta_value(meta: &str, key: &str) -> Option<String> {
    meta.lines().find_map(|line| {
        line.strip_prefix(key)?
            .strip_prefix(':')
            .map(|v| v.split(" #").next().unwrap_or("").trim().to_string())
    })
}

/// (case folder, shape) for every QUESTION case in the corpus.
fn question_cases() -> Vec<(PathBuf, String)> {
    let mut cases = Vec::new();
    for agent in std::fs::read_dir(corpus())
        .expect("testdata/panes exists")
        .filter_map(Result::ok)
    {
        let Ok(dirs) = std::fs::read_dir(agent.path()) else {
            continue;
        };
        for dir in dirs.filter_map(Result::ok).map(|e| e.path()) {
            let Ok(meta) = std::fs::read_to_string(dir.join("meta")) else {
                continue;
            };
            if let Some(shape) = meta_value(&meta, "shape") {
                cases.push((dir, shape));
            }
        }
    }
    cases.sort();
    cases
}

fn check_shape(shape: &str) {
    let rule = SHAPES
        .iter()
        .find(|(name, _)| *name == shape)
        .map(|(_, rule)| *rule)
        .expect("shape listed in SHAPES");
    let cases: Vec<PathBuf> = question_cases()
        .into_iter()
        .filter(|(_, s)| s == shape)
        .map(|(dir, _)| dir)
        .collect();
    assert!(
        !cases.is_empty(),
        "no capture in testdata/ has shape {shape}"
    );
    for dir in cases {
        for file in ["plain.txt", "ansi.txt", "scrollback.txt"] {
            let Ok(bytes) = std::fs::read(dir.join(file)) else {
                continue;
            };
            let pane = String::from_utf8_lossy(&bytes);
            let verdict = classify::classify(&pane, Work::None);
            assert_eq!(
                (verdict.state, verdict.rule),
                (State::Question, rule),
                "{}/{file}: {verdict:#?}",
                dir.display()
            );
            assert!(
                !verdict.dialog.is_empty(),
                "{}/{file}: a question carries its dialog",
                dir.display()
            );
        }
    }
}

#[test]
fn every_question_shape_in_the_corpus_has_a_test() {
    for (dir, shape) in question_cases() {
        assert!(
            SHAPES.iter().any(|(name, _)| *name == shape),
            "{}: shape `{shape}` has no test in crates/classify/tests/shapes.rs",
            dir.display()
        );
    }
}

#[test]
fn permission_bash_is_a_question() {
    check_shape("permission-bash");
}

#[test]
fn permission_create_file_is_a_question() {
    check_shape("permission-create-file");
}

#[test]
fn permission_edit_file_is_a_question() {
    check_shape("permission-edit-file");
}

#[test]
fn permission_read_is_a_question() {
    check_shape("permission-read");
}

#[test]
fn permission_webfetch_is_a_question() {
    check_shape("permission-webfetch");
}

#[test]
fn ask_user_question_single_is_a_question() {
    check_shape("ask-user-question-single");
}

#[test]
fn ask_user_question_multi_is_a_question() {
    check_shape("ask-user-question-multi");
}

#[test]
fn ask_user_question_tabs_is_a_question() {
    check_shape("ask-user-question-tabs");
}

#[test]
fn ask_user_question_submit_is_a_question() {
    check_shape("ask-user-question-submit");
}

#[test]
fn select_model_is_a_question() {
    check_shape("select-model");
}

#[test]
fn ask_user_question_preview_is_a_question() {
    check_shape("ask-user-question-preview");
}

#[test]
fn plan_approval_is_a_question() {
    check_shape("plan-approval");
}

#[test]
fn plan_exit_bare_is_a_question() {
    check_shape("plan-exit-bare");
}

#[test]
fn startup_api_key_is_a_question() {
    check_shape("startup-api-key");
}

#[test]
fn startup_bypass_warning_is_a_question() {
    check_shape("startup-bypass-warning");
}

#[test]
fn startup_theme_is_a_question() {
    check_shape("startup-theme");
}

#[test]
fn startup_trust_folder_is_a_question() {
    check_shape("startup-trust-folder");
}

#[test]
fn opencode_permission_bash_is_a_question() {
    check_shape("opencode-permission-bash");
}

#[test]
fn opencode_permission_edit_is_a_question() {
    check_shape("opencode-permission-edit");
}

#[test]
fn opencode_question_is_a_question() {
    check_shape("opencode-question");
}

#[test]
fn opencode_question_multi_is_a_question() {
    check_shape("opencode-question-multi");
}

#[test]
fn aider_confirm_gitignore_is_a_question() {
    check_shape("aider-confirm-gitignore");
}

#[test]
fn aider_confirm_create_file_is_a_question() {
    check_shape("aider-confirm-create-file");
}

#[test]
fn aider_confirm_add_file_is_a_question() {
    check_shape("aider-confirm-add-file");
}

#[test]
fn aider_confirm_run_command_is_a_question() {
    check_shape("aider-confirm-run-command");
}

#[test]
fn codex_exec_approval_is_a_question() {
    check_shape("codex-exec-approval");
}

#[test]
fn codex_patch_approval_is_a_question() {
    check_shape("codex-patch-approval");
}

#[test]
fn codex_trust_directory_is_a_question() {
    check_shape("codex-trust-directory");
}

#[test]
fn gemini_shell_confirm_is_a_question() {
    check_shape("gemini-shell-confirm");
}

#[test]
fn gemini_edit_confirm_is_a_question() {
    check_shape("gemini-edit-confirm");
}

#[test]
fn gemini_ask_user_is_a_question() {
    check_shape("gemini-ask-user");
}

#[test]
fn gemini_trust_folder_is_a_question() {
    check_shape("gemini-trust-folder");
}

#[test]
fn codex_request_user_input_is_a_question() {
    check_shape("codex-request-user-input");
}

#[test]
fn codex_request_user_input_multi_is_a_question() {
    check_shape("codex-request-user-input-multi");
}

#[test]
fn codex_plan_implement_is_a_question() {
    check_shape("codex-plan-implement");
}

#[test]
fn gemini_web_fetch_confirm_is_a_question() {
    check_shape("gemini-web-fetch-confirm");
}

#[test]
fn gemini_enter_plan_mode_is_a_question() {
    check_shape("gemini-enter-plan-mode");
}

#[test]
fn gemini_plan_approval_is_a_question() {
    check_shape("gemini-plan-approval");
}

#[test]
fn gemini_high_demand_is_a_question() {
    check_shape("gemini-high-demand");
}

#[test]
fn auto_mode_check_unavailable_is_a_question() {
    check_shape("auto-mode-check-unavailable");
}

#[test]
fn permission_bash_unnumbered_is_a_question() {
    check_shape("permission-bash-unnumbered");
}

#[test]
fn ask_user_question_review_is_a_question() {
    check_shape("ask-user-question-review");
}

#[test]
fn permission_read_outside_auto_is_a_question() {
    check_shape("permission-read-outside-auto");
}

/// Claude Code 2.1.332's weekly-limit dialog (`What do you want to do?`, `1. Stop and wait for limit
/// to reset`, `2. Wait here, then continue automatically at …`, `3. Upgrade your plan`), drawn where
/// the box was when a subscription's weekly limit answers a request with HTTP 429.
#[test]
fn usage_limit_options_is_a_question() {
    check_shape("usage-limit-options");
}

// ---------------------------------------------------------------------------
// Gemini CLI in every terminal colour class, and Codex's background terminal
// after a finished turn (testdata/README.md, the Gemini and Codex sections).

/// Gemini CLI draws its input box per terminal colour class: `▄▄▄`/`▀▀▀`
/// rows with truecolor (the unsuffixed cases), blank rows around a
/// background colour with 256 colours (tmux without COLORTERM: `-256`), and
/// `────` rules with NO_COLOR (`-no-color`). Every question shape the
/// truecolor corpus holds is captured, and read as a question, in the other
/// two renderings too (check_shape reads every case of a shape).
#[test]
fn every_gemini_question_shape_is_captured_in_every_colour_class() {
    let gemini: Vec<(PathBuf, String)> = question_cases()
        .into_iter()
        .filter(|(dir, _)| dir.parent().and_then(Path::file_name) == Some("gemini".as_ref()))
        .collect();
    let shapes: std::collections::BTreeSet<&str> = gemini.iter().map(|(_, s)| s.as_str()).collect();
    assert!(shapes.len() >= 8, "gemini shapes: {shapes:?}");
    for shape in shapes {
        for tag in ["-256", "-no-color"] {
            let rendered = gemini.iter().any(|(dir, s)| {
                let name = dir.file_name().unwrap_or_default().to_string_lossy();
                s == shape && (name.ends_with(tag) || name.contains(&format!("{tag}-")))
            });
            assert!(rendered, "no `{tag}` capture of gemini shape {shape}");
        }
        check_shape(shape);
    }
}

/// The cases of one agent whose folder name starts with `prefix`.
fn cases_named(agent: &str, prefix: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus().join(agent))
        .expect("the agent's captures exist")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no {agent}/{prefix}* capture");
    dirs
}

/// Every capture file of the cases, classified with `work` and the auto profile.
fn verdicts(dirs: &[PathBuf], work: &str) -> Vec<(String, classify::Verdict)> {
    let mut out = Vec::new();
    for dir in dirs {
        for file in ["plain.txt", "ansi.txt", "scrollback.txt"] {
            let Ok(bytes) = std::fs::read(dir.join(file)) else {
                continue;
            };
            let pane = String::from_utf8_lossy(&bytes);
            let verdict = classify::classify(&pane, Work::parse(work));
            out.push((format!("{}/{file}", dir.display()), verdict));
        }
    }
    out
}

/// Codex 0.171.0 starts no turn when a background terminal exits
/// (openai/codex#33712): `1 background terminal running · /ps to view ·
/// /stop to close` under a finished turn is a stop, and the verdict carries
/// the profile's note so the nudge says to check the terminal.
#[test]
fn codex_background_terminal_after_a_finished_turn_is_a_stop_with_a_note() {
    let dirs = cases_named("codex", "idle-background-terminal");
    for (work, state, rule) in [
        ("", State::Stalled, Rule::WorkUnknown),
        ("2", State::Stalled, Rule::WorkAvailable),
        ("0", State::Blocked, Rule::NoWork),
    ] {
        for (file, verdict) in verdicts(&dirs, work) {
            assert_eq!(
                (verdict.state, verdict.rule, verdict.profile.as_str()),
                (state, rule, "codex"),
                "{file}: {verdict:#?}"
            );
            let note = verdict.note.as_deref().unwrap_or_default();
            assert!(
                note.contains("background terminal") && note.contains("/ps"),
                "{file}: the note says to check the terminal: {verdict:#?}"
            );
        }
    }
}

/// The same words beside `• Working (… esc to interrupt)` are a turn running:
/// WORKING, and no note (a note is for stops only).
#[test]
fn codex_background_terminal_beside_the_working_row_is_working() {
    let dirs = cases_named("codex", "working-exec-running");
    for (file, verdict) in verdicts(&dirs, "") {
        assert_eq!(
            (verdict.state, verdict.rule),
            (State::Working, Rule::Spinner),
            "{file}: {verdict:#?}"
        );
        let evidence = verdict.evidence.map(|e| e.text).unwrap_or_default();
        assert!(
            evidence.contains("background terminal running"),
            "{file}: {evidence}"
        );
        assert_eq!(verdict.note, None, "{file}");
    }
}

/// Claude Code starts a new turn when a background task ends, so its
/// `N shell(s) still running` stays WORKING (claude.profile's `background`).
#[test]
fn claude_background_shells_after_a_finished_turn_stay_working() {
    let dirs = cases_named("claude", "working-background-");
    for (file, verdict) in verdicts(&dirs, "0") {
        assert_eq!(
            (verdict.state, verdict.rule, verdict.note),
            (State::Working, Rule::BackgroundWork, None),
            "{file}"
        );
    }
}

#[test]
fn notice_enter_to_continue_is_a_question() {
    check_shape("notice-enter-to-continue");
}

// ---------------------------------------------------------------------------
// Claude Code in vim editor mode (`"editorMode": "vim"`), and a dialog taller
// than the pane (testdata/README.md, "Shapes of 2.1.332 nobody had captured").

/// Vim mode's footer says `-- INSERT --`, never `esc to interrupt`, and the
/// spinner row vanished while the reply streams: a reply with no turn-end
/// line under it is a turn in progress (claude.profile's `turn_end`).
#[test]
fn claude_vim_mode_streaming_reply_without_a_turn_end_is_working() {
    let dirs = cases_named("claude", "working-vim-streaming-no-spinner");
    for (file, verdict) in verdicts(&dirs, "0") {
        assert_eq!(
            (verdict.state, verdict.rule),
            (State::Working, Rule::StreamingReply),
            "{file}: {verdict:#?}"
        );
    }
}

/// After the turn ended (`✻ … for 0s`), vim mode's idle box is a stop with
/// the input box recognised, so a nudge may be typed into it.
#[test]
fn claude_vim_mode_idle_box_is_a_stop_safe_to_type_into() {
    let dirs = cases_named("claude", "idle-vim-after-text-answer");
    for (file, verdict) in verdicts(&dirs, "") {
        assert_eq!(
            (verdict.state, verdict.rule),
            (State::Stalled, Rule::WorkUnknown),
            "{file}: {verdict:#?}"
        );
        assert!(
            verdict.input_box && verdict.typing_safe(),
            "{file}: {verdict:#?}"
        );
    }
}

/// Vim mode's permission dialog replaces the box and its `-- INSERT --` footer.
#[test]
fn claude_vim_mode_permission_dialog_is_a_question() {
    let dirs = cases_named("claude", "question-vim-permission-bash");
    for (file, verdict) in verdicts(&dirs, "") {
        assert_eq!(
            (verdict.state, verdict.rule),
            (State::Question, Rule::PermissionDialog),
            "{file}: {verdict:#?}"
        );
    }
}

/// Claude Code's own notice (`/feedback`) draws `Enter to continue · Esc to
/// cancel` where the box was: a question, its lines relayed verbatim.
#[test]
fn claude_notice_with_enter_to_continue_is_a_question_relayed_verbatim() {
    let dirs = cases_named("claude", "question-notice-enter-to-continue");
    for (file, verdict) in verdicts(&dirs, "") {
        assert_eq!(
            (verdict.state, verdict.rule),
            (State::Question, Rule::SelectHint),
            "{file}: {verdict:#?}"
        );
        for line in [
            "Submit feedback / bug report",
            "Enter to continue · Esc to cancel",
        ] {
            assert!(
                verdict.dialog.iter().any(|l| l.trim() == line),
                "{file}: the relay carries `{line}`: {:#?}",
                verdict.dialog
            );
        }
    }
}

/// A dialog taller than the pane runs off its bottom, key line and all: the
/// pane alone shows no question and no box, so it is a stop that is never
/// typed into. Claude Code's session file (`waiting`) is what makes it a
/// question, in the session monitor (crates/watchdog/tests/session.rs).
#[test]
fn claude_dialog_taller_than_the_pane_is_a_stop_never_typed_into() {
    let dirs = cases_named("claude", "question-dialog-taller-than-pane");
    for (file, verdict) in verdicts(&dirs, "3") {
        assert_eq!(
            (verdict.state, verdict.input_box),
            (State::Stalled, false),
            "{file}: {verdict:#?}"
        );
        assert!(!verdict.typing_safe(), "{file}: {verdict:#?}");
    }
}

/// The reset each real usage-limit screen names, read from the line in force.
fn limit_resets(agent: &str, name: &str) -> Vec<(String, Option<String>)> {
    let dirs = cases_named(agent, name);
    assert!(!dirs.is_empty(), "no {agent} case named {name}*");
    verdicts(&dirs, "")
        .into_iter()
        .map(|(file, verdict)| {
            assert_eq!(verdict.state, State::Stalled, "{file}: {verdict:#?}");
            let limit = verdict
                .usage_limit
                .unwrap_or_else(|| panic!("{file}: no usage limit read"));
            (file, limit.reset)
        })
        .collect()
}

/// Claude Code 2.1.332's 5-hour limit (a subscription login): the reset is
/// read from the transcript's line that names its zone, over the footer's
/// bare `3:33am`; the box is live, so only the hold keeps a nudge out.
#[test]
fn claude_five_hour_limit_is_read_with_its_zone_from_the_line_in_force() {
    for (file, reset) in limit_resets("claude", "usage-limit-5-hour-v2.1.332") {
        let reset = reset.unwrap_or_default();
        assert!(
            reset.ends_with("(Asia/Tbilisi)") && reset.starts_with("3:"),
            "{file}: {reset}"
        );
    }
}

/// After Claude Code continued by itself at the reset, its limit lines stay
/// in the transcript above a finished turn: no limit is in force.
#[test]
fn claude_limit_lines_under_a_finished_turn_are_no_limit_in_force() {
    let dirs = cases_named("claude", "usage-limit-5-hour-resumed");
    assert!(!dirs.is_empty());
    for (file, verdict) in verdicts(&dirs, "") {
        assert_eq!(verdict.state, State::Stalled, "{file}");
        assert_eq!(verdict.usage_limit, None, "{file}: {verdict:#?}");
        assert!(verdict.typing_safe(), "{file}");
    }
}

/// Codex 0.171.0's usage-limit error wraps at 120 and at 80 columns; the
/// reset is read across the wrap, and `try again later` is a limit whose
/// reset cannot be read (escalated by a monitor, never nudged).
#[test]
fn codex_usage_limit_is_read_across_its_wrapped_lines() {
    for (file, reset) in limit_resets("codex", "usage-limit-try-again-at") {
        let reset = reset.unwrap_or_default();
        assert!(
            reset == "at 2:35 AM" || reset.starts_with("at Dec 4th, 2026"),
            "{file}: {reset}"
        );
    }
    for (file, reset) in limit_resets("codex", "usage-limit-try-again-later") {
        assert_eq!(reset, None, "{file}");
    }
}
