//! `cargo bench -p bmb-classify`: the median time to classify a real 120x40
//! capture, and the ratio of a 10,000-line scrollback to it (SPEC §9:
//! ≤ 20 µs and ≤ 2). Figures go to PERFORMANCE.md; nothing here asserts a time.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use bmb_classify as classify;
use classify::{State, Work};

const ROUNDS: usize = 201;
const BATCH: usize = 200;

/// Median nanoseconds per classification over `ROUNDS` batches.
fn median_ns(pane: &str) -> f64 {
    for _ in 0..BATCH {
        black_box(classify::classify(black_box(pane), Work::Unknown));
    }
    let mut samples: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..BATCH {
                black_box(classify::classify(black_box(pane), Work::Unknown));
            }
            start.elapsed().as_nanos() as f64 / BATCH as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[ROUNDS / 2]
}

/// A 10,000-line scrollback: the capture's own scrollback repeated above its screen.
fn scrollback_of(screen: &str, history: &str) -> String {
    let history: Vec<&str> = history.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut lines: Vec<&str> = Vec::with_capacity(10_000);
    let screen_lines: Vec<&str> = screen.lines().collect();
    while lines.len() + screen_lines.len() < 10_000 {
        lines.extend(
            history
                .iter()
                .take(10_000 - screen_lines.len() - lines.len()),
        );
    }
    lines.extend(screen_lines);
    lines.join("\n")
}

fn main() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/panes/claude");
    println!(
        "{:<52} {:>10} {:>12} {:>12} {:>7}",
        "capture (120x40)", "state", "screen ns", "10k-line ns", "ratio"
    );
    for case in [
        "working-bash-sleep",
        "question-permission-bash",
        "idle-after-tool-turn",
        "question-ask-single",
        // Claude Code 2.1.332: a full-screen frame, the box pinned to the
        // bottom with blank rows above it; and the auto-mode dialog.
        "working-bash-sleep-v2.1.332-auto",
        "question-permission-bash-v2.1.332-manual",
        "idle-after-tool-turn-v2.1.332-auto",
        "question-auto-mode-check-unavailable-v2.1.332-auto",
    ] {
        let dir = corpus.join(case);
        let (Ok(screen), Ok(history)) = (
            std::fs::read_to_string(dir.join("plain.txt")),
            std::fs::read_to_string(dir.join("scrollback.txt")),
        ) else {
            println!("{case}: capture missing, skipped");
            continue;
        };
        let long = scrollback_of(&screen, &history);
        let state: State = classify::classify(&screen, Work::Unknown).state;
        assert_eq!(
            classify::classify(&long, Work::Unknown).state,
            state,
            "{case}: the scrollback changed the verdict"
        );
        let (short_ns, long_ns) = (median_ns(&screen), median_ns(&long));
        println!(
            "{case:<52} {:>10} {short_ns:>12.0} {long_ns:>12.0} {:>7.2}",
            state.as_str(),
            long_ns / short_ns
        );
    }
    // What `watch` reads since it captures with ink (`capture-pane -e`): the
    // same screens with their escapes, the box's ink read cell by cell.
    println!(
        "\n{:<52} {:>10} {:>12}",
        "capture with its ink (120x40)", "state", "screen ns"
    );
    for case in [
        "idle-after-tool-turn",
        "idle-after-tool-turn-v2.1.332-auto",
        "idle-after-api-error-v2.1.332-auto",
        "idle-draft-typed-v2.1.332-auto",
        "working-bash-sleep-v2.1.332-auto",
        "question-permission-bash-v2.1.332-manual",
    ] {
        let Ok(screen) = std::fs::read_to_string(corpus.join(case).join("ansi.txt")) else {
            println!("{case}: capture missing, skipped");
            continue;
        };
        let state = classify::classify(&screen, Work::Unknown).state;
        println!(
            "{case:<52} {:>10} {:>12.0}",
            state.as_str(),
            median_ns(&screen)
        );
    }
}
