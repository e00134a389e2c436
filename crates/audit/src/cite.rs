//! R-CITE: an auditor's stdout read as findings and holding rules, every
//! citation checked against the project's own files, never trusted.
//!
//! The contract an auditor meets (the issue's words, kept exactly): one JSON
//! object per line, anywhere in its stdout, either a finding
//! `{"severity":"high"|"medium"|"low","rank":N,"claim":"…","file":"path/in/project","line":N,"quote":"the text at that line"}`
//! or a holding rule `{"holds":"one specific line on why it holds","file":"…","line":N}`.
//! More fields may be added; these may not change. One is: `"rule":"FILE:LINE"`,
//! the rule (as the prompt lists it) that the finding breaks or that holds.
//! A line that is not such an object is ignored and counted; one that has
//! the shape but gets a field wrong, or whose citation does not resolve or
//! proves nothing, is rejected with why.
//!
//! Checks run in this order, and the first that fails is the reason:
//! the fields, then (for a holding rule) generic noise, then the path, the
//! file (missing, binary, ignored by git), the line, generated or vendored
//! files, (for a finding) the quote's length and whether it is there, a
//! rule's own line, (for a holding rule) whether it names the place it
//! cites, the `rule` field, and last padding.
//!
//! What is kept is single-line and capped: a claim or a holding line of
//! many lines, escapes or controls cannot reshape the report that shows it.
//! Nothing of an item that cites an ignored file is kept (its line, claim
//! and quote), and its quote is blanked out of everything else kept.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};
use unicode_normalization::UnicodeNormalization;

use super::plan::Rule;

/// What a cited file is, as the caller's port found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Look {
    /// A text file of the project: its path relative to the root with every
    /// symlink resolved (`/`-separated), and its lines.
    Text {
        /// The path relative to the root, every symlink resolved, `/`-separated:
        /// the name a finding keeps, so two aliases of a file are one file.
        canonical: String,
        /// The file's lines, without their line breaks.
        lines: Vec<String>,
    },
    /// No such (readable, regular) file inside the project.
    Missing,
    /// A file with a NUL byte in its first 8000 bytes (git's own test).
    Binary,
    /// A file git ignores (and does not track), or one inside `.git`, or
    /// one whose ignore status could not be learnt. Its text is never kept.
    Ignored,
}

/// The project's files as the auditor cites them. The caller implements it;
/// [`check`] asks only for a path it has already normalised and found to stay
/// inside the project: relative, no `..` that leaves the root, no NUL, no
/// backslash, no control character.
///
/// The `bmb-monitor` adapter reads with bounded reads, refuses a symlink that
/// leads out of the project root (which pure code cannot see), and asks git
/// which files it ignores.
pub trait ProjectFiles {
    /// The project's root as an absolute path: an absolute citation inside
    /// it is read relative to it (what Claude Code's tools print).
    fn root(&self) -> &str;
    /// What `path` (relative to the root) is.
    fn look(&mut self, path: &str) -> Look;
}

/// How bad a finding is. Ordered most severe first, so sorting ascending
/// puts `High` on top.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The auditor's worst: ranked first.
    High,
    /// Between the two.
    Medium,
    /// The auditor's least: ranked last.
    Low,
}

impl Severity {
    /// The contract's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }

    /// The contract's word read back; exact and lowercase, as the contract states it.
    pub fn parse(word: &str) -> Option<Severity> {
        match word {
            "high" => Some(Severity::High),
            "medium" => Some(Severity::Medium),
            "low" => Some(Severity::Low),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A finding whose citation resolved: the quoted text is at or next to
/// `file:line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How bad the auditor says it is: the first key of the ranking.
    pub severity: Severity,
    /// The auditor's own order within a severity, 1 first: the second key.
    pub rank: u32,
    /// One line, sanitised, at most [`CLAIM_CHARS`] characters.
    pub claim: String,
    /// The canonical path: relative to the root, every symlink resolved.
    pub file: String,
    /// Where the quote is, 1-based: shown, never part of the identity (lines move).
    pub line: usize,
    /// As the auditor quoted it (it is in the file); shown through
    /// [`visible`].
    pub quote: String,
    /// Which match of the quote in the file this is, from 1: the same text
    /// cited on two of its places is two findings.
    pub occurrence: usize,
    /// The rule it breaks, `FILE:LINE` as the plan lists it, when the
    /// auditor named it or the dimension has one rule.
    pub rule: Option<String>,
    /// That rule's text: what the finding's identity holds of the rule
    /// (its line moves when the rules file is edited; its words do not).
    pub rule_text: Option<String>,
}

/// A rule the auditor says holds, with a specific reason and a citation that
/// resolved and that the reason names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holds {
    /// One line, sanitised, at most [`CLAIM_CHARS`] characters.
    pub holds: String,
    /// The canonical path.
    pub file: String,
    /// The line that shows it holds, 1-based.
    pub line: usize,
    /// The rule that holds, as for [`Finding::rule`].
    pub rule: Option<String>,
}

/// An object of the contract's shape that did not survive, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The auditor's line through [`visible`], cut to
    /// [`REJECTED_LINE_CHARS`] characters; for an ignored file, only its
    /// path and line.
    pub line: String,
    /// What was wrong with it.
    pub why: RejectReason,
}

/// Why an object was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectReason {
    /// The path leaves the project (relative with `..`, or absolute outside
    /// the root), or holds NUL, a backslash or a control character; the
    /// project's files were not asked.
    PathEscape,
    /// No readable, regular file of the project at the cited path.
    NoSuchFile,
    /// `line` is not within the file's `lines` (lines count from 1).
    NoSuchLine {
        /// The line cited.
        line: usize,
        /// How many lines the file has.
        lines: usize,
    },
    /// The quoted text (whitespace- and Unicode-normalised) is not on the
    /// cited line, the one before or the one after.
    QuoteNotThere,
    /// A holding rule that says nothing specific ("no issues found", or too
    /// few words to say why this rule holds).
    Generic,
    /// A finding whose claim only restates one of the dimension's rules.
    Padding,
    /// The field is missing, of the wrong type or out of range.
    MissingField {
        /// The contract's name for the field.
        field: &'static str,
    },
    /// `severity` is a string, but not `high`, `medium` or `low`.
    BadSeverity,
    /// A finding at the same place (file, quote, which match of it) as one
    /// kept above it: one finding said twice.
    Duplicate,
    /// The quote has fewer than [`MIN_QUOTE_CHARS`] letters or digits: a
    /// `}` or `x` is on half the lines of any file.
    ShortQuote,
    /// The file is binary.
    Binary,
    /// The file is ignored by git (or inside `.git`): what it holds (a
    /// `.env`'s secrets) is never kept, and it is no source of the project.
    Ignored,
    /// A generated or vendored file ([`generated`]) that no rule names: the
    /// project's rules are not about it.
    Generated,
    /// The citation is a rule's own line: a rule is no evidence against
    /// (or for) itself.
    RuleLine,
    /// A holding line that names neither the cited file nor anything on the
    /// cited line: the citation does not back its claim.
    HoldsElsewhere,
    /// `rule` names no rule of the plan.
    NoSuchRule,
}

impl RejectReason {
    /// A stable word for machine readers of the JSON report.
    pub fn code(&self) -> &'static str {
        match self {
            RejectReason::PathEscape => "path_escape",
            RejectReason::NoSuchFile => "no_such_file",
            RejectReason::NoSuchLine { .. } => "no_such_line",
            RejectReason::QuoteNotThere => "quote_not_there",
            RejectReason::Generic => "generic",
            RejectReason::Padding => "padding",
            RejectReason::MissingField { .. } => "missing_field",
            RejectReason::BadSeverity => "bad_severity",
            RejectReason::Duplicate => "duplicate",
            RejectReason::ShortQuote => "short_quote",
            RejectReason::Binary => "binary",
            RejectReason::Ignored => "ignored",
            RejectReason::Generated => "generated",
            RejectReason::RuleLine => "rule_line",
            RejectReason::HoldsElsewhere => "holds_elsewhere",
            RejectReason::NoSuchRule => "no_such_rule",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::PathEscape => f.write_str("the path leaves the project"),
            RejectReason::NoSuchFile => f.write_str("no such file in the project"),
            RejectReason::NoSuchLine { line, lines } => {
                write!(f, "line {line} is not in the file ({lines} lines)")
            }
            RejectReason::QuoteNotThere => f.write_str("the quoted text is not at that line"),
            RejectReason::Generic => f.write_str("a generic holding line, not a specific reason"),
            RejectReason::Padding => f.write_str("the claim only restates a rule"),
            RejectReason::MissingField { field } => {
                write!(f, "field `{field}` is missing or of the wrong type")
            }
            RejectReason::BadSeverity => f.write_str("severity is not high, medium or low"),
            RejectReason::Duplicate => {
                f.write_str("the same place and quote as a finding kept above it")
            }
            RejectReason::ShortQuote => write!(
                f,
                "the quote has fewer than {MIN_QUOTE_CHARS} letters or digits"
            ),
            RejectReason::Binary => f.write_str("the file is binary"),
            RejectReason::Ignored => {
                f.write_str("the file is ignored by git; nothing it holds is kept")
            }
            RejectReason::Generated => {
                f.write_str("the file is generated or vendored, and no rule names it")
            }
            RejectReason::RuleLine => f.write_str("it cites a rule's own line"),
            RejectReason::HoldsElsewhere => f.write_str(
                "the holding line names neither the file nor anything on the line it cites",
            ),
            RejectReason::NoSuchRule => f.write_str("`rule` names no rule of the plan"),
        }
    }
}

/// What one auditor's output came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// The findings whose citation resolved, in the auditor's order.
    pub findings: Vec<Finding>,
    /// The holding rules whose citation resolved.
    pub holds: Vec<Holds>,
    /// Every object that did not survive the check, with why.
    pub rejected: Vec<Rejected>,
    /// Non-blank lines that were not an object of the contract's shapes.
    pub ignored_lines: usize,
}

/// How much of a rejected line the report keeps: enough to recognise it.
pub const REJECTED_LINE_CHARS: usize = 200;

/// How much of a claim or a holding line is kept.
pub const CLAIM_CHARS: usize = 300;

/// A quote needs at least this many letters or digits to point at one
/// place: `}`, `x` or `);` prove nothing.
pub const MIN_QUOTE_CHARS: usize = 6;

/// What a quote of an ignored file is replaced with wherever else it stands.
pub const WITHHELD: &str = "[text of an ignored file, withheld]";

/// What an audit checks against: the dimension's rules and every rule of
/// the plan.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The dimension's rules: the padding check and the `rule` field.
    pub rules: &'a [Rule],
    /// Every rule of the plan: none of their lines is evidence, and a
    /// generated file one of them names may be cited.
    pub plan_rules: &'a [Rule],
}

/// A rule as findings and holding rules name it: `FILE:LINE`.
pub fn rule_ref(rule: &Rule) -> String {
    format!("{}:{}", rule.file, rule.line)
}

/// A holding line needs at least this many words to say why *this* rule
/// holds; the seed's example ("the token ratchet covers px in components, the
/// exempt list is the token file only") has fifteen.
pub const MIN_HOLDS_WORDS: usize = 5;

/// Phrases that say a rule holds without saying why (compared
/// case-, punctuation- and whitespace-normalised). A holding line that
/// contains one is generic unless [`MIN_HOLDS_WORDS`] words remain without it.
pub const GENERIC_HOLDS: [&str; 12] = [
    "no issues found",
    "no issues",
    "all clean",
    "looks good",
    "everything is fine",
    "nothing to report",
    "no problems",
    "no violations",
    "all good",
    "lgtm",
    "rule holds",
    "this holds",
];

/// Words that say nothing of what was looked at ("I checked everything and
/// found nothing wrong"): a holding line needs [`MIN_SPECIFIC_WORDS`] others.
const VAGUE_WORDS: [&str; 120] = [
    "a",
    "an",
    "the",
    "and",
    "or",
    "but",
    "so",
    "as",
    "of",
    "in",
    "on",
    "at",
    "to",
    "for",
    "with",
    "by",
    "from",
    "across",
    "into",
    "over",
    "under",
    "within",
    "throughout",
    "all",
    "any",
    "every",
    "each",
    "everything",
    "everywhere",
    "anything",
    "anywhere",
    "nothing",
    "nowhere",
    "none",
    "no",
    "not",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "i",
    "we",
    "found",
    "find",
    "checked",
    "check",
    "checks",
    "reviewed",
    "looked",
    "look",
    "looks",
    "inspected",
    "verified",
    "confirmed",
    "seems",
    "appears",
    "out",
    "fine",
    "good",
    "ok",
    "okay",
    "clean",
    "correct",
    "correctly",
    "properly",
    "well",
    "fully",
    "entirely",
    "completely",
    "whole",
    "overall",
    "rule",
    "rules",
    "holds",
    "hold",
    "respected",
    "followed",
    "obeyed",
    "complies",
    "compliant",
    "adheres",
    "satisfied",
    "met",
    "code",
    "codebase",
    "project",
    "repository",
    "repo",
    "tree",
    "files",
    "issues",
    "issue",
    "problems",
    "violations",
    "violation",
    "detected",
    "wrong",
    "errors",
    "concerns",
    "seen",
    "expected",
    "can",
    "could",
    "do",
    "does",
    "did",
    "have",
    "has",
    "also",
];

/// A holding line names at least this many things beyond the vague words
/// (`the`, `checked`, `fine`, `code`, …) any reason could say.
pub const MIN_SPECIFIC_WORDS: usize = 3;

/// A claim that contains a rule is still padding when at most this many
/// words are added to it (`violated: <rule>`).
pub const PADDING_EXTRA_WORDS: usize = 4;

/// Read an auditor's stdout: each line that is a contract object becomes a
/// finding, a holding rule or a rejection.
pub fn check(output: &str, scope: Scope<'_>, files: &mut impl ProjectFiles) -> Checked {
    let rule_words: Vec<String> = scope.rules.iter().map(|r| words(&r.text)).collect();
    let mut cache = FileCache {
        root: files.root().to_string(),
        files,
        seen: BTreeMap::new(),
        rule_places: None,
    };
    let context = Context { scope, rule_words };
    let mut checked = Checked::default();
    let mut withheld: Vec<String> = Vec::new();
    for line in output.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some(object) = contract_object(line) else {
            checked.ignored_lines += 1;
            continue;
        };
        let verdict = if object.contains_key("holds") {
            check_holds(&object, &context, &mut cache).map(Verdict::Holds)
        } else {
            check_finding(&object, &context, &mut cache).map(Verdict::Finding)
        };
        match verdict {
            Ok(Verdict::Finding(finding))
                if checked.findings.iter().any(|kept| {
                    kept.file == finding.file
                        && kept.occurrence == finding.occurrence
                        && normalised_quote(&kept.quote) == normalised_quote(&finding.quote)
                }) =>
            {
                checked
                    .rejected
                    .push(rejected(line, RejectReason::Duplicate));
            }
            Ok(Verdict::Finding(finding)) => checked.findings.push(finding),
            Ok(Verdict::Holds(holds)) => checked.holds.push(holds),
            Err(RejectReason::Ignored) => {
                // Nothing the auditor said of it is kept; its quote is
                // blanked out wherever else it stands.
                for field in ["quote", "claim", "holds"] {
                    if let Some(text) = object.get(field).and_then(Value::as_str) {
                        let text = squeeze(text);
                        if text.chars().filter(|c| c.is_alphanumeric()).count() >= 4 {
                            withheld.push(text);
                        }
                    }
                }
                let place = format!(
                    "{{\"file\":{},\"line\":{}}} (the rest of this line is not kept)",
                    Value::from(visible(
                        object.get("file").and_then(Value::as_str).unwrap_or(""),
                        REJECTED_LINE_CHARS
                    )),
                    object.get("line").and_then(Value::as_u64).unwrap_or(0)
                );
                checked.rejected.push(Rejected {
                    line: place,
                    why: RejectReason::Ignored,
                });
            }
            Err(why) => checked.rejected.push(rejected(line, why)),
        }
    }
    if !withheld.is_empty() {
        withhold(&mut checked, &withheld);
    }
    checked
}

fn rejected(line: &str, why: RejectReason) -> Rejected {
    Rejected {
        line: visible(line, REJECTED_LINE_CHARS),
        why,
    }
}

/// Every kept text that holds one of `secrets` (squeezed) has it replaced
/// by [`WITHHELD`]; a kept text is whitespace-squeezed for the search.
fn withhold(checked: &mut Checked, secrets: &[String]) {
    let blank = |text: &mut String| {
        if secrets.iter().any(|s| squeeze(text).contains(s.as_str())) {
            let mut out = squeeze(text);
            for secret in secrets {
                out = out.replace(secret.as_str(), WITHHELD);
            }
            *text = out;
        }
    };
    for f in &mut checked.findings {
        blank(&mut f.claim);
        blank(&mut f.quote);
    }
    for h in &mut checked.holds {
        blank(&mut h.holds);
    }
    for r in &mut checked.rejected {
        blank(&mut r.line);
    }
}

enum Verdict {
    Finding(Finding),
    Holds(Holds),
}

struct Context<'a> {
    scope: Scope<'a>,
    /// The dimension's rules as [`words`], for the padding check.
    rule_words: Vec<String>,
}

/// The keys that tell a contract object from any other JSON an agent prints
/// (Claude Code's own result object, say): `holds` for a holding rule, any of
/// a finding's own keys for a finding.
fn contract_object(line: &str) -> Option<Map<String, Value>> {
    if !line.starts_with('{') {
        return None;
    }
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let shaped = ["holds", "severity", "rank", "claim", "quote"]
        .iter()
        .any(|key| object.contains_key(*key));
    shaped.then_some(object)
}

fn check_finding(
    object: &Map<String, Value>,
    context: &Context<'_>,
    files: &mut FileCache<'_, impl ProjectFiles>,
) -> Result<Finding, RejectReason> {
    let severity = Severity::parse(string(object, "severity")?).ok_or(RejectReason::BadSeverity)?;
    let rank = object
        .get("rank")
        .and_then(Value::as_u64)
        .and_then(|rank| u32::try_from(rank).ok())
        .ok_or(RejectReason::MissingField { field: "rank" })?;
    let claim = string(object, "claim")?;
    if words(claim).is_empty() {
        return Err(RejectReason::MissingField { field: "claim" });
    }
    let file = string(object, "file")?;
    let line = line_number(object)?;
    let quote = string(object, "quote")?;
    let named_rule = rule_field(object)?;
    let (file, lines) = files.resolve(file, line)?;
    if generated(&file, &lines) && !named_by_a_rule(&file, context.scope.plan_rules) {
        return Err(RejectReason::Generated);
    }
    if quote.chars().filter(|c| c.is_alphanumeric()).count() < MIN_QUOTE_CHARS {
        return Err(RejectReason::ShortQuote);
    }
    let flat = Flat::of(&lines);
    let (occurrence, span) = flat
        .find_near(&normalised_quote(quote), line)
        .ok_or(RejectReason::QuoteNotThere)?;
    if files
        .rule_places(context.scope.plan_rules)
        .iter()
        .any(|(rule_file, rule_line)| {
            *rule_file == file && (*rule_line == line || (span.0..=span.1).contains(rule_line))
        })
    {
        return Err(RejectReason::RuleLine);
    }
    let rule = which_rule(named_rule, context.scope, &files.root)?;
    if is_padding(claim, &context.rule_words) {
        return Err(RejectReason::Padding);
    }
    Ok(Finding {
        severity,
        rank,
        claim: one_line(claim, CLAIM_CHARS),
        file,
        line,
        quote: quote.to_string(),
        occurrence,
        rule: rule.map(rule_ref),
        rule_text: rule.map(|r| r.text.clone()),
    })
}

fn check_holds(
    object: &Map<String, Value>,
    context: &Context<'_>,
    files: &mut FileCache<'_, impl ProjectFiles>,
) -> Result<Holds, RejectReason> {
    let holds = string(object, "holds")?;
    let file = string(object, "file")?;
    let line = line_number(object)?;
    let named_rule = rule_field(object)?;
    if is_generic(holds) {
        return Err(RejectReason::Generic);
    }
    let spelled = normalise(file, &files.root);
    let (file, lines) = files.resolve(file, line)?;
    if generated(&file, &lines) && !named_by_a_rule(&file, context.scope.plan_rules) {
        return Err(RejectReason::Generated);
    }
    if files
        .rule_places(context.scope.plan_rules)
        .iter()
        .any(|(rule_file, rule_line)| *rule_file == file && *rule_line == line)
    {
        return Err(RejectReason::RuleLine);
    }
    if !names_place(holds, &file, spelled.as_deref(), &lines, line) {
        return Err(RejectReason::HoldsElsewhere);
    }
    let rule = which_rule(named_rule, context.scope, &files.root)?;
    Ok(Holds {
        holds: one_line(holds, CLAIM_CHARS),
        file,
        line,
        rule: rule.map(rule_ref),
    })
}

fn string<'a>(
    object: &'a Map<String, Value>,
    field: &'static str,
) -> Result<&'a str, RejectReason> {
    object
        .get(field)
        .and_then(Value::as_str)
        .ok_or(RejectReason::MissingField { field })
}

/// `line` is a whole number; 0 is a number but no line, so it is left to
/// the line check to say so with the file's length.
fn line_number(object: &Map<String, Value>) -> Result<usize, RejectReason> {
    object
        .get("line")
        .and_then(Value::as_u64)
        .and_then(|line| usize::try_from(line).ok())
        .ok_or(RejectReason::MissingField { field: "line" })
}

/// The optional `rule` field: absent, or a string.
fn rule_field(object: &Map<String, Value>) -> Result<Option<&str>, RejectReason> {
    match object.get("rule") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(rule)) => Ok(Some(rule)),
        Some(_) => Err(RejectReason::MissingField { field: "rule" }),
    }
}

/// The rule an item is about: the one its `rule` names (`FILE:LINE`, the
/// path spelled as a citation may be; a rule of the dimension, or of
/// another dimension of the plan, since two auditors may see one breach),
/// or the dimension's only rule.
fn which_rule<'a>(
    named: Option<&str>,
    scope: Scope<'a>,
    root: &str,
) -> Result<Option<&'a Rule>, RejectReason> {
    let Some(named) = named else {
        return Ok(match scope.rules {
            [only] => Some(only),
            _ => None,
        });
    };
    let (file, line) = named
        .trim()
        .rsplit_once(':')
        .ok_or(RejectReason::NoSuchRule)?;
    let line: usize = line.trim().parse().map_err(|_| RejectReason::NoSuchRule)?;
    let file = normalise(file.trim(), root).ok_or(RejectReason::NoSuchRule)?;
    scope
        .rules
        .iter()
        .chain(scope.plan_rules)
        .find(|rule| rule.line == line && normalise(&rule.file, root).as_deref() == Some(&file))
        .map(Some)
        .ok_or(RejectReason::NoSuchRule)
}

/// The port behind a cache: an auditor cites the same file many times.
struct FileCache<'a, P> {
    root: String,
    files: &'a mut P,
    seen: BTreeMap<String, Look>,
    /// Where each rule of the plan stands, every copy of it (canonical file, first line),
    /// learnt when a citation first needs it.
    rule_places: Option<Vec<(String, usize)>>,
}

impl<P: ProjectFiles> FileCache<'_, P> {
    fn rule_places(&mut self, rules: &[Rule]) -> Vec<(String, usize)> {
        if let Some(places) = &self.rule_places {
            return places.clone();
        }
        // Every place a rule is stated: a copy in another file is its own line too.
        let stated: Vec<(&str, usize)> = rules
            .iter()
            .flat_map(|rule| {
                let also = rule
                    .also
                    .iter()
                    .map(|place| (place.file.as_str(), place.line));
                std::iter::once((rule.file.as_str(), rule.line)).chain(also)
            })
            .collect();
        let places: Vec<(String, usize)> = stated
            .into_iter()
            .filter_map(|(file, line)| {
                let path = normalise(file, &self.root)?;
                match self.look(&path) {
                    Look::Text { canonical, .. } => Some((canonical, line)),
                    _ => None,
                }
            })
            .collect();
        self.rule_places = Some(places.clone());
        places
    }

    fn look(&mut self, path: &str) -> Look {
        let files = &mut *self.files;
        self.seen
            .entry(path.to_string())
            .or_insert_with_key(|path| files.look(path))
            .clone()
    }

    /// The canonical path and the file's lines, when `path:line` is inside
    /// the project, exists and is a text file git does not ignore.
    fn resolve(&mut self, path: &str, line: usize) -> Result<(String, Vec<String>), RejectReason> {
        let path = normalise(path, &self.root).ok_or(RejectReason::PathEscape)?;
        let (canonical, lines) = match self.look(&path) {
            Look::Text { canonical, lines } => (canonical, lines),
            Look::Missing => return Err(RejectReason::NoSuchFile),
            Look::Binary => return Err(RejectReason::Binary),
            Look::Ignored => return Err(RejectReason::Ignored),
        };
        if line == 0 || line > lines.len() {
            return Err(RejectReason::NoSuchLine {
                line,
                lines: lines.len(),
            });
        }
        Ok((canonical, lines))
    }
}

/// A cited path as a relative path inside the project, `a/./b` as `a/b` and
/// `a/../b` as `b`; an absolute path inside `root` as the part after it.
/// `None` for an absolute path outside `root`, one whose `..` leaves the
/// root at any point, one naming the root itself, or one holding NUL, a
/// backslash (a Windows separator that a Unix reader would take as a name)
/// or any other control character.
pub fn normalise(path: &str, root: &str) -> Option<String> {
    if path.chars().any(|c| c == '\\' || c.is_control()) {
        return None;
    }
    let relative = match path.strip_prefix('/') {
        Some(_) => {
            let path = lexical(path)?;
            let root = lexical(root)?;
            path.strip_prefix(&root)?.strip_prefix('/')?.to_string()
        }
        None => path.to_string(),
    };
    let relative = lexical(&relative)?;
    (!relative.is_empty()).then_some(relative)
}

/// `a/./b` as `a/b`, `a/../b` as `b`, no leading or doubled `/`; `None`
/// when a `..` leaves the top.
fn lexical(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    Some(parts.join("/"))
}

/// Runs of whitespace as one space, trimmed: auditors re-indent what they quote.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A quote as it is compared: Unicode NFC (an NFD `é` is the same text),
/// runs of whitespace as one space.
pub fn normalised_quote(text: &str) -> String {
    squeeze(&text.nfc().collect::<String>())
}

/// A file's text as quotes are matched in it: [`normalised_quote`] of all
/// its lines as one, with the line each part came from.
struct Flat {
    text: String,
    /// `(byte offset in text, line from 1)` where each line's words begin.
    starts: Vec<(usize, usize)>,
}

impl Flat {
    fn of(lines: &[String]) -> Flat {
        let mut text = String::new();
        let mut starts = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let line = normalised_quote(line);
            if line.is_empty() {
                continue;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            starts.push((text.len(), i + 1));
            text.push_str(&line);
        }
        Flat { text, starts }
    }

    fn line_at(&self, offset: usize) -> usize {
        let at = self.starts.partition_point(|(start, _)| *start <= offset);
        self.starts[at.saturating_sub(1)].1
    }

    /// Every match of `quote`, as the lines it spans.
    fn matches(&self, quote: &str) -> Vec<(usize, usize)> {
        if quote.is_empty() {
            return Vec::new();
        }
        self.text
            .match_indices(quote)
            .map(|(at, _)| (self.line_at(at), self.line_at(at + quote.len() - 1)))
            .collect()
    }

    /// Which match of `quote` (from 1) touches `line` or a line next to it,
    /// and the lines it spans.
    fn find_near(&self, quote: &str, line: usize) -> Option<(usize, (usize, usize))> {
        let near = line.saturating_sub(1)..=line + 1;
        let matches = self.matches(quote);
        // The match that covers the cited line itself wins over one beside it.
        let covering = matches.iter().position(|(a, b)| (*a..=*b).contains(&line));
        let index = covering.or_else(|| {
            matches
                .iter()
                .position(|(a, b)| *a <= *near.end() && *b >= *near.start())
        })?;
        Some((index + 1, matches[index]))
    }
}

/// Whether `quote` (normalised) is anywhere in `lines`: a finding whose
/// quote has left its file is gone.
pub fn quote_in(quote: &str, lines: &[String]) -> bool {
    !Flat::of(lines).matches(&normalised_quote(quote)).is_empty()
}

/// Folders whose files the project did not write: vendored, installed or
/// built.
pub const VENDORED_FOLDERS: [&str; 13] = [
    "vendor",
    "vendored",
    "third_party",
    "third-party",
    "node_modules",
    "bower_components",
    "dist",
    "target",
    ".venv",
    "venv",
    "site-packages",
    "__generated__",
    "generated",
];

/// Files a tool writes: lock files, minified and source-map files,
/// protobuf and other generators' outputs (by name or ending).
const GENERATED_NAMES: [&str; 13] = [
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "Gemfile.lock",
    "composer.lock",
    "go.sum",
    "flake.lock",
    "bun.lock",
];
const GENERATED_ENDINGS: [&str; 10] = [
    ".min.js",
    ".min.css",
    ".map",
    ".pb.go",
    "_pb2.py",
    "_pb2_grpc.py",
    ".pb.h",
    ".pb.cc",
    ".g.dart",
    ".designer.cs",
];

/// What a generator writes at the top of its output (looked for,
/// lowercase, in the first five lines).
const GENERATED_MARKS: [&str; 6] = [
    "@generated",
    "do not edit",
    "auto-generated",
    "autogenerated",
    "automatically generated",
    "code generated by",
];

/// The file is generated or vendored: under a [`VENDORED_FOLDERS`] folder,
/// named like a tool's output, or marked as one in its first lines.
pub fn generated(path: &str, lines: &[String]) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or("");
    parts.iter().any(|part| VENDORED_FOLDERS.contains(part))
        || GENERATED_NAMES.contains(&name)
        || GENERATED_ENDINGS.iter().any(|end| name.ends_with(end))
        || name.contains(".generated.")
        || lines.iter().take(5).any(|line| {
            let line = line.to_lowercase();
            GENERATED_MARKS.iter().any(|mark| line.contains(mark))
        })
}

/// A rule names the file: its path, its name, or the vendored folder it is
/// under (`vendor/`).
fn named_by_a_rule(path: &str, rules: &[Rule]) -> bool {
    let path = path.to_lowercase();
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or("");
    rules.iter().any(|rule| {
        let text = rule.text.to_lowercase();
        text.contains(&path)
            || (name.len() >= 4 && text.contains(name))
            || parts
                .iter()
                .filter(|part| VENDORED_FOLDERS.contains(part))
                .any(|part| {
                    text.contains(&format!("{part}/")) || text.contains(&format!("`{part}`"))
                })
    })
}

/// A holding line names the place it cites: the file (its path, the path as
/// cited, its name, its name without the extension when that has four
/// letters or more, or a folder of two levels or more that holds it), or a
/// code word (with `_`, `::`, `.`, `(` or an inner capital, or in
/// backticks) that stands on the cited line or one next to it.
fn names_place(
    holds: &str,
    canonical: &str,
    spelled: Option<&str>,
    lines: &[String],
    line: usize,
) -> bool {
    let lower = holds.to_lowercase();
    let mut names: Vec<String> = vec![canonical.to_lowercase()];
    names.extend(spelled.map(str::to_lowercase));
    let mut parts: Vec<&str> = canonical.split('/').collect();
    let name = parts.pop().unwrap_or("").to_lowercase();
    names.push(name.clone());
    for end in 2..=parts.len() {
        names.push(parts[..end].join("/").to_lowercase());
    }
    if names
        .iter()
        .any(|n| !n.is_empty() && lower.contains(n.as_str()))
    {
        return true;
    }
    if let Some((stem, _)) = name.rsplit_once('.')
        && stem.chars().count() >= 4
        && contains_words(&words(holds), &words(stem))
    {
        return true;
    }
    let first = line.saturating_sub(2);
    let last = line.min(lines.len());
    let cited = lines[first..last].join("\n");
    code_words(holds)
        .iter()
        .any(|word| cited.contains(word.as_str()))
}

/// The code-like words of a text: in backticks, or with `_`, `::`, `.`,
/// `(` or a capital after the first letter; four characters or more.
fn code_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, quoted) in text.split('`').enumerate() {
        if i % 2 == 1 && quoted.trim().chars().count() >= 4 {
            out.push(quoted.trim().to_string());
        }
    }
    for word in text.split(|c: char| c.is_whitespace() || ",;\"'`".contains(c)) {
        let word = word.trim_end_matches(['.', ':', ')', '(']);
        let code_like = word.contains('_')
            || word.contains("::")
            || word.contains('.')
            || word.contains('(')
            || word.chars().skip(1).any(char::is_uppercase);
        if code_like && word.chars().filter(|c| c.is_alphanumeric()).count() >= 4 {
            out.push(word.to_string());
        }
    }
    out
}

/// Lowercase words of letters and digits, joined by one space: how claims,
/// rules and holding lines are compared.
fn words(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn word_count(words: &str) -> usize {
    words.split(' ').filter(|word| !word.is_empty()).count()
}

/// Whole words of `inner` appear, in order and together, in `outer`.
fn contains_words(outer: &str, inner: &str) -> bool {
    format!(" {outer} ").contains(&format!(" {inner} "))
}

/// The claim is one of the rules, part of one, or one with at most
/// [`PADDING_EXTRA_WORDS`] words around it.
fn is_padding(claim: &str, rules: &[String]) -> bool {
    let claim = words(claim);
    rules.iter().filter(|rule| !rule.is_empty()).any(|rule| {
        contains_words(rule, &claim)
            || (contains_words(&claim, rule)
                && word_count(&claim) - word_count(rule) <= PADDING_EXTRA_WORDS)
    })
}

/// Fewer than [`MIN_HOLDS_WORDS`] words, fewer than [`MIN_SPECIFIC_WORDS`]
/// that are not [`VAGUE_WORDS`], or a [`GENERIC_HOLDS`] phrase with fewer
/// than [`MIN_HOLDS_WORDS`] words beside it.
fn is_generic(holds: &str) -> bool {
    let holds = words(holds);
    let count = word_count(&holds);
    if count < MIN_HOLDS_WORDS {
        return true;
    }
    let specific = holds
        .split(' ')
        .filter(|word| !word.is_empty() && !VAGUE_WORDS.contains(word))
        .count();
    if specific < MIN_SPECIFIC_WORDS {
        return true;
    }
    GENERIC_HOLDS.iter().any(|phrase| {
        let phrase = words(phrase);
        contains_words(&holds, &phrase) && count - word_count(&phrase) < MIN_HOLDS_WORDS
    })
}

/// At most `chars` characters, with `…` when cut.
pub(crate) fn shorten(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Auditor prose (a claim, a holding line, a failure) as one line a
/// terminal, a markdown report or a chat shows as text: escape sequences,
/// controls and bidirectional overrides removed, every run of whitespace
/// (line breaks too) one space, at most `chars` characters.
pub fn one_line(text: &str, chars: usize) -> String {
    shorten(&squeeze(&classify::plain_text(text)), chars)
}

/// Quoted file text (or an auditor's raw line) as one line with every
/// control character made visible instead of acted on: `\n`, `\t`, `\r`
/// as such, any other C0 or C1 control, DEL, and the bidirectional and
/// zero-width controls as `\u{…}`; at most `chars` characters.
pub fn visible(text: &str, chars: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2028}' | '\u{2029}' | '\u{2066}'..='\u{2069}' | '\u{61c}' | '\u{feff}') =>
            {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    shorten(&out, chars)
}

#[cfg(test)]
mod tests;
