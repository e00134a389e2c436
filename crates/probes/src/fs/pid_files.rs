//! Pid files watched pass after pass, at the cost of one `stat` each.
//!
//! A pid file is read again only when its size or mtime changed. An
//! unchanged file naming a dead pid stays dead without asking again, which
//! also keeps a recycled pid from bringing it back to life; a live one is
//! checked every time, through a held pidfd (one `poll`, not a `/proc` read).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::fs::meta::{self, FileMeta};
use crate::fs::pid_file::{self, PidFileState};
use crate::os::pid::Pid;
use crate::os::pidfd::Liveness;

/// What a pid file says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidFileCheck {
    /// The pid it names is alive.
    Alive(u32),
    /// The pid it names has exited.
    Dead(u32),
    /// Absent or empty: the startup window, never a death.
    NotRecorded,
    /// Something that is not a pid (`-1`, `seven`), or a file that cannot be
    /// read: worth one error line, otherwise like "not recorded".
    Invalid(String),
}

/// The pid files a monitor watches, with what each said when last read.
#[derive(Default)]
pub struct PidFiles {
    seen: HashMap<PathBuf, (FileMeta, PidFileCheck)>,
    liveness: Liveness,
}

impl PidFiles {
    /// No pid file seen yet: each is read on its first check.
    pub fn new() -> PidFiles {
        PidFiles::default()
    }

    /// What the pid file at `path` says now.
    pub fn check(&mut self, path: &Path) -> PidFileCheck {
        let meta = match meta::stat(path) {
            Ok(FileMeta::Missing) | Ok(FileMeta::Present { size: 0, .. }) => {
                self.seen.remove(path);
                return PidFileCheck::NotRecorded;
            }
            Ok(meta) => meta,
            Err(e) => return PidFileCheck::Invalid(e.to_string()),
        };
        let check = match self.seen.get(path) {
            Some((seen, check)) if *seen == meta => match check {
                PidFileCheck::Alive(pid) => match Pid::new(*pid) {
                    Some(p) if self.liveness.is_alive(p) => PidFileCheck::Alive(*pid),
                    _ => PidFileCheck::Dead(*pid),
                },
                other => other.clone(),
            },
            _ => match pid_file::read_pid_file(path) {
                PidFileState::Alive(pid) => PidFileCheck::Alive(pid.get()),
                PidFileState::Dead(pid) => PidFileCheck::Dead(pid.get()),
                PidFileState::NotRecorded { reason } => PidFileCheck::Invalid(reason),
            },
        };
        self.seen.insert(path.to_owned(), (meta, check.clone()));
        check
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Invocation, Limits, run};
    use std::time::Duration;

    /// A pid that was alive and is now dead and reaped.
    fn dead_pid() -> u32 {
        let outcome = run(
            &Invocation::shell("echo $$"),
            &Limits::with_timeout(Duration::from_secs(10)),
        );
        outcome
            .success_stdout()
            .unwrap()
            .text()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn absent_and_empty_are_not_recorded_and_garbage_is_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pid");
        let mut files = PidFiles::new();
        assert_eq!(files.check(&path), PidFileCheck::NotRecorded);
        std::fs::write(&path, "").unwrap();
        assert_eq!(files.check(&path), PidFileCheck::NotRecorded);
        std::fs::write(&path, "seven\n").unwrap();
        assert!(matches!(files.check(&path), PidFileCheck::Invalid(_)));
    }

    #[test]
    fn a_live_pid_is_asked_every_time_and_a_dead_one_stays_dead_while_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pid");
        let mut files = PidFiles::new();
        #[expect(
            clippy::disallowed_methods,
            reason = "probes may spawn; a child we kill ourselves"
        )]
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        std::fs::write(&path, format!("{pid}\n")).unwrap();
        assert_eq!(files.check(&path), PidFileCheck::Alive(pid));
        assert_eq!(files.check(&path), PidFileCheck::Alive(pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(
            files.check(&path),
            PidFileCheck::Dead(pid),
            "same file, its pid died"
        );

        // A new file (another size) is read again; its dead pid stays dead.
        let dead = dead_pid();
        std::fs::write(&path, format!("{dead}{}\n", " ".repeat(20))).unwrap();
        assert_eq!(files.check(&path), PidFileCheck::Dead(dead));
        assert_eq!(
            files.check(&path),
            PidFileCheck::Dead(dead),
            "unchanged: still dead"
        );
    }
}
