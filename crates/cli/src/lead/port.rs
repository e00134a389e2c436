//! The real machine behind the lead monitor's port: `probes` answers every
//! question with syscalls, never with a `test`, `stat` or `ps` fork. The only
//! subprocess is tmux, and only for the sweep.
//!
//! Public, so the no-subprocess test and the benchmark measure this very
//! adapter.

use std::path::{Path, PathBuf};

use probes::fs::meta::{self, FileMeta};
use probes::fs::pid_files::{PidFileCheck, PidFiles};
use probes::os::cpu::CpuSampler;
use probes::os::pid::Pid;
use probes::os::procfs::ProcessTable;
use probes::tmux::Tmux;
use watchdog::PortError;
use watchdog::lead::{Head, LeadPort, Meta, Pane, PidCheck};

/// Answers the lead monitor's questions about this machine.
pub struct RealPort {
    /// The tmux server and the pane whose window is swept; `None` outside tmux.
    sweep: Option<(Tmux, Option<String>)>,
    /// `<bmb-dir>/consultant-pane-id`.
    consultant_pane_file: PathBuf,
    /// Each pid file as last read; a live pid re-checked through its pidfd.
    pid_files: PidFiles,
    /// The last CPU sample per pid.
    cpu: CpuSampler,
}

impl RealPort {
    /// The port of a lead pass on this machine: `sweep` is the tmux server and pane whose window
    /// is swept for stray panes (none outside tmux), `consultant_pane_file` where the
    /// Consultant's pane id is kept.
    pub fn new(sweep: Option<(Tmux, Option<String>)>, consultant_pane_file: PathBuf) -> RealPort {
        RealPort {
            sweep,
            consultant_pane_file,
            pid_files: PidFiles::new(),
            cpu: CpuSampler::new(),
        }
    }
}

impl LeadPort for RealPort {
    fn stat(&mut self, path: &str) -> Result<Meta, PortError> {
        let meta = meta::stat(Path::new(path))?;
        Ok(match meta {
            FileMeta::Missing => Meta::Missing,
            FileMeta::Present {
                size,
                mtime_ns,
                regular,
            } => Meta::Present {
                size,
                mtime_ns,
                regular,
            },
        })
    }

    /// One `stat` per pass for an unchanged file (see [`PidFiles`]).
    fn pid_file(&mut self, path: &str) -> PidCheck {
        match self.pid_files.check(Path::new(path)) {
            PidFileCheck::Alive(pid) => PidCheck::Alive(pid),
            PidFileCheck::Dead(pid) => PidCheck::Dead(pid),
            PidFileCheck::NotRecorded => PidCheck::NotRecorded,
            PidFileCheck::Invalid(why) => PidCheck::Invalid(why),
        }
    }

    fn result_head(&mut self, path: &str) -> Result<Head, PortError> {
        let head = meta::read_head(Path::new(path), Head::MAX_BYTES)?;
        Ok(Head::new(head))
    }

    fn cpu_pct(&mut self, pid: u32) -> Option<u32> {
        self.cpu.sample(pid)
    }

    fn list_panes(&mut self) -> Result<Vec<Pane>, PortError> {
        let Some((tmux, target)) = &self.sweep else {
            return Ok(Vec::new());
        };
        let rows = tmux.list_panes(target.as_deref())?;
        let table = ProcessTable::scan().map_err(|e| format!("cannot scan /proc: {e}"))?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let mut tree = vec![row.pid];
                if let Some(pid) = Pid::new(row.pid) {
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
