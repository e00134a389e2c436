//! The report bmb synthesises from what survived R-CITE: per dimension, the
//! kept findings ranked by severity then the auditor's rank, each new or
//! still open since the previous audit, the findings that are gone, the
//! holding rules, which of the dimension's rules were checked, and the
//! rejected items apart with why. The auditors' own summaries are never the
//! verdict.
//!
//! Only what changed is news: a finding is known again by its
//! [`finding_key`] (canonical file, normalised quote, which match of it, the
//! rule), not by its line, which moves as the project is edited, nor by the
//! dimension that found it: the same finding from two dimensions is one
//! finding. A finding is gone only when its quote has left its file, or when
//! two audits in a row of its dimension did not report it. The previous
//! audit is the previous report's [`Report::to_json`], read back with
//! [`Previous::from_json`]; the caller keeps it between audits.
//!
//! Every auditor text the report shows is one line, sanitised and capped
//! ([`one_line`], [`visible`]): no claim can make a heading, a fake alert
//! line or a terminal escape.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::cite::{
    Checked, Finding, Holds, Look, ProjectFiles, Rejected, normalised_quote, one_line, quote_in,
    shorten, visible,
};

/// What one dimension's auditor came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and its output was checked.
    Checked(Checked),
    /// It timed out or exited non-zero: how, in a few words. One line in the
    /// report, never fatal.
    Failed(String),
}

/// One dimension of the plan and what its auditor came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionResult {
    /// The dimension's name, as the plan has it: the report's section.
    pub name: String,
    /// The dimension's rules, `FILE:LINE` ([`super::cite::rule_ref`]).
    pub rules: Vec<String>,
    /// What its auditor came to.
    pub outcome: Outcome,
}

/// A finding's identity across audits and dimensions: the canonical file,
/// the quote in NFC with runs of whitespace as one space, which match of it
/// in the file, and the rule's words (`rule_text`). Not the line, of the
/// finding or of the rule: lines move. Not the dimension: two dimensions
/// that find one breach of one rule found one thing. The key is a JSON
/// array's text, so no separator can be forged by a quote.
pub fn finding_key(file: &str, quote: &str, occurrence: usize, rule_text: Option<&str>) -> String {
    let rule = rule_text.map(|text| {
        text.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    });
    json!([file, normalised_quote(quote), occurrence, rule]).to_string()
}

fn key_of(f: &Finding) -> String {
    finding_key(&f.file, &f.quote, f.occurrence, f.rule_text.as_deref())
}

/// A finding as an audit kept it, with the dimension it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// The dimension that kept it: where it is looked for next time.
    pub dimension: String,
    /// The finding as that audit kept it.
    pub finding: Finding,
    /// How many audits in a row of its dimension did not report it while
    /// its quote stayed in the file (0 or 1: at 2 it is gone).
    pub missed: u32,
}

impl Known {
    /// Its identity across audits ([`finding_key`]).
    pub fn key(&self) -> String {
        key_of(&self.finding)
    }
}

/// The findings the previous audit of the project kept (and carried).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Previous {
    findings: Vec<Known>,
}

impl Previous {
    /// The previous audit of `findings`, a finding known twice kept once.
    pub(crate) fn of(mut findings: Vec<Known>) -> Previous {
        let mut seen = BTreeSet::new();
        findings.retain(|known| seen.insert(known.key()));
        Previous { findings }
    }

    /// Every finding the previous audit knew, each once.
    pub fn findings(&self) -> &[Known] {
        &self.findings
    }
}

/// Whether a kept finding is news.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// Not in the previous audit (or there was none).
    New,
    /// The previous audit kept it too (in any dimension).
    StillOpen,
}

impl Status {
    /// The word the JSON report writes for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::StillOpen => "still_open",
        }
    }
}

/// A kept finding and whether it is news.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    /// The finding as this audit kept it.
    pub finding: Finding,
    /// Whether it is news.
    pub status: Status,
    /// The other dimensions that reported it too: one finding, listed once.
    pub also_in: Vec<String>,
}

/// Why a finding is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum GoneWhy {
    /// Its quote is no longer in its file (or the file is no longer one
    /// the audit reads).
    #[serde(rename = "quote_left")]
    QuoteLeft,
    /// Two audits in a row of its dimension did not report it.
    #[serde(rename = "unreported_twice")]
    Unreported,
}

impl GoneWhy {
    /// The word the JSON report writes for it.
    pub fn as_str(self) -> &'static str {
        match self {
            GoneWhy::QuoteLeft => "quote_left",
            GoneWhy::Unreported => "unreported_twice",
        }
    }

    fn said(self) -> &'static str {
        match self {
            GoneWhy::QuoteLeft => "its quote left the file",
            GoneWhy::Unreported => "not reported twice in a row",
        }
    }
}

/// A finding of the previous audit that is gone, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gone {
    /// The finding as the previous audit kept it.
    pub finding: Finding,
    /// Why it is gone.
    pub why: GoneWhy,
}

/// A dimension whose auditor's output was checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    /// Most severe first, then by the auditor's rank.
    pub findings: Vec<Ranked>,
    /// Findings of the previous audit of this dimension that are gone,
    /// ranked the same way.
    pub gone: Vec<Gone>,
    /// Findings of the previous audit of this dimension not reported this
    /// time although their quote is still in the file: neither news nor
    /// gone; gone if the next audit does not report them either.
    pub unconfirmed: Vec<Finding>,
    /// The rules its auditor found holding, with the line that shows it.
    pub holds: Vec<Holds>,
    /// Its auditor's items the citation check refused, with why.
    pub rejected: Vec<Rejected>,
    /// Its auditor's lines that were neither a finding nor a holding rule.
    pub ignored_lines: usize,
    /// The dimension's rules that a kept finding or holding rule is about.
    pub rules_checked: Vec<String>,
    /// The rest of its rules: what this audit says nothing of.
    pub rules_unchecked: Vec<String>,
}

impl Kept {
    /// Nothing found, nothing gone or in doubt, every rule checked: the
    /// dimension is one line.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
            && self.gone.is_empty()
            && self.unconfirmed.is_empty()
            && self.rules_unchecked.is_empty()
    }

    fn rules_said(&self) -> String {
        let total = self.rules_checked.len() + self.rules_unchecked.len();
        let mut counts = Vec::new();
        if total > 0 {
            counts.push(format!(
                "{} of {} checked",
                self.rules_checked.len(),
                plural(total, "rule", "rules")
            ));
        }
        counts.push(plural(self.holds.len(), "holding", "holding"));
        if !self.rejected.is_empty() {
            counts.push(format!("{} rejected", self.rejected.len()));
        }
        counts.join(", ")
    }
}

/// What a dimension's section of the report says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its auditor's output was checked: what survived.
    Kept(Kept),
    /// The auditor failed: how (one line).
    Failed(String),
}

/// One dimension's section of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionReport {
    /// The dimension's name, the section's heading.
    pub name: String,
    /// What the section says.
    pub verdict: Verdict,
}

/// An audit's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The project, as the report's headline and the alert name it (empty:
    /// unnamed).
    pub project: String,
    /// The project's git state moved while the auditors ran: how. Said first.
    pub changed_by_auditors: Option<String>,
    /// Why the auditors' writes could not be seen (not a git repository, git
    /// failed): said first, since the read-only check did not run.
    pub unverified: Option<String>,
    /// One section per dimension of the plan, in its order.
    pub dimensions: Vec<DimensionReport>,
    /// Findings of the previous audit in dimensions not checked this time
    /// (their auditor failed, or the plan left them out): neither news nor
    /// gone, kept in the JSON so the next audit still knows them.
    pub carried: Vec<Known>,
}

/// The report from what survived: each dimension's findings ranked and
/// marked against `previous` (one finding reported by two dimensions is
/// kept in the first), the previous findings no longer reported marked gone
/// or unconfirmed after a look at their file in `files`.
pub fn synthesise(
    results: Vec<DimensionResult>,
    previous: Option<&Previous>,
    changed_by_auditors: Option<String>,
    files: &mut impl ProjectFiles,
) -> Report {
    let previous: &[Known] = previous.map_or(&[], |p| p.findings());
    let before: BTreeSet<String> = previous.iter().map(Known::key).collect();
    let mut dimensions = Vec::new();
    // Where each kept key stands: (dimension index, finding index).
    let mut kept_at: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for result in results {
        let verdict = match result.outcome {
            Outcome::Failed(how) => Verdict::Failed(one_line(&how, FAILURE_CHARS)),
            // An answer with nothing that survived says nothing of the
            // dimension: its open findings are not gone, they are unknown
            // (an empty or error reply must not read as "fixed").
            Outcome::Checked(checked)
                if checked.findings.is_empty() && checked.holds.is_empty() =>
            {
                Verdict::Failed(said_nothing(&checked))
            }
            Outcome::Checked(checked) => {
                let index = dimensions.len();
                let mut kept = Kept {
                    holds: checked.holds,
                    rejected: checked.rejected,
                    ignored_lines: checked.ignored_lines,
                    ..Kept::default()
                };
                for finding in checked.findings {
                    let key = key_of(&finding);
                    if let Some(&(d, f)) = kept_at.get(&key) {
                        if let Some(DimensionReport {
                            verdict: Verdict::Kept(first),
                            ..
                        }) = dimensions.get_mut(d)
                        {
                            first.findings[f].also_in.push(result.name.clone());
                        }
                        continue;
                    }
                    kept_at.insert(key.clone(), (index, kept.findings.len()));
                    kept.findings.push(Ranked {
                        status: if before.contains(&key) {
                            Status::StillOpen
                        } else {
                            Status::New
                        },
                        finding,
                        also_in: Vec::new(),
                    });
                }
                let about: BTreeSet<&str> = kept
                    .findings
                    .iter()
                    .filter_map(|r| r.finding.rule.as_deref())
                    .chain(kept.holds.iter().filter_map(|h| h.rule.as_deref()))
                    .collect();
                let (checked_rules, unchecked): (Vec<String>, Vec<String>) = result
                    .rules
                    .iter()
                    .cloned()
                    .partition(|rule| about.contains(rule.as_str()));
                kept.rules_checked = checked_rules;
                kept.rules_unchecked = unchecked;
                Verdict::Kept(kept)
            }
        };
        dimensions.push(DimensionReport {
            name: result.name,
            verdict,
        });
    }
    // Sorting comes after the cross-dimension pass, which points by index.
    let mut carried = Vec::new();
    let mut lines_of: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    for known in previous {
        if kept_at.contains_key(&known.key()) {
            continue;
        }
        let Some(kept) = dimensions.iter_mut().find_map(|d| match &mut d.verdict {
            Verdict::Kept(kept) if d.name == known.dimension => Some(kept),
            _ => None,
        }) else {
            carried.push(known.clone());
            continue;
        };
        let lines = lines_of
            .entry(known.finding.file.clone())
            .or_insert_with_key(|file| match files.look(file) {
                Look::Text { lines, .. } => Some(lines),
                _ => None,
            });
        let there = lines
            .as_deref()
            .is_some_and(|lines| quote_in(&known.finding.quote, lines));
        if !there {
            kept.gone.push(Gone {
                finding: known.finding.clone(),
                why: GoneWhy::QuoteLeft,
            });
        } else if known.missed >= 1 {
            kept.gone.push(Gone {
                finding: known.finding.clone(),
                why: GoneWhy::Unreported,
            });
        } else {
            kept.unconfirmed.push(known.finding.clone());
        }
    }
    for d in &mut dimensions {
        if let Verdict::Kept(kept) = &mut d.verdict {
            kept.findings
                .sort_by_key(|r| (r.finding.severity, r.finding.rank));
            kept.gone
                .sort_by_key(|g| (g.finding.severity, g.finding.rank));
            kept.unconfirmed.sort_by_key(|f| (f.severity, f.rank));
        }
    }
    Report {
        project: String::new(),
        changed_by_auditors,
        unverified: None,
        dimensions,
        carried,
    }
}

/// How an answer with no finding and no holding rule that survived is
/// said: what it held instead.
fn said_nothing(checked: &Checked) -> String {
    let mut held = Vec::new();
    if !checked.rejected.is_empty() {
        let mut codes: Vec<&str> = checked.rejected.iter().map(|r| r.why.code()).collect();
        codes.dedup();
        held.push(format!(
            "{} rejected: {}",
            checked.rejected.len(),
            codes.join(", ")
        ));
    }
    if checked.ignored_lines > 0 {
        held.push(plural(checked.ignored_lines, "other line", "other lines"));
    }
    let held = if held.is_empty() {
        "it printed nothing".to_string()
    } else {
        held.join(", ")
    };
    format!(
        "no finding and no holding rule survived the check ({held}), so its earlier findings are kept as they were"
    )
}

/// How much of a quote the markdown shows.
const QUOTE_CHARS: usize = 160;
/// How much of a claim the alert shows.
const ALERT_CLAIM_CHARS: usize = 200;
/// How much of an auditor's failure is kept.
const FAILURE_CHARS: usize = 300;
/// How many new findings the alert lists; the rest are counted.
pub const ALERT_FINDINGS: usize = 10;
/// The most characters an alert has.
pub const ALERT_CHARS: usize = 3000;
/// How many unchecked rules a dimension's section names; the rest are counted.
const UNCHECKED_NAMED: usize = 10;

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A name (a project's path, a dimension's heading) as one line.
fn name(text: &str) -> String {
    one_line(text, 200)
}

impl Report {
    fn kept(&self) -> impl Iterator<Item = (&str, &Kept)> {
        self.dimensions.iter().filter_map(|d| match &d.verdict {
            Verdict::Kept(kept) => Some((d.name.as_str(), kept)),
            Verdict::Failed(_) => None,
        })
    }

    fn new_findings(&self) -> Vec<(&str, &Finding)> {
        let mut new: Vec<(&str, &Finding)> = self
            .kept()
            .flat_map(|(name, kept)| {
                kept.findings
                    .iter()
                    .filter(|r| r.status == Status::New)
                    .map(move |r| (name, &r.finding))
            })
            .collect();
        new.sort_by_key(|(_, f)| (f.severity, f.rank));
        new
    }

    fn failed(&self) -> usize {
        self.dimensions
            .iter()
            .filter(|d| matches!(d.verdict, Verdict::Failed(_)))
            .count()
    }

    /// The counts every form of the report leads with: findings of the
    /// dimensions checked this time apart from those carried unchecked,
    /// and the auditors that failed.
    fn headline(&self) -> String {
        let found: usize = self.kept().map(|(_, k)| k.findings.len()).sum();
        let checked = self.kept().count();
        let mut parts = vec![format!(
            "{} in {} ({} new)",
            plural(found, "finding", "findings"),
            plural(checked, "checked dimension", "checked dimensions"),
            self.new_findings().len()
        )];
        let still: usize = self
            .kept()
            .map(|(_, k)| {
                k.findings
                    .iter()
                    .filter(|r| r.status == Status::StillOpen)
                    .count()
            })
            .sum();
        let gone: usize = self.kept().map(|(_, k)| k.gone.len()).sum();
        let unconfirmed: usize = self.kept().map(|(_, k)| k.unconfirmed.len()).sum();
        for (n, what) in [
            (still, "still open"),
            (gone, "gone"),
            (unconfirmed, "not reported this time"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if !self.carried.is_empty() {
            parts.push(format!(
                "{} carried from dimensions not checked",
                plural(self.carried.len(), "finding", "findings")
            ));
        }
        let failed = self.failed();
        if failed > 0 {
            parts.push(format!(
                "{failed} of {} failed",
                plural(self.dimensions.len(), "auditor", "auditors")
            ));
        }
        let of = if self.project.is_empty() {
            "Audit".to_string()
        } else {
            format!("Audit of {}", name(&self.project))
        };
        format!("{of}: {}", parts.join("; "))
    }

    /// The report as markdown: the auditors' changes first, then one
    /// section per dimension (a clean or failed one is one line), then the
    /// rejected items with why. Every auditor text in it is one line with
    /// no control character acting.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        if let Some(how) = &self.changed_by_auditors {
            out.push_str(&format!(
                "**The auditors changed the project:** {}\n\n",
                one_line(how, 500)
            ));
        }
        if let Some(why) = &self.unverified {
            out.push_str(&format!(
                "**Not verified read-only:** {}\n\n",
                one_line(why, 500)
            ));
        }
        out.push_str(&format!("# {}\n", self.headline()));
        for dimension in &self.dimensions {
            out.push('\n');
            let title = name(&dimension.name);
            let kept = match &dimension.verdict {
                Verdict::Failed(how) => {
                    out.push_str(&format!(
                        "## {title}: the auditor failed: {}\n",
                        one_line(how, FAILURE_CHARS)
                    ));
                    continue;
                }
                Verdict::Kept(kept) => kept,
            };
            if kept.is_clean() {
                out.push_str(&format!("## {title}: clean ({})\n", kept.rules_said()));
                continue;
            }
            out.push_str(&format!("## {title} ({})\n\n", kept.rules_said()));
            for ranked in &kept.findings {
                let status = match ranked.status {
                    Status::New => "new",
                    Status::StillOpen => "still open",
                };
                let f = &ranked.finding;
                let mut about = String::new();
                if let Some(rule) = &f.rule {
                    about.push_str(&format!(" (rule `{}`)", visible(rule, 200)));
                }
                if !ranked.also_in.is_empty() {
                    let also: Vec<String> = ranked.also_in.iter().map(|n| name(n)).collect();
                    about.push_str(&format!(" (also found by: {})", also.join(", ")));
                }
                out.push_str(&format!(
                    "- **{}** {status}, `{}:{}`: {}{about}\n  > {}\n",
                    f.severity,
                    visible(&f.file, 300),
                    f.line,
                    one_line(&f.claim, 500),
                    visible(&f.quote, QUOTE_CHARS)
                ));
            }
            for f in &kept.unconfirmed {
                out.push_str(&format!(
                    "- not reported this time, its quote still there ({}), `{}:{}`: {}\n",
                    f.severity,
                    visible(&f.file, 300),
                    f.line,
                    one_line(&f.claim, 500)
                ));
            }
            for g in &kept.gone {
                let f = &g.finding;
                out.push_str(&format!(
                    "- gone ({}, {}), was `{}:{}`: {}\n",
                    f.severity,
                    g.why.said(),
                    visible(&f.file, 300),
                    f.line,
                    one_line(&f.claim, 500)
                ));
            }
            for h in &kept.holds {
                out.push_str(&format!(
                    "- holds, `{}:{}`: {}\n",
                    visible(&h.file, 300),
                    h.line,
                    one_line(&h.holds, 500)
                ));
            }
            if !kept.rules_unchecked.is_empty() {
                let named: Vec<String> = kept
                    .rules_unchecked
                    .iter()
                    .take(UNCHECKED_NAMED)
                    .map(|r| format!("`{}`", visible(r, 200)))
                    .collect();
                let more = kept.rules_unchecked.len().saturating_sub(UNCHECKED_NAMED);
                out.push_str(&format!(
                    "- rules not checked: {}{}\n",
                    named.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        let rejected: Vec<(&str, &Rejected)> = self
            .kept()
            .flat_map(|(name, kept)| kept.rejected.iter().map(move |r| (name, r)))
            .collect();
        if !rejected.is_empty() {
            out.push_str("\n## Rejected\n\n");
            for (dimension, r) in rejected {
                out.push_str(&format!(
                    "- {}: {}: `{}`\n",
                    name(dimension),
                    r.why,
                    visible(&r.line, 300)
                ));
            }
        }
        if !self.carried.is_empty() {
            out.push_str(&format!(
                "\n{} of dimensions not checked this time kept for the next audit (not checked, not counted above).\n",
                plural(self.carried.len(), "finding", "findings")
            ));
        }
        out
    }

    /// What is news, for the alert: a headline that names the project and
    /// counts the checked findings apart from the carried ones and the
    /// failed auditors, the auditors' changes, then the new findings (at
    /// most [`ALERT_FINDINGS`], one line each); at most [`ALERT_CHARS`]
    /// characters. `None` when nothing is news.
    pub fn alert(&self) -> Option<String> {
        let new = self.new_findings();
        let first_failure = self.dimensions.iter().find_map(|d| match &d.verdict {
            Verdict::Failed(how) => Some((d.name.as_str(), how.as_str())),
            Verdict::Kept(_) => None,
        });
        let all_failed = self
            .dimensions
            .iter()
            .all(|d| matches!(d.verdict, Verdict::Failed(_)));
        let mut lines = Vec::new();
        if let (true, Some((dimension, how)), None) =
            (all_failed, first_failure, &self.changed_by_auditors)
        {
            // Nothing was audited: that is news too, or a broken auditor
            // (a lost API key) would stay silent audit after audit.
            lines.push(self.headline());
            lines.push(format!(
                "The audit learned nothing: {} failed ({}: {})",
                if self.dimensions.len() == 1 {
                    "its auditor".to_string()
                } else {
                    format!("all {} auditors", self.dimensions.len())
                },
                name(dimension),
                one_line(how, FAILURE_CHARS)
            ));
            return Some(cap(lines));
        }
        if self.changed_by_auditors.is_none() && new.is_empty() {
            return None;
        }
        lines.push(self.headline());
        if let Some(how) = &self.changed_by_auditors {
            lines.push(format!(
                "The auditors changed the project: {}",
                one_line(how, 500)
            ));
        }
        for (dimension, f) in new.iter().take(ALERT_FINDINGS) {
            lines.push(format!(
                "- [{}] {}: {}:{}: {}",
                f.severity,
                name(dimension),
                visible(&f.file, 300),
                f.line,
                one_line(&f.claim, ALERT_CLAIM_CHARS)
            ));
        }
        if new.len() > ALERT_FINDINGS {
            lines.push(format!(
                "and {} more new (the report lists them)",
                new.len() - ALERT_FINDINGS
            ));
        }
        Some(cap(lines))
    }
}

/// The alert's lines joined, cut to [`ALERT_CHARS`] at a line's end where
/// one fits, with a last line that says it was cut.
fn cap(lines: Vec<String>) -> String {
    const CUT: &str = "… (cut; the report has the rest)";
    let whole = lines.join("\n");
    if whole.chars().count() <= ALERT_CHARS {
        return whole;
    }
    let room = ALERT_CHARS - CUT.chars().count() - 1;
    let mut out = String::new();
    for line in &lines {
        let next = out.chars().count() + line.chars().count() + usize::from(!out.is_empty());
        if next > room {
            if out.is_empty() {
                out = shorten(line, room - 1);
            }
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    format!("{out}\n{CUT}")
}

#[cfg(test)]
mod tests;
