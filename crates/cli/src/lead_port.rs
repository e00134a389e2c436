//! The real machine behind the lead monitor's port: `probes` answers every
//! question with syscalls, never with a `test`, `stat` or `ps` fork. The only
//! subprocess is tmux, and only for the sweep.
//!
//! Kept free of the rest of the CLI so the no-subprocess test and the
//! benchmark can include this very file.

use std::path::{Path, PathBuf};

use probes::meta::{self, FileMeta};
use probes::process::{self, PidFileState};
use probes::procfs::ProcessTable;
use probes::tmux::Tmux;
use watchdog::lead::{Clock, Head, LeadPort, Meta, Pane, PidCheck};

/// Answers the lead monitor's questions about this machine.
pub struct RealPort {
    /// The tmux server and the pane whose window is swept; `None` outside tmux.
    pub sweep: Option<(Tmux, Option<String>)>,
    /// `<bmb-dir>/consultant-pane-id`.
    pub consultant_pane_file: PathBuf,
}

impl LeadPort for RealPort {
    fn stat(&mut self, path: &str) -> Result<Meta, String> {
        meta::stat(Path::new(path)).map(|m| match m {
            FileMeta::Missing => Meta::Missing,
            FileMeta::Present { size, mtime_ns } => Meta::Present { size, mtime_ns },
        })
    }

    fn pid_file(&mut self, path: &str) -> PidCheck {
        match process::read_pid_file(Path::new(path)) {
            PidFileState::Alive(pid) => PidCheck::Alive(pid.get()),
            PidFileState::Dead(pid) => PidCheck::Dead(pid.get()),
            // Absent or empty: the startup window, said by no one. Anything
            // else (`-1`, `seven`, unreadable) is worth one error line.
            PidFileState::NotRecorded { reason } => match meta::stat(Path::new(path)) {
                Ok(FileMeta::Missing) | Ok(FileMeta::Present { size: 0, .. }) => {
                    PidCheck::NotRecorded
                }
                _ => PidCheck::Invalid(reason),
            },
        }
    }

    fn result_head(&mut self, path: &str) -> Result<Head, String> {
        meta::read_head(Path::new(path), Head::MAX_BYTES).map(Head::new)
    }

    fn cpu_pct(&mut self, _pid: u32) -> Option<u32> {
        // A percentage needs two samples of the tree's CPU clock over a known
        // span; the monitor asks once, at the moment of the stall, so there is
        // nothing honest to report and the field is left out.
        None
    }

    fn list_panes(&mut self) -> Result<Vec<Pane>, String> {
        let Some((tmux, target)) = &self.sweep else {
            return Ok(Vec::new());
        };
        let rows = tmux.list_panes(target.as_deref())?;
        let table = ProcessTable::scan().map_err(|e| format!("cannot scan /proc: {e}"))?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let mut tree = vec![row.pid];
                if let Some(pid) = process::Pid::new(row.pid) {
                    tree.extend(table.descendants(pid));
                }
                Pane {
                    id: row.id,
                    pid: row.pid,
                    dead: row.dead,
                    tree,
                }
            })
            .collect())
    }

    fn consultant_pane(&mut self) -> Option<String> {
        let head = meta::read_head(&self.consultant_pane_file, 64).ok()?;
        let id = head.first()?.trim();
        let valid =
            id.len() > 1 && id.starts_with('%') && id[1..].bytes().all(|b| b.is_ascii_digit());
        valid.then(|| id.to_owned())
    }
}

/// The system clock, with local time from the C library.
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> i64 {
        probes::clock::now_epoch()
    }

    fn hhmm(&self, epoch: i64) -> String {
        probes::clock::local_hhmm(epoch)
    }
}
