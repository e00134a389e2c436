//! `bmb-monitor classify`: one pane on stdin, one verdict on stdout.
//!
//! It exits 0 for any input (empty, 50 MB, invalid UTF-8, escapes, CRLF):
//! the verdict is the answer, and only a bad flag or an unusable profile
//! file is an error (exit 2).

use std::io::Read;
use std::process::ExitCode;

use camino::Utf8PathBuf;
use classify::{Context, Echo, Profile, Verdict, Work};
use watchdog::session::Foreground;
use watchdog::session::witness::{Witness, combine};

use crate::output::say;
use crate::profiles;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The work probe's raw output (a count of work left); missing or not a
    /// non-negative integer means unknown, which is read as work (fail open).
    #[arg(long, value_name = "RAW", allow_hyphen_values = true)]
    work: Option<String>,
    /// The agent profile to read the pane with (`auto` picks one from the pane).
    #[arg(long, value_name = "NAME", default_value = "auto")]
    profile: String,
    /// Load an extra profile file (repeatable); one with a built-in's name replaces it.
    #[arg(long, value_name = "FILE")]
    profile_file: Vec<Utf8PathBuf>,
    /// Text the monitor itself typed into this pane (repeatable), excluded before matching.
    #[arg(long, value_name = "TEXT")]
    echo: Vec<String>,
    /// Print one JSON object instead of the state word.
    #[arg(long)]
    json: bool,
    /// After the state, say which rule fired, on which region, with which line.
    #[arg(long)]
    explain: bool,
    /// Claude Code's session file (`<claude-dir>/sessions/<pid>.json`) as a
    /// second witness: a `busy` or `waiting` agent behind a stop-looking pane
    /// is WORKING or a pending QUESTION; both readings are shown.
    #[arg(long, value_name = "FILE")]
    session_state: Option<std::path::PathBuf>,
    /// What runs in the pane's foreground (tmux's `#{pane_current_command}`):
    /// a shell there means the agent exited, a relay (ssh, tmux) shows a
    /// screen that cannot be checked, and either makes typing unsafe.
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    pane_command: Option<String>,
}

pub(crate) fn run(args: Args) -> ExitCode {
    let profiles = match profiles::load(&args.profile_file) {
        Ok(profiles) => profiles,
        Err(message) => return usage_error(&message),
    };
    let profile = match args.profile.as_str() {
        "auto" => None,
        name => match profiles.get(name) {
            Some(profile) => Some(profile),
            None => {
                let known: Vec<&str> = profiles.names().collect();
                let message = format!(
                    "unknown profile `{name}` (known: auto, {})",
                    known.join(", ")
                );
                return usage_error(&message);
            }
        },
    };
    let mut raw = Vec::new();
    if let Err(err) = std::io::stdin().lock().read_to_end(&mut raw) {
        // Classify what arrived; a verdict on part of a pane beats none.
        say(format_args!(
            "bmb-monitor: classify: reading stdin failed after {} bytes: {err}",
            raw.len()
        ));
    }
    let pane = String::from_utf8_lossy(&raw);
    let work = args.work.as_deref().map_or(Work::Unknown, Work::parse);
    let echo = Echo::new(&args.echo);
    let verdict = classify::classify_with(
        &pane,
        work,
        &Context::new(&profiles)
            .with_profile(profile)
            .with_echo(&echo),
    );
    let chosen = profile.or_else(|| profiles.get(&verdict.profile));
    let witness = match &args.session_state {
        None => None,
        // A session file is a few hundred bytes; never block on a FIFO.
        Some(path) => match probes::fs::file::read_regular_text(path, 64 * 1024) {
            Ok(text) => Some(Witness::from_session_file(&text, None)),
            Err(err) => {
                return usage_error(&format!(
                    "cannot read --session-state {}: it {err}",
                    path.display()
                ));
            }
        },
    };
    let combined = witness.as_ref().map(|w| combine(verdict.state, w));
    let state = combined.map_or(verdict.state, |c| c.state);
    let out = if args.json {
        render_json(
            &pane,
            &verdict,
            work,
            chosen,
            witness.as_ref(),
            args.pane_command.as_deref(),
        )
    } else if args.explain {
        let mut out = classify::explain(&pane, &verdict, work, chosen);
        if let (Some(witness), Some(combined)) = (&witness, combined) {
            // The first line is the combined state; the pane's own reading stays below it.
            out = out.replacen(verdict.state.as_str(), state.as_str(), 1);
            out += &format!("pane:     {} (the pane alone)\n", verdict.state);
            out += &format!(
                "witness:  {} ({})\n",
                witness.word(),
                describe_witness(witness)
            );
            if combined.overruled {
                out += &format!(
                    "combined: {state}: the session file overrules a stop the pane shows\n"
                );
            } else if combined.disagree {
                out += &format!("combined: {state}: the two disagree; the pane's reading stands\n");
            }
        }
        out += &format!(
            "typing:   {}\n",
            describe_typing(&verdict, args.pane_command.as_deref())
        );
        if let classify::BoxText::Draft(draft) = &verdict.box_text {
            out += &format!("draft:    {}\n", draft.replace('\n', " / "));
        }
        if let Some(limit) = &verdict.usage_limit {
            let reset = limit.reset.as_deref().unwrap_or("no time given");
            out += &format!(
                "limit:    a usage limit, reset {reset}: `watch` holds it until then (line: {})\n",
                limit.line.trim()
            );
        }
        out
    } else {
        format!("{state}\n")
    };
    // A closed stdout is not worth a panic: the verdict had nowhere to go.
    crate::output::print_raw(&out);
    crate::exit::code(crate::exit::OK)
}

fn usage_error(message: &str) -> ExitCode {
    crate::output::usage_error("classify", message)
}

struct Lines {
    region: (usize, usize),
    evidence: Option<usize>,
}

fn line_numbers(pane: &str, verdict: &Verdict) -> Lines {
    let line_of = |offset: usize| {
        classify::Evidence {
            offset,
            text: String::new(),
        }
        .line_number(pane)
    };
    Lines {
        region: (line_of(verdict.region.first), line_of(verdict.region.last)),
        evidence: verdict.evidence.as_ref().map(|e| e.line_number(pane)),
    }
}

/// Why typing into this pane is not safe, if it is not: the pane's own
/// reading, then what runs in front of it (`--pane-command`, read as the
/// monitor reads it when it cannot see the process table: a shell there is
/// idle).
fn typing_refusal(verdict: &Verdict, pane_command: Option<&str>) -> Option<String> {
    refusal_in_front(pane_command)
        .map(|(_, why)| why)
        .or_else(|| verdict.typing_refusal().map(str::to_string))
}

/// The machine word of [`typing_refusal`] (`--json`'s `not_typed_because`):
/// the watch monitor's words for what runs in front, else the pane's own.
fn typing_refusal_word(verdict: &Verdict, pane_command: Option<&str>) -> Option<&'static str> {
    refusal_in_front(pane_command)
        .map(|(word, _)| word)
        .or_else(|| verdict.typing_refusal_word())
}

/// What runs in front of the pane makes typing unsafe: an idle shell there
/// (read as the monitor reads it when it cannot see the process table), or a relay.
fn refusal_in_front(pane_command: Option<&str>) -> Option<(&'static str, String)> {
    let front = pane_command.map(|command| Foreground {
        command: command.to_string(),
        ..Foreground::default()
    })?;
    if let Some(gone) = front.gone() {
        return Some(("agent_exited", format!("the agent exited: {gone}")));
    }
    front.relay().map(|relay| {
        let why = format!("the pane runs {relay}, a relay to a screen that cannot be checked");
        ("relay", why)
    })
}

/// Whether a nudge could be typed into this pane (a monitor also checks
/// that the agent still runs in it: `--pane-command`).
fn describe_typing(verdict: &Verdict, pane_command: Option<&str>) -> String {
    match typing_refusal(verdict, pane_command) {
        None => format!(
            "safe as far as the pane tells (the {} input box is live)",
            verdict.profile
        ),
        Some(why) => format!("not safe: {why}"),
    }
}

fn describe_witness(witness: &Witness) -> String {
    match witness {
        Witness::Busy => "Claude Code says a turn is running".to_string(),
        Witness::Idle => "Claude Code says it is at the prompt".to_string(),
        Witness::Waiting(what) => format!("Claude Code is waiting for {what}"),
        Witness::Absent(why) => format!("no witness: {why}"),
    }
}

/// `classify --json`: the verdict and what it rests on, one object. The fields are in
/// alphabetical order, the order the object has had since before it was a type of its own. No
/// version field: it is this machine's answer about one capture, read where it is printed.
#[derive(serde::Serialize)]
struct VerdictJson<'a> {
    /// A QUESTION's dialog lines, top to bottom, as shown.
    dialog: &'a [String],
    /// With a witness: whether it and the pane disagree.
    disagree: Option<bool>,
    /// A person's draft in the input box, as typed.
    draft: Option<&'a str>,
    /// The evidence line, numbered from 1.
    evidence: Option<LineJson<'a>>,
    /// The profile's live input box (or input line) is on screen.
    input_box: bool,
    /// Why a nudge would not be typed, as one word.
    not_typed_because: Option<&'static str>,
    /// The pane's own state, before the witness.
    pane_state: &'static str,
    /// The profile that read the pane.
    profile: &'a str,
    /// The CLI releases that profile was captured from.
    profile_versions: Option<&'a str>,
    /// Where the rule looked.
    region: RegionJson,
    /// The rule that decided the state.
    rule: &'static str,
    /// The state, the witness's word combined with the pane's when there is one.
    state: &'static str,
    /// Why a nudge would not be typed, as a sentence.
    typing_refusal: Option<String>,
    /// Whether a nudge could be typed into this pane now.
    typing_safe: bool,
    /// A stop's usage limit in force.
    usage_limit: Option<UsageLimitJson<'a>>,
    /// What the rule means, in one sentence.
    why: &'static str,
    /// The second witness (Claude Code's session file), when asked.
    witness: Option<WitnessJson>,
    /// The work probe's count.
    work: Option<u64>,
}

/// A line of the capture: its 1-based number and text.
#[derive(serde::Serialize)]
struct LineJson<'a> {
    line: usize,
    text: &'a str,
}

/// A region of the capture, by kind and 1-based line numbers.
#[derive(serde::Serialize)]
struct RegionJson {
    first_line: usize,
    kind: &'static str,
    last_line: usize,
}

/// A usage-limit line and its reset, as printed.
#[derive(serde::Serialize)]
struct UsageLimitJson<'a> {
    line: &'a str,
    reset: Option<&'a str>,
}

/// The second witness: what it says, in a sentence and as its word.
#[derive(serde::Serialize)]
struct WitnessJson {
    says: String,
    status: &'static str,
}

fn render_json(
    pane: &str,
    verdict: &Verdict,
    work: Work,
    profile: Option<&Profile>,
    witness: Option<&Witness>,
    pane_command: Option<&str>,
) -> String {
    let lines = line_numbers(pane, verdict);
    let evidence = match (&verdict.evidence, lines.evidence) {
        (Some(evidence), Some(line)) => Some(LineJson {
            line,
            text: &evidence.text,
        }),
        _ => None,
    };
    let combined = witness.map(|w| combine(verdict.state, w));
    let object = VerdictJson {
        state: combined.map_or(verdict.state, |c| c.state).as_str(),
        pane_state: verdict.state.as_str(),
        witness: witness.map(|w| WitnessJson {
            status: w.word(),
            says: describe_witness(w),
        }),
        disagree: combined.map(|c| c.disagree),
        profile: &verdict.profile,
        profile_versions: profile.map(|p| p.versions.as_str()),
        rule: verdict.rule.name(),
        why: verdict.rule.describe(),
        work: work.count(),
        region: RegionJson {
            kind: verdict.region.kind.name(),
            first_line: lines.region.0,
            last_line: lines.region.1,
        },
        evidence,
        dialog: &verdict.dialog,
        input_box: verdict.input_box,
        typing_safe: verdict.typing_safe() && typing_refusal(verdict, pane_command).is_none(),
        typing_refusal: typing_refusal(verdict, pane_command),
        not_typed_because: typing_refusal_word(verdict, pane_command),
        draft: match &verdict.box_text {
            classify::BoxText::Draft(draft) => Some(draft.as_str()),
            _ => None,
        },
        usage_limit: verdict.usage_limit.as_ref().map(|limit| UsageLimitJson {
            line: &limit.line,
            reset: limit.reset.as_deref(),
        }),
    };
    // Strings, numbers and options only: serialising cannot fail.
    let json = serde_json::to_string(&object).unwrap_or_default();
    format!("{json}\n")
}
