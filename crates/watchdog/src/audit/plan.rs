//! The audit's dimensions, drawn from the watched project's own stated rules
//! (seed: "A generic checklist finds generic nothing"). The caller reads the
//! rules files (`probes::rules::discover`) and hands them here as `(path,
//! text)` pairs; this module only groups.
//!
//! - A markdown heading's section (levels 1 to [`MAX_HEADING_LEVEL`]; deeper
//!   headings stay in their parent's section) is one dimension. Its rules are
//!   its list items and its sentences that say must, never, always or do not,
//!   each cited at its first line. Fenced code is never a rule.
//! - An `ARCHITECTURE.md` holds description, not orders: only its
//!   invariants count (a paragraph or item that opens with
//!   `**Architecture Invariant:**` or `Invariant:`, or any item under a
//!   heading that names invariants), one dimension per section.
//! - A section with no rule is dropped. If, and only if, no file holds a
//!   rule, the seed's four [`FALLBACKS`] are the dimensions.

/// Deeper headings than this fold into the section above them: an auditor
/// per `####` would split one concern into crumbs.
pub const MAX_HEADING_LEVEL: usize = 3;

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

/// One stated rule, where the project states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The file, relative to the project, `/`-separated.
    pub file: String,
    /// 1-based: the rule's first line.
    pub line: usize,
    /// The rule's text: its lines joined, a list marker or an invariant label removed.
    pub text: String,
}

/// One auditor's remit: a group of the project's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dimension {
    /// Unique within a plan: a heading's text, qualified by its file when two
    /// files share it.
    pub name: String,
    /// Where it comes from: `CLAUDE.md § Testing`, `ARCHITECTURE.md
    /// invariants § crates/probes`, or `fallback`.
    pub origin: String,
    /// Empty only for a fallback dimension (see [`FALLBACKS`] for its focus).
    pub rules: Vec<Rule>,
}

/// What an audit will examine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub dimensions: Vec<Dimension>,
    /// True when the project states no rule and the [`FALLBACKS`] are used.
    pub fallback: bool,
    /// The names of the dimensions left out by `max_dimensions`, in order.
    pub cut: Vec<String>,
}

/// The dimensions of the project whose rules files are `sources` (`(path,
/// text)`, in the order discovered), the first `max_dimensions` of them when
/// given.
pub fn plan(sources: &[(String, String)], max_dimensions: Option<usize>) -> Plan {
    let mut dimensions: Vec<Dimension> = Vec::new();
    for (file, text) in sources {
        for section in sections(file, text) {
            let name = unique_name(&dimensions, section.name, file);
            dimensions.push(Dimension {
                name,
                origin: section.origin,
                rules: section.rules,
            });
        }
    }
    let fallback = dimensions.is_empty();
    if fallback {
        dimensions = FALLBACKS
            .iter()
            .map(|(name, _)| Dimension {
                name: name.to_string(),
                origin: "fallback".to_string(),
                rules: Vec::new(),
            })
            .collect();
    }
    let keep = max_dimensions.unwrap_or(usize::MAX).min(dimensions.len());
    let cut = dimensions
        .split_off(keep)
        .into_iter()
        .map(|dimension| dimension.name)
        .collect();
    Plan {
        dimensions,
        fallback,
        cut,
    }
}

impl Plan {
    /// The `--plan` text: each dimension, its origin and its rules as
    /// `  file:line  text`; what the fallbacks look for when they are used.
    pub fn render(&self) -> String {
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
            out.push_str(&format!(
                "{count}, {rules}, from the project's own rules.\n"
            ));
        }
        for dimension in &self.dimensions {
            out.push_str(&format!("\n{}  [{}]\n", dimension.name, dimension.origin));
            if let Some((_, focus)) = FALLBACKS.iter().find(|(name, _)| *name == dimension.name)
                && self.fallback
            {
                out.push_str(&format!("  looks for: {focus}\n"));
            }
            for rule in &dimension.rules {
                out.push_str(&format!("  {}:{}  {}\n", rule.file, rule.line, rule.text));
            }
        }
        if !self.cut.is_empty() {
            out.push_str(&format!(
                "\n{} cut by --max-dimensions: {}\n",
                plural(self.cut.len(), "more dimension"),
                self.cut.join(", ")
            ));
        }
        out
    }
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// `name`, or qualified by its file (then numbered) when a dimension already has it.
fn unique_name(dimensions: &[Dimension], name: String, file: &str) -> String {
    let taken = |candidate: &str| dimensions.iter().any(|d| d.name == candidate);
    if !taken(&name) {
        return name;
    }
    let qualified = format!("{name} ({file})");
    let mut candidate = qualified.clone();
    let mut number = 2;
    while taken(&candidate) {
        candidate = format!("{qualified} #{number}");
        number += 1;
    }
    candidate
}

/// A section with at least one rule, before naming.
struct Section {
    name: String,
    origin: String,
    rules: Vec<Rule>,
}

/// A list item or a paragraph being read: its lines, numbered.
struct Block {
    bullet: bool,
    lines: Vec<(usize, String)>,
}

/// The file read line by line: fences, headings, blank lines and list
/// markers cut it into blocks, and each block becomes rules of the section
/// it sits in.
struct Reader<'a> {
    file: &'a str,
    /// An ARCHITECTURE.md: only invariants are rules.
    invariants_only: bool,
    /// A plain order is a rule too ("Use tabs."), not only must and never.
    every_sentence: bool,
    heading: Option<String>,
    /// The current heading names invariants: its items are invariants.
    invariant_heading: bool,
    rules: Vec<Rule>,
    all_invariants: bool,
    block: Option<Block>,
    done: Vec<Section>,
}

fn sections(file: &str, text: &str) -> Vec<Section> {
    let found = read_sections(file, text, false);
    let base = file.rsplit('/').next().unwrap_or(file);
    if found.is_empty() && base != "ARCHITECTURE.md" {
        // A rules file says what to do in plain orders too ("Use tabs for
        // indentation."): when nothing reads as a rule, its orders are rules.
        return read_sections(file, text, true);
    }
    found
}

fn read_sections(file: &str, text: &str, every_sentence: bool) -> Vec<Section> {
    let base = file.rsplit('/').next().unwrap_or(file);
    let mut reader = Reader {
        file,
        every_sentence,
        invariants_only: base == "ARCHITECTURE.md",
        heading: None,
        invariant_heading: false,
        rules: Vec::new(),
        all_invariants: true,
        block: None,
        done: Vec::new(),
    };
    let lines = text
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line));
    let mut fence: Option<String> = None;
    let front_matter_end = front_matter_end(text);
    for (number, line) in lines {
        if number <= front_matter_end {
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
            fence = Some(marker);
            continue;
        }
        if indent <= 3
            && let Some((level, title)) = heading(trimmed)
        {
            reader.flush();
            if level <= MAX_HEADING_LEVEL {
                reader.start_section(title);
            }
            continue;
        }
        if trimmed.is_empty() {
            reader.flush();
            continue;
        }
        if let Some(cells) = table_row(trimmed) {
            reader.flush();
            match cells {
                // The row above was the table's header, not a rule.
                None => reader.drop_rule_at(number - 1),
                Some(cells) => {
                    reader.block = Some(Block {
                        bullet: true,
                        lines: vec![(number, cells)],
                    });
                    reader.flush();
                }
            }
            continue;
        }
        if let Some(item) = list_item(trimmed) {
            reader.flush();
            reader.block = Some(Block {
                bullet: true,
                lines: vec![(number, item.to_string())],
            });
            continue;
        }
        match &mut reader.block {
            // A continuation line (indented or lazy) of an item or a paragraph.
            Some(block) => block.lines.push((number, trimmed.to_string())),
            None => {
                reader.block = Some(Block {
                    bullet: false,
                    lines: vec![(number, trimmed.to_string())],
                })
            }
        }
    }
    reader.flush();
    reader.end_section();
    reader.done
}

/// The last line of the YAML front matter (`---` … `---`) a `.mdc` or a
/// `.claude/rules` file opens with, or 0: it is metadata, not rules. An
/// opening `---` with no closing one is a thematic break, not front matter.
fn front_matter_end(text: &str) -> usize {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return 0;
    }
    lines
        .position(|line| line.trim_end() == "---")
        .map_or(0, |index| index + 2)
}

impl Reader<'_> {
    fn start_section(&mut self, title: String) {
        self.end_section();
        self.invariant_heading = title.to_ascii_lowercase().contains("invariant");
        self.heading = Some(title);
    }

    fn end_section(&mut self) {
        if self.rules.is_empty() {
            return;
        }
        let name = self
            .heading
            .clone()
            .unwrap_or_else(|| self.file.to_string());
        let kind = if self.all_invariants {
            " invariants"
        } else {
            ""
        };
        let origin = match &self.heading {
            Some(heading) => format!("{}{kind} § {heading}", self.file),
            None => format!("{}{kind}", self.file),
        };
        self.done.push(Section {
            name,
            origin,
            rules: std::mem::take(&mut self.rules),
        });
        self.all_invariants = true;
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
        if block.bullet && self.invariant_heading {
            return self.push(first, joined, true);
        }
        if self.invariants_only {
            return;
        }
        if block.bullet {
            return self.push(first, joined, false);
        }
        for (line, sentence) in sentences(&block.lines) {
            if is_imperative(&sentence) || (self.every_sentence && is_order(&sentence)) {
                self.push(line, sentence, false);
            }
        }
    }

    /// A table's header row, taken for a rule before its separator row came.
    fn drop_rule_at(&mut self, line: usize) {
        if self.rules.last().is_some_and(|rule| rule.line == line) {
            self.rules.pop();
        }
    }

    fn push(&mut self, line: usize, text: String, invariant: bool) {
        if text.is_empty() {
            return;
        }
        self.all_invariants &= invariant;
        self.rules.push(Rule {
            file: self.file.to_string(),
            line,
            text,
        });
    }
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

/// An ATX heading's level and its text, inline marks removed.
fn heading(trimmed: &str) -> Option<(usize, String)> {
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    Some((level, plain(title)))
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

/// A paragraph's sentences, each with the line it starts on. A stop ends a
/// sentence when whitespace follows it, unless the word it ends holds
/// another stop (`e.g.`, `i.e.`).
fn sentences(lines: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (number, text) in lines {
        let chars: Vec<char> = text.chars().collect();
        for (index, &c) in chars.iter().enumerate() {
            if current.is_none() && c.is_whitespace() {
                continue;
            }
            let (_, sentence) = current.get_or_insert_with(|| (*number, String::new()));
            sentence.push(c);
            let at_break = chars.get(index + 1).is_none_or(|next| next.is_whitespace());
            if matches!(c, '.' | '!' | '?') && at_break {
                let word = sentence.rsplit(char::is_whitespace).next().unwrap_or("");
                let abbreviation = word[..word.len() - 1].contains('.');
                if !abbreviation && let Some(done) = current.take() {
                    out.push(done);
                }
            }
        }
        if let Some((_, sentence)) = &mut current {
            sentence.push(' ');
        }
    }
    out.extend(current);
    out.into_iter()
        .map(|(line, sentence)| (line, sentence.trim().to_string()))
        .collect()
}

/// Whether a sentence states a rule: it says must, never, always, or do not.
fn is_imperative(sentence: &str) -> bool {
    let lower = sentence.to_lowercase().replace('’', "'");
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|word| !word.is_empty())
        .collect();
    words.iter().enumerate().any(|(index, word)| {
        matches!(*word, "must" | "never" | "always" | "don't" | "mustn't")
            || (*word == "do" && words.get(index + 1) == Some(&"not"))
    })
}

/// Verbs a plain order opens with ("Use tabs.", "Prefer small functions.").
const ORDER_VERBS: [&str; 40] = [
    "use", "prefer", "avoid", "keep", "write", "run", "add", "make", "put", "call", "check",
    "test", "read", "follow", "ask", "answer", "be", "stop", "start", "commit", "document", "name",
    "return", "log", "handle", "validate", "leave", "remove", "update", "create", "fix", "format",
    "treat", "give", "wait", "cite", "reply", "limit", "store", "print",
];

/// Whether a sentence is an order without must or never: it opens with a
/// verb of [`ORDER_VERBS`], or says should, shall, only, avoid or prefer.
fn is_order(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    words
        .first()
        .is_some_and(|first| ORDER_VERBS.contains(first))
        || words
            .iter()
            .any(|word| matches!(*word, "should" | "shall" | "only" | "avoid" | "prefer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `sources` with `max`, as the `--plan` text.
    fn check(sources: &[(&str, &str)], max: Option<usize>, expected: &str) {
        let sources: Vec<(String, String)> = sources
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect();
        let rendered = plan(&sources, max).render();
        assert_eq!(rendered, expected, "\n{rendered}");
    }

    const CLAUDE: &str = "\
# Project rules

Read the README first.

## Testing

- Every test runs the real binary.
- No mocks of the
  database: use the fixture.

Tests must clean up. A test that passes is fine.
Never sleep in a test, e.g. to wait for a file.

```sh
- cargo test   # not a rule
Never run this.
```

### Details

Do not print from a library.

#### Deeper

- folded into Details

## Notes

Some background, nothing to obey.
";

    #[test]
    fn sections_of_a_claude_md_are_dimensions_and_their_items_and_orders_are_rules() {
        check(
            &[("CLAUDE.md", CLAUDE)],
            None,
            "\
2 dimensions, 6 rules, from the project's own rules.

Testing  [CLAUDE.md § Testing]
  CLAUDE.md:7  Every test runs the real binary.
  CLAUDE.md:8  No mocks of the database: use the fixture.
  CLAUDE.md:11  Tests must clean up.
  CLAUDE.md:12  Never sleep in a test, e.g. to wait for a file.

Details  [CLAUDE.md § Details]
  CLAUDE.md:21  Do not print from a library.
  CLAUDE.md:25  folded into Details
",
        );
    }

    /// Found by a review: a CLAUDE.md of plain orders, and an AGENTS.md
    /// whose rules are a table, used to read as "no rules of its own".
    #[test]
    fn plain_sentences_and_table_rows_of_a_rules_file_are_rules() {
        check(
            &[
                (
                    "CLAUDE.md",
                    "This is a web shop.\nUse tabs for indentation.\nPrefer small functions. Avoid global state.\n",
                ),
                (
                    "AGENTS.md",
                    "## Code\n\n| Rule | Why |\n|---|:--|\n| No unwrap in lib code | panics |\n| `cargo fmt` first | review noise |\n",
                ),
            ],
            None,
            "\
2 dimensions, 5 rules, from the project's own rules.

CLAUDE.md  [CLAUDE.md]
  CLAUDE.md:2  Use tabs for indentation.
  CLAUDE.md:3  Prefer small functions.
  CLAUDE.md:3  Avoid global state.

Code  [AGENTS.md § Code]
  AGENTS.md:5  No unwrap in lib code | panics
  AGENTS.md:6  cargo fmt first | review noise
",
        );
    }

    #[test]
    fn rules_in_several_files_agents_md_in_a_subfolder_and_shared_headings() {
        check(
            &[
                ("CLAUDE.md", "## Style\n\n* Long names.\n"),
                (
                    "crates/web/AGENTS.md",
                    "## Style\n\n1. Tabs, never spaces.\n2) Always `cargo fmt`.\n",
                ),
                (".cursorrules", "You always answer in English.\nBe nice.\n"),
                (
                    ".cursor/rules/db.mdc",
                    "---\ndescription: db\nglobs: '*.sql'\n---\n- Migrations are append-only.\n",
                ),
            ],
            None,
            "\
4 dimensions, 5 rules, from the project's own rules.

Style  [CLAUDE.md § Style]
  CLAUDE.md:3  Long names.

Style (crates/web/AGENTS.md)  [crates/web/AGENTS.md § Style]
  crates/web/AGENTS.md:3  Tabs, never spaces.
  crates/web/AGENTS.md:4  Always `cargo fmt`.

.cursorrules  [.cursorrules]
  .cursorrules:1  You always answer in English.

.cursor/rules/db.mdc  [.cursor/rules/db.mdc]
  .cursor/rules/db.mdc:5  Migrations are append-only.
",
        );
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
    fn an_architecture_md_gives_its_invariants_one_dimension_per_section() {
        check(
            &[("ARCHITECTURE.md", ARCHITECTURE)],
            None,
            "\
3 dimensions, 3 rules, from the project's own rules.

crates/core (package x-core)  [ARCHITECTURE.md invariants § crates/core (package x-core)]
  ARCHITECTURE.md:12  `core` does no I/O. It never panics.

crates/cli  [ARCHITECTURE.md invariants § crates/cli]
  ARCHITECTURE.md:17  only the cli knows clap.

Invariants  [ARCHITECTURE.md invariants § Invariants]
  ARCHITECTURE.md:24  Errors are enums.
",
        );
    }

    #[test]
    fn no_rule_anywhere_gives_the_seeds_four_fallbacks_and_only_then() {
        let fallback = "\
The project states no rules of its own (no rules file holds a rule): the seed's fallback dimensions are used.

design and token rules  [fallback]
  looks for: values written by hand where the design system has a token, and exceptions outside its stated exempt list

access control and isolation  [fallback]
  looks for: who may read or change what: a missing check, data crossing a user, tenant or process boundary, a secret within reach

test reality  [fallback]
  looks for: does the green actually mean anything: tests that cannot fail, mocks standing in for the thing under test, skipped cases, assertions on nothing

corpus and documentation integrity  [fallback]
  looks for: fixtures, golden files and documentation that disagree with the code or with each other, and claims the repository does not back
";
        check(&[], None, fallback);
        check(
            &[
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
            ],
            None,
            fallback,
        );
        check(
            &[],
            Some(1),
            "\
The project states no rules of its own (no rules file holds a rule): the seed's fallback dimensions are used.

design and token rules  [fallback]
  looks for: values written by hand where the design system has a token, and exceptions outside its stated exempt list

3 more dimensions cut by --max-dimensions: access control and isolation, test reality, corpus and documentation integrity
",
        );
        let one = [("RULES.md".to_string(), "- one rule".to_string())];
        let with_one = plan(&one, None);
        assert!(!with_one.fallback);
        assert_eq!(
            with_one.dimensions,
            [Dimension {
                name: "RULES.md".to_string(),
                origin: "RULES.md".to_string(),
                rules: vec![Rule {
                    file: "RULES.md".to_string(),
                    line: 1,
                    text: "one rule".to_string(),
                }],
            }]
        );
    }

    #[test]
    fn a_rule_after_a_thematic_break_that_opens_a_file_is_still_read() {
        check(
            &[("CLAUDE.md", "---\n- Never push to main.\n")],
            None,
            "\
1 dimension, 1 rule, from the project's own rules.

CLAUDE.md  [CLAUDE.md]
  CLAUDE.md:2  Never push to main.
",
        );
    }

    #[test]
    fn max_dimensions_keeps_the_first_and_names_the_cut() {
        check(
            &[("CLAUDE.md", "# A\n- a\n# B\n- b\n# C\n- c\n")],
            Some(1),
            "\
1 dimension, 1 rule, from the project's own rules.

A  [CLAUDE.md § A]
  CLAUDE.md:2  a

2 more dimensions cut by --max-dimensions: B, C
",
        );
    }

    #[test]
    fn fences_and_odd_lines_are_read_as_markdown_reads_them() {
        check(
            &[(
                "AGENTS.md",
                "\
# Rules
~~~~
- inside a tilde fence
~~~
- still inside: a shorter fence does not close it
~~~~
-not a list item but a paragraph
#not a heading, so it must stay one sentence.
- 
      Never indent code.
2024. A year opens a list item: it is a rule.
",
            )],
            None,
            "\
1 dimension, 3 rules, from the project's own rules.

Rules  [AGENTS.md § Rules]
  AGENTS.md:7  -not a list item but a paragraph #not a heading, so it must stay one sentence.
  AGENTS.md:9  Never indent code.
  AGENTS.md:11  A year opens a list item: it is a rule.
",
        );
    }
}
