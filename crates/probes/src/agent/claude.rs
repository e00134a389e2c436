//! Claude Code's own account of its state: `<claude-dir>/sessions/<pid>.json`,
//! which a running session rewrites on every change and deletes on exit.
//!
//! Found from a tmux pane: the pane's first process and its descendants (the
//! agent may run under a shell or a wrapper), each one's claude folder taken
//! from ITS environment (`CLAUDE_CONFIG_DIR`, else `$HOME/.claude`), since the
//! agent's HOME need not be the monitor's. The file is returned raw with the
//! process's start time, which the caller compares with the file's
//! `procStart` so a reused pid is never believed.

use std::path::{Path, PathBuf};

/// A pane's process tree is small; this bounds a pathological one.
const MAX_PROCESSES: usize = 256;
/// A session file is a few hundred bytes; more is not one.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// A session file found for a pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFile {
    /// The process the file is named after (`sessions/<pid>.json`).
    pub pid: u32,
    /// Where the file was found, so a caller can name it.
    pub path: PathBuf,
    /// The file as read, raw: the caller parses it.
    pub text: String,
    /// The process's start time in clock ticks since boot (`/proc/<pid>/stat`
    /// field 22), the unit of the file's `procStart`.
    pub start_ticks: Option<u64>,
}

/// The first session file among `pane_pid` and its descendants, if any.
fn find_session_file(pane_pid: u32) -> Option<SessionFile> {
    find_session_file_in(Path::new("/proc"), pane_pid)
}

/// As [`find_session_file`], with `/proc` at `proc_root` (tests).
fn find_session_file_in(proc_root: &Path, pane_pid: u32) -> Option<SessionFile> {
    for pid in subtree(proc_root, pane_pid) {
        let Some(dir) = claude_dir_of(proc_root, pid) else {
            continue;
        };
        let path = dir.join("sessions").join(format!("{pid}.json"));
        let Some(text) = read_bounded(&path) else {
            continue;
        };
        let start_ticks = start_ticks(proc_root, pid);
        return Some(SessionFile {
            pid,
            path,
            text,
            start_ticks,
        });
    }
    None
}

/// `pid` and its descendants, breadth first, from each task's `children` list.
fn subtree(proc_root: &Path, pid: u32) -> Vec<u32> {
    let mut found = vec![pid];
    let mut next = 0;
    while next < found.len() && found.len() < MAX_PROCESSES {
        let parent = found[next];
        next += 1;
        let Ok(tasks) = std::fs::read_dir(proc_root.join(parent.to_string()).join("task")) else {
            continue;
        };
        for task in tasks.filter_map(Result::ok) {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for child in children
                .split_ascii_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if !found.contains(&child) && found.len() < MAX_PROCESSES {
                    found.push(child);
                }
            }
        }
    }
    found
}

/// The process's claude folder, from its own environment.
fn claude_dir_of(proc_root: &Path, pid: u32) -> Option<PathBuf> {
    let environ = std::fs::read(proc_root.join(pid.to_string()).join("environ")).ok()?;
    let mut home = None;
    for entry in environ.split(|&b| b == 0) {
        let entry = String::from_utf8_lossy(entry);
        if let Some(dir) = entry
            .strip_prefix("CLAUDE_CONFIG_DIR=")
            .filter(|d| !d.is_empty())
        {
            return Some(PathBuf::from(dir));
        }
        if let Some(dir) = entry.strip_prefix("HOME=").filter(|d| !d.is_empty()) {
            home = Some(PathBuf::from(dir).join(".claude"));
        }
    }
    home
}

/// A session file's text; a FIFO, a device or an oversized file is none (a
/// FIFO there froze every target's poll when it was opened plainly).
fn read_bounded(path: &Path) -> Option<String> {
    crate::fs::file::read_regular_text(path, MAX_FILE_BYTES).ok()
}

/// When `pid` started, from `<proc_root>/<pid>/stat`.
fn start_ticks(proc_root: &Path, pid: u32) -> Option<u64> {
    crate::os::procfs::Stat::read(proc_root, pid)?.start_ticks()
}

/// What one pane's processes tell: what runs in its foreground, and Claude
/// Code's session file among them.
#[derive(Debug, Clone, Default)]
pub struct PaneProcesses {
    /// `None` when it could not be read (a shell in front of a pane whose
    /// processes could not be read then counts as idle).
    pub foreground: Option<crate::os::procfs::ForegroundProcess>,
    /// What the search for its session file found (if it was asked for).
    pub session: SessionSearch,
}

/// The search for a pane's session file.
#[derive(Debug, Clone, Default)]
pub enum SessionSearch {
    /// Not looked for (the caller did not ask).
    #[default]
    NotAsked,
    /// A process of the pane has a session file: the first one found.
    Found(SessionFile),
    /// Looked for, and none of the pane's processes has one.
    None,
    /// The remote search did not answer; the text says how it ended.
    Failed(String),
}

/// A local pane's processes, read from `/proc`; `follow_through` names the
/// terminal wrappers whose inner terminal counts as the pane's.
pub fn local_pane(pane_pid: u32, follow_through: &[&str], with_session: bool) -> PaneProcesses {
    PaneProcesses {
        foreground: crate::os::procfs::foreground_of(pane_pid, follow_through),
        session: if with_session {
            find_session_file(pane_pid).map_or(SessionSearch::None, SessionSearch::Found)
        } else {
            SessionSearch::NotAsked
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/proc` with a shell (10) running claude (11) under a wrapper (12 is claude's child).
    fn fake_proc(dir: &Path, home: &Path) {
        let write = |rel: &str, text: &[u8]| {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("10/task/10/children", b"11 ");
        write("10/environ", b"HOME=/nowhere\0");
        write("11/task/11/children", b"12");
        write(
            "11/environ",
            format!("PATH=/bin\0HOME={}\0", home.display()).as_bytes(),
        );
        write(
            "11/stat",
            b"11 (claude (x)) S 10 11 11 0 -1 4194560 1 0 0 0 2 3 0 0 20 0 11 0 137901 1 1\n",
        );
        write("12/environ", b"HOME=/elsewhere\0");
    }

    #[test]
    fn the_session_file_is_found_under_the_descendants_own_home() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        fake_proc(&root.path().join("proc"), &home);
        std::fs::create_dir_all(home.join(".claude/sessions")).unwrap();
        std::fs::write(
            home.join(".claude/sessions/11.json"),
            r#"{"pid":11,"status":"busy"}"#,
        )
        .unwrap();
        let found = find_session_file_in(&root.path().join("proc"), 10).expect("found");
        assert_eq!(found.pid, 11);
        assert_eq!(found.text, r#"{"pid":11,"status":"busy"}"#);
        assert_eq!(found.start_ticks, Some(137901));
    }

    #[test]
    fn claude_config_dir_wins_over_home_and_no_file_is_none() {
        let root = tempfile::tempdir().unwrap();
        let proc_root = root.path().join("proc");
        fake_proc(&proc_root, &root.path().join("home"));
        assert_eq!(find_session_file_in(&proc_root, 10), None);
        let config = root.path().join("config");
        std::fs::write(
            proc_root.join("11/environ"),
            format!("HOME=/x\0CLAUDE_CONFIG_DIR={}\0", config.display()),
        )
        .unwrap();
        std::fs::create_dir_all(config.join("sessions")).unwrap();
        std::fs::write(config.join("sessions/11.json"), "{}").unwrap();
        assert_eq!(
            find_session_file_in(&proc_root, 10).map(|f| f.path),
            Some(config.join("sessions/11.json"))
        );
    }

    #[test]
    fn this_process_has_a_start_time_and_a_subtree() {
        let me = std::process::id();
        assert!(start_ticks(Path::new("/proc"), me).is_some());
        assert_eq!(subtree(Path::new("/proc"), me)[0], me);
    }

    #[test]
    fn a_local_pane_without_an_agent_has_a_foreground_and_no_session_file() {
        let me = std::process::id();
        let read = local_pane(me, &[], true);
        assert!(matches!(
            read.session,
            SessionSearch::None | SessionSearch::Found(_)
        ));
        assert!(matches!(
            local_pane(me, &[], false).session,
            SessionSearch::NotAsked
        ));
    }
}
