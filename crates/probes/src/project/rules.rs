//! Finding a project's stated rules: the files its agents are told to obey
//! (CLAUDE.md, AGENTS.md, the agent CLIs' rules files) and its written
//! invariants (ARCHITECTURE.md), which the audit team turns into dimensions
//! (`audit::plan`).
//!
//! The walk is bounded: it honours the project's `.gitignore` files (and
//! `.git/info/exclude`) as git does, through ripgrep's matcher (`ignore`); it
//! never enters `.git`, build output and dependencies (`target`, `dist`,
//! `node_modules`, `vendor`), a virtual environment, a test fixtures folder
//! (which holds other projects' files), a hidden folder other than the agent
//! CLIs' own, or a symlinked folder; it reads at most [`Limits::max_files`]
//! files of at most [`Limits::max_file_bytes`] each, through [`crate::fs::file`]
//! (no FIFO can block it), and says what it skipped and why. A file symlink
//! is followed only when it resolves inside the project; two names for one
//! file are read once.
//!
//! Then the documents the rules files point to are read, one step deep
//! (`pointed_documents`): a rules file that says "read
//! `docs/architecture.md`" states its rules there too.
//!
//! The result is probes' own [`RuleFile`] (probes cannot know `watchdog`):
//! the caller hands `(path, text)` pairs to `audit::plan::plan`.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::fs::file::{self, ReadError};

/// One rules file, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFile {
    /// Relative to the project, `/`-separated (`sub/AGENTS.md`).
    pub path: String,
    /// The file as read.
    pub text: String,
    /// The rules file that pointed to this document, when it was followed
    /// from one rather than found by its name.
    pub from: Option<String>,
}

/// What the walk found, and what it passed over (with why).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The top level first, then each folder's in name order.
    pub files: Vec<RuleFile>,
    /// What was passed over, with why, so a report can say what it did not read.
    pub skipped: Vec<Skipped>,
}

impl Discovery {
    /// The files as the `(path, text)` pairs `audit::plan::plan` takes.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.files
            .iter()
            .map(|file| (file.path.clone(), file.text.clone()))
            .collect()
    }
}

/// A rules file (or a part of the tree) that was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Relative to the project, `/`-separated.
    pub path: String,
    /// Why it was not read.
    pub why: SkipReason,
}

/// Why something was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// The file could not be read: too large, not a regular file, permissions.
    Unreadable(ReadError),
    /// A folder could not be listed.
    Unlisted(String),
    /// A symlink that resolves outside the project (or does not resolve).
    OutsideProject,
    /// Another name (a symlink) for a file already read at this path.
    SameFileAs(String),
    /// The cap on files read was reached; this and the rest were not read.
    FileCap {
        /// The cap that was reached.
        cap: usize,
    },
    /// The cap on folders walked was reached; this and the rest were not walked.
    FolderCap {
        /// The cap that was reached.
        cap: usize,
    },
    /// A folder deeper than the cap on depth.
    TooDeep {
        /// The cap that was reached.
        cap: usize,
    },
    /// A rules file the project's `.gitignore` ignores (a personal
    /// `CLAUDE.local.md`, say): not the project's stated rules.
    Ignored,
    /// A document a rules file points to that is not in the project.
    NotFound {
        /// The rules file that points to it.
        from: String,
    },
    /// The cap on documents followed was reached.
    FollowCap {
        /// The cap that was reached.
        cap: usize,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Unreadable(error) => write!(f, "it {error}"),
            SkipReason::Unlisted(error) => write!(f, "folder unreadable: {error}"),
            SkipReason::OutsideProject => f.write_str("a symlink that leads outside the project"),
            SkipReason::SameFileAs(path) => write!(f, "the same file as {path}"),
            SkipReason::FileCap { cap } => {
                write!(
                    f,
                    "more than {cap} rules files: this one and the rest not read"
                )
            }
            SkipReason::FolderCap { cap } => {
                write!(
                    f,
                    "more than {cap} folders: this one and the rest not walked"
                )
            }
            SkipReason::TooDeep { cap } => write!(f, "deeper than {cap} folders: not walked"),
            SkipReason::Ignored => f.write_str("ignored by the project's .gitignore"),
            SkipReason::NotFound { from } => {
                write!(f, "pointed to by {from}, but no such file in the project")
            }
            SkipReason::FollowCap { cap } => write!(
                f,
                "more than {cap} documents pointed to: this one and the rest not read"
            ),
        }
    }
}

/// Why the project itself could not be walked.
#[derive(Debug)]
#[non_exhaustive]
pub enum DiscoverError {
    /// There is nothing at the path.
    Missing,
    /// The path is not a folder.
    NotAFolder,
    /// Any other I/O error on the project folder itself, kept as the
    /// [`source`](std::error::Error::source).
    Io(std::io::Error),
}

impl fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoverError::Missing => f.write_str("does not exist"),
            DiscoverError::NotAFolder => f.write_str("is not a folder"),
            DiscoverError::Io(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for DiscoverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DiscoverError::Io(error) => Some(error),
            DiscoverError::Missing | DiscoverError::NotAFolder => None,
        }
    }
}

/// The bounds of one walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Rules files read at most (the rest are one [`SkipReason::FileCap`]).
    pub max_files: usize,
    /// Bytes per file at most: a rules file is prose, not data.
    pub max_file_bytes: u64,
    /// Folders listed at most, so a huge tree costs a bounded walk.
    pub max_folders: usize,
    /// Folder depth below the project at most.
    pub max_depth: usize,
    /// Documents followed from the rules files at most (one step deep).
    pub max_followed: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_files: 200,
            max_file_bytes: 256 * 1024,
            max_folders: 20_000,
            max_depth: 24,
            max_followed: 32,
        }
    }
}

/// The project's stated-rule files, with the default [`Limits`].
pub fn discover(project: &Path) -> Result<Discovery, DiscoverError> {
    discover_with(project, &Limits::default())
}

/// The project's stated-rule files, within `limits`.
fn discover_with(project: &Path, limits: &Limits) -> Result<Discovery, DiscoverError> {
    let meta = fs::metadata(project).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => DiscoverError::Missing,
        _ => DiscoverError::Io(error),
    })?;
    if !meta.is_dir() {
        return Err(DiscoverError::NotAFolder);
    }
    let root = fs::canonicalize(project).map_err(DiscoverError::Io)?;
    let mut walk = Walk {
        root,
        limits,
        found: Discovery::default(),
        read: Vec::new(),
        seen: HashSet::new(),
        capped: false,
    };
    walk.run();
    walk.follow();
    Ok(walk.found)
}

struct Walk<'a> {
    root: PathBuf,
    limits: &'a Limits,
    found: Discovery,
    /// Canonical path and relative path of each file read, to read a file once.
    read: Vec<(PathBuf, String)>,
    seen: HashSet<PathBuf>,
    capped: bool,
}

/// The `.gitignore` matchers that apply in a folder, outermost first.
type Ignores = Vec<Arc<Gitignore>>;

impl Walk<'_> {
    /// Breadth first, so the top level's files come first and a cap cuts the
    /// deepest ones.
    fn run(&mut self) {
        let mut top = Vec::new();
        if let Some(exclude) = self.matcher(Path::new(""), ".git/info/exclude") {
            top.push(exclude);
        }
        let mut queue = VecDeque::from([(String::new(), 0usize, top)]);
        let mut listed = 0usize;
        while let Some((folder, depth, mut ignores)) = queue.pop_front() {
            if listed == self.limits.max_folders {
                let cap = self.limits.max_folders;
                self.skip(folder, SkipReason::FolderCap { cap });
                return;
            }
            listed += 1;
            let entries = match self.list(&folder) {
                Ok(entries) => entries,
                Err(error) => {
                    self.skip(folder, SkipReason::Unlisted(error));
                    continue;
                }
            };
            if entries
                .iter()
                .any(|(name, kind)| name == ".gitignore" && *kind == Kind::File)
                && let Some(matcher) = self.matcher(Path::new(&folder), ".gitignore")
            {
                ignores.push(matcher);
            }
            for (name, kind) in entries {
                let rel = join(&folder, &name);
                match kind {
                    Kind::Folder if enters(&folder, &name) => {
                        if self.ignored(&ignores, &rel, true) || self.is_virtualenv(&rel) {
                            continue;
                        }
                        if depth + 1 > self.limits.max_depth {
                            let cap = self.limits.max_depth;
                            self.skip(rel, SkipReason::TooDeep { cap });
                        } else {
                            queue.push_back((rel, depth + 1, ignores.clone()));
                        }
                    }
                    Kind::File | Kind::Symlink if is_rules_file(&folder, &name) => {
                        if self.ignored(&ignores, &rel, false) {
                            self.skip(rel, SkipReason::Ignored);
                        } else {
                            self.read_file(rel, kind == Kind::Symlink, None);
                        }
                    }
                    // Symlinked folders, skipped folders, other files.
                    _ => {}
                }
                if self.capped {
                    return;
                }
            }
        }
    }

    /// The matcher of the ignore file `name` in `folder`, if it has one that parses.
    fn matcher(&self, folder: &Path, name: &str) -> Option<Arc<Gitignore>> {
        let base = self.root.join(folder);
        let file = base.join(name);
        if !file.is_file() {
            return None;
        }
        let mut builder = GitignoreBuilder::new(&base);
        // A line that does not parse is ignored, as git does; the rest still applies.
        let _ = builder.add(&file);
        builder.build().ok().map(Arc::new)
    }

    /// Whether the nearest `.gitignore` that decides `rel` ignores it (a
    /// deeper file's `!pattern` re-includes what a shallower one ignored).
    fn ignored(&self, ignores: &Ignores, rel: &str, is_dir: bool) -> bool {
        let path = self.root.join(rel);
        for matcher in ignores.iter().rev() {
            let found = matcher.matched(&path, is_dir);
            if found.is_ignore() {
                return true;
            }
            if found.is_whitelist() {
                return false;
            }
        }
        false
    }

    /// A Python virtual environment, whatever its name: it holds other
    /// projects' files.
    fn is_virtualenv(&self, rel: &str) -> bool {
        self.root.join(rel).join("pyvenv.cfg").is_file()
    }

    fn list(&self, folder: &str) -> Result<Vec<(String, Kind)>, String> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(self.root.join(folder)).map_err(|e| e.to_string())? {
            let entry = entry.map_err(|e| e.to_string())?;
            // A name that is not UTF-8 is no rules file and no folder of ours.
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            // file_type() does not follow a symlink: a symlinked folder stays a symlink.
            let kind = match entry.file_type() {
                Ok(kind) if kind.is_dir() => Kind::Folder,
                Ok(kind) if kind.is_symlink() => Kind::Symlink,
                Ok(_) => Kind::File,
                Err(_) => continue,
            };
            entries.push((name, kind));
        }
        entries.sort();
        Ok(entries)
    }

    /// Reads `rel` as a rules file (or, with `from`, as a document a rules
    /// file points to); false when it was not read.
    fn read_file(&mut self, rel: String, symlink: bool, from: Option<String>) -> bool {
        let path = self.root.join(&rel);
        let canonical = if symlink {
            match fs::canonicalize(&path) {
                // A symlinked folder named like a rules file is still a folder.
                Ok(target) if target.is_dir() => return false,
                // What it is (a FIFO, say) is for the bounded read to name.
                Ok(target) if target.starts_with(&self.root) => target,
                _ => {
                    self.skip(rel, SkipReason::OutsideProject);
                    return false;
                }
            }
        } else {
            path.clone()
        };
        if !self.seen.insert(canonical.clone()) {
            let first = self
                .read
                .iter()
                .find(|(path, _)| *path == canonical)
                .map(|(_, rel)| rel.clone())
                .unwrap_or_default();
            // A rules file that points to another one already read is no news.
            if from.is_none() {
                self.skip(rel, SkipReason::SameFileAs(first));
            }
            return false;
        }
        if from.is_none() && self.found.files.len() == self.limits.max_files {
            let cap = self.limits.max_files;
            self.capped = true;
            self.skip(rel, SkipReason::FileCap { cap });
            return false;
        }
        match file::read_regular_text(&path, self.limits.max_file_bytes) {
            Ok(text) => {
                self.read.push((canonical, rel.clone()));
                self.found.files.push(RuleFile {
                    path: rel,
                    text,
                    from,
                });
                true
            }
            Err(error) => {
                self.skip(rel, SkipReason::Unreadable(error));
                false
            }
        }
    }

    /// Reads the documents the rules files point to, one step deep: what a
    /// followed document points to is not followed.
    fn follow(&mut self) {
        let mut followed = 0usize;
        let sources: Vec<(String, String)> = self
            .found
            .files
            .iter()
            // An architecture document describes the code and points to its
            // parts; it is read for its invariants, its pointers are not rules.
            .filter(|file| {
                let base = file.path.rsplit('/').next().unwrap_or(&file.path);
                !base.eq_ignore_ascii_case("ARCHITECTURE.md")
            })
            .map(|file| (file.path.clone(), file.text.clone()))
            .collect();
        for (from, text) in sources {
            for target in pointed_documents(&text) {
                let Some(rel) = self.resolve(&from, &target) else {
                    // Said once per name, not once per mention.
                    let named = |skip: &Skipped| skip.path == target;
                    if !self.found.skipped.iter().any(named) {
                        let from = from.clone();
                        self.skip(target, SkipReason::NotFound { from });
                    }
                    continue;
                };
                if self.seen.contains(&self.root.join(&rel)) {
                    continue;
                }
                if followed == self.limits.max_followed {
                    let cap = self.limits.max_followed;
                    self.skip(rel, SkipReason::FollowCap { cap });
                    return;
                }
                let symlink = fs::symlink_metadata(self.root.join(&rel))
                    .is_ok_and(|meta| meta.file_type().is_symlink());
                if self.read_file(rel, symlink, Some(from.clone())) {
                    followed += 1;
                }
            }
        }
    }

    /// The project-relative path of the document `target` that the rules
    /// file `from` names: beside `from`, else from the project's top, else
    /// under `docs/`; the file's name matched without regard to case
    /// (`architecture.md` finds `ARCHITECTURE.md`). None when it is not a
    /// file inside the project.
    fn resolve(&self, from: &str, target: &str) -> Option<String> {
        // Cursor's links to another rule or file (`mdc:docs/x.md`).
        let target = target.strip_prefix("mdc:").unwrap_or(target);
        let target = target.trim_start_matches("./");
        if target.starts_with('/') {
            return None;
        }
        let beside = from.rsplit_once('/').map_or("", |(folder, _)| folder);
        let mut bases = vec![beside.to_string(), String::new()];
        if !target.contains('/') {
            bases.push("docs".to_string());
        }
        for base in bases {
            let joined = normalise(&join(&base, target))?;
            let (folder, name) = joined.rsplit_once('/').unwrap_or(("", &joined));
            let Ok(entries) = self.list(folder) else {
                continue;
            };
            let exact = entries.iter().find(|(entry, _)| entry == name);
            let found = exact.or_else(|| {
                entries
                    .iter()
                    .find(|(entry, _)| entry.eq_ignore_ascii_case(name))
            });
            let Some((entry, kind)) = found else {
                continue;
            };
            if *kind == Kind::Folder {
                continue;
            }
            let rel = join(folder, entry);
            let real = fs::canonicalize(self.root.join(&rel)).ok()?;
            if real.starts_with(&self.root) && real.is_file() {
                return Some(rel);
            }
        }
        None
    }

    fn skip(&mut self, path: String, why: SkipReason) {
        self.found.skipped.push(Skipped { path, why });
    }
}

/// `path` with its `.` and `..` parts resolved, or None when it leaves the project.
fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The documents inside the project that a rules file points to: the
/// targets of its links (`[x](docs/a.md)`) and its code spans that are a
/// document's path (`` `docs/architecture.md` ``), when the line they stand
/// on tells the reader to read or follow them, or only lists them (`-
/// Testing: `docs/testing.md``), and Claude Code's imports (`@AGENTS.md`).
/// A document is markdown or plain text; a
/// web address, an anchor or a path with a placeholder is not followed. An
/// architecture document is followed wherever it is named.
fn pointed_documents(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let targets = line_targets(line);
        if targets.is_empty() {
            continue;
        }
        let told = tells_to_read(line);
        for (target, listed) in targets {
            let Some(target) = document_path(&target) else {
                continue;
            };
            let base = target.rsplit('/').next().unwrap_or(&target);
            let architecture = base.eq_ignore_ascii_case("architecture.md");
            if (told || listed || architecture) && !out.contains(&target) {
                out.push(target);
            }
        }
    }
    out
}

/// The link targets and code spans of a line, each with whether the line
/// only lists it (a list item or table row of a label and the path).
fn line_targets(line: &str) -> Vec<(String, bool)> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.to_string());
        rest = &after[end..];
    }
    let spans: Vec<&str> = line.split('`').collect();
    for (index, span) in spans.iter().enumerate() {
        if index % 2 == 1 && index + 1 < spans.len() {
            targets.push(span.to_string());
        }
    }
    // Claude Code's imports (`@AGENTS.md`): the named file is part of this one.
    let imports: Vec<String> = line
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect();
    let item = line.trim_start();
    let item = item
        .strip_prefix(['-', '*', '+', '|'])
        .map(str::trim_start)
        .unwrap_or("");
    // "Label: `path`" or "[Label](path)": nothing but a label and the path.
    let listed = !item.is_empty() && {
        let without_links = strip_between(item, "](", ")");
        let without_spans = strip_spans(&without_links);
        let words = without_spans
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .count();
        words <= 8 && targets.len() == 1
    };
    targets
        .into_iter()
        .map(|target| (target, listed))
        .chain(imports.into_iter().map(|import| (import, true)))
        .collect()
}

fn strip_between(text: &str, open: &str, close: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(open) {
        out.push_str(&rest[..at]);
        let after = &rest[at + open.len()..];
        match after.find(close) {
            Some(end) => rest = &after[end + close.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn strip_spans(text: &str) -> String {
    text.split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 0)
        .map(|(_, part)| part)
        .collect()
}

/// Whether a line tells its reader to read, follow or consult what it names.
fn tells_to_read(line: &str) -> bool {
    let lower = line.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    words.iter().any(|word| {
        matches!(
            *word,
            "read"
                | "follow"
                | "enforce"
                | "see"
                | "consult"
                | "review"
                | "load"
                | "refer"
                | "open"
                | "check"
        )
    })
}

/// A link target or code span as a document's path inside the project, or
/// None: a web address, an anchor, a placeholder, a path with spaces, or not
/// markdown or text.
fn document_path(target: &str) -> Option<String> {
    let target = target.trim().trim_start_matches('<').trim_end_matches('>');
    // Cursor's links to another rule or file (`mdc:docs/x.md`).
    let target = target.strip_prefix("mdc:").unwrap_or(target);
    let target = target.trim_start_matches("./");
    let target = target.split(['#', '?']).next().unwrap_or("");
    if target.is_empty()
        || target.contains("://")
        || target.starts_with("mailto:")
        || target.contains(char::is_whitespace)
        || target.contains(['<', '>', '*', '$', '{', '}'])
    {
        return None;
    }
    let lower = target.to_ascii_lowercase();
    let document = [".md", ".mdc", ".markdown", ".txt"]
        .iter()
        .any(|ext| lower.ends_with(ext));
    document.then(|| target.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Folder,
    File,
    Symlink,
}

fn join(folder: &str, name: &str) -> String {
    if folder.is_empty() {
        name.to_string()
    } else {
        format!("{folder}/{name}")
    }
}

/// The agent CLIs' own hidden folders, and the folders of rules inside them.
const RULES_FOLDERS: [&str; 4] = [
    ".cursor/rules",
    ".claude/rules",
    ".windsurf/rules",
    ".clinerules",
];

/// Folders that hold no rules of the project's own: build output,
/// dependencies, other projects' files kept as test fixtures.
const NOT_THE_PROJECTS: [&str; 11] = [
    "target",
    "node_modules",
    "vendor",
    "dist",
    "venv",
    "virtualenv",
    "site-packages",
    "__pycache__",
    "fixtures",
    "testdata",
    "__fixtures__",
];

/// Whether the walk goes into `folder/name`: never into build output,
/// dependencies or a repository's internals; into a hidden folder only when
/// it is (or leads to) an agent CLI's rules.
fn enters(folder: &str, name: &str) -> bool {
    if name == ".git" || NOT_THE_PROJECTS.contains(&name) {
        return false;
    }
    match hidden_part(folder) {
        None if name.starts_with('.') => {
            matches!(
                name,
                ".cursor" | ".claude" | ".windsurf" | ".github" | ".clinerules" | ".gemini"
            )
        }
        None => true,
        // Below a hidden folder, only its rules folders and their subfolders.
        Some(_) if name.starts_with('.') => false,
        Some(hidden) => {
            let here = format!("{hidden}/{name}");
            RULES_FOLDERS.iter().any(|rules| within(&here, rules))
                || within(&here, ".github")
                || within(&here, ".cursor")
        }
    }
}

/// The path from the first hidden folder of `folder` on, if any.
fn hidden_part(folder: &str) -> Option<String> {
    let parts: Vec<&str> = folder.split('/').filter(|part| !part.is_empty()).collect();
    let start = parts.iter().position(|part| part.starts_with('.'))?;
    Some(parts[start..].join("/"))
}

/// Whether `path` is `base` or below it.
fn within(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The names a rules file has wherever it stands.
const RULES_NAMES: [&str; 5] = [
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "RULES.md",
    "GEMINI.md",
];

/// Whether `folder/name` is a stated-rules file.
fn is_rules_file(folder: &str, name: &str) -> bool {
    match hidden_part(folder) {
        None => {
            RULES_NAMES.contains(&name)
                || matches!(
                    name,
                    "ARCHITECTURE.md" | ".cursorrules" | ".windsurfrules" | ".clinerules"
                )
        }
        Some(hidden) => {
            let markdown = name.ends_with(".md");
            match hidden.as_str() {
                ".claude" | ".gemini" => RULES_NAMES.contains(&name),
                _ if within(&hidden, ".github/instructions") => name.ends_with(".instructions.md"),
                // The CI's own rules (`.github/workflows/AGENTS.md`), and Copilot's.
                _ if within(&hidden, ".github") => {
                    RULES_NAMES.contains(&name) || name == "copilot-instructions.md"
                }
                _ if within(&hidden, ".cursor/rules") => markdown || name.ends_with(".mdc"),
                _ if within(&hidden, ".cursor") => name.ends_with(".mdc"),
                _ => markdown && RULES_FOLDERS.iter().any(|rules| within(&hidden, rules)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample project: each `(path, text)` written under a fresh folder.
    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    fn paths(discovery: &Discovery) -> Vec<&str> {
        discovery
            .files
            .iter()
            .map(|file| file.path.as_str())
            .collect()
    }

    #[test]
    fn the_agent_clis_rules_files_are_found_top_level_first_and_the_rest_is_not() {
        let dir = project(&[
            ("CLAUDE.md", "- top"),
            ("CLAUDE.local.md", "- mine"),
            ("RULES.md", "- r"),
            ("GEMINI.md", "- g"),
            ("ARCHITECTURE.md", "**Architecture Invariant:** x."),
            (".cursorrules", "- c"),
            (".windsurfrules", "- w"),
            (".cursor/rules/style.mdc", "---\nglobs: '*'\n---\n- s"),
            (".cursor/rules/deep/more.md", "- m"),
            (".cursor/rules/notes.txt", "not a rule"),
            (".cursor/settings.md", "not a rule"),
            (".github/copilot-instructions.md", "- p"),
            (".github/instructions/rust.instructions.md", "- i"),
            (".github/workflows/ci.md", "not a rule"),
            (".claude/CLAUDE.md", "- cc"),
            (".claude/rules/testing.md", "- t"),
            ("crates/a/AGENTS.md", "- a"),
            ("crates/a/README.md", "not a rule"),
            (".git/CLAUDE.md", "not read"),
            ("target/debug/AGENTS.md", "not read"),
            ("web/node_modules/x/CLAUDE.md", "not read"),
            (".venv/lib/AGENTS.md", "not read"),
            ("sub/.hidden/CLAUDE.md", "not read"),
        ]);
        let found = discover(dir.path()).unwrap();
        assert_eq!(
            paths(&found),
            [
                ".cursorrules",
                ".windsurfrules",
                "ARCHITECTURE.md",
                "CLAUDE.local.md",
                "CLAUDE.md",
                "GEMINI.md",
                "RULES.md",
                ".claude/CLAUDE.md",
                ".github/copilot-instructions.md",
                ".claude/rules/testing.md",
                ".cursor/rules/style.mdc",
                ".github/instructions/rust.instructions.md",
                "crates/a/AGENTS.md",
                ".cursor/rules/deep/more.md",
            ]
        );
        assert_eq!(found.skipped, []);
        assert_eq!(found.files[4].text, "- top");
        assert_eq!(
            found.pairs()[0],
            (".cursorrules".to_string(), "- c".to_string())
        );
    }

    #[test]
    fn a_symlinked_folder_is_not_walked_and_a_symlinked_file_is_read_once_inside_the_project() {
        let outside = project(&[("CLAUDE.md", "- secret"), ("deep/AGENTS.md", "- far")]);
        let dir = project(&[("AGENTS.md", "- shared")]);
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(name)).unwrap()
        };
        link(Path::new("AGENTS.md"), "CLAUDE.md");
        link(&outside.path().join("CLAUDE.md"), "RULES.md");
        link(&outside.path().join("deep"), "vendored");
        link(Path::new("nowhere.md"), "GEMINI.md");
        let found = discover(dir.path()).unwrap();
        assert_eq!(paths(&found), ["AGENTS.md"]);
        let skipped: Vec<(&str, String)> = found
            .skipped
            .iter()
            .map(|skip| (skip.path.as_str(), skip.why.to_string()))
            .collect();
        assert_eq!(
            skipped,
            [
                ("CLAUDE.md", "the same file as AGENTS.md".to_string()),
                (
                    "GEMINI.md",
                    "a symlink that leads outside the project".to_string()
                ),
                (
                    "RULES.md",
                    "a symlink that leads outside the project".to_string()
                ),
            ]
        );
    }

    #[test]
    fn the_caps_on_files_size_folders_and_depth_are_said_not_silent() {
        let dir = project(&[
            ("AGENTS.md", "- a"),
            ("CLAUDE.md", &"- long rule\n".repeat(100)),
            ("a/AGENTS.md", "- a"),
            ("b/AGENTS.md", "- b"),
            ("c/AGENTS.md", "- c"),
            ("a/x/y/AGENTS.md", "- deep"),
        ]);
        let limits = Limits {
            max_files: 3,
            max_file_bytes: 64,
            ..Limits::default()
        };
        let found = discover_with(dir.path(), &limits).unwrap();
        assert_eq!(paths(&found), ["AGENTS.md", "a/AGENTS.md", "b/AGENTS.md"]);
        let skipped: Vec<String> = found
            .skipped
            .iter()
            .map(|skip| format!("{}: {}", skip.path, skip.why))
            .collect();
        assert_eq!(
            skipped,
            [
                "CLAUDE.md: it is larger than 64 bytes",
                "c/AGENTS.md: more than 3 rules files: this one and the rest not read",
            ]
        );

        let shallow = Limits {
            max_depth: 1,
            max_folders: 3,
            ..Limits::default()
        };
        let found = discover_with(dir.path(), &shallow).unwrap();
        assert_eq!(
            paths(&found),
            ["AGENTS.md", "CLAUDE.md", "a/AGENTS.md", "b/AGENTS.md"]
        );
        let skipped: Vec<String> = found
            .skipped
            .iter()
            .map(|skip| format!("{}: {}", skip.path, skip.why))
            .collect();
        assert_eq!(
            skipped,
            [
                "a/x: deeper than 1 folders: not walked",
                "c: more than 3 folders: this one and the rest not walked",
            ]
        );
    }

    fn skipped(discovery: &Discovery) -> Vec<String> {
        discovery
            .skipped
            .iter()
            .map(|skip| format!("{}: {}", skip.path, skip.why))
            .collect()
    }

    /// Found on real projects: rules files under `venv/`, `dist/` and
    /// `vendor/` became the project's dimensions, and the CI's own rules
    /// (`.github/workflows/AGENTS.md`) were skipped without a word.
    #[test]
    fn the_walk_honours_gitignore_and_skips_other_projects_files_but_reads_the_ci_rules() {
        let dir = project(&[
            (
                ".gitignore",
                "/build/\n*.local.md\nnotes/\n!keep.local.md\n",
            ),
            ("AGENTS.md", "- a"),
            ("CLAUDE.local.md", "- mine, ignored"),
            ("build/AGENTS.md", "not read: gitignored folder"),
            ("notes/CLAUDE.md", "not read"),
            ("sub/.gitignore", "!keep.local.md\nAGENTS.md\n"),
            ("sub/AGENTS.md", "- ignored by the nested file"),
            ("sub/CLAUDE.md", "- read"),
            ("dist/CLAUDE.md", "not read"),
            ("vendor/x/AGENTS.md", "not read"),
            ("py/env/pyvenv.cfg", "home = /usr"),
            ("py/env/lib/AGENTS.md", "not read"),
            ("venv/AGENTS.md", "not read"),
            ("tests/fixtures/other/CLAUDE.md", "another project's"),
            (".github/workflows/AGENTS.md", "- ci rules"),
            (".github/workflows/release.md", "not a rules file"),
            (".gemini/GEMINI.md", "- g"),
            ("docs/.cursor/rules.mdc", "- d"),
        ]);
        let found = discover(dir.path()).unwrap();
        assert_eq!(
            paths(&found),
            [
                "AGENTS.md",
                ".gemini/GEMINI.md",
                "sub/CLAUDE.md",
                ".github/workflows/AGENTS.md",
                "docs/.cursor/rules.mdc",
            ]
        );
        assert_eq!(
            skipped(&found),
            [
                "CLAUDE.local.md: ignored by the project's .gitignore",
                "sub/AGENTS.md: ignored by the project's .gitignore",
            ]
        );
    }

    /// Found on real projects: rust-analyzer's CLAUDE.md lists
    /// `docs/book/src/contributing/architecture.md`, pydantic-ai's AGENTS.md
    /// says "always read [agent_docs/index.md](agent_docs/index.md)"; neither
    /// was read.
    #[test]
    fn documents_the_rules_point_to_are_read_one_step_deep_and_bounded() {
        let dir = project(&[
            (
                "CLAUDE.md",
                "## Guides\n\n- Architecture: `docs/book/architecture.md`\n- Style: `docs/style.md`\n\n\
                 Always read [the index](agent_docs/index.md) and follow it.\n\
                 The [changelog](CHANGELOG.md) says what changed.\n\
                 See [the web](https://example.com/x.md) and `missing/gone.md`.\n\
                 Read `ARCHITECTURE.md`, `../outside.md` and `<name>.md`.\n\
                 ```\nread `docs/in-a-fence.md`\n```\n",
            ),
            (
                "docs/book/architecture.md",
                "**Architecture Invariant:** x.",
            ),
            ("docs/style.md", "- Prefer short names."),
            ("docs/Architecture.md", "- found by name under docs/"),
            ("docs/in-a-fence.md", "- not followed"),
            ("agent_docs/index.md", "- Read `agent_docs/deeper.md`."),
            ("agent_docs/deeper.md", "- not followed: two steps deep"),
            (
                "CHANGELOG.md",
                "not followed: the line does not say to read it",
            ),
        ]);
        let found = discover(dir.path()).unwrap();
        let followed: Vec<(&str, Option<&str>)> = found
            .files
            .iter()
            .map(|file| (file.path.as_str(), file.from.as_deref()))
            .collect();
        assert_eq!(
            followed,
            [
                ("CLAUDE.md", None),
                ("docs/book/architecture.md", Some("CLAUDE.md")),
                ("docs/style.md", Some("CLAUDE.md")),
                ("agent_docs/index.md", Some("CLAUDE.md")),
                ("docs/Architecture.md", Some("CLAUDE.md")),
            ]
        );
        assert_eq!(
            skipped(&found),
            [
                "missing/gone.md: pointed to by CLAUDE.md, but no such file in the project",
                "../outside.md: pointed to by CLAUDE.md, but no such file in the project",
            ]
        );

        let one = Limits {
            max_followed: 1,
            ..Limits::default()
        };
        let found = discover_with(dir.path(), &one).unwrap();
        assert_eq!(paths(&found), ["CLAUDE.md", "docs/book/architecture.md"]);
        assert_eq!(
            skipped(&found),
            ["docs/style.md: more than 1 documents pointed to: this one and the rest not read"]
        );
    }

    #[test]
    fn a_fifo_named_like_a_rules_file_cannot_block_the_walk() {
        let dir = project(&[("AGENTS.md", "- a")]);
        let fifo = dir.path().join("CLAUDE.md");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        let found = discover(dir.path()).unwrap();
        assert_eq!(paths(&found), ["AGENTS.md"]);
        assert_eq!(found.skipped.len(), 1);
        assert_eq!(
            found.skipped[0].why.to_string(),
            "it is a FIFO, not a regular file"
        );
    }

    #[test]
    fn a_project_that_is_no_folder_is_an_error() {
        let dir = project(&[("CLAUDE.md", "- a")]);
        assert!(matches!(
            discover(&dir.path().join("none")),
            Err(DiscoverError::Missing)
        ));
        assert!(matches!(
            discover(&dir.path().join("CLAUDE.md")),
            Err(DiscoverError::NotAFolder)
        ));
        // Through a file: the OS's error, kept as the source.
        let err = discover(&dir.path().join("CLAUDE.md/x")).unwrap_err();
        let os = std::error::Error::source(&err)
            .and_then(|cause| cause.downcast_ref::<std::io::Error>())
            .expect("the OS's error is the source");
        assert_eq!(os.kind(), std::io::ErrorKind::NotADirectory, "{err}");
        assert_eq!(err.to_string(), os.to_string());
        let empty = project(&[]);
        assert_eq!(discover(empty.path()).unwrap(), Discovery::default());
    }
}
