//! The report bmb synthesises from what survived R-CITE: per dimension, the
//! kept findings ranked by severity then the auditor's rank, each new or
//! still open since the previous audit, the findings that are gone, the
//! holding rules, and the rejected items apart with why. The auditors' own
//! summaries are never the verdict.
//!
//! Only what changed is news: a finding is known again by its
//! [`finding_key`] (dimension, file, whitespace-normalised quote), not by its
//! line, which moves as the project is edited. The previous audit is the
//! previous report's [`Report::to_json`], read back with
//! [`Previous::from_json`]; the caller keeps it between audits.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value, json};

use super::cite::{Checked, Finding, Holds, Rejected, Severity, shorten};

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
    pub name: String,
    pub outcome: Outcome,
}

/// A finding's identity across audits: the dimension, the file and the
/// quote with runs of whitespace as one space. Not the line: lines move.
/// The key is a JSON array's text, so no separator can be forged by a quote.
pub fn finding_key(dimension: &str, file: &str, quote: &str) -> String {
    let quote = quote.split_whitespace().collect::<Vec<_>>().join(" ");
    json!([dimension, file, quote]).to_string()
}

/// A finding as an audit kept it, with the dimension it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub dimension: String,
    pub finding: Finding,
}

impl Known {
    pub fn key(&self) -> String {
        finding_key(&self.dimension, &self.finding.file, &self.finding.quote)
    }
}

/// The findings the previous audit of the project kept (and carried).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Previous {
    findings: Vec<Known>,
}

/// Why a saved report could not be read back as the previous audit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreviousError {
    /// The value at `at` (a path such as `dimensions[0].findings[2].rank`)
    /// is missing or of the wrong type.
    Malformed { at: String },
}

impl fmt::Display for PreviousError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreviousError::Malformed { at } => {
                write!(f, "the saved audit has no valid `{at}`")
            }
        }
    }
}

impl std::error::Error for PreviousError {}

impl Previous {
    /// The previous audit from its report's JSON: the findings of every
    /// dimension (`dimensions[].findings`) and the ones it carried.
    pub fn from_json(value: &Value) -> Result<Previous, PreviousError> {
        let mut findings = Vec::new();
        for (d, dimension) in array(value, "dimensions", "dimensions")?.iter().enumerate() {
            let at = format!("dimensions[{d}]");
            let name = text(dimension, "name", &at)?;
            let kept = array(dimension, "findings", &format!("{at}.findings"))?;
            for (i, finding) in kept.iter().enumerate() {
                findings.push(Known {
                    dimension: name.to_string(),
                    finding: finding_from_json(finding, &format!("{at}.findings[{i}]"))?,
                });
            }
        }
        for (i, known) in array(value, "carried", "carried")?.iter().enumerate() {
            let at = format!("carried[{i}]");
            findings.push(Known {
                dimension: text(known, "dimension", &at)?.to_string(),
                finding: finding_from_json(known, &at)?,
            });
        }
        Ok(Previous { findings })
    }

    pub fn findings(&self) -> &[Known] {
        &self.findings
    }
}

fn malformed(at: &str) -> PreviousError {
    PreviousError::Malformed { at: at.to_string() }
}

fn array<'a>(value: &'a Value, field: &str, at: &str) -> Result<&'a Vec<Value>, PreviousError> {
    value
        .get(field)
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(at))
}

fn text<'a>(value: &'a Value, field: &str, at: &str) -> Result<&'a str, PreviousError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(&format!("{at}.{field}")))
}

fn number(value: &Value, field: &str, at: &str) -> Result<u64, PreviousError> {
    value
        .get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| malformed(&format!("{at}.{field}")))
}

fn finding_from_json(value: &Value, at: &str) -> Result<Finding, PreviousError> {
    let severity = Severity::parse(text(value, "severity", at)?)
        .ok_or_else(|| malformed(&format!("{at}.severity")))?;
    let rank =
        u32::try_from(number(value, "rank", at)?).map_err(|_| malformed(&format!("{at}.rank")))?;
    let line = usize::try_from(number(value, "line", at)?)
        .map_err(|_| malformed(&format!("{at}.line")))?;
    Ok(Finding {
        severity,
        rank,
        claim: text(value, "claim", at)?.to_string(),
        file: text(value, "file", at)?.to_string(),
        line,
        quote: text(value, "quote", at)?.to_string(),
    })
}

/// Whether a kept finding is news.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Not in the previous audit (or there was none).
    New,
    /// The previous audit kept it too.
    StillOpen,
}

impl Status {
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
    pub finding: Finding,
    pub status: Status,
}

/// A dimension whose auditor's output was checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    /// Most severe first, then by the auditor's rank.
    pub findings: Vec<Ranked>,
    /// Findings of the previous audit of this dimension that are no longer
    /// reported, ranked the same way.
    pub gone: Vec<Finding>,
    pub holds: Vec<Holds>,
    pub rejected: Vec<Rejected>,
    pub ignored_lines: usize,
}

impl Kept {
    /// Nothing found and nothing gone: the dimension is one line.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty() && self.gone.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Kept(Kept),
    /// The auditor failed: how.
    Failed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionReport {
    pub name: String,
    pub verdict: Verdict,
}

/// An audit's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The project's git state moved while the auditors ran: how. Said first.
    pub changed_by_auditors: Option<String>,
    /// Why the auditors' writes could not be seen (not a git repository, git
    /// failed): said first, since the read-only check did not run.
    pub unverified: Option<String>,
    pub dimensions: Vec<DimensionReport>,
    /// Findings of the previous audit in dimensions not checked this time
    /// (their auditor failed, or the plan left them out): neither news nor
    /// gone, kept in the JSON so the next audit still knows them.
    pub carried: Vec<Known>,
}

/// The report from what survived: each dimension's findings ranked and
/// marked against `previous`, the previous findings no longer reported
/// marked gone, per dimension name.
pub fn synthesise(
    results: Vec<DimensionResult>,
    previous: Option<&Previous>,
    changed_by_auditors: Option<String>,
) -> Report {
    let previous: &[Known] = previous.map_or(&[], |p| p.findings());
    let mut checked_names = BTreeSet::new();
    let mut dimensions = Vec::new();
    for result in results {
        let verdict = match result.outcome {
            Outcome::Failed(how) => Verdict::Failed(how),
            // An answer with nothing that survived says nothing of the
            // dimension: its open findings are not gone, they are unknown
            // (an empty or error reply must not read as "fixed").
            Outcome::Checked(checked)
                if checked.findings.is_empty() && checked.holds.is_empty() =>
            {
                Verdict::Failed(said_nothing(&checked))
            }
            Outcome::Checked(checked) => {
                checked_names.insert(result.name.clone());
                Verdict::Kept(mark(&result.name, checked, previous))
            }
        };
        dimensions.push(DimensionReport {
            name: result.name,
            verdict,
        });
    }
    let carried = previous
        .iter()
        .filter(|known| !checked_names.contains(&known.dimension))
        .cloned()
        .collect();
    Report {
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

fn mark(name: &str, checked: Checked, previous: &[Known]) -> Kept {
    let before: BTreeSet<String> = previous
        .iter()
        .filter(|known| known.dimension == name)
        .map(Known::key)
        .collect();
    let key = |f: &Finding| finding_key(name, &f.file, &f.quote);
    let now: BTreeSet<String> = checked.findings.iter().map(key).collect();
    let mut findings: Vec<Ranked> = checked
        .findings
        .into_iter()
        .map(|finding| Ranked {
            status: if before.contains(&key(&finding)) {
                Status::StillOpen
            } else {
                Status::New
            },
            finding,
        })
        .collect();
    findings.sort_by_key(|r| (r.finding.severity, r.finding.rank));
    let mut gone: Vec<Finding> = previous
        .iter()
        .filter(|known| known.dimension == name && !now.contains(&known.key()))
        .map(|known| known.finding.clone())
        .collect();
    gone.sort_by_key(|f| (f.severity, f.rank));
    Kept {
        findings,
        gone,
        holds: checked.holds,
        rejected: checked.rejected,
        ignored_lines: checked.ignored_lines,
    }
}

/// How much of a quote the markdown and the alert show.
const QUOTE_CHARS: usize = 160;

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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

    /// The report as markdown: the auditors' changes first, then one
    /// section per dimension (a clean or failed one is one line), then the
    /// rejected items with why.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        if let Some(how) = &self.changed_by_auditors {
            out.push_str(&format!("**The auditors changed the project:** {how}\n\n"));
        }
        if let Some(why) = &self.unverified {
            out.push_str(&format!("**Not verified read-only:** {why}\n\n"));
        }
        let found: usize = self.kept().map(|(_, k)| k.findings.len()).sum();
        out.push_str(&format!(
            "# Audit: {}, {} new\n",
            plural(found, "finding", "findings"),
            self.new_findings().len()
        ));
        for dimension in &self.dimensions {
            out.push('\n');
            let kept = match &dimension.verdict {
                Verdict::Failed(how) => {
                    out.push_str(&format!(
                        "## {}: the auditor failed: {how}\n",
                        dimension.name
                    ));
                    continue;
                }
                Verdict::Kept(kept) => kept,
            };
            let mut counts = vec![plural(kept.holds.len(), "rule holds", "rules hold")];
            if !kept.rejected.is_empty() {
                counts.push(format!("{} rejected", kept.rejected.len()));
            }
            if kept.is_clean() {
                out.push_str(&format!(
                    "## {}: clean ({})\n",
                    dimension.name,
                    counts.join(", ")
                ));
                continue;
            }
            out.push_str(&format!(
                "## {} ({})\n\n",
                dimension.name,
                counts.join(", ")
            ));
            for ranked in &kept.findings {
                let status = match ranked.status {
                    Status::New => "new",
                    Status::StillOpen => "still open",
                };
                let f = &ranked.finding;
                out.push_str(&format!(
                    "- **{}** {status}, `{}:{}`: {}\n  > {}\n",
                    f.severity,
                    f.file,
                    f.line,
                    f.claim,
                    shorten(&f.quote, QUOTE_CHARS)
                ));
            }
            for f in &kept.gone {
                out.push_str(&format!(
                    "- gone ({}), was `{}:{}`: {}\n",
                    f.severity, f.file, f.line, f.claim
                ));
            }
            for h in &kept.holds {
                out.push_str(&format!("- holds, `{}:{}`: {}\n", h.file, h.line, h.holds));
            }
        }
        let rejected: Vec<(&str, &Rejected)> = self
            .kept()
            .flat_map(|(name, kept)| kept.rejected.iter().map(move |r| (name, r)))
            .collect();
        if !rejected.is_empty() {
            out.push_str("\n## Rejected\n\n");
            for (name, r) in rejected {
                out.push_str(&format!("- {name}: {}: `{}`\n", r.why, r.line));
            }
        }
        if !self.carried.is_empty() {
            out.push_str(&format!(
                "\n{} of dimensions not checked this time kept for the next audit.\n",
                plural(self.carried.len(), "finding", "findings")
            ));
        }
        out
    }

    /// The report as one JSON object; [`Previous::from_json`] reads it back.
    /// Each dimension keeps `findings`, `gone`, `holds` and `rejected` apart;
    /// `failed` is how its auditor failed, or null.
    pub fn to_json(&self) -> Value {
        let dimensions: Vec<Value> = self
            .dimensions
            .iter()
            .map(|dimension| {
                let (failed, kept) = match &dimension.verdict {
                    Verdict::Failed(how) => (Some(how.as_str()), None),
                    Verdict::Kept(kept) => (None, Some(kept)),
                };
                let kept = kept.cloned().unwrap_or_default();
                let findings: Vec<Value> = kept
                    .findings
                    .iter()
                    .map(|r| {
                        let mut object = finding_json(&r.finding);
                        object.insert("status".into(), r.status.as_str().into());
                        object.insert(
                            "key".into(),
                            finding_key(&dimension.name, &r.finding.file, &r.finding.quote).into(),
                        );
                        Value::Object(object)
                    })
                    .collect();
                let gone: Vec<Value> = kept
                    .gone
                    .iter()
                    .map(|f| Value::Object(finding_json(f)))
                    .collect();
                let holds: Vec<Value> = kept
                    .holds
                    .iter()
                    .map(|h| json!({"holds": h.holds, "file": h.file, "line": h.line}))
                    .collect();
                let rejected: Vec<Value> = kept
                    .rejected
                    .iter()
                    .map(|r| json!({"line": r.line, "why": r.why.to_string(), "reason": r.why.code()}))
                    .collect();
                json!({
                    "name": dimension.name,
                    "failed": failed,
                    "findings": findings,
                    "gone": gone,
                    "holds": holds,
                    "rejected": rejected,
                    "ignored_lines": kept.ignored_lines,
                })
            })
            .collect();
        let carried: Vec<Value> = self
            .carried
            .iter()
            .map(|known| {
                let mut object = finding_json(&known.finding);
                object.insert("dimension".into(), known.dimension.clone().into());
                Value::Object(object)
            })
            .collect();
        json!({
            "changed_by_auditors": self.changed_by_auditors,
            "unverified": self.unverified,
            "dimensions": dimensions,
            "carried": carried,
        })
    }

    /// What is news, for the alert: the auditors' changes first, then the
    /// new findings, then the count of the rest. `None` when nothing is news.
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
        if let (true, Some((name, how)), None) =
            (all_failed, first_failure, &self.changed_by_auditors)
        {
            // Nothing was audited: that is news too, or a broken auditor
            // (a lost API key) would stay silent audit after audit.
            return Some(format!(
                "The audit learned nothing: {} failed ({name}: {how})",
                if self.dimensions.len() == 1 {
                    "its auditor".to_string()
                } else {
                    format!("all {} auditors", self.dimensions.len())
                }
            ));
        }
        if self.changed_by_auditors.is_none() && new.is_empty() {
            return None;
        }
        let mut lines = Vec::new();
        if let Some(how) = &self.changed_by_auditors {
            lines.push(format!("The auditors changed the project: {how}"));
        }
        if !new.is_empty() {
            lines.push(format!(
                "{}:",
                plural(new.len(), "new finding", "new findings")
            ));
            for (name, f) in &new {
                lines.push(format!(
                    "- [{}] {name}: {}:{}: {}",
                    f.severity, f.file, f.line, f.claim
                ));
            }
        }
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
        let failed = self
            .dimensions
            .iter()
            .filter(|d| matches!(d.verdict, Verdict::Failed(_)))
            .count();
        let rest: Vec<String> = [
            (still, "still open".to_string()),
            (gone, "gone".to_string()),
            (
                failed,
                if failed == 1 {
                    "auditor failed"
                } else {
                    "auditors failed"
                }
                .to_string(),
            ),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if !rest.is_empty() {
            lines.push(format!("and {}", rest.join(", ")));
        }
        Some(lines.join("\n"))
    }
}

fn finding_json(f: &Finding) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("severity".into(), f.severity.as_str().into());
    object.insert("rank".into(), f.rank.into());
    object.insert("claim".into(), f.claim.clone().into());
    object.insert("file".into(), f.file.clone().into());
    object.insert("line".into(), f.line.into());
    object.insert("quote".into(), f.quote.clone().into());
    object
}

#[cfg(test)]
mod tests;
