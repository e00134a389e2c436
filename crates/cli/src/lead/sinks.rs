//! Where the lead monitor's words go: stdout and the Lead's pane, the
//! Consultant's file and pane, stderr; a failing sink is said once per change.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use probes::fs::inbox::InboxProblem;
use probes::tmux::Tmux;
use watchdog::lead::Output;

use crate::output::{SaidOnce, print_checked, say};

/// Where the monitor's words go.
pub(super) struct Sinks {
    pub(super) tmux: Tmux,
    pub(super) lead_pane: Option<String>,
    pub(super) consultant_pane: Option<String>,
    pub(super) consultant_out: PathBuf,
    /// The last error per sink, so a failing sink is reported once per change.
    pub(super) said: SaidOnce<String>,
}

impl Sinks {
    pub(super) fn route(&mut self, outputs: Vec<Output>) {
        for output in outputs {
            match output {
                Output::Lead(line) => {
                    match print_checked(&line) {
                        Ok(()) => self.clear("stdout"),
                        Err(e) => self.error_once("stdout", &format!("lead: stdout: {e}")),
                    }
                    if let Some(pane) = self.lead_pane.clone() {
                        self.type_into("lead pane", &pane, &line);
                    }
                }
                Output::Consultant(line) => {
                    let appended = OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&self.consultant_out)
                        // One write per line: appends from one writer never interleave.
                        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
                    match appended {
                        Ok(()) => self.clear("consultant-out"),
                        Err(e) => self.error_once(
                            "consultant-out",
                            &format!(
                                "lead: consultant file {}: {e}",
                                self.consultant_out.display()
                            ),
                        ),
                    }
                    if let Some(pane) = self.consultant_pane.clone() {
                        self.type_into("consultant pane", &pane, &line);
                    }
                }
                Output::Error(line) => self.error(&line),
            }
        }
    }

    pub(super) fn type_into(&mut self, what: &str, pane: &str, line: &str) {
        match self.tmux.send_line(pane, line) {
            Ok(()) => self.clear(what),
            Err(e) => self.error_once(what, &format!("lead: {what} {pane}: {e}")),
        }
    }

    pub(super) fn inbox_problem(&mut self, problem: &InboxProblem) {
        let line = format!("lead: {problem}");
        match problem.key() {
            Some(key) => self.error_once(&key, &line),
            None => self.error(&line),
        }
    }

    pub(super) fn error(&mut self, line: &str) {
        say(line);
    }

    pub(super) fn error_once(&mut self, key: &str, line: &str) {
        self.said.say(key.to_owned(), line);
    }

    pub(super) fn clear(&mut self, key: &str) {
        self.said.clear(&key.to_owned());
    }
}
