//! How long has the agent at a worktree written nothing to its transcript?
//!
//! Claude Code appends a JSON line to `<claude-dir>/projects/<slug>/<session>.jsonl`
//! for every completed content block, tool call and tool result, where
//! `<slug>` is the session's working directory with every character other
//! than an ASCII letter or digit replaced by `-`. Seconds since the newest
//! such file's mtime is the worker monitor's primary reading. No readable
//! transcript is `None` (unknown), never zero and never a failure: a monitor
//! that cannot see must say so rather than report that nothing happened.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `/tmp/ccwork_b/proj` → `-tmp-ccwork-b-proj`: Claude Code's
/// `cwd.replace(/[^a-zA-Z0-9]/g, "-")`, runs not collapsed. JavaScript
/// replaces per UTF-16 code unit, so a character outside the BMP becomes two
/// dashes here too.
pub fn slug(worktree: &str) -> String {
    let mut slug = String::with_capacity(worktree.len());
    for c in worktree.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else {
            slug.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    slug
}

/// `--claude-dir`, else `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`.
pub fn claude_dir(
    flag: Option<PathBuf>,
    config_dir_env: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let non_empty = |v: OsString| (!v.is_empty()).then(|| PathBuf::from(v));
    flag.or_else(|| config_dir_env.and_then(non_empty))
        .or_else(|| home.and_then(non_empty).map(|h| h.join(".claude")))
}

/// The project directory Claude Code uses for `worktree`. A worktree given
/// through a symlink is also tried by its real path, since the agent's cwd
/// (and so its slug) is the resolved one.
fn project_dirs(claude_dir: &Path, worktree: &Path) -> Vec<PathBuf> {
    let projects = claude_dir.join("projects");
    let mut dirs = vec![projects.join(slug(&worktree.to_string_lossy()))];
    if let Ok(real) = worktree.canonicalize() {
        let real = projects.join(slug(&real.to_string_lossy()));
        if real != dirs[0] {
            dirs.push(real);
        }
    }
    dirs
}

/// The newest `*.jsonl` mtime under the worktree's project directory
/// (subagent transcripts in subdirectories count: they are the agent's work too).
fn newest_transcript_mtime(claude_dir: &Path, worktree: &Path) -> Option<SystemTime> {
    project_dirs(claude_dir, worktree)
        .iter()
        .filter_map(|dir| newest_jsonl(dir, 3))
        .max()
}

fn newest_jsonl(dir: &Path, depth: u32) -> Option<SystemTime> {
    let mut newest = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let found = if meta.is_dir() {
            if depth == 0 {
                continue;
            }
            newest_jsonl(&path, depth - 1)
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            meta.modified().ok()
        } else {
            None
        };
        newest = newest.max(found);
    }
    newest
}

/// Whole seconds since the newest transcript line, `None` when there is no
/// transcript. An mtime in the future (a clock step) reads as 0: just written.
pub fn quiet_seconds(claude_dir: &Path, worktree: &Path, now: SystemTime) -> Option<u64> {
    let mtime = newest_transcript_mtime(claude_dir, worktree)?;
    Some(now.duration_since(mtime).map(|d| d.as_secs()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn slug_replaces_every_non_alphanumeric_character() {
        assert_eq!(slug("/tmp/ccwork_b/proj"), "-tmp-ccwork-b-proj");
        assert_eq!(slug("/home/a.b/x y/é1"), "-home-a-b-x-y--1");
        assert_eq!(slug("/Users/me/.agents"), "-Users-me--agents");
        // Observed: a real Claude Code 2.1.197 run (xtask capture) in this
        // directory wrote its transcript under exactly this project name.
        assert_eq!(
            slug("/tmp/bmbcap_dn_087fj/proj"),
            "-tmp-bmbcap-dn-087fj-proj"
        );
        assert_eq!(slug("/p/🦀"), "-p---", "two UTF-16 code units, two dashes");
    }

    #[test]
    fn claude_dir_prefers_flag_then_env_then_home() {
        let flag = Some(PathBuf::from("/f"));
        let env = Some(OsString::from("/e"));
        let home = Some(OsString::from("/h"));
        assert_eq!(
            claude_dir(flag, env.clone(), home.clone()),
            Some(PathBuf::from("/f"))
        );
        assert_eq!(
            claude_dir(None, env, home.clone()),
            Some(PathBuf::from("/e"))
        );
        assert_eq!(
            claude_dir(None, Some(OsString::new()), home),
            Some(PathBuf::from("/h/.claude"))
        );
        assert_eq!(claude_dir(None, None, None), None);
    }

    #[test]
    fn quiet_seconds_reads_the_newest_jsonl_and_none_without_one() {
        let claude = tempfile::tempdir().unwrap();
        let worktree = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        assert_eq!(quiet_seconds(claude.path(), worktree.path(), now), None);

        let project = claude
            .path()
            .join("projects")
            .join(slug(&worktree.path().to_string_lossy()));
        std::fs::create_dir_all(project.join("sub")).unwrap();
        let set = |name: &str, age: u64| {
            let path = project.join(name);
            std::fs::write(&path, "{}\n").unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(now - Duration::from_secs(age)).unwrap();
        };
        set("notes.txt", 1);
        assert_eq!(quiet_seconds(claude.path(), worktree.path(), now), None);
        set("old.jsonl", 5000);
        assert_eq!(
            quiet_seconds(claude.path(), worktree.path(), now),
            Some(5000)
        );
        set("sub/agent.jsonl", 40);
        assert_eq!(quiet_seconds(claude.path(), worktree.path(), now), Some(40));
        set("future.jsonl", 0);
        assert_eq!(
            quiet_seconds(claude.path(), worktree.path(), now - Duration::from_secs(9)),
            Some(0)
        );
    }
}
