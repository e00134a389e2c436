//! Properties over arbitrary input: the classifier never panics, its evidence
//! points into the pane, and text we sent is never read as a question.

use bmb_classify as classify;
use classify::{Context, Echo, Profiles, State, Work};
use proptest::prelude::*;

/// Pieces of real screens, so random panes exercise the structure rules.
const FRAGMENTS: &[&str] = &[
    "────────────────────────────────────────",
    "❯\u{a0}",
    "❯ run the tests",
    "  ? for shortcuts · ← for agents",
    "  esc to interrupt · ← for agents",
    "✻ Pondering… (12s · ↓ 300 tokens)",
    "✻ Worked for 1m 0s",
    "  ⎿  Tip: use /clear",
    " Do you want to proceed?",
    " ❯ 1. Yes",
    "   2. No",
    " Esc to cancel · Tab to amend",
    "Enter to select · ↑/↓ to navigate · Esc to cancel",
    "\u{1b}[38;5;174m✻\u{1b}[39m \u{1b}]0;title\u{7}",
    "\r",
    "",
    "\u{fffd}\u{0}\u{1b}[",
    "MISSING ROW: 4",
];

fn pane_from(pieces: &[usize]) -> String {
    pieces
        .iter()
        .map(|&i| FRAGMENTS[i % FRAGMENTS.len()])
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_well_formed(pane: &str, work: Work) {
    let verdict = classify::classify(pane, work);
    if let Some(evidence) = &verdict.evidence {
        assert!(evidence.offset <= pane.len());
        assert!(evidence.line_number(pane) <= pane.lines().count().max(1) + 1);
    }
    assert!(verdict.region.first <= verdict.region.last || verdict.region.last == 0);
    let _ = classify::signals(pane, &Context::default());
}

proptest! {
    #[test]
    fn any_text_gets_a_verdict_without_panicking(pane in any::<String>(), raw in any::<String>()) {
        assert_well_formed(&pane, Work::parse(&raw));
    }

    #[test]
    fn any_bytes_decoded_lossily_get_a_verdict(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        assert_well_formed(&String::from_utf8_lossy(&bytes), Work::Unknown);
    }

    #[test]
    fn any_arrangement_of_real_screen_pieces_gets_a_verdict(
        pieces in proptest::collection::vec(0usize..64, 0..80),
        work in prop_oneof![Just(Work::Unknown), Just(Work::None), (1u64..10).prop_map(Work::Available)],
    ) {
        assert_well_formed(&pane_from(&pieces), work);
    }

    #[test]
    fn text_we_sent_is_never_classified_as_a_question(
        prefix in "[a-z ]{0,40}",
        suffix in "[a-z ]{0,40}",
        width in 20usize..120,
        noise in proptest::collection::vec(0usize..3, 0..10),
    ) {
        let sent = format!("{prefix}Enter to select · ↑/↓ to navigate{suffix}");
        // The pane hard-wraps what we typed at its width.
        let chars: Vec<char> = sent.chars().collect();
        let wrapped: Vec<String> = chars.chunks(width).map(|c| c.iter().collect()).collect();
        let mut lines: Vec<String> = noise.iter().map(|&i| ["$ ls", "ok", ""][i].to_string()).collect();
        lines.extend(wrapped);
        lines.push("$".to_string());
        let pane = lines.join("\n");
        let echo = Echo::new([&sent]);
        let context = Context::new(Profiles::builtin()).with_echo(&echo);
        let verdict = classify::classify_with(&pane, Work::Unknown, &context);
        prop_assert_ne!(verdict.state, State::Question, "pane:\n{}", pane);
    }
}
