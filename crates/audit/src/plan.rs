//! The audit's dimensions, drawn from the watched project's own stated rules
//! (seed: "A generic checklist finds generic nothing"). The caller reads the
//! rules files (`probes::project::rules::discover`, which also follows the documents
//! they point to) and hands them here as `(path, text)` pairs; this module
//! only reads and groups.
//!
//! - **A rule is an order**: a list item, a table row or a sentence of a
//!   paragraph that tells someone what to do or not to do, an imperative
//!   ("Use tabs", "Before editing X, check Y") or a modal (must, never,
//!   should, shall, always, prefer, avoid, do not, only, required). A
//!   description, a fact ("the tests do not work in the sandbox"), a link, a
//!   heading, a name or a table of contents is not. Fenced code is never a
//!   rule; a `.mdc` or `.claude/rules` file's front matter is metadata, and its
//!   `globs`, `paths` or `applyTo` scope its rules.
//! - An architecture document (`ARCHITECTURE.md`, `architecture.md`, at any
//!   path) holds description, not orders: only its invariants count (a
//!   paragraph or item that opens with `**Architecture Invariant:**` or
//!   `Invariant:`, or any item under a heading that names invariants), one
//!   group per section. An invariant line is a rule in any file.
//! - The same rule stated in several files (or nearly the same words) is one
//!   rule that keeps every place it is stated.
//! - **A dimension is an area a maintainer would name**: rules are grouped by
//!   the part of the tree they govern (the folder of a nested `AGENTS.md`, a
//!   rule's globs, a heading that names a path) and, within it, by topic
//!   (testing, errors, style, ...), never one per heading. A project gets at
//!   most `max_dimensions` ([`DEFAULT_MAX_DIMENSIONS`] by default): the
//!   dimensions are ranked by how much of them can be checked against the
//!   tree at rest, and past the cap the weakest is merged into a neighbour of
//!   the same part of the tree, or left out and said.
//! - If, and only if, no file holds a rule, the seed's four [`FALLBACKS`]
//!   are the dimensions.

use std::collections::HashMap;
use std::time::Duration;

/// Deeper headings than this fold into the section above them.
pub const MAX_HEADING_LEVEL: usize = 3;

/// The cap on dimensions unless the caller gives one: each is one agent run
/// per audit.
pub const DEFAULT_MAX_DIMENSIONS: usize = 12;

/// A part of the tree with at most this many rules is one dimension, not
/// one per topic.
const SMALL_SCOPE: usize = 25;

/// The seed's four fallback dimensions, used only when the project states no
/// rule of its own: the name, and what the auditor looks for.
pub const FALLBACKS: [(&str, &str); 4] = [
    (
        "design and token rules",
        "values written by hand where the design system has a token, and exceptions outside its stated exempt list",
    ),
    (
        "access control and isolation",
        "who may read or change what: a missing check, data crossing a user, tenant or process boundary, a secret within reach",
    ),
    (
        "test reality",
        "does the green actually mean anything: tests that cannot fail, mocks standing in for the thing under test, skipped cases, assertions on nothing",
    ),
    (
        "corpus and documentation integrity",
        "fixtures, golden files and documentation that disagree with the code or with each other, and claims the repository does not back",
    ),
];

/// A place a rule is stated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file, relative to the project, `/`-separated.
    pub file: String,
    /// 1-based.
    pub line: usize,
}

/// One stated rule, where the project states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The file, relative to the project, `/`-separated.
    pub file: String,
    /// 1-based: the rule's first line.
    pub line: usize,
    /// The rule's text: its lines joined, a list marker or an invariant label removed.
    pub text: String,
    /// The other places the same rule (or nearly the same words) is stated.
    pub also: Vec<Place>,
}

/// One auditor's remit: a group of the project's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dimension {
    /// Unique within a plan.
    pub name: String,
    /// Where it comes from: `CLAUDE.md § Testing`, `ARCHITECTURE.md
    /// invariants § crates/probes`, `crates/web/AGENTS.md`, or `fallback`.
    pub origin: String,
    /// The files its rules are stated in, in order.
    pub sources: Vec<String>,
    /// The paths or globs its rules govern; empty for the whole project.
    pub scope: Vec<String>,
    /// Empty only for a fallback dimension (see [`FALLBACKS`] for its focus).
    pub rules: Vec<Rule>,
}

/// A dimension that is not audited, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The dimension's name, as `--plan` says it.
    pub name: String,
    /// How many rules it held: what the audit says nothing of.
    pub rules: usize,
    /// Why it was left out rather than merged (`over --max-dimensions`, …).
    pub why: String,
}

/// What an audit will examine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Ranked: the one most checkable against the tree first.
    pub dimensions: Vec<Dimension>,
    /// True when the project states no rule and the [`FALLBACKS`] are used.
    pub fallback: bool,
    /// Dimensions merged into another to stay within the cap: `(merged, into)`.
    pub merged: Vec<(String, String)>,
    /// Dimensions left out by the cap, weakest last.
    pub left_out: Vec<LeftOut>,
    /// Rules stated more than once, counted once.
    pub repeated: usize,
}

/// The dimensions of the project whose rules files are `sources` (`(path,
/// text)`, in the order discovered), at most `max_dimensions` of them
/// ([`DEFAULT_MAX_DIMENSIONS`] when None).
pub fn plan(sources: &[(String, String)], max_dimensions: Option<usize>) -> Plan {
    let max = max_dimensions.unwrap_or(DEFAULT_MAX_DIMENSIONS).max(1);
    let mut found: Vec<Found> = Vec::new();
    for (file, text) in sources {
        found.extend(read_rules(file, text));
    }
    let repeated = merge_repeats(&mut found);
    let mut groups = group(found, max);
    if groups.is_empty() {
        let mut dimensions: Vec<Dimension> = FALLBACKS
            .iter()
            .map(|(name, _)| Dimension {
                name: name.to_string(),
                origin: "fallback".to_string(),
                sources: Vec::new(),
                scope: Vec::new(),
                rules: Vec::new(),
            })
            .collect();
        let left_out = dimensions
            .split_off(max.min(dimensions.len()))
            .into_iter()
            .map(|dimension| LeftOut {
                name: dimension.name,
                rules: 0,
                why: "over --max-dimensions".to_string(),
            })
            .collect();
        return Plan {
            dimensions,
            fallback: true,
            merged: Vec::new(),
            left_out,
            repeated: 0,
        };
    }
    let (merged, left_out) = cap(&mut groups, max);
    let mut dimensions: Vec<Dimension> = Vec::new();
    for group in groups {
        let name = unique_name(&dimensions, group.name());
        dimensions.push(group.into_dimension(name));
    }
    Plan {
        dimensions,
        fallback: false,
        merged,
        left_out,
        repeated,
    }
}

/// What `--plan` says beside the dimensions: what was read, what was not,
/// and what it costs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// Each file read, with the rules file that pointed to it when it was followed.
    pub read: Vec<(String, Option<String>)>,
    /// Each file not read, with why.
    pub skipped: Vec<(String, String)>,
    /// The watcher's `--audit-every`, when given: the cost per day is at it.
    pub audit_every: Option<Duration>,
}

/// The cadence the cost per day is shown at when none is given.
const ASSUMED_EVERY: Duration = Duration::from_secs(6 * 3600);

/// What the plan costs: one agent run per dimension per audit.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    /// Agent runs per audit: one per dimension.
    pub runs_per_audit: usize,
    /// The period the daily figures are at: the caller's, or 6h.
    pub audit_every: Duration,
    /// True when the period is the assumed 6h, not the caller's.
    pub assumed: bool,
    /// Audits a day at that period.
    pub audits_per_day: f64,
    /// Agent runs a day at that period: what the plan costs.
    pub runs_per_day: f64,
}

impl Plan {
    /// The cost of one audit of this plan, and per day at `every` (6h when None).
    pub fn cost(&self, every: Option<Duration>) -> Cost {
        let audit_every = every.unwrap_or(ASSUMED_EVERY);
        let secs = audit_every.as_secs_f64().max(1.0);
        let audits_per_day = 86_400.0 / secs;
        let runs_per_audit = self.dimensions.len();
        Cost {
            runs_per_audit,
            audit_every,
            assumed: every.is_none(),
            audits_per_day,
            runs_per_day: audits_per_day * runs_per_audit as f64,
        }
    }

    /// The `--plan` text without notes (tests, and callers with nothing to add).
    pub fn render(&self) -> String {
        self.render_with(&Notes::default())
    }

    /// The `--plan` text: the count, each dimension with its origin, scope
    /// and rules as `  file:line  text`; what was merged or left out; what was
    /// read, followed and skipped; the cost.
    pub fn render_with(&self, notes: &Notes) -> String {
        let mut out = String::new();
        let count = plural(self.dimensions.len(), "dimension");
        if self.fallback {
            out.push_str(
                "The project states no rules of its own (no rules file holds a rule): \
                 the seed's fallback dimensions are used.\n",
            );
        } else {
            let rules: usize = self.dimensions.iter().map(|d| d.rules.len()).sum();
            let rules = plural(rules, "rule");
            let repeated = match self.repeated {
                0 => String::new(),
                n => format!(
                    " ({} stated more than once, counted once)",
                    plural(n, "rule")
                ),
            };
            out.push_str(&format!(
                "{count}, {rules}{repeated}, from the project's own rules.\n"
            ));
        }
        for dimension in &self.dimensions {
            let rules = if self.fallback {
                String::new()
            } else {
                format!(", {}", plural(dimension.rules.len(), "rule"))
            };
            out.push_str(&format!(
                "\n{}  [{}{rules}]\n",
                dimension.name, dimension.origin
            ));
            if !dimension.scope.is_empty() {
                out.push_str(&format!("  applies to: {}\n", dimension.scope.join(", ")));
            }
            if let Some((_, focus)) = FALLBACKS.iter().find(|(name, _)| *name == dimension.name)
                && self.fallback
            {
                out.push_str(&format!("  looks for: {focus}\n"));
            }
            for rule in &dimension.rules {
                out.push_str(&format!("  {}:{}  {}\n", rule.file, rule.line, rule.text));
                if !rule.also.is_empty() {
                    let also: Vec<String> = rule
                        .also
                        .iter()
                        .map(|place| format!("{}:{}", place.file, place.line))
                        .collect();
                    out.push_str(&format!("    also stated at {}\n", also.join(", ")));
                }
            }
        }
        if !self.merged.is_empty() {
            out.push_str("\nMerged to stay within --max-dimensions:\n");
            for (merged, into) in &self.merged {
                out.push_str(&format!("  {merged} into {into}\n"));
            }
        }
        if !self.left_out.is_empty() {
            out.push_str(&format!(
                "\n{} left out by --max-dimensions (the least checkable against the tree):\n",
                plural(self.left_out.len(), "more dimension")
            ));
            for left in &self.left_out {
                let rules = if self.fallback {
                    String::new()
                } else {
                    format!(" ({})", plural(left.rules, "rule"))
                };
                out.push_str(&format!("  {}{rules}: {}\n", left.name, left.why));
            }
        }
        let followed: Vec<String> = notes
            .read
            .iter()
            .filter_map(|(path, from)| from.as_ref().map(|from| format!("{path} (from {from})")))
            .collect();
        if !notes.read.is_empty() {
            out.push_str(&format!(
                "\nRead: {} by name",
                plural(notes.read.len() - followed.len(), "rules file")
            ));
            if followed.is_empty() {
                out.push_str(".\n");
            } else {
                out.push_str(&format!("; followed one step: {}.\n", followed.join(", ")));
            }
        }
        if !notes.skipped.is_empty() {
            out.push_str("Not read:\n");
            for (path, why) in &notes.skipped {
                out.push_str(&format!("  {path}: {why}\n"));
            }
        }
        let cost = self.cost(notes.audit_every);
        out.push_str(&format!("\n{}\n", cost.line()));
        out
    }
}

/// `value` to one decimal, as the cost is said.
pub(crate) fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

impl Cost {
    /// `Cost: 5 agent runs per audit (one per dimension); 20 a day at --audit-every 6h (4 audits a day).`
    pub fn line(&self) -> String {
        let every = show_every(self.audit_every);
        let assumed = if self.assumed {
            "; pass --audit-every for the watcher's own"
        } else {
            ""
        };
        format!(
            "Cost: {} per audit (one per dimension); {} a day at --audit-every {every} ({} a day{assumed}).",
            plural(self.runs_per_audit, "agent run"),
            number(self.runs_per_day),
            plural_f(self.audits_per_day, "audit"),
        )
    }
}

/// A count that may be fractional (`4`, `3.4`).
fn number(value: f64) -> String {
    let rounded = round1(value);
    if rounded.fract() == 0.0 {
        format!("{}", rounded as u64)
    } else {
        format!("{rounded:.1}")
    }
}

fn plural_f(value: f64, word: &str) -> String {
    let shown = number(value);
    if shown == "1" {
        format!("1 {word}")
    } else {
        format!("{shown} {word}s")
    }
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// `name`, numbered when a dimension already has it.
fn unique_name(dimensions: &[Dimension], name: String) -> String {
    let taken = |candidate: &str| dimensions.iter().any(|d| d.name == candidate);
    if !taken(&name) {
        return name;
    }
    let mut number = 2;
    loop {
        let candidate = format!("{name} #{number}");
        if !taken(&candidate) {
            return candidate;
        }
        number += 1;
    }
}

/// `6h`, `90m` as `1h30m`, `1d`: the form `--audit-every` takes.
fn show_every(every: Duration) -> String {
    let mut secs = every.as_secs();
    if secs == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

/// One rule as read, before grouping.
#[derive(Clone)]
struct Found {
    rule: Rule,
    /// The heading it stands under.
    heading: Option<String>,
    invariant: bool,
    /// The paths or globs it governs; empty for the whole project.
    scope: Vec<String>,
}

/// The topics a maintainer names, each with the words that point to it (a
/// heading's words count twice) and how far its rules can be checked by
/// reading the tree at rest (1.0: fully; conduct in a pull request: hardly).
const TOPICS: [(&str, &[&str], f64); 12] = [
    (
        "Testing",
        &[
            "test",
            "tests",
            "testing",
            "tested",
            "snapshot",
            "snapshots",
            "fixture",
            "fixtures",
            "mdtest",
            "assert",
            "assertion",
            "assertions",
            "coverage",
            "pytest",
            "nextest",
            "mock",
            "mocks",
            "flaky",
            "e2e",
            "vitest",
            "jest",
        ],
        1.0,
    ),
    (
        "Errors and panics",
        &[
            "error",
            "errors",
            "panic",
            "panics",
            "unwrap",
            "expect",
            "result",
            "exception",
            "exceptions",
            "raise",
            "raises",
            "fallible",
            "anyhow",
            "thiserror",
            "diagnostic",
            "diagnostics",
        ],
        1.0,
    ),
    (
        "Security and secrets",
        &[
            "security",
            "secret",
            "secrets",
            "token",
            "tokens",
            "credential",
            "credentials",
            "permission",
            "permissions",
            "injection",
            "untrusted",
            "sandbox",
            "auth",
            "password",
            "env",
            "pull_request_target",
            "sanitize",
            "escape",
        ],
        1.0,
    ),
    (
        "Database and migrations",
        &[
            "database",
            "migration",
            "migrations",
            "sql",
            "schema",
            "prisma",
            "clickhouse",
            "postgres",
            "query",
            "queries",
            "table",
            "index",
        ],
        1.0,
    ),
    (
        "Performance",
        &[
            "performance",
            "allocation",
            "allocations",
            "allocate",
            "boxed",
            "clone",
            "clones",
            "perf",
            "fast",
            "slow",
            "memory",
            "capacity",
            "cache",
            "cached",
            "salsa",
            "hot",
            "benchmark",
            "benchmarks",
            "quadratic",
        ],
        1.0,
    ),
    (
        "Dependencies and packaging",
        &[
            "dependency",
            "dependencies",
            "crate",
            "crates",
            "package",
            "packages",
            "install",
            "pnpm",
            "npm",
            "uv",
            "pip",
            "version",
            "versions",
            "cargo",
            "workspace",
            "import",
            "imports",
            "export",
            "exports",
        ],
        1.0,
    ),
    (
        "API and architecture",
        &[
            "api",
            "apis",
            "public",
            "module",
            "modules",
            "layer",
            "layers",
            "boundary",
            "invariant",
            "interface",
            "parameter",
            "parameters",
            "struct",
            "trait",
            "function",
            "functions",
            "type",
            "types",
            "class",
            "classes",
            "architecture",
            "backward",
            "compatible",
            "breaking",
            "signature",
        ],
        1.0,
    ),
    (
        "Code style",
        &[
            "style",
            "naming",
            "name",
            "names",
            "format",
            "formatting",
            "comment",
            "comments",
            "rustdoc",
            "docstring",
            "docstrings",
            "clippy",
            "lint",
            "lints",
            "idiomatic",
            "typing",
            "hints",
            "readability",
            "emojis",
            "prose",
        ],
        1.0,
    ),
    (
        "Documentation",
        &[
            "docs",
            "documentation",
            "readme",
            "changelog",
            "changeset",
            "changesets",
            "mdx",
            "documented",
            "document",
            "guide",
            "guides",
        ],
        0.8,
    ),
    (
        "Logging and observability",
        &[
            "log",
            "logs",
            "logging",
            "logger",
            "trace",
            "tracing",
            "span",
            "spans",
            "metric",
            "metrics",
            "otel",
            "telemetry",
            "observability",
        ],
        1.0,
    ),
    (
        "Commands, CI and release",
        &[
            "run",
            "command",
            "commands",
            "build",
            "ci",
            "release",
            "releases",
            "workflow",
            "workflows",
            "generated",
            "regenerate",
            "codegen",
            "just",
            "make",
            "script",
            "scripts",
            "before",
            "committing",
        ],
        0.5,
    ),
    (
        "Contributing and conduct",
        &[
            "pr",
            "prs",
            "pull",
            "commit",
            "commits",
            "issue",
            "issues",
            "reply",
            "respond",
            "response",
            "responses",
            "communication",
            "conversation",
            "maintainer",
            "maintainers",
            "reviewer",
            "reviewers",
            "disclose",
            "ai",
            "user",
            "ask",
            "policy",
            "contributor",
            "contributors",
            "branch",
            "emoji",
        ],
        0.2,
    ),
];

/// The topic a rule falls under, by its heading and its words: its index in
/// [`TOPICS`], or None for no topic's words at all.
fn topic(heading: Option<&str>, text: &str) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    let heading_words = words_of(heading.unwrap_or(""));
    let text_words = words_of(text);
    for (index, (_, keys, _)) in TOPICS.iter().enumerate() {
        let score = heading_words
            .iter()
            .filter(|w| keys.contains(&w.as_str()))
            .count()
            * 2
            + text_words
                .iter()
                .filter(|w| keys.contains(&w.as_str()))
                .count();
        if score > 0 && best.is_none_or(|(_, top)| score > top) {
            best = Some((index, score));
        }
    }
    best.map(|(index, _)| index)
}

/// How far a rule can be checked against the tree at rest: its topic's
/// weight, more when it names something in the tree (a code span or a path).
fn checkability(found: &Found, topic: Option<usize>) -> f64 {
    if found.invariant {
        return 1.5;
    }
    let base = topic.map_or(0.8, |index| TOPICS[index].2);
    let names = found.rule.text.contains('`') || found.rule.text.contains('/');
    if names { base + 0.5 } else { base }
}

fn words_of(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['’', '‘'], "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_'))
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

/// Words a restatement adds or drops without changing the rule.
const FILLER: [&str; 26] = [
    "a", "an", "the", "you", "we", "must", "should", "always", "shall", "please", "to", "of",
    "its", "it", "is", "are", "be", "in", "on", "for", "and", "or", "that", "this", "all", "any",
];

/// Folds rules stated more than once (the same words, or nearly: nine in
/// ten of the words shared) into the first, which keeps every place; the
/// count of rules folded.
fn merge_repeats(found: &mut Vec<Found>) -> usize {
    let mut kept: Vec<Found> = Vec::new();
    let mut keys: HashMap<String, usize> = HashMap::new();
    let mut sets: Vec<Vec<String>> = Vec::new();
    let mut repeated = 0;
    for item in found.drain(..) {
        let words = words_of(&item.rule.text);
        let key = words.join(" ");
        // The words that carry the rule: "You MUST import x" and "Always
        // import x" say one thing. A negation is never dropped.
        let mut set: Vec<String> = words
            .iter()
            .filter(|word| !FILLER.contains(&word.as_str()))
            .cloned()
            .collect();
        set.sort();
        set.dedup();
        let same = keys.get(&key).copied().or_else(|| {
            (set.len() >= 5).then_some(())?;
            sets.iter().position(|other| {
                let shared = set
                    .iter()
                    .filter(|w| other.binary_search(w).is_ok())
                    .count();
                let (small, large) = (set.len().min(other.len()), set.len().max(other.len()));
                // Nearly the same words, or the one said inside the other
                // ("Always import from `x`" in "Always import from `x`, never `x/v3`").
                let near =
                    other.len() >= 6 && shared * 10 >= (set.len() + other.len() - shared) * 9;
                let within = small >= 5 && small * 10 >= large * 6 && shared * 100 >= small * 85;
                near || within
            })
        });
        match same {
            Some(index) => {
                let first = &mut kept[index];
                let place = Place {
                    file: item.rule.file,
                    line: item.rule.line,
                };
                let same_place = first.rule.file == place.file && first.rule.line == place.line;
                if !same_place && !first.rule.also.contains(&place) {
                    first.rule.also.push(place);
                }
                repeated += 1;
            }
            None => {
                keys.insert(key, kept.len());
                sets.push(set);
                kept.push(item);
            }
        }
    }
    *found = kept;
    repeated
}

/// A group of rules on its way to being a dimension.
struct Group {
    id: usize,
    /// Its name, and those of the groups merged into it.
    parts: Vec<String>,
    /// Groups of one family may be merged: one architecture document's
    /// sections, one top folder's parts, the whole project's topics.
    family: String,
    origin: Vec<String>,
    scope: Vec<String>,
    rules: Vec<Rule>,
    score: f64,
}

impl Group {
    /// Its name: its own, or its parts' (those of one part of the tree
    /// named once: `apps/webapp: Testing` and `apps/webapp: Other rules`
    /// make `apps/webapp`).
    fn name(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        for part in &self.parts {
            let part = match part.split_once(": ") {
                Some((scope, _))
                    if self
                        .parts
                        .iter()
                        .filter(|p| p.starts_with(&format!("{scope}: ")))
                        .count()
                        > 1 =>
                {
                    scope.to_string()
                }
                _ => part.clone(),
            };
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
        parts.sort();
        list_name(&parts)
    }

    fn into_dimension(self, name: String) -> Dimension {
        let mut sources: Vec<String> = Vec::new();
        for rule in &self.rules {
            for file in std::iter::once(&rule.file).chain(rule.also.iter().map(|p| &p.file)) {
                if !sources.contains(file) {
                    sources.push(file.clone());
                }
            }
        }
        let origin = match self.origin.len() {
            0..=3 => self.origin.join("; "),
            n => format!("{}; {} and {} more", self.origin[0], self.origin[1], n - 2),
        };
        Dimension {
            name,
            origin,
            sources,
            scope: self.scope,
            rules: self.rules,
        }
    }

    fn absorb(&mut self, other: Group) {
        self.parts.extend(other.parts);
        for origin in other.origin {
            if !self.origin.contains(&origin) {
                self.origin.push(origin);
            }
        }
        for scope in other.scope {
            if !self.scope.contains(&scope) {
                self.scope.push(scope);
            }
        }
        self.rules.extend(other.rules);
        self.score += other.score;
    }
}

/// `a`, `a and b`, `a, b and c`, `a, b and 3 more`.
fn list_name(parts: &[String]) -> String {
    // Parts that are lists already are joined with `+`.
    if parts
        .iter()
        .any(|part| part.contains(", ") || part.contains(" and "))
    {
        return match parts {
            [a, b] => format!("{a} + {b}"),
            [a, b, rest @ ..] => format!("{a} + {b} + {} more", rest.len()),
            _ => parts.join(" + "),
        };
    }
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [a, b, c] => format!("{a}, {b} and {c}"),
        [a, b, rest @ ..] => format!("{a}, {b} and {} more", rest.len()),
    }
}

/// The label of a scope: `crates/db` for a folder, a glob's literal folders
/// (`**/trigger/**/*.ts` is `trigger`), each once.
fn scope_label(scope: &[String]) -> String {
    let mut labels: Vec<String> = Vec::new();
    for part in scope {
        let literal: Vec<&str> = part
            .split('/')
            .filter(|segment| !segment.is_empty() && !segment.contains('*'))
            .collect();
        let label = if literal.is_empty() {
            part.clone()
        } else {
            literal.join("/")
        };
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    list_name(&labels)
}

/// The family of a scope: its first literal folder (`packages` for
/// `packages/core/`), or `globs`.
fn scope_family(scope: &[String]) -> String {
    let first = scope.first().map_or("", String::as_str);
    let top = first.split('/').next().unwrap_or("");
    if top.contains('*') || top.is_empty() {
        "scope:globs".to_string()
    } else {
        format!("scope:{top}")
    }
}

/// Rules into groups: invariants by their document's section, the rest by
/// the part of the tree they govern and, within a large part or the whole
/// project, by topic.
fn group(found: Vec<Found>, max: usize) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut next_id = 0usize;
    let mut new_group = |name: String, family: String, origin: String, scope: Vec<String>| {
        next_id += 1;
        Group {
            id: next_id,
            parts: vec![name],
            family,
            origin: vec![origin],
            scope,
            rules: Vec::new(),
            score: 0.0,
        }
    };
    // Invariants: one group per (file, section), in order.
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut scoped: Vec<(String, Vec<Found>)> = Vec::new();
    let mut whole: Vec<Found> = Vec::new();
    for item in found {
        if item.invariant {
            let key = format!(
                "{}\u{0}{}",
                item.rule.file,
                item.heading.as_deref().unwrap_or("")
            );
            let index = *by_key.entry(key).or_insert_with(|| {
                let origin = match &item.heading {
                    Some(heading) => format!("{} invariants § {heading}", item.rule.file),
                    None => format!("{} invariants", item.rule.file),
                };
                let name = match &item.heading {
                    Some(heading) if item.scope.len() > 2 => scope_label(&item.scope),
                    Some(heading) => heading.clone(),
                    None => item.rule.file.clone(),
                };
                groups.push(new_group(
                    name,
                    format!("invariants:{}", item.rule.file),
                    origin,
                    item.scope.clone(),
                ));
                groups.len() - 1
            });
            let weight = checkability(&item, None);
            groups[index].score += weight;
            groups[index].rules.push(item.rule);
        } else if item.scope.is_empty() {
            whole.push(item);
        } else {
            let label = scope_label(&item.scope);
            match scoped.iter_mut().find(|(key, _)| *key == label) {
                Some((_, items)) => items.push(item),
                None => scoped.push((label, vec![item])),
            }
        }
    }
    // A part of the tree: one group when small, else by topic.
    for (label, items) in scoped {
        let scope = items[0].scope.clone();
        let family = scope_family(&scope);
        if items.len() <= SMALL_SCOPE {
            let mut group = new_group(label.clone(), family, String::new(), scope);
            group.origin.clear();
            fill(&mut group, items);
            groups.push(group);
            continue;
        }
        for (name, items) in by_topic(items, 3, false) {
            let mut group = new_group(
                format!("{label}: {name}"),
                family.clone(),
                String::new(),
                scope.clone(),
            );
            group.origin.clear();
            fill(&mut group, items);
            groups.push(group);
        }
    }
    // The whole project: by topic, or by heading where no topic's words
    // are; when that makes more than `max`, headings go to "Other rules"
    // first.
    // A rule alone is its own dimension only in a small project, where
    // every rule is a maintainer's concern of its own.
    let least = if whole.len() <= SMALL_SCOPE { 1 } else { 2 };
    let fine = by_topic(whole.clone(), least, true);
    let topics = if groups.len() + fine.len() <= max {
        fine
    } else {
        by_topic(whole, 2, false)
    };
    for (name, items) in topics {
        let mut group = new_group(name, "whole".to_string(), String::new(), Vec::new());
        group.origin.clear();
        fill(&mut group, items);
        groups.push(group);
    }
    groups
}

/// Rules split by topic, in [`TOPICS`] order; a topic with fewer than `least`
/// rules joins "Other rules".
fn by_topic(items: Vec<Found>, least: usize, headings: bool) -> Vec<(String, Vec<Found>)> {
    let mut buckets: Vec<Vec<Found>> = (0..=TOPICS.len()).map(|_| Vec::new()).collect();
    for item in items {
        let index = topic(item.heading.as_deref(), &item.rule.text).unwrap_or(TOPICS.len());
        buckets[index].push(item);
    }
    let unknown: Vec<Found> = buckets.pop().unwrap_or_default();
    let mut other: Vec<Found> = Vec::new();
    let mut out = Vec::new();
    // No topic's words: the heading it stands under names it, when asked.
    let mut by_heading: Vec<(String, Vec<Found>)> = Vec::new();
    for item in unknown {
        match item.heading.clone() {
            Some(heading) if headings => {
                match by_heading.iter_mut().find(|(name, _)| *name == heading) {
                    Some((_, items)) => items.push(item),
                    None => by_heading.push((heading, vec![item])),
                }
            }
            _ => other.push(item),
        }
    }
    for (index, bucket) in buckets.into_iter().enumerate() {
        if bucket.is_empty() {
            continue;
        }
        if bucket.len() < least {
            other.extend(bucket);
        } else {
            out.push((TOPICS[index].0.to_string(), bucket));
        }
    }
    for (heading, bucket) in by_heading {
        if bucket.len() < least || TOPICS.iter().any(|(name, ..)| *name == heading) {
            other.extend(bucket);
        } else {
            out.push((heading, bucket));
        }
    }
    if !other.is_empty() {
        other.sort_by(|a, b| (&a.rule.file, a.rule.line).cmp(&(&b.rule.file, b.rule.line)));
        out.push(("Other rules".to_string(), other));
    }
    out
}

/// Puts `items` into `group`, with their origins and checkability.
fn fill(group: &mut Group, items: Vec<Found>) {
    for item in items {
        let origin = match &item.heading {
            Some(heading) => format!("{} § {heading}", item.rule.file),
            None => item.rule.file.clone(),
        };
        if !group.origin.contains(&origin) {
            group.origin.push(origin);
        }
        let topic = topic(item.heading.as_deref(), &item.rule.text);
        group.score += checkability(&item, topic);
        group.rules.push(item.rule);
    }
}

/// Ranks the groups, most checkable first, and brings them down to `max`:
/// the weakest is left out when its rules are mostly conduct (nothing in the
/// tree at rest to check them against), else merged into the weakest group
/// of its family, else left out. What was merged and left out, said.
fn cap(groups: &mut Vec<Group>, max: usize) -> (Vec<(String, String)>, Vec<LeftOut>) {
    let rank = |groups: &mut Vec<Group>| {
        groups.sort_by(|a, b| b.score.total_cmp(&a.score));
    };
    rank(groups);
    let mut merges: Vec<(String, usize)> = Vec::new();
    // A group merged into another, by id: the merged-into group may itself be merged later.
    let mut moved: HashMap<usize, usize> = HashMap::new();
    let mut left_out = Vec::new();
    let mean_of = |group: &Group| group.score / group.rules.len().max(1) as f64;
    while groups.len() > max {
        // Conduct first (the weakest of it), then the weakest of the rest.
        let victim = groups
            .iter()
            .rposition(|group| mean_of(group) < 0.5)
            .unwrap_or(groups.len() - 1);
        let weakest = groups.remove(victim);
        let mean = mean_of(&weakest);
        let partner = groups
            .iter()
            .rposition(|group| group.family == weakest.family);
        match partner {
            Some(index) if mean >= 0.5 => {
                merges.push((weakest.name(), groups[index].id));
                moved.insert(weakest.id, groups[index].id);
                groups[index].absorb(weakest);
                rank(groups);
            }
            _ => left_out.push(LeftOut {
                name: weakest.name(),
                rules: weakest.rules.len(),
                why: if mean < 0.5 {
                    "mostly conduct (pull requests, replies, commands to run): nothing in the tree at rest to check it against".to_string()
                } else {
                    "ranked lowest: the fewest rules that can be checked against the tree".to_string()
                },
            }),
        }
    }
    let merged = merges
        .into_iter()
        .map(|(name, mut id)| {
            while let Some(next) = moved.get(&id) {
                id = *next;
            }
            let into = groups
                .iter()
                .find(|group| group.id == id)
                .map(Group::name)
                .unwrap_or_else(|| "a dimension later left out".to_string());
            (name, into)
        })
        .collect();
    (merged, left_out)
}

/// The front matter of a `.mdc`, `.claude/rules` or `.instructions.md` file:
/// the globs its rules apply to (`globs`, `paths`, `applyTo`), and whether
/// it applies always.
#[derive(Default)]
struct FrontMatter {
    end: usize,
    globs: Vec<String>,
}

/// The YAML front matter (`---` … `---`) a file opens with: its last line
/// (0 without one) and its globs. An opening `---` with no closing one is a
/// thematic break, not front matter. Only `key: value` and `- item` lines
/// are read: that is all these files use.
fn front_matter(text: &str) -> FrontMatter {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return FrontMatter::default();
    }
    let body: Vec<&str> = lines.take_while(|line| line.trim_end() != "---").collect();
    if body.len() + 1 >= text.lines().count() {
        return FrontMatter::default();
    }
    let mut globs = Vec::new();
    let mut in_list = false;
    for line in &body {
        let trimmed = line.trim();
        if let Some(item) = trimmed.strip_prefix("- ") {
            if in_list {
                globs.extend(glob_values(item));
            }
            continue;
        }
        in_list = false;
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        if matches!(key.trim(), "globs" | "paths" | "applyTo") {
            let value = value.trim();
            if value.is_empty() {
                in_list = true;
            } else {
                globs.extend(glob_values(value));
            }
        }
    }
    FrontMatter {
        end: body.len() + 2,
        globs,
    }
}

/// `"a/**", b/*.ts` or `[a, b]` as its globs; `**` and `**/*` (everything) as none.
fn glob_values(value: &str) -> Vec<String> {
    value
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|glob| glob.trim().trim_matches(['"', '\'']).trim().to_string())
        .filter(|glob| !glob.is_empty() && !matches!(glob.as_str(), "*" | "**" | "**/*"))
        .collect()
}

/// The names a rules file has wherever it stands: one in a subfolder governs
/// that folder.
const RULES_NAMES: [&str; 5] = [
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "RULES.md",
    "GEMINI.md",
];

/// The part of the tree a file's rules govern when neither its front matter
/// nor a heading says: the folder of a nested rules file, else all of it.
fn file_scope(file: &str) -> Vec<String> {
    let (folder, base) = file.rsplit_once('/').unwrap_or(("", file));
    let agent_home = matches!(folder, "" | ".claude" | ".gemini" | ".github");
    if RULES_NAMES.contains(&base) && !agent_home {
        vec![format!("{folder}/")]
    } else {
        Vec::new()
    }
}

/// The paths a heading names (`` `crates/parser` ``, `apps/webapp`), as the
/// part of the tree its rules govern.
fn heading_scope(raw: &str) -> Vec<String> {
    raw.split(|c: char| c.is_whitespace() || c == ',' || c == '`' || c == '(' || c == ')')
        .map(|word| word.trim_matches(['*', '"', '\'', ':']))
        .filter(|word| {
            word.contains('/')
                && !word.contains("://")
                && word
                    .chars()
                    .all(|c| c.is_alphanumeric() || "/._-*".contains(c))
                && word.chars().any(char::is_alphanumeric)
        })
        .map(str::to_string)
        .collect()
}

/// A list item, a paragraph or a table row being read: its lines, numbered.
struct Block {
    kind: BlockKind,
    lines: Vec<(usize, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Item,
    Paragraph,
    Row,
}

/// A table being read: its first row until a separator shows it was the
/// header, and whether the header says its rows are rules.
#[derive(Default)]
struct Table {
    first: Option<(usize, String)>,
    /// Rows read as rows (the header not counted).
    rows: usize,
    rows_are_rules: bool,
}

/// The file read line by line: fences, headings, blank lines and list
/// markers cut it into blocks, and each block's orders become rules.
struct Reader<'a> {
    file: &'a str,
    /// An architecture document: only invariants are rules.
    architecture: bool,
    /// The file's scope (front matter, or a nested rules file's folder).
    scope: Vec<String>,
    heading: Option<String>,
    heading_scope: Vec<String>,
    /// The current heading names invariants: its items are invariants.
    invariant_heading: bool,
    table: Option<Table>,
    block: Option<Block>,
    out: Vec<Found>,
}

/// Whether a file is an architecture document, by its name in any case.
fn is_architecture(file: &str) -> bool {
    let base = file.rsplit('/').next().unwrap_or(file);
    base.eq_ignore_ascii_case("architecture.md")
}

fn read_rules(file: &str, text: &str) -> Vec<Found> {
    let front = front_matter(text);
    let scope = if front.globs.is_empty() {
        file_scope(file)
    } else {
        front.globs.clone()
    };
    let mut reader = Reader {
        file,
        architecture: is_architecture(file),
        scope,
        heading: None,
        heading_scope: Vec::new(),
        invariant_heading: false,
        table: None,
        block: None,
        out: Vec::new(),
    };
    let mut fence: Option<String> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if number <= front.end {
            continue;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(marker) = &fence {
            if closes(trimmed, marker) {
                fence = None;
            }
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            reader.flush();
            reader.end_table();
            fence = Some(marker);
            continue;
        }
        if indent <= 3
            && let Some((level, title, raw)) = heading(trimmed)
        {
            reader.flush();
            reader.end_table();
            if level <= MAX_HEADING_LEVEL {
                reader.invariant_heading = title.to_ascii_lowercase().contains("invariant");
                reader.heading_scope = heading_scope(&raw);
                reader.heading = Some(title);
            }
            continue;
        }
        if trimmed.is_empty() {
            reader.flush();
            reader.end_table();
            continue;
        }
        if let Some(cells) = table_row(trimmed) {
            reader.flush();
            reader.row(number, cells);
            continue;
        }
        reader.end_table();
        // A quote's marker (`> `) is not part of its text, nor a GitHub
        // alert's (`> [!NOTE]`).
        let trimmed = trimmed.trim_start_matches('>').trim_start();
        if trimmed.starts_with("[!") && trimmed.ends_with(']') {
            continue;
        }
        if let Some(item) = list_item(trimmed) {
            reader.flush();
            reader.block = Some(Block {
                kind: BlockKind::Item,
                lines: vec![(number, item.to_string())],
            });
            continue;
        }
        match &mut reader.block {
            // A continuation line (indented or lazy) of an item or a paragraph.
            Some(block) => block.lines.push((number, trimmed.to_string())),
            None => {
                reader.block = Some(Block {
                    kind: BlockKind::Paragraph,
                    lines: vec![(number, trimmed.to_string())],
                })
            }
        }
    }
    reader.flush();
    reader.end_table();
    reader.out
}

impl Reader<'_> {
    /// A table row (`Some(cells)`) or its separator (`None`).
    fn row(&mut self, number: usize, cells: Option<String>) {
        let table = self.table.get_or_insert_with(Table::default);
        match cells {
            // The first row was the header: it says what the rows are.
            None => {
                if table.rows == 0
                    && let Some((_, header)) = table.first.take()
                {
                    table.rows_are_rules = header_says_rules(&header);
                }
            }
            Some(cells) if table.rows == 0 && table.first.is_none() => {
                table.first = Some((number, cells));
            }
            Some(cells) => {
                let pending = table.first.take();
                table.rows += 1;
                if let Some((line, first)) = pending {
                    self.emit_row(line, first);
                }
                self.emit_row(number, cells);
            }
        }
    }

    fn emit_row(&mut self, number: usize, cells: String) {
        self.block = Some(Block {
            kind: BlockKind::Row,
            lines: vec![(number, cells)],
        });
        self.flush();
    }

    /// The table ends: a first row never shown to be a header is a row.
    fn end_table(&mut self) {
        if let Some(table) = self.table.take()
            && let Some((line, first)) = table.first
        {
            self.table = Some(Table {
                first: None,
                rows: 1,
                rows_are_rules: table.rows_are_rules,
            });
            self.emit_row(line, first);
            self.table = None;
        }
    }

    fn flush(&mut self) {
        let Some(block) = self.block.take() else {
            return;
        };
        let first = block.lines[0].0;
        let joined = join(block.lines.iter().map(|(_, text)| text.as_str()));
        if let Some(invariant) = invariant_body(&joined) {
            return self.push(first, invariant, true);
        }
        if block.kind == BlockKind::Item && self.invariant_heading {
            return self.push(first, joined, true);
        }
        if self.architecture {
            return;
        }
        match block.kind {
            BlockKind::Item => {
                let orders = sentences(&[(first, joined.clone())])
                    .iter()
                    .any(|(_, sentence)| is_order(sentence));
                if orders {
                    self.push(first, joined, false);
                }
            }
            BlockKind::Row => {
                let rules = self.table.as_ref().is_some_and(|t| t.rows_are_rules);
                if rules || is_order(&joined) {
                    self.push(first, joined, false);
                }
            }
            BlockKind::Paragraph => {
                for (line, sentence) in sentences(&block.lines) {
                    if is_order(&sentence) {
                        self.push(line, sentence, false);
                    }
                }
            }
        }
    }

    fn push(&mut self, line: usize, text: String, invariant: bool) {
        if text.is_empty() {
            return;
        }
        let scope = if self.heading_scope.is_empty() {
            self.scope.clone()
        } else {
            self.heading_scope.clone()
        };
        self.out.push(Found {
            rule: Rule {
                file: self.file.to_string(),
                line,
                text,
                also: Vec::new(),
            },
            heading: self.heading.clone(),
            invariant,
            scope,
        });
    }
}

/// Whether a table's header says its rows are rules ("Rule", "Do", "Don't",
/// "Required command").
fn header_says_rules(header: &str) -> bool {
    words_of(header).iter().any(|word| {
        matches!(
            word.as_str(),
            "rule"
                | "rules"
                | "required"
                | "must"
                | "do"
                | "don't"
                | "never"
                | "avoid"
                | "prefer"
                | "should"
                | "instead"
                | "convention"
                | "conventions"
                | "guideline"
                | "guidelines"
                | "policy"
        )
    })
}

fn join<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    parts
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The marker of a code fence opening at this (left-trimmed) line: three or
/// more backticks or tildes.
fn fence_marker(trimmed: &str) -> Option<String> {
    let mark = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|c| *c == mark).count();
    (run >= 3).then(|| mark.to_string().repeat(run))
}

/// Whether this (left-trimmed) line closes the fence `marker` opened: the
/// same mark, at least as many, nothing after.
fn closes(trimmed: &str, marker: &str) -> bool {
    let run = marker.len();
    let mark = marker.chars().next().unwrap_or('`');
    let count = trimmed.chars().take_while(|c| *c == mark).count();
    count >= run && trimmed[count..].trim().is_empty()
}

/// An ATX heading's level, its text with inline marks removed, and its text as written.
fn heading(trimmed: &str) -> Option<(usize, String, String)> {
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    Some((level, plain(title), title.to_string()))
}

/// Text without the marks that only style it (code spans, bold).
fn plain(text: &str) -> String {
    text.replace('`', "").replace("**", "")
}

/// A markdown table row (`| a | b |`): `Some(cells)` joined by ` | `, or
/// `None` for the separator row under a header (`|---|:--:|`).
fn table_row(trimmed: &str) -> Option<Option<String>> {
    let inner = trimmed.strip_prefix('|')?;
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    if inner.contains('-')
        && inner
            .chars()
            .all(|c| matches!(c, '-' | ':' | '|' | ' ' | '\t'))
    {
        return Some(None);
    }
    let cells: Vec<String> = inner
        .split('|')
        .map(|cell| plain(cell.trim()))
        .filter(|cell| !cell.is_empty())
        .collect();
    Some(Some(cells.join(" | ")))
}

/// The text of a list item (`- `, `* `, `+ `, `1. `, `1) `), without its marker.
fn list_item(trimmed: &str) -> Option<&str> {
    let rest = if let Some(rest) = trimmed.strip_prefix(['-', '*', '+']) {
        rest
    } else {
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        trimmed[digits..].strip_prefix(['.', ')'])?
    };
    if rest.is_empty() {
        return Some(rest);
    }
    rest.starts_with([' ', '\t']).then(|| rest.trim_start())
}

/// The body of an invariant (`**Architecture Invariant:** body`,
/// `Invariant: body`, `**Invariant**: body`), if the text is one.
fn invariant_body(text: &str) -> Option<String> {
    let marks: &[char] = &['*', '_'];
    let probe = text.trim_start_matches(marks);
    for label in ["architecture invariant", "invariant"] {
        let Some(head) = probe.get(..label.len()) else {
            continue;
        };
        if !head.eq_ignore_ascii_case(label) {
            continue;
        }
        let rest = probe[label.len()..].trim_start_matches(marks);
        if let Some(body) = rest.strip_prefix(':') {
            return Some(body.trim_start_matches(['*', '_', ' ']).trim().to_string());
        }
    }
    None
}

/// Words that end with a stop without ending a sentence.
const ABBREVIATIONS: [&str; 12] = [
    "e.g", "i.e", "eg", "ie", "etc", "vs", "cf", "approx", "incl", "resp", "viz", "al",
];

/// A paragraph's sentences, each with the line it starts on. A stop ends a
/// sentence when whitespace follows it, unless it stands inside a code span,
/// or ends an abbreviation (`e.g.`, `i.e.`, `vs.`; `etc.` only before a
/// capital letter) or a word holding another stop (`v1.2.`).
fn sentences(lines: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut in_code = false;
    for (number, text) in lines {
        let chars: Vec<char> = text.chars().collect();
        for (index, &c) in chars.iter().enumerate() {
            if current.is_none() && c.is_whitespace() {
                continue;
            }
            let (_, sentence) = current.get_or_insert_with(|| (*number, String::new()));
            sentence.push(c);
            if c == '`' {
                in_code = !in_code;
                continue;
            }
            let at_break = chars.get(index + 1).is_none_or(|next| next.is_whitespace());
            if in_code || !matches!(c, '.' | '!' | '?') || !at_break {
                continue;
            }
            let word = sentence.rsplit(char::is_whitespace).next().unwrap_or("");
            let stem = word[..word.len() - c.len_utf8()]
                .trim_start_matches(['(', '"', '\'', '*', '_'])
                .to_ascii_lowercase();
            let next = chars[index + 1..].iter().find(|c| !c.is_whitespace());
            let abbreviation = c == '.'
                && !stem.ends_with('`')
                && (stem.contains('.')
                    || (stem == "etc" && next.is_some_and(|n| !n.is_uppercase()))
                    || (stem != "etc" && ABBREVIATIONS.contains(&stem.as_str())));
            if !abbreviation && let Some(done) = current.take() {
                out.push(done);
            }
        }
        if let Some((_, sentence)) = &mut current {
            sentence.push(' ');
        }
    }
    out.extend(current);
    out.into_iter()
        .map(|(line, sentence)| (line, sentence.trim().to_string()))
        .filter(|(_, sentence)| !sentence.is_empty())
        .collect()
}

/// Verbs an order opens with ("Use tabs.", "Prefer small functions.").
const ORDER_VERBS: &[&str] = &[
    "use",
    "prefer",
    "avoid",
    "keep",
    "write",
    "run",
    "add",
    "make",
    "put",
    "call",
    "check",
    "read",
    "follow",
    "ask",
    "answer",
    "be",
    "stop",
    "start",
    "commit",
    "document",
    "return",
    "handle",
    "validate",
    "leave",
    "remove",
    "update",
    "create",
    "fix",
    "treat",
    "give",
    "wait",
    "cite",
    "reply",
    "limit",
    "store",
    "print",
    "include",
    "place",
    "import",
    "export",
    "mark",
    "pass",
    "set",
    "define",
    "implement",
    "declare",
    "wrap",
    "split",
    "move",
    "rename",
    "delete",
    "install",
    "regenerate",
    "generate",
    "ensure",
    "verify",
    "review",
    "confirm",
    "preserve",
    "inspect",
    "load",
    "open",
    "describe",
    "explain",
    "say",
    "tell",
    "reuse",
    "consider",
    "look",
    "search",
    "mention",
    "disclose",
    "apply",
    "respect",
    "match",
    "annotate",
    "propagate",
    "resolve",
    "repeat",
    "provide",
    "bump",
    "pin",
    "squash",
    "rebase",
    "choose",
    "select",
    "emit",
    "raise",
    "throw",
    "catch",
    "close",
    "clean",
    "share",
    "copy",
    "convert",
    "replace",
    "drop",
    "favor",
    "favour",
    "think",
    "try",
    "do",
    "don't",
    "dont",
    "never",
    "always",
    "only",
    "no",
    "refrain",
    "minimize",
    "minimise",
    "maximize",
    "reduce",
    "extract",
    "sort",
    "prefix",
    "suffix",
    "benchmark",
    "reach",
    "stick",
    "express",
    "target",
    "skip",
    "expose",
    "hide",
    "require",
    "register",
    "insert",
    "prioritize",
    "prioritise",
    "investigate",
    "submit",
    "migrate",
    "edit",
];

/// Words after which a verb-like first word is a noun ("Tests are ...",
/// "Name of ...", "State is kept ...").
const NOT_AFTER_A_VERB: [&str; 14] = [
    "is", "are", "was", "were", "of", "has", "have", "will", "can", "does", "'s", "s", "may",
    "might",
];

/// Opening words of a clause that puts the order after a comma ("Before
/// editing the workflow, check ...").
const SUBORDINATE: [&str; 15] = [
    "before", "after", "when", "whenever", "if", "unless", "once", "while", "for", "in", "to",
    "on", "during", "where", "with",
];

/// Words after which `do not` is an order, not a fact ("you do not",
/// "please do not"; "the tests do not work" is a fact).
const ORDER_SUBJECTS: [&str; 12] = [
    "you",
    "we",
    "please",
    "and",
    "or",
    "then",
    "but",
    "so",
    "agents",
    "contributors",
    "i",
    "also",
];

/// Whether a sentence (or item, or row) gives an order: a modal anywhere
/// (must, should, shall, never, always, prefer, avoid, ensure, required,
/// make sure, need to, not allowed), `do not` said to someone, or an
/// imperative opening (after a short `Label:` and a `Before X,` clause).
fn is_order(text: &str) -> bool {
    // Only links (a table of contents, a list of names or of other files): no order.
    if words_of(&without_links(text)).is_empty() {
        return false;
    }
    let prose = prose_of(text);
    if prose.trim_end().ends_with(':') && words_of(&prose).len() <= 6 {
        // "Required generated artifacts:", "In particular:": an introduction.
        return false;
    }
    if words_of(&prose).len() < 2 {
        return false;
    }
    // "**Run engine config**: `app/v3/runEngine.server.ts`": a name and a path.
    if let Some((_, rest)) = prose.split_once(':')
        && words_of(rest).iter().all(|word| word == "code")
    {
        return false;
    }
    if has_modal(&prose) || opens_with_order(&prose) {
        return true;
    }
    // "Testing: run the narrowest tests first", "**Bold** — keep it short".
    for mark in [":", " — ", " – "] {
        if let Some((label, rest)) = prose.split_once(mark)
            && words_of(label).len() <= 5
            && opens_with_order(rest)
        {
            return true;
        }
    }
    false
}

/// The text without what is not prose: code spans become one placeholder
/// word, a link keeps its text, marks that only style are dropped.
fn prose_of(text: &str) -> String {
    let mut out = String::new();
    for (index, part) in text.split('`').enumerate() {
        if index % 2 == 1 {
            out.push_str(" code ");
        } else {
            out.push_str(part);
        }
    }
    let mut plain = String::new();
    let mut rest = out.as_str();
    while let Some(at) = rest.find("](") {
        plain.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        rest = after.find(')').map_or("", |end| &after[end + 1..]);
    }
    plain.push_str(rest);
    plain.replace(['[', '*', '!'], "").replace("__", "")
}

/// The text with its links (`[text](target)`, images and nested ones too) removed.
fn without_links(text: &str) -> String {
    let mut text = text.to_string();
    while let Some(at) = text.find("](") {
        let open = text[..at].rfind('[').unwrap_or(at);
        let open = if open > 0 && text[..open].ends_with('!') {
            open - 1
        } else {
            open
        };
        let close = text[at..].find(')').map_or(text.len(), |end| at + end + 1);
        text.replace_range(open..close, " ");
    }
    text
}

fn has_modal(prose: &str) -> bool {
    let words = words_of(prose);
    words.iter().enumerate().any(|(index, word)| {
        let next = words.get(index + 1).map(String::as_str);
        let previous = index.checked_sub(1).map(|i| words[i].as_str());
        match word.as_str() {
            "must" | "mustn't" | "should" | "shouldn't" | "shall" | "never" | "always"
            | "prefer" | "avoid" | "forbidden" | "mandatory" => true,
            // "Ensure X", "you must ensure"; not "done to ensure X" (a purpose).
            "ensure" => previous.is_none_or(|p| ORDER_SUBJECTS.contains(&p) || p == "must"),
            // "X is required", "required to"; not "the required tools".
            "required" => {
                matches!(previous, Some("is" | "are" | "be" | "also")) || next == Some("to")
            }
            // "You need to", not "when you need to call it" (a condition).
            "need" | "needs" | "have" | "has" => {
                let condition = index.checked_sub(2).is_some_and(|i| {
                    matches!(
                        words[i].as_str(),
                        "when" | "if" | "case" | "whenever" | "unless"
                    )
                });
                next == Some("to") && index > 0 && !condition
            }
            "make" => next == Some("sure"),
            "not" => {
                matches!(previous, Some("is" | "are"))
                    && matches!(next, Some("allowed" | "permitted" | "acceptable"))
            }
            "do" | "does" => {
                next == Some("not") && previous.is_none_or(|p| ORDER_SUBJECTS.contains(&p))
            }
            "don't" | "dont" => previous.is_none_or(|p| ORDER_SUBJECTS.contains(&p)),
            _ => false,
        }
    })
}

/// Whether the prose opens with an order: an imperative verb, or a `Before
/// X,` clause then one.
fn opens_with_order(prose: &str) -> bool {
    let words = words_of(prose);
    let mut start = 0;
    if words.first().is_some_and(|w| w == "please") {
        start = 1;
    }
    if imperative(&words[start.min(words.len())..]) {
        return true;
    }
    if words
        .first()
        .is_some_and(|w| SUBORDINATE.contains(&w.as_str()))
        && let Some((_, after)) = prose.split_once(',')
    {
        return imperative(&words_of(after));
    }
    false
}

fn imperative(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    if !ORDER_VERBS.contains(&first.as_str()) {
        return false;
    }
    // "No" opens an order only with more to say ("No mocks of the database").
    if first == "no" && words.len() < 2 {
        return false;
    }
    words
        .get(1)
        .is_none_or(|next| !NOT_AFTER_A_VERB.contains(&next.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect()
    }

    /// Every rule of the plan as `file:line text`.
    fn rules_of(plan: &Plan) -> Vec<String> {
        plan.dimensions
            .iter()
            .flat_map(|d| &d.rules)
            .map(|rule| format!("{}:{} {}", rule.file, rule.line, rule.text))
            .collect()
    }

    /// Found on real projects: facts, descriptions, names, links and tables
    /// of contents were rules, and orders in paragraphs were not.
    #[test]
    fn an_order_is_a_rule_and_a_fact_a_description_a_name_or_a_link_is_not() {
        let orders = [
            "`db` should be the first parameter.",
            "Prefer boxed slices; otherwise shrink collections.",
            "Before editing the release workflow, check whether the relevant section is generated.",
            "Never sleep in a test.",
            "Do not print from a library.",
            "Please don't push to main.",
            "You must run the formatter.",
            "Avoid global state.",
            "Use tabs for indentation.",
            "Only the cli knows clap.",
            "No mocks of the database: use the fixture.",
            "Testing: run the narrowest tests first.",
            "A changeset is required for user-facing changes.",
            "Make sure the lockfile is updated.",
            "Ensure the lockfile is committed.",
            "Always import from `@trigger.dev/sdk` (never `@trigger.dev/sdk/v3`)",
            "Edit the package.json directly — do NOT use `pnpm add`.",
        ];
        for order in orders {
            assert!(is_order(order), "an order: {order}");
        }
        let not_orders = [
            "File-watcher tests do not work inside the sandbox.",
            "This repository contains both Ruff and ty.",
            "[Install the required tools](#install-the-required-tools)",
            "[Arend van Beelen @arendjr](https://github.com/arendjr)",
            "[![Open in Codespaces](https://x/badge.svg)](https://x/new)",
            "`pydantic-ai-slim` in `pydantic_ai_slim/`: the [agent framework](docs/agent.md)",
            "**Run engine config**: `app/v3/runEngine.server.ts`",
            "`metadata` - Run metadata access",
            "Triggers a task and waits for the result, useful when you need to call a task.",
            "Install the required tools:",
            "Edit",
            "Tests are in `tests/`.",
            "The crates follow a naming convention.",
            "This can be done for performance, and also to ensure incremental computation.",
        ];
        for text in not_orders {
            assert!(!is_order(text), "not an order: {text}");
        }
    }

    #[test]
    fn sentences_survive_abbreviations_and_code_spans() {
        let lines = [(
            1,
            "Log the cause (timeouts, resets, etc.) and retry. Use e.g. `x.y. z` or i.e. this. \
             Parts of `dist-workspace.toml`. Before editing, check. See vs. that etc. Then go."
                .to_string(),
        )];
        let split: Vec<String> = sentences(&lines).into_iter().map(|(_, s)| s).collect();
        assert_eq!(
            split,
            [
                "Log the cause (timeouts, resets, etc.) and retry.",
                "Use e.g. `x.y. z` or i.e. this.",
                "Parts of `dist-workspace.toml`.",
                "Before editing, check.",
                "See vs. that etc.",
                "Then go.",
            ]
        );
    }

    /// Found on ruff: once a file had one must/never sentence, its other
    /// orders in paragraphs were dropped.
    #[test]
    fn orders_in_paragraphs_items_and_rows_are_rules_wherever_they_stand() {
        let plan = plan(
            &sources(&[(
                "AGENTS.md",
                "\
# Repo

This repository holds a linter. Agents must never push.

## Salsa

For functions without `self`, `db` should be the first parameter. It is
conventional. Prefer boxed slices.

## Table of contents

- [Salsa](#salsa)
- [Team](#team)

## Generated

| Changed source | Required command |
| --- | --- |
| Grammar | `just gen-grammar` |

| Crate | What it holds |
|---|---|
| `ruff_db` | the database |

> [!NOTE]
> Run `just f` before committing.

```sh
Never run this.
```
",
            )]),
            None,
        );
        assert_eq!(
            rules_of(&plan)
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>(),
            [
                "AGENTS.md:3 Agents must never push.",
                "AGENTS.md:7 For functions without `self`, `db` should be the first parameter.",
                "AGENTS.md:8 Prefer boxed slices.",
                "AGENTS.md:19 Grammar | just gen-grammar",
                "AGENTS.md:26 Run `just f` before committing.",
            ]
            .into_iter()
            .map(str::to_string)
            .collect()
        );
    }

    /// Found on trigger.dev: the same rule stood in six dimensions.
    #[test]
    fn one_rule_stated_in_several_files_is_one_rule_with_every_place() {
        let plan = plan(
            &sources(&[
                (
                    "AGENTS.md",
                    "- Always import from `@trigger.dev/sdk`, never `@trigger.dev/sdk/v3`.\n- Keep it small.\n",
                ),
                (
                    "docs/CLAUDE.md",
                    "- Always import from `@trigger.dev/sdk` (never `@trigger.dev/sdk/v3`)\n",
                ),
                (
                    ".cursor/rules/tasks.mdc",
                    "1. You MUST import from `@trigger.dev/sdk` (NEVER `@trigger.dev/sdk/v3`)\n",
                ),
                ("GEMINI.md", "- keep it small\n"),
            ]),
            None,
        );
        assert_eq!(plan.repeated, 3);
        let rules: Vec<&Rule> = plan.dimensions.iter().flat_map(|d| &d.rules).collect();
        assert_eq!(rules.len(), 2, "{rules:?}");
        let import = rules.iter().find(|r| r.text.contains("import")).unwrap();
        assert_eq!((import.file.as_str(), import.line), ("AGENTS.md", 1));
        assert_eq!(
            import.also,
            [
                Place {
                    file: "docs/CLAUDE.md".to_string(),
                    line: 1
                },
                Place {
                    file: ".cursor/rules/tasks.mdc".to_string(),
                    line: 1
                },
            ]
        );
        assert!(
            plan.render()
                .contains("    also stated at docs/CLAUDE.md:1, .cursor/rules/tasks.mdc:1\n")
        );
    }

    /// Found on trigger.dev: a guide scoped to `**/trigger/**` by its front
    /// matter became repository-wide dimensions.
    #[test]
    fn front_matter_globs_and_a_nested_rules_files_folder_scope_their_rules() {
        let plan = plan(
            &sources(&[
                (
                    "CLAUDE.md",
                    "## Testing\n\n- Tests must use the real binary.\n- Every test must clean up.\n",
                ),
                (
                    ".cursor/rules/tasks.mdc",
                    "---\ndescription: tasks\nglobs: **/trigger/**/*.ts, **/trigger/**/*.tsx\nalwaysApply: false\n---\n- Use `task()` for every task.\n",
                ),
                (
                    ".claude/rules/db.md",
                    "---\npaths:\n  - \"internal-packages/database/**\"\n---\n- Never drop a column.\n",
                ),
                (
                    ".cursor/rules/all.mdc",
                    "---\nalwaysApply: true\n---\n- Never log a token.\n",
                ),
                (
                    "apps/web/AGENTS.md",
                    "- Never use `process.env` directly.\n",
                ),
                (
                    ".github/workflows/AGENTS.md",
                    "- Pin every action to a commit.\n",
                ),
            ]),
            None,
        );
        let scope_of = |needle: &str| {
            plan.dimensions
                .iter()
                .find(|d| d.rules.iter().any(|r| r.text.contains(needle)))
                .map(|d| (d.name.clone(), d.scope.clone()))
                .unwrap()
        };
        assert_eq!(
            scope_of("task()"),
            (
                "trigger".to_string(),
                vec![
                    "**/trigger/**/*.ts".to_string(),
                    "**/trigger/**/*.tsx".to_string()
                ]
            )
        );
        assert_eq!(
            scope_of("drop a column"),
            (
                "internal-packages/database".to_string(),
                vec!["internal-packages/database/**".to_string()]
            )
        );
        assert_eq!(
            scope_of("process.env"),
            ("apps/web".to_string(), vec!["apps/web/".to_string()])
        );
        assert_eq!(
            scope_of("Pin every action"),
            (
                ".github/workflows".to_string(),
                vec![".github/workflows/".to_string()]
            )
        );
        assert_eq!(scope_of("real binary"), ("Testing".to_string(), Vec::new()));
        assert_eq!(scope_of("log a token").1, Vec::<String>::new());
        assert!(
            plan.render()
                .contains("  applies to: **/trigger/**/*.ts, **/trigger/**/*.tsx\n")
        );
    }

    /// Found on nextest and trigger.dev: one dimension per heading, up to 104.
    #[test]
    fn dimensions_are_topics_and_parts_of_the_tree_within_the_cap_and_the_rest_is_said() {
        let mut text = String::new();
        // Four headings of one topic: one dimension, not four.
        for heading in ["Unit tests", "Integration tests", "Fixtures", "Snapshots"] {
            text.push_str(&format!(
                "## {heading}\n\n- Every test must clean up its {heading}.\n- Never sleep in {heading}.\n\n"
            ));
        }
        text.push_str(
            "## Errors\n\n- Never `unwrap` an error in library code.\n- Return a typed error.\n\n",
        );
        text.push_str("## Pull requests\n\n- Always disclose AI use in the PR.\n- Never reply to a maintainer for the user.\n- Ask the user before opening a PR.\n\n");
        let files = sources(&[
            ("CLAUDE.md", &text),
            ("crates/a/AGENTS.md", "- Never panic in `a`.\n"),
            ("crates/b/AGENTS.md", "- Never panic in `b`.\n"),
            ("crates/c/AGENTS.md", "- Never block in `c`.\n"),
        ]);
        let full = plan(&files, None);
        let names: Vec<&str> = full.dimensions.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Testing",
                "Errors and panics",
                "crates/a",
                "crates/b",
                "crates/c",
                "Contributing and conduct"
            ],
            "ranked: the most checkable first"
        );
        assert_eq!(full.dimensions[0].rules.len(), 8);
        assert!(full.merged.is_empty() && full.left_out.is_empty());

        let capped = plan(&files, Some(3));
        let names: Vec<&str> = capped.dimensions.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Testing",
                "crates/a, crates/b and crates/c",
                "Errors and panics"
            ]
        );
        assert_eq!(capped.left_out.len(), 1);
        assert_eq!(capped.left_out[0].name, "Contributing and conduct");
        assert_eq!(capped.left_out[0].rules, 3);
        assert!(capped.left_out[0].why.starts_with("mostly conduct"));
        assert_eq!(capped.merged.len(), 2, "{:?}", capped.merged);
        let rendered = capped.render();
        assert!(
            rendered.contains("\nMerged to stay within --max-dimensions:\n"),
            "{rendered}"
        );
        assert!(
            rendered.contains("\n1 more dimension left out by --max-dimensions (the least checkable against the tree):\n  Contributing and conduct (3 rules): mostly conduct"),
            "{rendered}"
        );
        let total: usize = capped.dimensions.iter().map(|d| d.rules.len()).sum();
        assert_eq!(total, 8 + 2 + 3, "merged, not lost");
    }

    const ARCHITECTURE: &str = "\
# Architecture

The crates must be small. (Description: not an order in this file.)

## Code map

### `crates/core` (package `x-core`)
The core. It always parses.

- a list of files, not rules

**Architecture Invariant:** `core` does no I/O. It
never panics.

### `crates/cli`

Invariant: only the cli knows clap.

### `crates/empty`
Nothing stated.

## Invariants

- Errors are enums.
";

    #[test]
    fn an_architecture_document_gives_its_invariants_one_dimension_per_section_in_any_case() {
        for name in ["ARCHITECTURE.md", "docs/book/architecture.md"] {
            let planned = plan(&sources(&[(name, ARCHITECTURE)]), None);
            let got: Vec<(String, String, Vec<String>, Vec<String>)> = planned
                .dimensions
                .iter()
                .map(|d| {
                    (
                        d.name.clone(),
                        d.origin.clone(),
                        d.scope.clone(),
                        d.rules
                            .iter()
                            .map(|r| format!("{}:{}", r.line, r.text))
                            .collect(),
                    )
                })
                .collect();
            assert_eq!(
                got,
                [
                    (
                        "crates/core (package x-core)".to_string(),
                        format!("{name} invariants § crates/core (package x-core)"),
                        vec!["crates/core".to_string()],
                        vec!["12:`core` does no I/O. It never panics.".to_string()],
                    ),
                    (
                        "crates/cli".to_string(),
                        format!("{name} invariants § crates/cli"),
                        vec!["crates/cli".to_string()],
                        vec!["17:only the cli knows clap.".to_string()],
                    ),
                    (
                        "Invariants".to_string(),
                        format!("{name} invariants § Invariants"),
                        Vec::new(),
                        vec!["24:Errors are enums.".to_string()],
                    ),
                ]
            );
        }
        // An invariant line is a rule in any file.
        let planned = plan(
            &sources(&[(
                "CLAUDE.md",
                "Some text.\n\n**Architecture Invariant:** the core does no I/O.\n",
            )]),
            None,
        );
        assert_eq!(rules_of(&planned), ["CLAUDE.md:3 the core does no I/O."]);
    }

    #[test]
    fn no_rule_anywhere_gives_the_seeds_four_fallbacks_and_only_then() {
        let fallback_head = "\
The project states no rules of its own (no rules file holds a rule): the seed's fallback dimensions are used.

design and token rules  [fallback]
  looks for: values written by hand where the design system has a token, and exceptions outside its stated exempt list
";
        let empty = plan(&[], None);
        assert!(empty.fallback);
        assert_eq!(empty.dimensions.len(), 4);
        assert!(
            empty.render().starts_with(fallback_head),
            "{}",
            empty.render()
        );
        let none = plan(
            &sources(&[
                (
                    "CLAUDE.md",
                    "# Notes\n\nThis project is a web shop.\n\n```\n- must not be read\n```\n",
                ),
                (
                    "ARCHITECTURE.md",
                    "# Map\n\n- `src/`: the code, it must compile.\n",
                ),
                (
                    ".cursor/rules/x.mdc",
                    "---\n- description: must be metadata\n---\n",
                ),
            ]),
            None,
        );
        assert!(none.fallback);
        let one = plan(&empty_cut(), Some(1));
        assert_eq!(one.dimensions.len(), 1);
        assert_eq!(one.left_out.len(), 3);
        assert!(
            one.render()
                .contains("\n3 more dimensions left out by --max-dimensions")
        );
        let with_one = plan(&sources(&[("RULES.md", "- Never push.")]), None);
        assert!(!with_one.fallback);
        assert_eq!(
            with_one.dimensions,
            [Dimension {
                name: "Other rules".to_string(),
                origin: "RULES.md".to_string(),
                sources: vec!["RULES.md".to_string()],
                scope: Vec::new(),
                rules: vec![Rule {
                    file: "RULES.md".to_string(),
                    line: 1,
                    text: "Never push.".to_string(),
                    also: Vec::new(),
                }],
            }]
        );
    }

    fn empty_cut() -> Vec<(String, String)> {
        Vec::new()
    }

    #[test]
    fn a_rule_after_a_thematic_break_that_opens_a_file_is_still_read() {
        let planned = plan(
            &sources(&[("CLAUDE.md", "---\n- Never push to main.\n")]),
            None,
        );
        assert_eq!(rules_of(&planned), ["CLAUDE.md:2 Never push to main."]);
    }

    #[test]
    fn fences_and_odd_lines_are_read_as_markdown_reads_them() {
        let planned = plan(
            &sources(&[(
                "AGENTS.md",
                "\
# Rules
~~~~
- Never inside a tilde fence
~~~
- Never still inside: a shorter fence does not close it
~~~~
-not a list item but a paragraph
#not a heading, so it must stay one sentence.
- 
      Never indent code.
2024. A year opens a list item: it must be a rule.
",
            )]),
            None,
        );
        assert_eq!(
            rules_of(&planned),
            [
                "AGENTS.md:7 -not a list item but a paragraph #not a heading, so it must stay one sentence.",
                "AGENTS.md:9 Never indent code.",
                "AGENTS.md:11 A year opens a list item: it must be a rule.",
            ]
        );
    }

    #[test]
    fn the_cost_is_one_run_per_dimension_per_audit_and_per_day_at_the_cadence() {
        let planned = plan(
            &sources(&[(
                "CLAUDE.md",
                "## Testing\n- Never sleep in a test.\n- Every test must clean up.\n## Errors\n- Never `unwrap` an error.\n- Return a typed error.\n",
            )]),
            None,
        );
        assert_eq!(planned.dimensions.len(), 2);
        assert_eq!(
            planned.cost(None).line(),
            "Cost: 2 agent runs per audit (one per dimension); 8 a day at --audit-every 6h (4 audits a day; pass --audit-every for the watcher's own)."
        );
        assert_eq!(
            planned.cost(Some(Duration::from_secs(5400))).line(),
            "Cost: 2 agent runs per audit (one per dimension); 32 a day at --audit-every 1h30m (16 audits a day)."
        );
        assert_eq!(
            planned.cost(Some(Duration::from_secs(7 * 3600))).line(),
            "Cost: 2 agent runs per audit (one per dimension); 6.9 a day at --audit-every 7h (3.4 audits a day)."
        );
        let notes = Notes {
            read: vec![
                ("CLAUDE.md".to_string(), None),
                ("docs/a.md".to_string(), Some("CLAUDE.md".to_string())),
            ],
            skipped: vec![("CLAUDE.local.md".to_string(), "ignored".to_string())],
            audit_every: Some(Duration::from_secs(86_400)),
        };
        let text = planned.to_json(&notes);
        // One line, the shape's version first.
        assert!(text.starts_with(r#"{"version":1,"dimensions":["#), "{text}");
        assert!(!text.contains('\n'));
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Ranked: the rules that name something in the tree first.
        assert_eq!(json["dimensions"][0]["name"], "Errors and panics");
        assert_eq!(json["dimensions"][1]["name"], "Testing");
        assert_eq!(
            json["dimensions"][1]["sources"],
            serde_json::json!(["CLAUDE.md"])
        );
        assert_eq!(
            json["dimensions"][1]["rules"],
            serde_json::json!([
                {"file": "CLAUDE.md", "line": 2, "text": "Never sleep in a test.", "also": []},
                {"file": "CLAUDE.md", "line": 3, "text": "Every test must clean up.", "also": []},
            ])
        );
        assert_eq!(
            json["skipped"],
            serde_json::json!([{"path": "CLAUDE.local.md", "why": "ignored"}])
        );
        assert_eq!(
            json["read"][1],
            serde_json::json!({"path": "docs/a.md", "from": "CLAUDE.md"})
        );
        assert_eq!(
            json["cost"],
            serde_json::json!({"runs_per_audit": 2, "audit_every_secs": 86400, "audit_every_assumed": false, "audits_per_day": 1.0, "runs_per_day": 2.0})
        );
        let rendered = planned.render_with(&notes);
        assert!(rendered.contains("\nRead: 1 rules file by name; followed one step: docs/a.md (from CLAUDE.md).\nNot read:\n  CLAUDE.local.md: ignored\n"), "{rendered}");
    }
}
