//! The seed's rules, one case each, on panes built from the shapes real
//! Claude Code draws (see testdata/panes/claude for the captures themselves).

use bmb_classify as classify;
use classify::{Context, Echo, Profiles, Rule, State, Work};

const RULE: &str = "────────────────────────────────────────────────────────────";

/// A Claude Code 2.1 screen: transcript, live rows, the input box, the footer.
fn screen(transcript: &str, live: &str, input: &str, footer: &str) -> String {
    let mut pane = String::new();
    for part in [transcript, live] {
        if !part.is_empty() {
            pane.push_str(part);
            pane.push_str("\n\n");
        }
    }
    pane.push_str(&format!("{RULE}\n❯\u{a0}{input}\n{RULE}\n{footer}\n"));
    pane
}

fn check_with(pane: &str, work: Work, sent: &[&str], expected: State, rule: Rule) {
    let echo = Echo::new(sent);
    let context = Context::new(Profiles::builtin()).with_echo(&echo);
    let verdict = classify::classify_with(pane, work, &context);
    assert_eq!(
        (verdict.state, verdict.rule),
        (expected, rule),
        "pane:\n{pane}\nverdict: {verdict:#?}"
    );
}

fn check(pane: &str, expected: State, rule: Rule) {
    check_with(pane, Work::Unknown, &[], expected, rule);
}

const IDLE_FOOTER: &str = "  ? for shortcuts · ← for agents";
/// A typed draft replaces the status bar's hints, idle or busy alike.
const DRAFT_FOOTER: &str = "                                          ● high · /effort";
/// How Claude Code 2.1 leaves a finished turn.
const TURN_ENDED: &str = "● Done.\n\n✻ Worked for 2s";
const BUSY_FOOTER: &str = "  esc to interrupt · ← for agents";

#[test]
fn the_spinner_row_above_the_box_is_working() {
    let pane = screen(
        "❯ run it",
        "✻ Pondering… (12s · ↓ 300 tokens)",
        "",
        IDLE_FOOTER,
    );
    check(&pane, State::Working, Rule::Spinner);
}

#[test]
fn a_spinner_row_with_a_tip_and_a_task_list_under_it_is_working() {
    let live = "✢ Running the tests… (1m 2s · ↓ 1.2k tokens)\n  ⎿  ☒ Read the seed\n     ☐ Run the tests\n  ⎿  Tip: use /clear";
    check(
        &screen("❯ go", live, "", IDLE_FOOTER),
        State::Working,
        Rule::Spinner,
    );
}

#[test]
fn the_busy_footer_alone_is_working_while_text_streams() {
    let pane = screen(
        "● Here is the first half of the answer",
        "",
        "",
        BUSY_FOOTER,
    );
    check(&pane, State::Working, Rule::BusyFooter);
}

#[test]
fn a_finished_turn_line_is_not_a_spinner() {
    let pane = screen("● Done.", "✻ Worked for 1m 0s", "", IDLE_FOOTER);
    check(&pane, State::Stalled, Rule::WorkUnknown);
}

#[test]
fn a_spinner_in_the_scrollback_is_not_live() {
    let transcript =
        "✻ Pondering… (12s · ↓ 300 tokens)\n\n● The answer landed.\n\n✻ Brewed for 12s";
    check(
        &screen(transcript, "", "", IDLE_FOOTER),
        State::Stalled,
        Rule::WorkUnknown,
    );
}

#[test]
fn working_outranks_a_question_shape_in_the_scrollback() {
    // The seed's self-echo pane: the agent discusses the matcher while it works.
    let transcript =
        "● Bash(q=$(grep -cE 'Enter to select.*to navigate' \"panes/$s.txt\"))\n  ⎿  Running…";
    let pane = screen(
        transcript,
        "✽ Building the matcher… (4m 30s · ↓ 19.4k tokens)",
        "",
        IDLE_FOOTER,
    );
    check(&pane, State::Working, Rule::Spinner);
    let pane = screen(transcript, "", "", BUSY_FOOTER);
    check(&pane, State::Working, Rule::BusyFooter);
}

#[test]
fn the_question_hint_typed_into_the_input_box_is_not_a_question() {
    let pane = screen(
        TURN_ENDED,
        "",
        "Enter to select · ↑/↓ to navigate · Esc to cancel",
        DRAFT_FOOTER,
    );
    check(&pane, State::Stalled, Rule::WorkUnknown);
}

#[test]
fn esc_to_interrupt_typed_into_the_input_box_is_not_working() {
    let pane = screen(
        TURN_ENDED,
        "",
        "why does it say esc to interrupt · thinking",
        DRAFT_FOOTER,
    );
    check(&pane, State::Stalled, Rule::WorkUnknown);
}

#[test]
fn a_long_pending_message_is_cut_by_structure_not_by_line_count() {
    let long: Vec<String> = (0..300)
        .map(|i| format!("  line {i} of a long pending message"))
        .collect();
    let input = format!("start\n{}", long.join("\n"));
    let pane = screen(
        "✻ Pondering… (2s)\n\n● old\n\n✻ Worked for 2s",
        "",
        &input,
        DRAFT_FOOTER,
    );
    check(&pane, State::Stalled, Rule::WorkUnknown);
    let pane = screen("● old", "✻ Pondering… (2s)", &input, DRAFT_FOOTER);
    check(&pane, State::Working, Rule::Spinner);
}

#[test]
fn prose_with_one_marker_is_not_a_question() {
    let transcript = "● there is nothing to navigate to while it is open\n  and Enter to select nothing\n\n✻ Worked for 2s";
    check(
        &screen(transcript, "", "", IDLE_FOOTER),
        State::Stalled,
        Rule::WorkUnknown,
    );
}

#[test]
fn the_select_hint_on_one_line_is_a_question_when_the_box_is_gone() {
    let pane = format!(
        "● A question.\n{RULE}\nWhich one?\n\n❯ 1. A\n  2. B\n\nEnter to select · ↑/↓ to navigate · Esc to cancel\n"
    );
    check(&pane, State::Question, Rule::SelectHint);
}

#[test]
fn our_own_echo_of_the_hint_is_excluded_before_matching() {
    let sent = "q=$(grep -cE 'Enter to select.*to navigate' \"panes/$s.txt\")";
    // Hard-wrapped at 48 columns, no input box in view (a shell pane).
    let pane = "$ q=$(grep -cE 'Enter to select.*to navigate' \"pa\nnes/$s.txt\")\n$\n";
    check_with(
        pane,
        Work::Available(3),
        &[sent],
        State::Stalled,
        Rule::WorkAvailable,
    );
    check_with(
        pane,
        Work::Available(3),
        &[],
        State::Question,
        Rule::SelectHint,
    );
}

#[test]
fn a_permission_dialog_is_a_question() {
    let pane = format!(
        "● Bash(rm -rf build)\n  ⎿  Waiting…\n{RULE}\n Bash command\n\n   rm -rf build\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel · Tab to amend\n"
    );
    check(&pane, State::Question, Rule::PermissionDialog);
}

#[test]
fn a_numbered_choice_over_a_dialog_footer_is_a_question() {
    let pane =
        format!("{RULE}\n Pick a plan\n ❯ 1. Keep going\n   2. Stop here\n\n Esc to cancel\n");
    check(&pane, State::Question, Rule::ChoiceDialog);
}

#[test]
fn a_numbered_list_in_the_transcript_is_not_a_question_while_the_box_is_live() {
    let transcript =
        "● Do you want to proceed?\n  ❯ 1. Yes\n    2. No\n  Esc to cancel\n\n✻ Worked for 2s";
    check(
        &screen(transcript, "", "", IDLE_FOOTER),
        State::Stalled,
        Rule::WorkUnknown,
    );
}

#[test]
fn background_shells_still_running_are_not_a_stop() {
    let footer = "  ⏵⏵ bypass permissions on (shift+tab to cycle) · 2 shells still running";
    check(
        &screen("● Started the server.", "", "", footer),
        State::Working,
        Rule::BackgroundWork,
    );
    let live = "✻ Waiting for 2 background agents to finish";
    check(
        &screen("● Dispatched.", live, "", IDLE_FOOTER),
        State::Working,
        Rule::BackgroundWork,
    );
}

#[test]
fn an_agent_switcher_hint_is_not_background_work() {
    // GOLDEN-stalled-real's status bar.
    let footer = "  ⏵⏵ bypass permissions on (shift+tab to cycle) · ← 2 agents";
    check(
        &screen("● The answer landed.\n\n✻ Worked for 2s", "", "", footer),
        State::Stalled,
        Rule::WorkUnknown,
    );
}

#[test]
fn the_work_probe_decides_a_stop() {
    // A finished turn leaves its turn-end line: a bare reply would be one still streaming.
    let pane = screen(TURN_ENDED, "", "", IDLE_FOOTER);
    check_with(
        &pane,
        Work::parse("7"),
        &[],
        State::Stalled,
        Rule::WorkAvailable,
    );
    check_with(&pane, Work::parse("0"), &[], State::Blocked, Rule::NoWork);
    check_with(
        &pane,
        Work::parse("seven"),
        &[],
        State::Stalled,
        Rule::WorkUnknown,
    );
}

#[test]
fn the_work_probe_never_overrides_working_or_a_question() {
    let working = screen("● streaming", "", "", BUSY_FOOTER);
    check_with(&working, Work::None, &[], State::Working, Rule::BusyFooter);
    let question =
        format!("{RULE}\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n Esc to cancel\n");
    check_with(
        &question,
        Work::None,
        &[],
        State::Question,
        Rule::PermissionDialog,
    );
}

#[test]
fn escapes_crlf_and_nbsp_do_not_change_the_verdict() {
    let plain = screen("● Done.", "✻ Pondering… (3s)", "", IDLE_FOOTER);
    let dressed = plain
        .replace('✻', "\u{1b}[38;5;174m✻\u{1b}[39m")
        .replace('\n', "\r\n");
    check(&dressed, State::Working, Rule::Spinner);
}

#[test]
fn an_empty_or_blank_pane_is_a_stop() {
    check("", State::Stalled, Rule::WorkUnknown);
    check("\n\n   \n", State::Stalled, Rule::WorkUnknown);
    check_with("", Work::None, &[], State::Blocked, Rule::NoWork);
}

#[test]
fn the_evidence_names_the_line_that_decided() {
    let pane = screen("● Done.", "✻ Pondering… (3s)", "", IDLE_FOOTER);
    let verdict = classify::classify(&pane, Work::Unknown);
    let evidence = verdict.evidence.expect("a spinner verdict has evidence");
    assert_eq!(evidence.text, "✻ Pondering… (3s)");
    assert_eq!(evidence.line_number(&pane), 3);
}

/// A real capture with more background agents listed under its footer than
/// the capture had: the box is found by its structure however long the list.
fn with_more_agent_rows(case: &str, rows: usize) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/panes/claude")
        .join(case)
        .join("plain.txt");
    let pane = std::fs::read_to_string(path).expect("capture");
    let mut lines: Vec<&str> = pane.trim_end().lines().collect();
    let extra: Vec<String> = (0..rows)
        .map(|i| {
            format!("  ◯ general-purpose  Survey part {i}                                       3s")
        })
        .collect();
    lines.extend(extra.iter().map(String::as_str));
    lines.join("\n")
}

#[test]
fn a_long_agent_list_under_the_footer_does_not_hide_the_box() {
    let working = with_more_agent_rows("working-background-agents", 8);
    check(&working, State::Working, Rule::BackgroundWork);
    let self_echo = with_more_agent_rows("GOLDEN-self-echo-false-question", 8);
    check(&self_echo, State::Working, Rule::BusyFooter);
    // The hint typed into the draft stays a draft, not a question.
    let draft = with_more_agent_rows("idle-input-holds-question-hint", 8);
    check(&draft, State::Stalled, Rule::WorkUnknown);
}

fn capture(agent: &str, case: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/panes")
        .join(agent)
        .join(case)
        .join("plain.txt");
    std::fs::read_to_string(path).expect("capture")
}

/// The screen with its first `rows` rows gone, as a pane shows a reply that grew past its top.
fn scrolled(pane: &str, rows: usize) -> String {
    pane.lines().skip(rows).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_reply_taller_than_the_pane_is_still_streaming() {
    // Codex shows no status row while it streams; its reply's first line scrolled away.
    let codex = scrolled(&capture("codex", "working-streaming-text-80x24"), 9);
    check(&codex, State::Working, Rule::StreamingReply);
    // Claude Code with a draft over a stream whose first line scrolled away. The profile's
    // `turn_end` reads an unended reply as streaming whether or not a draft is in the box.
    let claude = scrolled(
        &capture("claude", "working-streaming-no-spinner-typed-input"),
        8,
    );
    check(&claude, State::Working, Rule::StreamingReply);
    // A welcome banner with blank rows above it is no reply.
    check(
        &capture("codex", "idle-welcome-80x24"),
        State::Stalled,
        Rule::WorkUnknown,
    );
}

#[test]
fn a_reply_quoting_a_question_hint_is_not_a_question() {
    let idle = capture("opencode", "idle-after-text-answer");
    let mut lines: Vec<&str> = idle.lines().collect();
    // A line of the agent's answer, a third of the way down the screen.
    lines.insert(
        lines.len() / 3,
        "  In a question dialog the keys are: ↑↓ select  enter submit  esc dismiss",
    );
    check(&lines.join("\n"), State::Stalled, Rule::WorkUnknown);
}

#[test]
fn detection_says_when_no_profile_is_on_screen() {
    let profiles = classify::Profiles::builtin();
    let full = capture("aider", "question-run-command");
    assert_eq!(
        classify::detect_profile(&full, profiles).map(|p| p.name.as_str()),
        Some("aider")
    );
    // Mid-reply: only the reply's text in the bottom lines.
    let mid_reply: String = full.lines().take(24).collect::<Vec<_>>().join("\n");
    assert_eq!(
        classify::detect_profile(&mid_reply, profiles).map(|p| p.name.as_str()),
        None
    );
}

#[test]
fn a_repl_prompt_alone_is_no_agent_input_box_to_type_into() {
    for pane in [
        "Welcome to Node.js v20.20.2.\nType \".help\" for more information.\n> ",
        "SQLite version 3.40.1\nEnter \".help\" for usage hints.\nsqlite> ",
        "mysql> ",
        "sftp> ",
        "ghci> ",
        "Python 3.11.7\n>>> ",
        "> query\n  4/120\n> src/main.rs",
    ] {
        let verdict = classify::classify(pane, Work::Available(2));
        assert!(
            !verdict.typing_safe(),
            "{pane:?} read as safe to type into: {verdict:#?}"
        );
        assert_eq!(verdict.typing_refusal(), Some("no input box recognised"));
    }
}

#[test]
fn a_line_at_column_zero_under_the_box_means_the_box_is_no_longer_live() {
    let idle = screen(TURN_ENDED, "", "", IDLE_FOOTER);
    assert!(classify::classify(&idle, Work::Available(1)).typing_safe());
    // What a shell leaves under the agent's last frame once the agent is gone.
    for under in [
        "root@h:~# ",
        "[1]+  Stopped                 claude",
        "Connection to host closed.",
    ] {
        let pane = format!("{idle}{under}\n");
        let verdict = classify::classify(&pane, Work::Available(1));
        assert_eq!(verdict.state, State::Stalled, "{pane}");
        assert!(
            !verdict.typing_safe(),
            "{under:?} under the footer: {verdict:#?}"
        );
    }
    // The footer's own rows (indented) keep it live: a background agent listed under it.
    let listed = format!("{idle}  ◯ general-purpose  Survey monitor.rs   3s · ↑ 1.2k tokens\n");
    assert!(classify::classify(&listed, Work::Available(1)).typing_safe());
}

/// What the box holds, on a stop: each case a box line as captured (with
/// its ink, as `capture-pane -e` gives it, or without) and what it is.
#[test]
fn a_draft_in_the_box_is_never_typed_over_and_a_placeholder_is_no_draft() {
    use classify::BoxText;
    let nudge = "Please continue with the next step of your plan.";
    let cases: &[(&str, &[&str], BoxText)] = &[
        ("", &[], BoxText::Empty),
        // Claude Code's own cursor cell, alone in an empty box.
        ("\u{1b}[7m \u{1b}[0m", &[], BoxText::Empty),
        // 2.1.332's placeholder: its cursor cell over the first letter, the rest faint.
        (
            "\u{1b}[7mR\u{1b}[0;2m\u{1b}[39m\u{1b}[49mesend your message to try again",
            &[],
            BoxText::Placeholder,
        ),
        // The same placeholder captured without ink: its text tells.
        (
            "Resend your message to try again",
            &[],
            BoxText::Placeholder,
        ),
        // A welcome screen's suggestion, faint.
        (
            "\u{1b}[2mTry \"fix lint errors\"\u{1b}[22m",
            &[],
            BoxText::Placeholder,
        ),
        // A person's draft, with the cursor cell after it.
        (
            "please refactor the parser so that\u{1b}[7m \u{1b}[0m",
            &[],
            BoxText::Draft("please refactor the parser so that".into()),
        ),
        // A draft whose words are the placeholder's, in ordinary ink, is still a draft
        // where the ink says so... unless it is exactly the placeholder's text.
        (
            "Resend your message to try again, but shorter",
            &[],
            BoxText::Draft("Resend your message to try again, but shorter".into()),
        ),
        // Faint text beside ordinary text: someone typed.
        (
            "\u{1b}[2mTry \u{1b}[22mthis",
            &[],
            BoxText::Draft("Try this".into()),
        ),
        // Our own nudge, typed and never sent: no second copy.
        (nudge, &[nudge], BoxText::OwnText),
        // Our nudge glued to a person's words is theirs too.
        (
            "wait Please continue with the next step of your plan.",
            &[],
            BoxText::Draft("wait Please continue with the next step of your plan.".into()),
        ),
    ];
    for (input, sent, expected) in cases {
        let pane = screen(TURN_ENDED, "", input, IDLE_FOOTER);
        let echo = Echo::new(*sent);
        let context = Context::new(Profiles::builtin()).with_echo(&echo);
        let verdict = classify::classify_with(&pane, Work::Available(2), &context);
        assert_eq!(verdict.state, State::Stalled, "{input:?}");
        assert_eq!(&verdict.box_text, expected, "{input:?}");
        assert_eq!(verdict.typing_safe(), expected.is_empty(), "{input:?}");
        let word = verdict.typing_refusal_word();
        assert_eq!(word, (!expected.is_empty()).then_some("draft"), "{input:?}");
    }
}

#[test]
fn a_draft_on_the_lines_under_the_prompt_line_is_a_draft_too() {
    let pane = screen(TURN_ENDED, "", "first line\n  second line", IDLE_FOOTER);
    let verdict = classify::classify(&pane, Work::Available(1));
    assert_eq!(
        verdict.box_text,
        classify::BoxText::Draft("first line\nsecond line".into())
    );
    assert_eq!(
        verdict.typing_refusal(),
        Some("a draft is waiting in the box")
    );
}

#[test]
fn a_profile_footer_may_stand_at_column_zero_under_the_box() {
    let base = "name = zero\ndetect = ^zero-cli\nbox_top = ^─{8,}$\nbox_bottom = ^─{8,}$\nprompt = ^❯(?:\\s|$)\n";
    let pane = format!("zero-cli v1\n{RULE}\n❯\u{a0}\n{RULE}\nmodel: local · ctx 12%\n");
    let without = classify::Profile::parse("test", base).unwrap();
    let with = classify::Profile::parse(
        "test",
        &format!("{base}footer = ^model: \\S+ · ctx \\d+%$\n"),
    )
    .unwrap();
    for (profile, safe) in [(&without, false), (&with, true)] {
        let context = Context::new(Profiles::builtin()).with_profile(profile);
        let verdict = classify::classify_with(&pane, Work::Available(1), &context);
        assert_eq!(verdict.state, State::Stalled);
        assert_eq!(verdict.typing_safe(), safe, "{verdict:#?}");
    }
    // A line the footer key does not describe is still something else drawn there.
    let shell = format!("{pane}root@h:~# \n");
    let context = Context::new(Profiles::builtin()).with_profile(&with);
    assert!(!classify::classify_with(&shell, Work::Available(1), &context).typing_safe());
}

/// Found by a review: the README's own example profile for a CLI with a
/// column-zero footer lost `auto` to Claude Code's generic `─` rule markers.
/// A user's profile whose markers hit at all is preferred.
#[test]
fn auto_prefers_a_users_profile_whose_markers_hit_over_a_builtins_generic_ones() {
    let mycli = classify::Profile::parse(
        "mycli.profile",
        "name = mycli\ndetect = ^mycli v\\d\nbox_top = ^─{8,}$\nbox_bottom = ^─{8,}$\nprompt = ^> \nfooter = ^model: \\S+ · ctx \\d+%$\n",
    )
    .unwrap();
    let profiles = Profiles::with(vec![mycli]);
    let pane = format!("mycli v2\nsome reply\n\n{RULE}\n> \n{RULE}\nmodel: m1 · ctx 12%\n");
    let verdict = classify::classify_with(&pane, Work::Available(3), &Context::new(&profiles));
    assert_eq!(verdict.profile, "mycli", "{verdict:#?}");
    assert!(verdict.typing_safe(), "{verdict:#?}");
    // Where its markers do not hit, the built-ins read the pane as before.
    let claude = screen(TURN_ENDED, "", "", IDLE_FOOTER);
    let verdict = classify::classify_with(&claude, Work::Available(3), &Context::new(&profiles));
    assert_eq!(verdict.profile, "claude");
}
