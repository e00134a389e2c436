//! `bmb-monitor classify`: one pane on stdin, one verdict on stdout.
//!
//! It exits 0 for any input (empty, 50 MB, invalid UTF-8, escapes, CRLF):
//! the verdict is the answer, and only a bad flag or an unusable profile
//! file is an error (exit 2).

use std::io::{Read, Write};
use std::process::ExitCode;

use camino::Utf8PathBuf;
use classify::{Context, Echo, Profile, Verdict, Work};

use crate::profiles;

#[derive(clap::Args)]
pub struct Args {
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
}

pub fn run(args: Args) -> ExitCode {
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
        eprintln!(
            "bmb-monitor: classify: reading stdin failed after {} bytes: {err}",
            raw.len()
        );
    }
    let pane = String::from_utf8_lossy(&raw);
    let work = args.work.as_deref().map_or(Work::Unknown, Work::parse);
    let echo = Echo::new(&args.echo);
    let verdict = classify::classify_with(
        &pane,
        work,
        &Context {
            profile,
            profiles: &profiles,
            echo: &echo,
        },
    );
    let chosen = profile.or_else(|| profiles.get(&verdict.profile));
    let out = if args.json {
        render_json(&pane, &verdict, work, chosen)
    } else if args.explain {
        classify::explain(&pane, &verdict, work, chosen)
    } else {
        format!("{}\n", verdict.state)
    };
    // A closed stdout is not worth a panic: the verdict had nowhere to go.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    ExitCode::SUCCESS
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("bmb-monitor: classify: {message}");
    ExitCode::from(crate::EXIT_USAGE)
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

fn render_json(pane: &str, verdict: &Verdict, work: Work, profile: Option<&Profile>) -> String {
    let lines = line_numbers(pane, verdict);
    let evidence = match (&verdict.evidence, lines.evidence) {
        (Some(evidence), Some(line)) => serde_json::json!({ "line": line, "text": evidence.text }),
        _ => serde_json::Value::Null,
    };
    let work = match work {
        Work::Available(n) => serde_json::json!(n),
        Work::None => serde_json::json!(0),
        Work::Unknown => serde_json::Value::Null,
    };
    let object = serde_json::json!({
        "state": verdict.state.as_str(),
        "profile": verdict.profile,
        "profile_versions": profile.map(|p| p.versions.as_str()),
        "rule": verdict.rule.name(),
        "why": verdict.rule.describe(),
        "work": work,
        "region": {
            "kind": verdict.region.kind.name(),
            "first_line": lines.region.0,
            "last_line": lines.region.1,
        },
        "evidence": evidence,
        "dialog": verdict.dialog,
    });
    format!("{object}\n")
}
