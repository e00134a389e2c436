//! What each pane's processes tell: the foreground and Claude Code's session
//! file, read from /proc here and with one bounded ssh call per remote host.

use std::collections::BTreeMap;
use std::time::Duration;

use probes::run::{self, Limits};
use probes::tmux::PaneCapture;
use watchdog::witness::{Witness, session_version};

use super::*;

impl Watch<'_> {
    /// What each pane's processes tell: the agent's own account (Claude
    /// Code's session file, with the CLI version it records) and whether
    /// anything runs under the pane's foreground process. Read directly on
    /// this machine, and with one bounded ssh call per remote host, made
    /// only when it has something to ask.
    pub(super) fn pane_processes(
        &self,
        captures: &[Result<PaneCapture, String>],
    ) -> Vec<PaneProcesses> {
        let mut found: Vec<PaneProcesses> = vec![PaneProcesses::default(); captures.len()];
        let mut remote: BTreeMap<&str, Vec<(usize, u32)>> = BTreeMap::new();
        for (index, capture) in captures.iter().enumerate() {
            let Some(capture) = capture.as_ref().ok() else {
                continue;
            };
            let Some(pane_pid) = capture.pane_pid else {
                continue;
            };
            match self.watched[index].target.host.as_deref() {
                None => {
                    found[index].foreground = probes::procfs::foreground_of(
                        pane_pid,
                        watchdog::session::TERMINAL_WRAPPERS,
                    );
                    if !self.args.no_witness {
                        found[index].witness = Some(local_witness(pane_pid));
                    }
                }
                Some(host) => remote.entry(host).or_default().push((index, pane_pid)),
            }
        }
        for (host, panes) in remote {
            let pids: Vec<u32> = panes.iter().map(|&(_, pid)| pid).collect();
            let mut script = probes::procfs::remote_foreground_script(&pids);
            if !self.args.no_witness {
                script.push_str(&probes::claude::remote_script(&pids));
            }
            let ssh = self.args.server.remote(host);
            let outcome = run::run(
                &ssh.invocation(&script),
                &Limits::with_timeout(Duration::from_secs(self.args.capture_timeout)),
            );
            let text = outcome.success_stdout().map(|out| out.text());
            let files = text
                .as_deref()
                .map(probes::claude::parse_remote)
                .unwrap_or_default();
            let mut fronts = text
                .as_deref()
                .map(probes::procfs::parse_remote_foreground)
                .unwrap_or_default();
            for (index, pane_pid) in panes {
                found[index].foreground = fronts
                    .iter()
                    .position(|(pid, _)| *pid == pane_pid)
                    .map(|at| fronts.swap_remove(at).1);
                if self.args.no_witness {
                    continue;
                }
                let witness = match files.iter().find(|(root, _)| *root == pane_pid) {
                    Some((_, file)) => (
                        Witness::from_session_file(&file.text, file.start_ticks),
                        session_version(&file.text),
                    ),
                    None if text.is_some() => (Witness::Absent(NO_SESSION_FILE.to_string()), None),
                    None => (
                        Witness::Absent(format!(
                            "the session-file search on {host} {}",
                            outcome.describe()
                        )),
                        None,
                    ),
                };
                found[index].witness = Some(witness);
            }
        }
        found
    }
}

pub(super) const NO_SESSION_FILE: &str = "no Claude Code session file among the pane's processes";

/// Claude Code's session file for a local pane, read as a witness, and the
/// version it records.
pub(super) fn local_witness(pane_pid: u32) -> (Witness, Option<String>) {
    match probes::claude::find_session_file(pane_pid) {
        Some(file) => (
            Witness::from_session_file(&file.text, file.start_ticks),
            session_version(&file.text),
        ),
        None => (Witness::Absent(NO_SESSION_FILE.to_string()), None),
    }
}

/// What a pane's processes told this cycle.
#[derive(Debug, Clone, Default)]
pub(super) struct PaneProcesses {
    /// The session file's account and the CLI version it records; `None`
    /// with `--no-witness` or when the pane had no pid.
    pub(super) witness: Option<(Witness, Option<String>)>,
    /// The process in the pane's foreground as `/proc` tells it; `None`
    /// when not read (a shell in front of a pane whose processes could not
    /// be read then counts as idle: typing into a shell runs a command).
    pub(super) foreground: Option<probes::procfs::ForegroundProcess>,
}
