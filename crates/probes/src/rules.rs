//! Finding a project's stated rules: the files its agents are told to obey
//! (CLAUDE.md, AGENTS.md, the agent CLIs' rules files) and its written
//! invariants (ARCHITECTURE.md), which the audit team turns into dimensions
//! (`watchdog::audit::plan`).
//!
//! The walk is bounded: it never enters `.git`, `target`, `node_modules`, a
//! hidden folder other than the agent CLIs' own, or a symlinked folder; it
//! reads at most [`Limits::max_files`] files of at most
//! [`Limits::max_file_bytes`] each, through [`crate::file`] (no FIFO can
//! block it), and says what it skipped and why. A file symlink is followed
//! only when it resolves inside the project; two names for one file are read
//! once.
//!
//! The result is probes' own [`RuleFile`] (probes cannot know `watchdog`):
//! the caller hands `(path, text)` pairs to `watchdog::audit::plan::plan`.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use crate::file::{self, ReadError};

/// One rules file, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFile {
    /// Relative to the project, `/`-separated (`sub/AGENTS.md`).
    pub path: String,
    pub text: String,
}

/// What the walk found, and what it passed over (with why).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The top level first, then each folder's in name order.
    pub files: Vec<RuleFile>,
    pub skipped: Vec<Skipped>,
}

impl Discovery {
    /// The files as the `(path, text)` pairs `watchdog::audit::plan::plan` takes.
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
    FileCap { cap: usize },
    /// The cap on folders walked was reached; this and the rest were not walked.
    FolderCap { cap: usize },
    /// A folder deeper than the cap on depth.
    TooDeep { cap: usize },
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
        }
    }
}

/// Why the project itself could not be walked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiscoverError {
    /// There is nothing at the path.
    Missing,
    /// The path is not a folder.
    NotAFolder,
    /// Any other I/O error on the project folder itself.
    Io(String),
}

impl fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoverError::Missing => f.write_str("does not exist"),
            DiscoverError::NotAFolder => f.write_str("is not a folder"),
            DiscoverError::Io(error) => f.write_str(error),
        }
    }
}

impl std::error::Error for DiscoverError {}

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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_files: 200,
            max_file_bytes: 256 * 1024,
            max_folders: 20_000,
            max_depth: 24,
        }
    }
}

/// The project's stated-rule files, with the default [`Limits`].
pub fn discover(project: &Path) -> Result<Discovery, DiscoverError> {
    discover_with(project, &Limits::default())
}

/// The project's stated-rule files, within `limits`.
pub fn discover_with(project: &Path, limits: &Limits) -> Result<Discovery, DiscoverError> {
    let meta = fs::metadata(project).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => DiscoverError::Missing,
        _ => DiscoverError::Io(error.to_string()),
    })?;
    if !meta.is_dir() {
        return Err(DiscoverError::NotAFolder);
    }
    let root = fs::canonicalize(project).map_err(|error| DiscoverError::Io(error.to_string()))?;
    let mut walk = Walk {
        root,
        limits,
        found: Discovery::default(),
        read: Vec::new(),
        seen: HashSet::new(),
        capped: false,
    };
    walk.run();
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

impl Walk<'_> {
    /// Breadth first, so the top level's files come first and a cap cuts the
    /// deepest ones.
    fn run(&mut self) {
        let mut queue = VecDeque::from([(String::new(), 0usize)]);
        let mut listed = 0usize;
        while let Some((folder, depth)) = queue.pop_front() {
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
            for (name, kind) in entries {
                let rel = join(&folder, &name);
                match kind {
                    Kind::Folder if enters(&folder, &name) => {
                        if depth + 1 > self.limits.max_depth {
                            let cap = self.limits.max_depth;
                            self.skip(rel, SkipReason::TooDeep { cap });
                        } else {
                            queue.push_back((rel, depth + 1));
                        }
                    }
                    Kind::File | Kind::Symlink if is_rules_file(&folder, &name) => {
                        self.read_file(rel, kind == Kind::Symlink);
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

    fn read_file(&mut self, rel: String, symlink: bool) {
        let path = self.root.join(&rel);
        let canonical = if symlink {
            match fs::canonicalize(&path) {
                // A symlinked folder named like a rules file is still a folder.
                Ok(target) if target.is_dir() => return,
                // What it is (a FIFO, say) is for the bounded read to name.
                Ok(target) if target.starts_with(&self.root) => target,
                _ => return self.skip(rel, SkipReason::OutsideProject),
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
            return self.skip(rel, SkipReason::SameFileAs(first));
        }
        if self.found.files.len() == self.limits.max_files {
            let cap = self.limits.max_files;
            self.capped = true;
            return self.skip(rel, SkipReason::FileCap { cap });
        }
        match file::read_regular_text(&path, self.limits.max_file_bytes) {
            Ok(text) => {
                self.read.push((canonical, rel.clone()));
                self.found.files.push(RuleFile { path: rel, text });
            }
            Err(error) => self.skip(rel, SkipReason::Unreadable(error)),
        }
    }

    fn skip(&mut self, path: String, why: SkipReason) {
        self.found.skipped.push(Skipped { path, why });
    }
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

/// Whether the walk goes into `folder/name`: never into build output,
/// dependencies or a repository's internals; into a hidden folder only when
/// it is (or leads to) an agent CLI's rules.
fn enters(folder: &str, name: &str) -> bool {
    if matches!(name, ".git" | "target" | "node_modules") {
        return false;
    }
    match hidden_part(folder) {
        None if name.starts_with('.') => {
            matches!(
                name,
                ".cursor" | ".claude" | ".windsurf" | ".github" | ".clinerules"
            )
        }
        None => true,
        // Below a hidden folder, only its rules folders and their subfolders.
        Some(_) if name.starts_with('.') => false,
        Some(hidden) => {
            let here = format!("{hidden}/{name}");
            RULES_FOLDERS.iter().any(|rules| within(&here, rules))
                || within(&here, ".github/instructions")
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

/// Whether `folder/name` is a stated-rules file.
fn is_rules_file(folder: &str, name: &str) -> bool {
    match hidden_part(folder) {
        None => matches!(
            name,
            "CLAUDE.md"
                | "CLAUDE.local.md"
                | "AGENTS.md"
                | "RULES.md"
                | "GEMINI.md"
                | "ARCHITECTURE.md"
                | ".cursorrules"
                | ".windsurfrules"
                | ".clinerules"
        ),
        Some(hidden) => {
            let markdown = name.ends_with(".md");
            match hidden.as_str() {
                ".claude" => matches!(name, "CLAUDE.md" | "CLAUDE.local.md"),
                ".github" => name == "copilot-instructions.md",
                _ if within(&hidden, ".github/instructions") => name.ends_with(".instructions.md"),
                _ if within(&hidden, ".cursor/rules") => markdown || name.ends_with(".mdc"),
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
        assert_eq!(
            discover(&dir.path().join("none")),
            Err(DiscoverError::Missing)
        );
        assert_eq!(
            discover(&dir.path().join("CLAUDE.md")),
            Err(DiscoverError::NotAFolder)
        );
        let empty = project(&[]);
        assert_eq!(discover(empty.path()).unwrap(), Discovery::default());
    }
}
