//! The human explanation of a verdict: `bmb-monitor classify --explain` and
//! the golden corpus's snapshots print exactly this.

use crate::{Evidence, Profile, Verdict, Work};

/// The state on the first line, then the rule, the profile, the work, the
/// region and the evidence line, each on its own line; a stop's note (the
/// profile's `stop_note`) and a QUESTION's dialog follow.
pub fn explain(pane: &str, verdict: &Verdict, work: Work, profile: Option<&Profile>) -> String {
    let line_of = |offset: usize| {
        Evidence {
            offset,
            text: String::new(),
        }
        .line_number(pane)
    };
    let mut out = format!("{}\n", verdict.state);
    out += &format!("rule:     {} ({})\n", verdict.rule, verdict.rule.describe());
    match profile {
        Some(p) => out += &format!("profile:  {} ({} {})\n", p.name, p.agent, p.versions),
        None => out += &format!("profile:  {}\n", verdict.profile),
    }
    out += &format!("work:     {}\n", work.display());
    let (first, last) = (line_of(verdict.region.first), line_of(verdict.region.last));
    out += &format!(
        "region:   {}, lines {first}-{last}\n",
        verdict.region.kind.name()
    );
    match &verdict.evidence {
        Some(evidence) => {
            out += &format!(
                "evidence: line {}: {}\n",
                evidence.line_number(pane),
                evidence.text.trim()
            )
        }
        None => out += "evidence: none (the pane is empty)\n",
    }
    if let Some(note) = &verdict.note {
        out += &format!("note:     {note}\n");
    }
    for line in &verdict.dialog {
        out += &format!("dialog:   {line}\n");
    }
    out
}
