//! A minimal tmux adapter for the lead monitor: list the panes of one window,
//! and type a line into a pane.
//!
//! Every call goes through [`crate::run`] under a wall clock, so a hung or
//! dead server costs a timeout and an error, never a frozen monitor.

use std::time::Duration;

use crate::run::{Invocation, Limits, run};

/// Which tmux server to talk to: the default one, `-L NAME`, or `-S PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Server {
    /// The server `$TMUX` (or the default socket) names.
    #[default]
    Default,
    /// `tmux -L NAME`: a socket called NAME in tmux's socket directory.
    Name(String),
    /// `tmux -S PATH`: a socket at PATH.
    Path(String),
}

/// One row of `list-panes -F '#{pane_id} #{pane_pid} #{pane_dead}'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRow {
    /// `%N`.
    pub id: String,
    /// The pid of the pane's first process.
    pub pid: u32,
    /// `pane_dead` was `1`: the process ended and the pane remains (remain-on-exit).
    pub dead: bool,
}

/// A tmux client for one server, with the wall clock each call runs under.
#[derive(Debug, Clone)]
pub struct Tmux {
    pub server: Server,
    pub program: String,
    pub timeout: Duration,
}

impl Tmux {
    pub fn new(server: Server) -> Self {
        Tmux {
            server,
            program: "tmux".to_owned(),
            timeout: Duration::from_secs(5),
        }
    }

    fn invocation(&self) -> Invocation {
        let inv = Invocation::new(&self.program);
        match &self.server {
            Server::Default => inv,
            Server::Name(name) => inv.arg("-L").arg(name),
            Server::Path(path) => inv.arg("-S").arg(path),
        }
    }

    fn call(&self, inv: Invocation) -> Result<String, String> {
        let what = inv.display();
        let outcome = run(&inv, &Limits::with_timeout(self.timeout));
        match outcome.success_stdout() {
            Some(out) => Ok(out.text()),
            None => Err(format!("`{what}` {}", outcome.describe())),
        }
    }

    /// The panes of ONE window: the window holding `target` (a pane id such as
    /// `%3`), or the server's current window when `target` is `None`. Never `-s`
    /// or `-a`: other windows and sessions belong to the user, not to us.
    pub fn list_panes(&self, target: Option<&str>) -> Result<Vec<PaneRow>, String> {
        let mut inv = self.invocation().arg("list-panes");
        if let Some(target) = target {
            inv = inv.arg("-t").arg(target);
        }
        let out = self.call(inv.arg("-F").arg("#{pane_id} #{pane_pid} #{pane_dead}"))?;
        out.lines()
            .filter(|line| !line.trim().is_empty())
            .map(parse_pane_row)
            .collect()
    }

    /// Types `text` literally into `pane`, then presses Enter in a SEPARATE
    /// call: sent together, a fast TUI can take the Enter as part of a paste.
    pub fn send_line(&self, pane: &str, text: &str) -> Result<(), String> {
        self.call(
            self.invocation()
                .args(["send-keys", "-t", pane, "-l", "--"])
                .arg(text),
        )?;
        self.call(self.invocation().args(["send-keys", "-t", pane, "Enter"]))?;
        Ok(())
    }
}

/// Parses `%3 12345 0`.
fn parse_pane_row(line: &str) -> Result<PaneRow, String> {
    let mut fields = line.split_whitespace();
    let bad = || format!("unexpected list-panes row {line:?}");
    let id = fields
        .next()
        .filter(|id| id.starts_with('%'))
        .ok_or_else(bad)?;
    let pid = fields.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let dead = match fields.next() {
        Some("1") => true,
        Some("0") | Some("") | None => false,
        Some(_) => return Err(bad()),
    };
    Ok(PaneRow {
        id: id.to_owned(),
        pid,
        dead,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_and_garbage_is_named() {
        assert_eq!(
            parse_pane_row("%3 4242 1").unwrap(),
            PaneRow {
                id: "%3".into(),
                pid: 4242,
                dead: true
            }
        );
        assert!(!parse_pane_row("%0 1 0").unwrap().dead);
        let err = parse_pane_row("seven").unwrap_err();
        assert!(err.contains("seven"), "{err}");
        assert!(parse_pane_row("%1 x 0").is_err());
    }

    #[test]
    fn a_missing_server_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let tmux = Tmux::new(Server::Path(
            dir.path().join("no-server").to_string_lossy().into_owned(),
        ));
        let err = tmux.list_panes(None).unwrap_err();
        assert!(err.contains("list-panes"), "{err}");
    }
}
