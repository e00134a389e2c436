//! Which tmux server a client talks to (`-L`/`-S`), and its socket file.

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
