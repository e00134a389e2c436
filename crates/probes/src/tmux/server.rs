//! Which tmux server a client talks to, and the server's life: its socket
//! file, starting a private one, its sessions and panes made and ended.

use super::client::Tmux;
use super::error::TmuxError;
use crate::run::{Limits, run};

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

impl Server {
    /// The socket file this server listens on, on this machine, as tmux
    /// finds it: `-S PATH` itself, `-L NAME` and the default one in
    /// `${TMUX_TMPDIR:-/tmp}/tmux-<uid>/` (the default one is `$TMUX`'s when
    /// inside tmux), with symlinks resolved where the file exists. Two
    /// spellings of one server give one path, so it identifies the server.
    pub fn socket_file(&self) -> std::path::PathBuf {
        let dir = || {
            let base = std::env::var_os("TMUX_TMPDIR")
                .filter(|d| !d.is_empty())
                .map_or_else(
                    || std::path::PathBuf::from("/tmp"),
                    std::path::PathBuf::from,
                );
            base.join(format!("tmux-{}", rustix::process::getuid().as_raw()))
        };
        let path = match self {
            Server::Path(path) => std::path::PathBuf::from(path),
            Server::Name(name) => dir().join(name),
            Server::Default => std::env::var("TMUX")
                .ok()
                .and_then(|tmux| tmux.split(',').next().map(std::path::PathBuf::from))
                .filter(|path| !path.as_os_str().is_empty())
                .unwrap_or_else(|| dir().join("default")),
        };
        let absolute = if path.is_absolute() {
            path
        } else {
            std::env::current_dir().map_or(path.clone(), |cwd| cwd.join(&path))
        };
        absolute.canonicalize().unwrap_or(absolute)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_spellings_of_one_server_name_one_socket_file() {
        let dir = tempfile::tempdir().unwrap();
        let by_name = Server::Name("bmb-spelling-test".to_string()).socket_file();
        assert!(by_name.ends_with("bmb-spelling-test"), "{by_name:?}");
        let by_path = Server::Path(by_name.to_string_lossy().into_owned()).socket_file();
        assert_eq!(by_name, by_path);
        // A symlink to a socket file is that socket file.
        let real = dir.path().join("real.sock");
        std::fs::write(&real, "").unwrap();
        let link = dir.path().join("link.sock");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(
            Server::Path(link.to_string_lossy().into_owned()).socket_file(),
            real.canonicalize().unwrap()
        );
    }
}
