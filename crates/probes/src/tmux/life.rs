//! A tmux server's life through a client: a private server started, its
//! sessions and panes made and ended (for the demo and the tests).

use super::client::Tmux;
use super::error::TmuxError;
use crate::run::{Limits, run};

impl Tmux {
    /// Starts a detached session running `command` (argv, no shell).
    pub fn new_detached_session(&self, name: &str, command: &[String]) -> Result<(), TmuxError> {
        let mut args = vec!["new-session", "-d", "-s", name, "--"];
        args.extend(command.iter().map(String::as_str));
        self.call(self.command(&args)).map(|_| ())
    }

    /// Ends the session named exactly `name`.
    pub fn kill_session(&self, name: &str) -> Result<(), TmuxError> {
        let target = format!("={name}");
        self.call_on(self.command(&["kill-session", "-t", &target]), Some(name))
            .map(|_| ())
    }

    /// Ends the whole server (tests end their private servers this way).
    /// Ends the server, even while this process stops (it is clean-up).
    pub fn kill_server(&self) -> Result<(), TmuxError> {
        let inv = self.command(&["kill-server"]);
        let outcome = run(&inv, &Limits::with_timeout(self.timeout).for_cleanup());
        match outcome.success_stdout() {
            Some(_) => Ok(()),
            None => Err(self.failure(&inv, &outcome, None)),
        }
    }

    /// Starts a server of its own with no configuration file (`-f
    /// /dev/null`, so no `.tmux.conf` changes what its panes show), its first
    /// session `name` sized `cols`×`rows` and running `command`; returns the
    /// server's pid, which its owner waits for when it ends it.
    pub fn start_private_server(
        &self,
        name: &str,
        (cols, rows): (u16, u16),
        command: &[String],
    ) -> Result<u32, TmuxError> {
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let mut args = vec![
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &cols,
            "-y",
            &rows,
            "--",
        ];
        args.extend(command.iter().map(String::as_str));
        self.call(self.command(&args))?;
        let pid = self.call(self.command(&["display-message", "-p", "#{pid}"]))?;
        pid.trim().parse().map_err(|_| TmuxError::UnexpectedPid {
            printed: pid.trim().to_string(),
        })
    }

    /// Replaces whatever runs in `pane` with `command` (`respawn-pane -k`).
    pub fn respawn_pane(&self, pane: &str, command: &[String]) -> Result<(), TmuxError> {
        let mut args = vec!["respawn-pane", "-k", "-t", pane, "--"];
        args.extend(command.iter().map(String::as_str));
        self.call(self.command(&args)).map(|_| ())
    }
}
