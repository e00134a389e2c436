//! The two git questions the worker monitor asks, each ONE local git call
//! under a wall clock ([`crate::run`]), and never a network call.
//!
//! - the tree fingerprint: `git status --porcelain=v2 --branch` gives HEAD and
//!   the file list in one call; the monitor's own `.plot-worker.` files are
//!   dropped, because it writes inside the tree it watches and would otherwise
//!   read its own findings as the tree changing, suppressing `idle` forever.
//! - commits present: `git rev-list --count <base>..HEAD -- .` against the
//!   LOCAL `origin/HEAD` or `origin/main`, which is found by reading ref files
//!   rather than by a third git call.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::fs::file::ReadError;
use crate::run::{CommandFailed, Invocation, Limits, Outcome, run};

/// Why a git question has no answer. Every one is "unanswerable", never a
/// zero count or an unchanged tree.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GitError {
    /// git exited non-zero, timed out, could not start, or printed more than its bound.
    Failed(CommandFailed),
    /// `git rev-list --count` printed something that is not a number.
    NotACount {
        /// What it printed instead.
        printed: String,
    },
    /// `origin/HEAD` names a ref that this clone does not have.
    DanglingOriginHead {
        /// The ref `origin/HEAD` names.
        target: String,
    },
    /// Neither `origin/HEAD` nor `origin/main` exists locally: nothing to count against.
    NoBaseRef,
    /// No `.git` in the worktree or any folder above it.
    NotARepository {
        /// The folder the search started from.
        worktree: PathBuf,
    },
    /// A `.git` file that cannot be read.
    UnreadableGitFile {
        /// The `.git` file.
        path: PathBuf,
        /// Why it could not be read.
        error: ReadError,
    },
    /// A `.git` file without a `gitdir: ` line.
    NoGitdir {
        /// The `.git` file.
        path: PathBuf,
    },
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitError::Failed(failed) => write!(f, "{failed}"),
            GitError::NotACount { printed } => {
                write!(f, "git rev-list --count printed {printed:?}, not a number")
            }
            GitError::DanglingOriginHead { target } => write!(
                f,
                "origin/HEAD points at {target}, which does not exist locally"
            ),
            GitError::NoBaseRef => {
                f.write_str("no local origin/HEAD or origin/main ref to count commits against")
            }
            GitError::NotARepository { worktree } => {
                write!(f, "{} is not inside a git repository", worktree.display())
            }
            GitError::UnreadableGitFile { path, error } => {
                write!(f, "cannot read {}: it {error}", path.display())
            }
            GitError::NoGitdir { path } => write!(f, "{} does not name a gitdir", path.display()),
        }
    }
}

impl std::error::Error for GitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GitError::Failed(failed) => Some(failed),
            GitError::UnreadableGitFile { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The seed's `PLOT_WORKER_RECORD` pattern: Plot's own records in a worktree.
const PLOT_WORKER_RECORD: &str = ".plot-worker.";

/// How long one git call may take before it is killed (with its group).
pub const GIT_TIMEOUT: Duration = Duration::from_secs(10);

fn git(worktree: &Path) -> Invocation {
    Invocation::new("git")
        .current_dir(worktree)
        // A monitor must never take `index.lock` from under the agent's own git.
        .env("GIT_OPTIONAL_LOCKS", "0")
        // Never ask a terminal for anything.
        .env("GIT_TERMINAL_PROMPT", "0")
}

/// git's stdout, or why there is none. An answer cut at the byte bound is
/// none (`Outcome::success_stdout`), said as such.
fn answer(invocation: &Invocation, limits: &Limits) -> Result<String, GitError> {
    let outcome = run(invocation, limits);
    match outcome.success_stdout() {
        Some(stdout) => Ok(stdout.text()),
        None => Err(GitError::Failed(CommandFailed::new(invocation, &outcome))),
    }
}

/// HEAD plus the status list, with `.plot-worker.` lines dropped: equal
/// strings mean nothing happened in the tree. `Err` says why git could not answer.
pub fn tree_fingerprint(worktree: &Path, timeout: Duration) -> Result<String, GitError> {
    let limits = Limits {
        timeout,
        // A huge status is still a fingerprint; the cap only bounds memory.
        max_output: 8 << 20,
        ..Limits::default()
    };
    let status = answer(
        &git(worktree).args(["status", "--porcelain=v2", "--branch"]),
        &limits,
    )?;
    Ok(filter_own_records(&status))
}

/// Everything an auditor could change in a project that git can see, as one
/// string: HEAD and the status with ignored files too (one git call), then
/// the repository's `config` and its `hooks/` (each hook's name, size and
/// modification time), which a status never shows. Equal strings mean the
/// auditors wrote nothing git can see; `Err` when it is not a repository or
/// git cannot answer.
pub fn audit_fingerprint(project: &Path, timeout: Duration) -> Result<String, GitError> {
    let git_dir = common_git_dir(project)?;
    let limits = Limits {
        timeout,
        max_output: 8 << 20,
        ..Limits::default()
    };
    let mut print = answer(
        &git(project).args(["status", "--porcelain=v2", "--branch", "--ignored"]),
        &limits,
    )?;
    let config = crate::fs::file::read_regular(&git_dir.join("config"), 1 << 20)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_else(|error| format!("unreadable: {error}"));
    print.push_str("\n# config\n");
    print.push_str(&config);
    print.push_str("\n# hooks\n");
    if let Ok(entries) = std::fs::read_dir(git_dir.join("hooks")) {
        let mut hooks: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| {
                let meta = entry.metadata().ok();
                format!(
                    "{} {} {:?}",
                    entry.file_name().to_string_lossy(),
                    meta.as_ref().map_or(0, std::fs::Metadata::len),
                    meta.and_then(|m| m.modified().ok())
                )
            })
            .collect();
        hooks.sort();
        print.push_str(&hooks.join("\n"));
    }
    Ok(print)
}

/// Drop the monitor's own files from a porcelain status, keep the headers
/// (`# branch.oid` is HEAD: an agent that commits has done something, even
/// when the status list reads the same either side of the commit).
fn filter_own_records(status: &str) -> String {
    status
        .lines()
        .filter(|line| line.starts_with('#') || !line.contains(PLOT_WORKER_RECORD))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How many commits since the base TOUCHED A FILE. `Err` is "unanswerable":
/// no local base ref, or git failed. Never zero for a failure.
pub fn commits_since_base(worktree: &Path, timeout: Duration) -> Result<u64, GitError> {
    let base = local_base_ref(worktree)?;
    let out = answer(
        // The `-- .` pathspec keeps only commits that touched a file: the
        // dispatcher's `--allow-empty` claim commit is not the agent's work.
        &git(worktree).args(["rev-list", "--count", &format!("{base}..HEAD"), "--", "."]),
        &Limits::with_timeout(timeout),
    )?;
    out.trim().parse().map_err(|_| GitError::NotACount {
        printed: out.trim().to_string(),
    })
}

/// The most a loose ref, `.git` file or `commondir` holds.
const REF_MAX_BYTES: u64 = 4096;
/// The most a `packed-refs` file is read (a ref is a line of about 80 bytes).
const PACKED_REFS_MAX_BYTES: u64 = 64 << 20;

/// `origin/HEAD`'s target when it is a symbolic ref, else `origin/main`, read
/// from the repository's ref files (loose or packed). No such ref is
/// unanswerable: counting against nothing would count all of history.
///
/// As the seed: `symbolic-ref --short origin/HEAD` names the target whether
/// or not it exists, and only when origin/HEAD is not symbolic does it fall
/// back to `origin/main`. A dangling target makes the seed's `rev-list` fail,
/// which is unanswerable (nothing published), never a count against main.
pub fn local_base_ref(worktree: &Path) -> Result<String, GitError> {
    let common = common_git_dir(worktree)?;
    // A ref file is one line and packed-refs one line a ref; a FIFO or a
    // device there must not block the worker (crate::fs::file).
    let loose =
        |name: &str| crate::fs::file::read_regular_text(&common.join(name), REF_MAX_BYTES).ok();
    let packed =
        crate::fs::file::read_regular_text(&common.join("packed-refs"), PACKED_REFS_MAX_BYTES)
            .unwrap_or_default();
    let exists = |name: &str| {
        loose(name).is_some_and(|v| !v.trim().is_empty())
            || packed
                .lines()
                .any(|l| !l.starts_with('#') && l.split_whitespace().nth(1) == Some(name))
    };
    if let Some(head) = loose("refs/remotes/origin/HEAD")
        && let Some(target) = head.trim().strip_prefix("ref: ")
    {
        return if exists(target) {
            Ok(target.to_owned())
        } else {
            Err(GitError::DanglingOriginHead {
                target: target.to_owned(),
            })
        };
    }
    if exists("refs/remotes/origin/main") {
        return Ok("refs/remotes/origin/main".to_owned());
    }
    Err(GitError::NoBaseRef)
}

/// Which of `paths` (relative to `project`) git ignores: `git check-ignore
/// --stdin -z` in one call, so `.gitignore` at every level,
/// `.git/info/exclude` and `core.excludesFile` all count, and a tracked file
/// is never ignored (git's own answer). `Err` when git cannot answer (not a
/// repository, a timeout): the caller treats every path as ignored.
pub fn ignored(project: &Path, paths: &[&str], timeout: Duration) -> Result<Vec<bool>, GitError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = Vec::new();
    for path in paths {
        input.extend_from_slice(path.as_bytes());
        input.push(0);
    }
    let invocation = git(project)
        .args(["check-ignore", "--stdin", "-z"])
        .stdin(input);
    let limits = Limits {
        timeout,
        max_output: 1 << 20,
        ..Limits::default()
    };
    let outcome = run(&invocation, &limits);
    // 0: some are ignored (listed), 1: none is; anything else is no answer.
    let listed = match &outcome {
        Outcome::Exited {
            code: Some(0),
            stdout,
            ..
        } if !stdout.truncated => stdout.text(),
        Outcome::Exited { code: Some(1), .. } => String::new(),
        _ => return Err(GitError::Failed(CommandFailed::new(&invocation, &outcome))),
    };
    let listed: Vec<&str> = listed.split('\0').filter(|p| !p.is_empty()).collect();
    Ok(paths.iter().map(|path| listed.contains(path)).collect())
}

/// For a project that is not a git repository: whether `path` (relative to
/// `project`) is ignored by the `.gitignore` files of the project's folders
/// on its way, the deepest deciding, as git would decide it.
pub fn ignored_outside_git(project: &Path, path: &str) -> bool {
    let mut folder = project.to_path_buf();
    let parts: Vec<&str> = path.split('/').collect();
    let mut verdict = false;
    for depth in 0..parts.len() {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(&folder);
        builder.add(folder.join(".gitignore"));
        if let Ok(matcher) = builder.build() {
            let full = project.join(path);
            match matcher.matched_path_or_any_parents(&full, false) {
                ignore::Match::Ignore(_) => verdict = true,
                ignore::Match::Whitelist(_) => verdict = false,
                ignore::Match::None => {}
            }
        }
        if depth + 1 < parts.len() {
            folder.push(parts[depth]);
        }
    }
    verdict
}

/// Whether `worktree` is inside a git repository (a `.git` folder or file
/// in it or above it), or why not.
pub fn check_repository(worktree: &Path) -> Result<(), GitError> {
    common_git_dir(worktree).map(|_| ())
}

/// The directory holding `refs/` and `packed-refs` for the repository that
/// contains `worktree`: `.git` itself, or for a linked worktree (`.git` is a
/// file naming its gitdir) the gitdir's `commondir`.
fn common_git_dir(worktree: &Path) -> Result<PathBuf, GitError> {
    let mut dir = Some(worktree);
    while let Some(here) = dir {
        let dot_git = here.join(".git");
        if dot_git.is_dir() {
            return Ok(dot_git);
        }
        if dot_git.is_file() {
            let text =
                crate::fs::file::read_regular_text(&dot_git, REF_MAX_BYTES).map_err(|error| {
                    GitError::UnreadableGitFile {
                        path: dot_git.clone(),
                        error,
                    }
                })?;
            let gitdir =
                text.trim()
                    .strip_prefix("gitdir: ")
                    .ok_or_else(|| GitError::NoGitdir {
                        path: dot_git.clone(),
                    })?;
            let gitdir = here.join(gitdir);
            return Ok(
                match crate::fs::file::read_regular_text(&gitdir.join("commondir"), REF_MAX_BYTES) {
                    Ok(common) => gitdir.join(common.trim()),
                    Err(_) => gitdir,
                },
            );
        }
        dir = here.parent();
    }
    Err(GitError::NotARepository {
        worktree: worktree.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_records_are_filtered_but_headers_and_other_files_stay() {
        let status = "# branch.oid abc\n# branch.head main\n? .plot-worker.monitor.worker.jsonl\n? .plot-worker.pid\n1 .M N... 100644 100644 100644 a b src/lib.rs\n? notes.txt";
        assert_eq!(
            filter_own_records(status),
            "# branch.oid abc\n# branch.head main\n1 .M N... 100644 100644 100644 a b src/lib.rs\n? notes.txt"
        );
    }

    #[test]
    fn no_repository_is_unanswerable() {
        let dir = tempfile::tempdir().unwrap();
        assert!(local_base_ref(dir.path()).is_err());
        assert!(commits_since_base(dir.path(), GIT_TIMEOUT).is_err());
        assert!(tree_fingerprint(dir.path(), GIT_TIMEOUT).is_err());
        let err = check_repository(dir.path()).unwrap_err();
        assert!(matches!(err, GitError::NotARepository { .. }), "{err:?}");
        assert!(
            err.to_string().ends_with(" is not inside a git repository"),
            "{err}"
        );
    }

    #[test]
    fn base_ref_reads_loose_symbolic_and_packed_refs() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/remotes/origin")).unwrap();
        assert!(local_base_ref(dir.path()).is_err());

        std::fs::write(
            git.join("packed-refs"),
            "# pack-refs with: peeled\nabc refs/remotes/origin/main\n",
        )
        .unwrap();
        assert_eq!(
            local_base_ref(dir.path()).unwrap(),
            "refs/remotes/origin/main"
        );

        // origin/HEAD pointing at a ref that does not exist is unanswerable,
        // as the seed's `symbolic-ref --short` + failing `rev-list`: no
        // fallback to main.
        std::fs::write(
            git.join("refs/remotes/origin/HEAD"),
            "ref: refs/remotes/origin/trunk\n",
        )
        .unwrap();
        let err = local_base_ref(dir.path()).unwrap_err();
        assert_eq!(
            err,
            GitError::DanglingOriginHead {
                target: "refs/remotes/origin/trunk".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "origin/HEAD points at refs/remotes/origin/trunk, which does not exist locally"
        );

        std::fs::write(git.join("refs/remotes/origin/trunk"), "abc\n").unwrap();
        assert_eq!(
            local_base_ref(dir.path()).unwrap(),
            "refs/remotes/origin/trunk"
        );

        // From a subdirectory, and through a linked worktree's `.git` file.
        std::fs::create_dir_all(dir.path().join("sub/dir")).unwrap();
        assert!(local_base_ref(&dir.path().join("sub/dir")).is_ok());
        let linked = tempfile::tempdir().unwrap();
        let gitdir = git.join("worktrees/w");
        std::fs::create_dir_all(&gitdir).unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        std::fs::write(
            linked.path().join(".git"),
            format!("gitdir: {}\n", gitdir.display()),
        )
        .unwrap();
        assert_eq!(
            local_base_ref(linked.path()).unwrap(),
            "refs/remotes/origin/trunk"
        );
    }

    /// Run a setup script in `dir` with git isolated from the user's config.
    fn sh(dir: &Path, script: &str) {
        let outcome = run(
            &Invocation::shell(script)
                .current_dir(dir)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.invalid"),
            &Limits::with_timeout(Duration::from_secs(30)),
        );
        assert!(outcome.success_stdout().is_some(), "{script}: {outcome:?}");
    }

    /// A worktree cloned from a local bare origin: `origin/main` exists locally.
    fn repo_with_origin() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        sh(
            dir.path(),
            "git init -q -b main --bare origin.git && git init -q -b main work && cd work \
             && echo a > a && git add a && git commit -qm base \
             && git remote add origin ../origin.git && git push -q origin main",
        );
        dir
    }

    #[test]
    fn real_repo_counts_commits_that_touched_a_file_not_empty_claims() {
        let dir = repo_with_origin();
        let work = dir.path().join("work");
        assert_eq!(commits_since_base(&work, GIT_TIMEOUT), Ok(0));
        sh(&work, "git commit -q --allow-empty -m 'plot: claim branch'");
        assert_eq!(commits_since_base(&work, GIT_TIMEOUT), Ok(0));
        sh(&work, "echo b > b && git add b && git commit -qm work");
        assert_eq!(commits_since_base(&work, GIT_TIMEOUT), Ok(1));
    }

    #[test]
    fn real_repo_with_a_dangling_origin_head_is_unanswerable_not_counted_against_main() {
        let dir = repo_with_origin();
        let work = dir.path().join("work");
        sh(
            &work,
            "echo b > b && git add b && git commit -qm work \
             && git symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/trunk",
        );
        let err = commits_since_base(&work, GIT_TIMEOUT).unwrap_err();
        assert!(err.to_string().contains("origin/trunk"), "{err}");
        // Once the target exists, it is the base.
        sh(&work, "git update-ref refs/remotes/origin/trunk HEAD~1");
        assert_eq!(commits_since_base(&work, GIT_TIMEOUT), Ok(1));
    }

    #[test]
    fn real_repo_without_origin_is_unanswerable_not_zero() {
        let dir = tempfile::tempdir().unwrap();
        sh(
            dir.path(),
            "git init -q -b main && echo a > a && git add a && git commit -qm base",
        );
        let err = commits_since_base(dir.path(), GIT_TIMEOUT).unwrap_err();
        assert_eq!(err, GitError::NoBaseRef);
        assert!(err.to_string().contains("origin"), "{err}");
    }

    #[test]
    fn real_fingerprint_ignores_own_records_and_sees_commits_and_new_files() {
        let dir = repo_with_origin();
        let work = dir.path().join("work");
        let first = tree_fingerprint(&work, GIT_TIMEOUT).unwrap();
        assert!(first.contains("# branch.oid "), "{first}");
        std::fs::write(work.join(".plot-worker.monitor.worker.jsonl"), "{}\n").unwrap();
        std::fs::write(work.join(".plot-worker.pid"), "1\n").unwrap();
        assert_eq!(tree_fingerprint(&work, GIT_TIMEOUT).unwrap(), first);
        std::fs::write(work.join("new.txt"), "x").unwrap();
        let with_file = tree_fingerprint(&work, GIT_TIMEOUT).unwrap();
        assert_ne!(with_file, first);
        sh(&work, "git add new.txt && git commit -qm more");
        let committed = tree_fingerprint(&work, GIT_TIMEOUT).unwrap();
        assert_ne!(committed, with_file);
        assert_ne!(committed, first, "HEAD moved, so the fingerprint moved");
    }
}
