//! The session monitor against the REAL Codex CLI and Gemini CLI: each
//! pinned release from npm (installed into target/capture on first use),
//! driven in a private tmux server against its loopback mock
//! (xtask/capture/live_agents.py). A person's draft in the box is never typed
//! over; the CLI's own placeholder is an empty box.
// These tests start python3, the real agent CLI and the monitor binary.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use bmb_testkit::bin::wait_until;
use bmb_testkit::live::Live;
use bmb_testkit::watcher::{Watcher, first_nudge, nudged};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One live CLI at a time: each is a Node process (Gemini several) on a
/// machine of few cores, and the monitor's stillness check wants a screen
/// the CLI redraws on time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A real CLI, as the tests tell it apart.
#[derive(Clone, Copy)]
struct Agent {
    /// live_agents.py's name for it.
    name: &'static str,
    /// Its input box's marker, as the plain pane draws it before the box's text.
    marker: &'static str,
    /// Its own placeholder in the empty box.
    placeholder: &'static str,
}

const CODEX: Agent = Agent {
    name: "codex",
    marker: "\u{203a} ",
    placeholder: "Ask Codex to do anything",
};

const GEMINI: Agent = Agent {
    name: "gemini",
    marker: "> ",
    placeholder: "Type your message or @path/to/file",
};

/// A prompt's words as the person (or the monitor) typed them: its text
/// parts without the context Gemini CLI glues to the first prompt as a part
/// of its own.
fn typed(prompt: &[String]) -> Vec<&str> {
    prompt
        .iter()
        .map(String::as_str)
        .filter(|t| !t.starts_with("<session_context>"))
        .collect()
}

const NUDGE: &str = "Please continue with the next step of your plan.";
const DRAFT: &str = "please refactor the parser so that";

/// A draft typed into the idle box of a real CLI before the watcher starts:
/// six polls type nothing and escalate it once, quoted; the model receives
/// nothing. Then the person clears the box (`C-u`: the one-line draft, and
/// never a key that quits an empty box) and the next still poll nudges it.
fn a_draft_gets_no_key_and_one_escalation_then_the_emptied_box_is_nudged(agent: Agent) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let started = Instant::now();
    let (live, before) = idle(agent);
    live.tmux(&["send-keys", "-t", &live.session, "-l", DRAFT]);
    let drawn = format!("{}{DRAFT}", agent.marker);
    live.wait_pane("the draft", 30, |pane| pane.contains(&drawn));

    let watcher = Watcher::start(
        env!("CARGO_BIN_EXE_bmb-monitor"),
        &live.socket,
        &live.session,
    );
    let lines = watcher.wait_lines(6, 90);
    let lines = &lines[..6];
    for line in lines {
        assert!(
            !nudged(line),
            "typed over the draft: {line}\n{}",
            live.pane()
        );
        assert_eq!(line["nudges"], 0, "{line}");
        assert_eq!(line["state"], "STALLED", "{line}");
        assert_eq!(line["typing_safe"], false, "{line}");
    }
    assert!(
        wait_until(10, || watcher.messages().contains(DRAFT)),
        "the escalation quotes the draft: {:?}; lines: {lines:#?}",
        watcher.messages()
    );
    assert_eq!(
        watcher.reasons(),
        "draft\n",
        "exactly one escalation, for the draft; lines: {lines:#?}"
    );
    let escalated = lines
        .iter()
        .filter(|line| {
            line["done"][0] == "not typed into: a draft is waiting in the box, escalated"
        })
        .count();
    assert_eq!(escalated, 1, "{lines:#?}");
    assert_eq!(
        live.prompts().len(),
        before,
        "the model received a prompt: {:?}",
        live.prompts()
    );
    live.wait_pane("the draft, still untouched", 5, |pane| {
        pane.contains(&drawn)
    });

    // The person clears the box: `C-u` empties a one-line draft in both CLIs.
    live.tmux(&["send-keys", "-t", &live.session, "C-u"]);
    live.wait_pane("the emptied box, its placeholder back", 30, |pane| {
        !pane.contains(DRAFT) && pane.contains(agent.placeholder)
    });
    let cleared = watcher.lines().len();

    let at = watcher.wait_line("with `nudged (1/5)`", 60, first_nudge);
    assert!(
        at >= cleared,
        "nudged before the box was emptied: {:#?}",
        watcher.lines()
    );
    let prompt = live.wait_prompt(before, 30);
    assert_eq!(
        typed(&prompt),
        vec![NUDGE],
        "the model received the nudge alone: {prompt:?}"
    );
    assert_eq!(
        watcher.reasons(),
        "draft\n",
        "no other escalation; lines: {:#?}",
        watcher.lines()
    );
    eprintln!(
        "{}: runtime {:?}; polls before the clear {cleared}, nudged at poll {at}; \
         not_typed_because: {:?}",
        agent.name,
        started.elapsed(),
        watcher
            .lines()
            .iter()
            .map(|l| l["not_typed_because"].clone())
            .collect::<Vec<_>>()
    );
}

/// `agent` idle at its empty box after one answered prompt, and how many
/// prompts the model has received (that one).
fn idle(agent: Agent) -> (Live, usize) {
    let live = Live::start(
        &workspace().join("xtask/capture/live_agents.py"),
        &[agent.name, "idle"],
    );
    let before = live.prompts().len();
    assert_eq!(
        before,
        1,
        "the situation's own prompt: {:?}",
        live.prompts()
    );
    (live, before)
}

/// The idle box showing the CLI's own placeholder is an empty box: the first
/// poll of a new watcher waits for stillness, the second nudges, and the
/// model receives the nudge alone.
fn the_placeholder_box_is_nudged_on_the_second_poll(agent: Agent) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let started = Instant::now();
    let (live, before) = idle(agent);
    live.wait_pane("the placeholder", 30, |pane| {
        pane.contains(agent.placeholder)
    });

    let watcher = Watcher::start(
        env!("CARGO_BIN_EXE_bmb-monitor"),
        &live.socket,
        &live.session,
    );
    let lines = watcher.wait_lines(2, 60);
    let first = &lines[0];
    assert!(!nudged(first), "its first poll typed: {first}");
    assert_eq!(first["state"], "STALLED", "{first}");
    assert_eq!(first["typing_safe"], false, "{first}");
    assert_eq!(
        first["not_typed_because"],
        "settling",
        "{first}\n{}",
        live.pane()
    );
    let second = &lines[1];
    assert!(
        first_nudge(second),
        "the second poll did not nudge: {second}\nlines: {lines:#?}\n{}",
        live.pane()
    );
    let prompt = live.wait_prompt(before, 30);
    assert_eq!(
        typed(&prompt),
        vec![NUDGE],
        "the model received the nudge alone: {prompt:?}"
    );
    assert_eq!(
        watcher.reasons(),
        "",
        "no escalation; lines: {:#?}",
        watcher.lines()
    );
    eprintln!("{}: runtime {:?}", agent.name, started.elapsed());
}

#[test]
fn a_draft_left_in_a_real_codex_box_gets_no_key_and_one_escalation_then_the_emptied_box_is_nudged()
{
    a_draft_gets_no_key_and_one_escalation_then_the_emptied_box_is_nudged(CODEX);
}

#[test]
fn a_draft_left_in_a_real_gemini_box_gets_no_key_and_one_escalation_then_the_emptied_box_is_nudged()
{
    a_draft_gets_no_key_and_one_escalation_then_the_emptied_box_is_nudged(GEMINI);
}

#[test]
fn a_real_codex_box_showing_its_placeholder_is_nudged_on_the_second_poll() {
    the_placeholder_box_is_nudged_on_the_second_poll(CODEX);
}

#[test]
fn a_real_gemini_box_showing_its_placeholder_is_nudged_on_the_second_poll() {
    the_placeholder_box_is_nudged_on_the_second_poll(GEMINI);
}
