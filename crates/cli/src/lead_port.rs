//! The real machine behind the lead monitor's port: `probes` answers every
//! question with syscalls, never with a `test`, `stat` or `ps` fork. The only
//! subprocess is tmux, and only for the sweep.
//!
//! Kept free of the rest of the CLI so the no-subprocess test and the
//! benchmark can include this very file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use probes::meta::{self, FileMeta};
use probes::pidfd::Liveness;
use probes::process::{self, PidFileState};
use probes::procfs::ProcessTable;
use probes::tmux::Tmux;
use watchdog::lead::{Clock, Head, LeadPort, Meta, Pane, PidCheck};

/// Answers the lead monitor's questions about this machine.
pub struct RealPort {
    /// The tmux server and the pane whose window is swept; `None` outside tmux.
    sweep: Option<(Tmux, Option<String>)>,
    /// `<bmb-dir>/consultant-pane-id`.
    consultant_pane_file: PathBuf,
    /// Each pid file's metadata when it was last read, and what it said.
    pid_files: HashMap<String, (FileMeta, PidCheck)>,
    /// Held pidfds: a live pid is re-checked with one `poll`, not a `/proc` read.
    liveness: Liveness,
    /// The last CPU sample per pid: when, and the tree's ticks then.
    cpu_samples: HashMap<u32, (Instant, u64)>,
}

impl RealPort {
    pub fn new(sweep: Option<(Tmux, Option<String>)>, consultant_pane_file: PathBuf) -> RealPort {
        RealPort {
            sweep,
            consultant_pane_file,
            pid_files: HashMap::new(),
            liveness: Liveness::new(),
            cpu_samples: HashMap::new(),
        }
    }

    fn read_pid_file(path: &str) -> PidCheck {
        match process::read_pid_file(Path::new(path)) {
            PidFileState::Alive(pid) => PidCheck::Alive(pid.get()),
            PidFileState::Dead(pid) => PidCheck::Dead(pid.get()),
            PidFileState::NotRecorded { reason } => PidCheck::Invalid(reason),
        }
    }
}

impl LeadPort for RealPort {
    fn stat(&mut self, path: &str) -> Result<Meta, String> {
        meta::stat(Path::new(path)).map(|m| match m {
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

    /// A pid file is read again only when its size or mtime changed (one
    /// `stat` instead of a read per pass). An unchanged file naming a dead pid
    /// stays dead without asking again, which also keeps a recycled pid from
    /// bringing it back to life; a live one is checked every time.
    fn pid_file(&mut self, path: &str) -> PidCheck {
        let meta = match meta::stat(Path::new(path)) {
            // Absent or empty: the startup window, said by no one.
            Ok(FileMeta::Missing) | Ok(FileMeta::Present { size: 0, .. }) => {
                self.pid_files.remove(path);
                return PidCheck::NotRecorded;
            }
            Ok(meta) => meta,
            Err(e) => return PidCheck::Invalid(e),
        };
        let check = match self.pid_files.get(path) {
            Some((seen, check)) if *seen == meta => match check {
                PidCheck::Alive(pid) => match process::Pid::new(*pid) {
                    Some(p) if self.liveness.is_alive(p) => PidCheck::Alive(*pid),
                    _ => PidCheck::Dead(*pid),
                },
                other => other.clone(),
            },
            // Anything that is not a pid (`-1`, `seven`, unreadable) is worth one error line.
            _ => RealPort::read_pid_file(path),
        };
        self.pid_files
            .insert(path.to_owned(), (meta, check.clone()));
        check
    }

    fn result_head(&mut self, path: &str) -> Result<Head, String> {
        meta::read_head(Path::new(path), Head::MAX_BYTES).map(Head::new)
    }

    /// The tree's CPU ticks (the agent's own, its reaped children's, and every
    /// descendant's) over the time since the previous call for this pid.
    fn cpu_pct(&mut self, pid: u32) -> Option<u32> {
        let now = Instant::now();
        let ticks = process::Pid::new(pid).and_then(|p| {
            let table = ProcessTable::scan().ok()?;
            let own = table.get(pid)?.own_ticks;
            Some(own + table.descendants_cpu(p).values().sum::<u64>())
        });
        let Some(ticks) = ticks else {
            self.cpu_samples.remove(&pid);
            return None;
        };
        let (then, before) = self.cpu_samples.insert(pid, (now, ticks))?;
        let secs = now.duration_since(then).as_secs_f64();
        if secs < 0.5 || ticks < before {
            return None;
        }
        let cpu_secs = (ticks - before) as f64 / probes::clock::ticks_per_second() as f64;
        Some((cpu_secs / secs * 100.0).round() as u32)
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

/// The system clock, with local time in the system time zone.
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> i64 {
        probes::clock::now_epoch()
    }

    fn hhmm(&self, epoch: i64) -> String {
        probes::clock::local_hhmm(epoch)
    }
}
