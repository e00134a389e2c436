//! R-CITE: an auditor's stdout read as findings and holding rules, every
//! citation checked against the project's own files, never trusted.
//!
//! The contract an auditor meets (the words, kept exactly): one JSON
//! object per line, anywhere in its stdout, either a finding
//! `{"severity":"high"|"medium"|"low","rank":N,"claim":"…","file":"path/in/project","line":N,"quote":"the text at that line"}`
//! or a holding rule `{"holds":"one specific line on why it holds","file":"…","line":N}`.
//! More fields may be added; these may not change. A line that is not such an
//! object is ignored and counted; one that has the shape but gets a field
//! wrong, or whose citation does not resolve, is rejected with why.
//!
//! Checks run in this order, and the first that fails is the reason:
//! the fields, then (for a holding rule) generic noise, then the path, the
//! file, the line, (for a finding) the quote, and last padding.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// The project's files as the auditor cites them. The caller implements it;
/// [`check`] asks only for a path it has already normalised and found to stay
/// inside the project: relative, no `..` that leaves the root, no NUL, no
/// backslash, no control character.
///
/// The `bmb-monitor` adapter reads with bounded reads and also refuses a
/// symlink that leads out of the project root, which pure code cannot see.
pub trait ProjectFiles {
    /// The file's lines, or `None` when there is no such (readable) file.
    fn lines(&mut self, path: &str) -> Option<Vec<String>>;
}

/// How bad a finding is. Ordered most severe first, so sorting ascending
/// puts `High` on top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    High,
    Medium,
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
/// `file:line`. `file` is the normalised relative path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub rank: u32,
    pub claim: String,
    pub file: String,
    pub line: usize,
    pub quote: String,
}

/// A rule the auditor says holds, with a specific reason and a citation that
/// resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holds {
    pub holds: String,
    pub file: String,
    pub line: usize,
}

/// An object of the contract's shape that did not survive, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The auditor's line, cut to [`REJECTED_LINE_CHARS`] characters.
    pub line: String,
    pub why: RejectReason,
}

/// Why an object was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectReason {
    /// The path is absolute, leaves the project, or holds NUL, a backslash
    /// or a control character; the project's files were not asked.
    PathEscape,
    NoSuchFile,
    /// `line` is not within the file's `lines` (lines count from 1).
    NoSuchLine {
        line: usize,
        lines: usize,
    },
    /// The quoted text (whitespace-normalised) is not on the cited line, the
    /// one before or the one after; an empty quote is never there.
    QuoteNotThere,
    /// A holding rule that says nothing specific ("no issues found", or too
    /// few words to say why this rule holds).
    Generic,
    /// A finding whose claim only restates one of the dimension's rules.
    Padding,
    /// The field is missing, of the wrong type or out of range.
    MissingField {
        field: &'static str,
    },
    /// `severity` is a string, but not `high`, `medium` or `low`.
    BadSeverity,
    /// A finding at the same file and quote as one kept above it: a finding
    /// is known by its place (how it is matched with the previous audit), so
    /// a second claim there is one finding said twice.
    Duplicate,
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
                f.write_str("the same file and quote as a finding kept above it")
            }
        }
    }
}

/// What one auditor's output came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub holds: Vec<Holds>,
    pub rejected: Vec<Rejected>,
    /// Non-blank lines that were not an object of the contract's shapes.
    pub ignored_lines: usize,
}

/// How much of a rejected line the report keeps: enough to recognise it.
pub const REJECTED_LINE_CHARS: usize = 200;

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

/// A holding line names at least this many things beyond [`VAGUE_WORDS`].
pub const MIN_SPECIFIC_WORDS: usize = 3;

/// A claim that contains a rule is still padding when at most this many
/// words are added to it ("violated: <rule>").
pub const PADDING_EXTRA_WORDS: usize = 4;

/// Read an auditor's stdout: each line that is a contract object becomes a
/// finding, a holding rule or a rejection; `rules` are the texts of the
/// dimension's rules, for the padding check.
pub fn check(output: &str, rules: &[&str], files: &mut impl ProjectFiles) -> Checked {
    let rules: Vec<String> = rules.iter().map(|r| words(r)).collect();
    let mut cache = FileCache {
        files,
        seen: BTreeMap::new(),
    };
    let mut checked = Checked::default();
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
            check_holds(&object, &mut cache).map(Verdict::Holds)
        } else {
            check_finding(&object, &rules, &mut cache).map(Verdict::Finding)
        };
        match verdict {
            Ok(Verdict::Finding(finding))
                if checked.findings.iter().any(|kept| {
                    kept.file == finding.file && squeeze(&kept.quote) == squeeze(&finding.quote)
                }) =>
            {
                checked.rejected.push(Rejected {
                    line: shorten(line, REJECTED_LINE_CHARS),
                    why: RejectReason::Duplicate,
                });
            }
            Ok(Verdict::Finding(finding)) => checked.findings.push(finding),
            Ok(Verdict::Holds(holds)) => checked.holds.push(holds),
            Err(why) => checked.rejected.push(Rejected {
                line: shorten(line, REJECTED_LINE_CHARS),
                why,
            }),
        }
    }
    checked
}

enum Verdict {
    Finding(Finding),
    Holds(Holds),
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
    rules: &[String],
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
    let (file, lines) = files.resolve(file, line)?;
    if !quote_is_there(quote, &lines, line) {
        return Err(RejectReason::QuoteNotThere);
    }
    if is_padding(claim, rules) {
        return Err(RejectReason::Padding);
    }
    Ok(Finding {
        severity,
        rank,
        claim: claim.to_string(),
        file,
        line,
        quote: quote.to_string(),
    })
}

fn check_holds(
    object: &Map<String, Value>,
    files: &mut FileCache<'_, impl ProjectFiles>,
) -> Result<Holds, RejectReason> {
    let holds = string(object, "holds")?;
    let file = string(object, "file")?;
    let line = line_number(object)?;
    if is_generic(holds) {
        return Err(RejectReason::Generic);
    }
    let (file, _) = files.resolve(file, line)?;
    Ok(Holds {
        holds: holds.to_string(),
        file,
        line,
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

/// The port behind a cache: an auditor cites the same file many times.
struct FileCache<'a, P> {
    files: &'a mut P,
    seen: BTreeMap<String, Option<Vec<String>>>,
}

impl<P: ProjectFiles> FileCache<'_, P> {
    /// The normalised path and the file's lines, when `path:line` is inside
    /// the project and exists.
    fn resolve(&mut self, path: &str, line: usize) -> Result<(String, Vec<String>), RejectReason> {
        let path = normalise(path).ok_or(RejectReason::PathEscape)?;
        let files = &mut *self.files;
        let lines = self
            .seen
            .entry(path.clone())
            .or_insert_with_key(|path| files.lines(path))
            .clone()
            .ok_or(RejectReason::NoSuchFile)?;
        if line == 0 || line > lines.len() {
            return Err(RejectReason::NoSuchLine {
                line,
                lines: lines.len(),
            });
        }
        Ok((path, lines))
    }
}

/// A cited path as a relative path inside the project, `a/./b` as `a/b` and
/// `a/../b` as `b`; `None` for an absolute path, one whose `..` leaves the
/// root at any point, one naming the root itself, or one holding NUL, a
/// backslash (a Windows separator that a Unix reader would take as a name)
/// or any other control character.
pub fn normalise(path: &str) -> Option<String> {
    if path.starts_with('/') || path.chars().any(|c| c == '\\' || c.is_control()) {
        return None;
    }
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
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

/// Runs of whitespace as one space, trimmed: auditors re-indent what they quote.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The quote is within the cited line and its neighbours, joined, so a quote
/// that spans a line break or sits one line off is still there.
fn quote_is_there(quote: &str, lines: &[String], line: usize) -> bool {
    let quote = squeeze(quote);
    if quote.is_empty() {
        return false;
    }
    let first = line.saturating_sub(2);
    let last = line.min(lines.len() - 1);
    squeeze(&lines[first..=last].join("\n")).contains(&quote)
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

#[cfg(test)]
mod tests;
