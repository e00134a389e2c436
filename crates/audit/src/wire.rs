//! What the audit writes as JSON, one serde-derived type per format, each
//! apart from the types the audit computes with, so a change inside the
//! audit cannot move a byte of what another process reads:
//!
//! - [`ReportJson`]: the report, `audit --json` (which `watch --audit` reads
//!   from its audit's stdout) and the `last.json` kept between audits, read
//!   back as the previous audit, perhaps by another version of bmb or on
//!   another machine the state folder was copied to;
//! - [`PlanJson`]: the plan, `audit --plan --json`.
//!
//! Each carries `version`, the version of its shape. A field an older
//! reader can do without is added with its default and no new version; a
//! field that changes meaning or goes moves the version, and a reader
//! refuses a version newer than its own rather than misread it.
//!
//! [`Report::to_json`] and [`Plan::to_json`] write them;
//! [`Previous::from_json`] reads a saved report back as the previous audit,
//! refusing it with a [`PreviousError`] that says what is wrong.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cite::{Finding, Severity};
use crate::plan::{Notes, Plan, round1};
use crate::report::{GoneWhy, Known, Previous, Report, Status, Verdict, finding_key};

/// The version of [`ReportJson`]'s shape this crate writes and reads.
/// Reports from before the field was written have none and read as 1.
pub const REPORT_VERSION: u32 = 1;

/// The version of [`PlanJson`]'s shape this crate writes.
pub const PLAN_VERSION: u32 = 1;

/// An audit's report as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportJson {
    /// [`REPORT_VERSION`] when written here.
    #[serde(default = "first_version")]
    pub version: u32,
    /// The project audited, as the report's headline names it (empty: unnamed).
    pub project: String,
    /// How the project's git state moved while the auditors ran, if it did.
    pub changed_by_auditors: Option<String>,
    /// Why the auditors' read-only use could not be verified, if it could not.
    pub unverified: Option<String>,
    /// One entry per dimension of the plan, in the plan's order.
    pub dimensions: Vec<DimensionJson>,
    /// Findings of the previous audit in dimensions not checked this time,
    /// kept so the next audit still knows them.
    pub carried: Vec<CarriedJson>,
}

/// One dimension of a [`ReportJson`]: a failed auditor has `failed` set and
/// every list empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimensionJson {
    /// The dimension's name, unique within the plan.
    pub name: String,
    /// How its auditor failed (one line), or null when its output was checked.
    pub failed: Option<String>,
    /// The findings kept, most severe first, then by the auditor's rank.
    pub findings: Vec<RankedJson>,
    /// Findings of the previous audit not reported this time while their
    /// quote is still in the file (absent in reports from before they were kept).
    #[serde(default)]
    pub unconfirmed: Vec<UnconfirmedJson>,
    /// Findings of the previous audit that are gone, and why.
    pub gone: Vec<GoneJson>,
    /// The rules the auditor found holding, with the line that shows it.
    pub holds: Vec<HoldsJson>,
    /// The auditor's items that failed the citation check, and why.
    pub rejected: Vec<RejectedJson>,
    /// The auditor's lines that were neither a finding nor a holding rule.
    pub ignored_lines: usize,
    /// The dimension's rules (`FILE:LINE`) a kept finding or holding rule is about.
    pub rules_checked: Vec<String>,
    /// The rest of its rules: what this audit says nothing of.
    pub rules_unchecked: Vec<String>,
}

/// A finding as every list of the report writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingJson {
    /// `high`, `medium` or `low`.
    pub severity: Severity,
    /// The auditor's own order within a severity, 1 first.
    pub rank: u32,
    /// What the auditor says is wrong (one line).
    pub claim: String,
    /// The file the quote is in, relative to the project, canonical.
    pub file: String,
    /// The quote's first line in the file, 1-based.
    pub line: usize,
    /// The project's text the finding cites, checked to be in `file`.
    pub quote: String,
    /// Which match of the quote in the file it is, 1 first (absent in
    /// reports from before it was kept: the first).
    #[serde(default = "first_occurrence")]
    pub occurrence: usize,
    /// The rule it breaks, `FILE:LINE`, when the auditor named one.
    #[serde(default)]
    pub rule: Option<String>,
    /// That rule's words, part of the finding's identity.
    #[serde(default)]
    pub rule_text: Option<String>,
}

/// A kept finding of this audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankedJson {
    /// The finding itself.
    #[serde(flatten)]
    pub finding: FindingJson,
    /// `new`, or `still_open` when the previous audit kept it too.
    pub status: Status,
    /// Its identity across audits ([`finding_key`]).
    pub key: String,
    /// The other dimensions that reported it too.
    pub also_in: Vec<String>,
}

/// A previous finding not reported this time, its quote still there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnconfirmedJson {
    /// The finding as the previous audit kept it.
    #[serde(flatten)]
    pub finding: FindingJson,
    /// Audits in a row of its dimension that did not report it: 1 here (at 2 it is gone).
    pub missed: u32,
}

/// A previous finding that is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoneJson {
    /// The finding as the previous audit kept it.
    #[serde(flatten)]
    pub finding: FindingJson,
    /// `quote_left` or `unreported_twice`.
    pub why: GoneWhy,
}

/// A rule an auditor found holding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldsJson {
    /// What holds, in the auditor's words (one line).
    pub holds: String,
    /// The file that shows it.
    pub file: String,
    /// The line that shows it, 1-based.
    pub line: usize,
    /// The rule, `FILE:LINE`, when the auditor named one.
    pub rule: Option<String>,
}

/// An auditor's item the citation check refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedJson {
    /// The auditor's line, as it came.
    pub line: String,
    /// Why it was refused, in words.
    pub why: String,
    /// Why it was refused, as a stable code (`quote_not_found`, …).
    pub reason: String,
}

/// A finding carried from a dimension not checked this time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedJson {
    /// The finding as the previous audit kept it.
    #[serde(flatten)]
    pub finding: FindingJson,
    /// The dimension it belongs to.
    pub dimension: String,
    /// Audits in a row of its dimension that did not report it.
    pub missed: u32,
}

fn first_version() -> u32 {
    1
}

fn first_occurrence() -> usize {
    1
}

impl FindingJson {
    fn of(f: &Finding) -> FindingJson {
        FindingJson {
            severity: f.severity,
            rank: f.rank,
            claim: f.claim.clone(),
            file: f.file.clone(),
            line: f.line,
            quote: f.quote.clone(),
            occurrence: f.occurrence,
            rule: f.rule.clone(),
            rule_text: f.rule_text.clone(),
        }
    }
}

impl ReportJson {
    /// The report's wire form.
    pub fn of(report: &Report) -> ReportJson {
        let dimensions = report
            .dimensions
            .iter()
            .map(|dimension| {
                let (failed, kept) = match &dimension.verdict {
                    Verdict::Failed(how) => (Some(how.clone()), None),
                    Verdict::Kept(kept) => (None, Some(kept)),
                };
                let kept = kept.cloned().unwrap_or_default();
                DimensionJson {
                    name: dimension.name.clone(),
                    failed,
                    findings: kept
                        .findings
                        .iter()
                        .map(|r| RankedJson {
                            finding: FindingJson::of(&r.finding),
                            status: r.status,
                            key: finding_key(
                                &r.finding.file,
                                &r.finding.quote,
                                r.finding.occurrence,
                                r.finding.rule_text.as_deref(),
                            ),
                            also_in: r.also_in.clone(),
                        })
                        .collect(),
                    unconfirmed: kept
                        .unconfirmed
                        .iter()
                        .map(|f| UnconfirmedJson {
                            finding: FindingJson::of(f),
                            missed: 1,
                        })
                        .collect(),
                    gone: kept
                        .gone
                        .iter()
                        .map(|g| GoneJson {
                            finding: FindingJson::of(&g.finding),
                            why: g.why,
                        })
                        .collect(),
                    holds: kept
                        .holds
                        .iter()
                        .map(|h| HoldsJson {
                            holds: h.holds.clone(),
                            file: h.file.clone(),
                            line: h.line,
                            rule: h.rule.clone(),
                        })
                        .collect(),
                    rejected: kept
                        .rejected
                        .iter()
                        .map(|r| RejectedJson {
                            line: r.line.clone(),
                            why: r.why.to_string(),
                            reason: r.why.code().to_string(),
                        })
                        .collect(),
                    ignored_lines: kept.ignored_lines,
                    rules_checked: kept.rules_checked,
                    rules_unchecked: kept.rules_unchecked,
                }
            })
            .collect();
        let carried = report
            .carried
            .iter()
            .map(|known| CarriedJson {
                finding: FindingJson::of(&known.finding),
                dimension: known.dimension.clone(),
                missed: known.missed,
            })
            .collect();
        ReportJson {
            version: REPORT_VERSION,
            project: report.project.clone(),
            changed_by_auditors: report.changed_by_auditors.clone(),
            unverified: report.unverified.clone(),
            dimensions,
            carried,
        }
    }
}

/// An audit's plan as JSON (`audit --plan --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanJson {
    /// [`PLAN_VERSION`] when written here.
    pub version: u32,
    /// The dimensions audited, the most checkable against the tree first.
    pub dimensions: Vec<PlanDimensionJson>,
    /// True when the project states no rule and the seed's fallbacks are used.
    pub fallback: bool,
    /// Rules stated more than once, counted once.
    pub repeated: usize,
    /// Dimensions merged into another to stay within the cap.
    pub merged: Vec<MergedJson>,
    /// Dimensions left out by the cap, weakest last.
    pub left_out: Vec<LeftOutJson>,
    /// The rules files read.
    pub read: Vec<ReadJson>,
    /// The rules files not read, and why.
    pub skipped: Vec<SkippedJson>,
    /// What the plan costs in agent runs.
    pub cost: CostJson,
}

/// One dimension of a [`PlanJson`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDimensionJson {
    /// Unique within the plan.
    pub name: String,
    /// Where it comes from: `CLAUDE.md § Testing`, `fallback`, ….
    pub origin: String,
    /// The files its rules are stated in, in order.
    pub sources: Vec<String>,
    /// The paths or globs its rules govern; empty for the whole project.
    pub scope: Vec<String>,
    /// Its rules; empty only for a fallback dimension.
    pub rules: Vec<RuleJson>,
}

/// A rule where the project states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleJson {
    /// The file, relative to the project, `/`-separated.
    pub file: String,
    /// The rule's first line, 1-based.
    pub line: usize,
    /// The rule's text.
    pub text: String,
    /// The other places the same rule is stated.
    pub also: Vec<PlaceJson>,
}

/// Another place a rule is stated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaceJson {
    /// The file, relative to the project.
    pub file: String,
    /// The line, 1-based.
    pub line: usize,
}

/// A dimension merged into another by the cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedJson {
    /// The dimension merged.
    pub merged: String,
    /// The dimension it went into.
    pub into: String,
}

/// A dimension left out by the cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutJson {
    /// Its name.
    pub name: String,
    /// How many rules it had.
    pub rules: usize,
    /// Why it was left out.
    pub why: String,
}

/// A rules file read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadJson {
    /// The file, relative to the project.
    pub path: String,
    /// The rules file that pointed to it, or null when it was read by name.
    pub from: Option<String>,
}

/// A rules file not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedJson {
    /// The file, relative to the project.
    pub path: String,
    /// Why it was not read.
    pub why: String,
}

/// What a plan costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostJson {
    /// Agent runs per audit: one per dimension.
    pub runs_per_audit: usize,
    /// The period the daily figures assume, in seconds.
    pub audit_every_secs: u64,
    /// True when that period is the default, not the watcher's own.
    pub audit_every_assumed: bool,
    /// Audits a day at that period, to one decimal.
    pub audits_per_day: f64,
    /// Agent runs a day at that period, to one decimal.
    pub runs_per_day: f64,
}

impl PlanJson {
    /// The plan's wire form, with what was read and skipped and the cost at
    /// `notes.audit_every`.
    pub fn of(plan: &Plan, notes: &Notes) -> PlanJson {
        let cost = plan.cost(notes.audit_every);
        PlanJson {
            version: PLAN_VERSION,
            dimensions: plan
                .dimensions
                .iter()
                .map(|dimension| PlanDimensionJson {
                    name: dimension.name.clone(),
                    origin: dimension.origin.clone(),
                    sources: dimension.sources.clone(),
                    scope: dimension.scope.clone(),
                    rules: dimension
                        .rules
                        .iter()
                        .map(|rule| RuleJson {
                            file: rule.file.clone(),
                            line: rule.line,
                            text: rule.text.clone(),
                            also: rule
                                .also
                                .iter()
                                .map(|place| PlaceJson {
                                    file: place.file.clone(),
                                    line: place.line,
                                })
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
            fallback: plan.fallback,
            repeated: plan.repeated,
            merged: plan
                .merged
                .iter()
                .map(|(merged, into)| MergedJson {
                    merged: merged.clone(),
                    into: into.clone(),
                })
                .collect(),
            left_out: plan
                .left_out
                .iter()
                .map(|left| LeftOutJson {
                    name: left.name.clone(),
                    rules: left.rules,
                    why: left.why.clone(),
                })
                .collect(),
            read: notes
                .read
                .iter()
                .map(|(path, from)| ReadJson {
                    path: path.clone(),
                    from: from.clone(),
                })
                .collect(),
            skipped: notes
                .skipped
                .iter()
                .map(|(path, why)| SkippedJson {
                    path: path.clone(),
                    why: why.clone(),
                })
                .collect(),
            cost: CostJson {
                runs_per_audit: cost.runs_per_audit,
                audit_every_secs: cost.audit_every.as_secs(),
                audit_every_assumed: cost.assumed,
                audits_per_day: round1(cost.audits_per_day),
                runs_per_day: round1(cost.runs_per_day),
            },
        }
    }
}

impl Report {
    /// The report as one JSON object, its [`ReportJson`] form;
    /// [`Previous::from_json`] reads it back. Each dimension keeps
    /// `findings`, `unconfirmed`, `gone`, `holds`, `rejected` and the rules
    /// checked and not apart; `failed` is how its auditor failed, or null.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(ReportJson::of(self))
            .expect("the report's wire type has only string keys and no fallible field")
    }
}

impl Plan {
    /// `--plan --json`: the plan as one line of JSON, its
    /// [`PlanJson`] form.
    pub fn to_json(&self, notes: &Notes) -> String {
        serde_json::to_string(&PlanJson::of(self, notes))
            .expect("the plan's wire type has only string keys and finite numbers")
    }
}

/// Why a saved report could not be read back as the previous audit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreviousError {
    /// The value at `at` (a path such as `dimensions[0].findings[2].rank`)
    /// is missing or of the wrong type.
    Malformed {
        /// The path of the value, from the report's root.
        at: String,
    },
    /// The report is of a newer shape ([`REPORT_VERSION`]) than this crate
    /// reads: written by a later bmb.
    Newer {
        /// The version the report says it is of.
        version: u64,
    },
}

impl fmt::Display for PreviousError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreviousError::Malformed { at } => {
                write!(f, "the saved audit has no valid `{at}`")
            }
            PreviousError::Newer { version } => write!(
                f,
                "the saved audit is of format version {version}, newer than this bmb reads ({REPORT_VERSION})"
            ),
        }
    }
}

impl std::error::Error for PreviousError {}

impl Previous {
    /// The previous audit from its report's JSON: the findings of every
    /// dimension (`dimensions[].findings`, and `unconfirmed`, the ones missed
    /// once) and the ones it carried. A finding known twice is kept once.
    /// A report of a newer [`REPORT_VERSION`] is refused, not misread; one
    /// without a version is of the first. Read field by field rather than
    /// through [`ReportJson`]'s derive, so a bad value is named by its path.
    pub fn from_json(value: &Value) -> Result<Previous, PreviousError> {
        if let Some(version) = value.get("version") {
            let version = version.as_u64().ok_or_else(|| malformed("version"))?;
            if version > u64::from(REPORT_VERSION) {
                return Err(PreviousError::Newer { version });
            }
        }
        let mut findings = Vec::new();
        for (d, dimension) in array(value, "dimensions", "dimensions")?.iter().enumerate() {
            let at = format!("dimensions[{d}]");
            let name = text(dimension, "name", &at)?;
            let kept = array(dimension, "findings", &format!("{at}.findings"))?;
            for (i, finding) in kept.iter().enumerate() {
                findings.push(Known {
                    dimension: name.to_string(),
                    finding: finding_from_json(finding, &format!("{at}.findings[{i}]"))?,
                    missed: 0,
                });
            }
            // Absent in reports of before it was kept.
            let unconfirmed = dimension
                .get("unconfirmed")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for (i, finding) in unconfirmed.iter().enumerate() {
                let at = format!("{at}.unconfirmed[{i}]");
                findings.push(Known {
                    dimension: name.to_string(),
                    finding: finding_from_json(finding, &at)?,
                    missed: missed(finding, &at)?.max(1),
                });
            }
        }
        for (i, known) in array(value, "carried", "carried")?.iter().enumerate() {
            let at = format!("carried[{i}]");
            findings.push(Known {
                dimension: text(known, "dimension", &at)?.to_string(),
                finding: finding_from_json(known, &at)?,
                missed: missed(known, &at)?,
            });
        }
        Ok(Previous::of(findings))
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

fn missed(value: &Value, at: &str) -> Result<u32, PreviousError> {
    match value.get("missed") {
        None => Ok(0),
        Some(_) => u32::try_from(number(value, "missed", at)?)
            .map_err(|_| malformed(&format!("{at}.missed"))),
    }
}

fn finding_from_json(value: &Value, at: &str) -> Result<Finding, PreviousError> {
    let severity = Severity::parse(text(value, "severity", at)?)
        .ok_or_else(|| malformed(&format!("{at}.severity")))?;
    let rank =
        u32::try_from(number(value, "rank", at)?).map_err(|_| malformed(&format!("{at}.rank")))?;
    let line = usize::try_from(number(value, "line", at)?)
        .map_err(|_| malformed(&format!("{at}.line")))?;
    // Both absent in reports of before they were kept: the first match, no rule.
    let occurrence = match value.get("occurrence") {
        None => 1,
        Some(_) => usize::try_from(number(value, "occurrence", at)?)
            .map_err(|_| malformed(&format!("{at}.occurrence")))?,
    };
    let optional = |field: &str| match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(malformed(&format!("{at}.{field}"))),
    };
    let rule = optional("rule")?;
    let rule_text = optional("rule_text")?;
    Ok(Finding {
        severity,
        rank,
        claim: text(value, "claim", at)?.to_string(),
        file: text(value, "file", at)?.to_string(),
        line,
        quote: text(value, "quote", at)?.to_string(),
        occurrence,
        rule,
        rule_text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words serde writes for the vocabularies are the words the rest of
    /// the audit writes and reads (`as_str`, `Severity::parse`).
    #[test]
    fn the_wire_words_are_the_vocabularies_words() {
        let word = |value: serde_json::Value| value.as_str().map(str::to_string);
        for severity in [Severity::High, Severity::Medium, Severity::Low] {
            let written = serde_json::to_value(severity).unwrap();
            assert_eq!(word(written.clone()).as_deref(), Some(severity.as_str()));
            assert_eq!(
                serde_json::from_value::<Severity>(written).unwrap(),
                severity
            );
        }
        for status in [Status::New, Status::StillOpen] {
            let written = serde_json::to_value(status).unwrap();
            assert_eq!(word(written).as_deref(), Some(status.as_str()));
        }
        for why in [GoneWhy::QuoteLeft, GoneWhy::Unreported] {
            let written = serde_json::to_value(why).unwrap();
            assert_eq!(word(written).as_deref(), Some(why.as_str()));
        }
    }
}
