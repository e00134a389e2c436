//! What each pane's processes tell (`probes::agent::claude`), as the monitor's
//! observation: the foreground, and the session file as a second witness.

use std::collections::BTreeMap;
use std::time::Duration;

use probes::agent::claude::{SessionSearch, local_pane};
use probes::remote::procs::remote_panes;
use probes::run::Limits;
use probes::tmux::PaneCapture;
use watchdog::session::witness::{Witness, session_version};

use super::cycle::Watch;

impl Watch<'_> {
    /// Read directly on this machine; on a remote host, in the capture's
    /// call, and with one more bounded ssh call per host only for a pane
    /// that call did not read.
    /// Per capture of `captures` (whose targets `indices` says), in their order.
    pub(super) fn pane_processes(
        &self,
        indices: &[usize],
        captures: &[Result<PaneCapture, String>],
    ) -> Vec<PaneProcesses> {
        let with_session = !self.args.no_witness;
        let mut found: Vec<PaneProcesses> = vec![PaneProcesses::default(); captures.len()];
        let mut remote: BTreeMap<&str, Vec<(usize, u32)>> = BTreeMap::new();
        for (slot, (&index, capture)) in indices.iter().zip(captures).enumerate() {
            let Some(pane_pid) = capture.as_ref().ok().and_then(|c| c.pane_pid) else {
                continue;
            };
            match self.watched[index].target.host.as_deref() {
                None => {
                    found[slot] = PaneProcesses::from(local_pane(
                        pane_pid,
                        watchdog::session::TERMINAL_WRAPPERS,
                        with_session,
                    ));
                }
                Some(host) => match self.hosts.processes_of(index, pane_pid) {
                    // Read in the capture's own call: no round trip of its own.
                    Some(read) => found[slot] = PaneProcesses::from(read),
                    // A pane the call did not read (the first-sight search
                    // found another one, or the user switched panes
                    // between the listing and the capture).
                    None => remote.entry(host).or_default().push((slot, pane_pid)),
                },
            }
        }
        let limits = Limits::with_timeout(Duration::from_secs(self.args.capture_timeout));
        for (host, panes) in remote {
            let pids: Vec<u32> = panes.iter().map(|&(_, pid)| pid).collect();
            let read = remote_panes(&self.args.server.remote(host), &pids, with_session, &limits);
            for ((slot, _), processes) in panes.into_iter().zip(read) {
                found[slot] = PaneProcesses::from(processes);
            }
        }
        found
    }
}

/// What a pane's processes told this cycle.
#[derive(Debug, Clone, Default)]
pub(super) struct PaneProcesses {
    /// The session file's account and the CLI version it records; `None`
    /// with `--no-witness` or when the pane had no pid.
    pub(super) witness: Option<(Witness, Option<String>)>,
    pub(super) foreground: Option<probes::os::procfs::ForegroundProcess>,
}

impl From<probes::agent::claude::PaneProcesses> for PaneProcesses {
    fn from(read: probes::agent::claude::PaneProcesses) -> PaneProcesses {
        let witness = match read.session {
            SessionSearch::NotAsked => None,
            SessionSearch::Found(file) => Some((
                Witness::from_session_file(&file.text, file.start_ticks),
                session_version(&file.text),
            )),
            SessionSearch::None => Some((
                Witness::Absent(
                    "no Claude Code session file among the pane's processes".to_string(),
                ),
                None,
            )),
            SessionSearch::Failed(why) => Some((Witness::Absent(why), None)),
        };
        PaneProcesses {
            witness,
            foreground: read.foreground,
        }
    }
}
