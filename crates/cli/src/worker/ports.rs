//! The machine behind the worker monitor's ports: the pid file, `/proc`,
//! the transcript, git.

use std::path::PathBuf;
use std::time::SystemTime;

use probes::agent::transcript;
use probes::fs::pid_file::{self, PidFileState};
use probes::os::pid::Pid;
use probes::os::process;
use probes::os::procfs::ProcessTable;
use probes::project::git;
use watchdog::worker::{CommitsReading, CpuClocks, PidReading, RememberedPid, WorkerPort};

use super::settings::Settings;

/// The pid file, read fresh each time, and the pid last seen alive.
pub(super) struct PidWatch {
    /// `None`: no pid file at all, the seed's empty `pid_file` (always "not yet").
    pub(super) path: Option<PathBuf>,
    pub(super) remembered: RememberedPid,
}

impl PidWatch {
    pub(super) fn read(&mut self) -> PidReading {
        let Some(path) = &self.path else {
            return PidReading::NotRecorded {
                reason: "no pid file: pass --pid-file or set PLOT_PID_FILE (or PLOT_WORKTREE)"
                    .to_owned(),
            };
        };
        let file = match pid_file::read_pid_file(path) {
            PidFileState::Alive(pid) => PidReading::Alive(pid.get()),
            PidFileState::Dead(pid) => PidReading::Dead(pid.get()),
            PidFileState::NotRecorded { reason } => PidReading::NotRecorded { reason },
        };
        self.remembered
            .read(file, |pid| Pid::new(pid).is_some_and(process::is_alive))
    }
}

/// The machine, as the worker monitor's ports see it.
pub(super) struct RealPorts {
    pub(super) pid_watch: PidWatch,
    /// `None`: no worktree (see [`Settings::worktree`]).
    pub(super) worktree: Option<PathBuf>,
    /// The worktree made absolute: Claude Code's slug is of its absolute cwd.
    pub(super) worktree_abs: Option<PathBuf>,
    pub(super) claude_dir: Option<PathBuf>,
    /// This pass's cost, for the verbose line and the benchmark.
    pub(super) scans: u32,
    pub(super) git_calls: u32,
}

impl RealPorts {
    pub(super) fn new(settings: &Settings) -> Self {
        RealPorts {
            pid_watch: PidWatch {
                path: settings.pid_file.clone(),
                remembered: RememberedPid::new(),
            },
            worktree: settings.worktree.clone(),
            worktree_abs: settings
                .worktree
                .as_ref()
                .map(|w| std::path::absolute(w).unwrap_or_else(|_| w.clone())),
            claude_dir: settings.claude_dir.clone(),
            scans: 0,
            git_calls: 0,
        }
    }
}

impl WorkerPort for RealPorts {
    fn pid(&mut self) -> PidReading {
        self.pid_watch.read()
    }

    fn transcript_quiet_seconds(&mut self) -> Option<u64> {
        let dir = self.claude_dir.as_deref()?;
        // No worktree, no project directory to look in: unknown.
        let worktree = self.worktree_abs.as_deref()?;
        transcript::quiet_seconds(dir, worktree, SystemTime::now())
    }

    fn descendant_cpu(&mut self, pid: u32) -> Option<CpuClocks> {
        self.scans += 1;
        let pid = Pid::new(pid)?;
        ProcessTable::scan()
            .ok()
            .map(|table| table.descendants_cpu(pid))
    }

    fn tree_fingerprint(&mut self) -> Result<String, watchdog::PortError> {
        let Some(worktree) = &self.worktree else {
            return Err("no worktree".into());
        };
        if !worktree.is_dir() {
            return Err(format!("{} is not a directory", worktree.display()).into());
        }
        self.git_calls += 1;
        Ok(git::tree_fingerprint(worktree, git::GIT_TIMEOUT)?)
    }

    fn commits(&mut self) -> CommitsReading {
        // No worktree: the seed's `monitor_has_commits` returns 2, unanswerable.
        let Some(worktree) = &self.worktree else {
            return CommitsReading::Unanswerable {
                reason: "no worktree".to_owned(),
            };
        };
        // The base ref is read from ref files; only the count is a git call.
        if let Err(reason) = git::local_base_ref(worktree) {
            return CommitsReading::Unanswerable {
                reason: reason.to_string(),
            };
        }
        self.git_calls += 1;
        match git::commits_since_base(worktree, git::GIT_TIMEOUT) {
            Ok(n) => CommitsReading::Count(n),
            Err(reason) => CommitsReading::Unanswerable {
                reason: reason.to_string(),
            },
        }
    }
}
