//! How the tmux commands reach tmux: which server (`-L`/`-S`, as tmux's own
//! flags select it), which binary, and, for `host:session`, which ssh config.

use std::time::Duration;

use probes::ssh::Remote;
use probes::tmux::{Server, Tmux};

/// Which tmux server, as tmux's own `-L` and `-S` select it; shared by every command that talks to tmux.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SocketArgs {
    /// Use the tmux server on socket NAME (as `tmux -L`).
    #[arg(
        short = 'L',
        value_name = "SOCKET_NAME",
        conflicts_with = "socket_path"
    )]
    socket_name: Option<String>,
    /// Use the tmux server on socket PATH (as `tmux -S`).
    #[arg(short = 'S', value_name = "SOCKET_PATH")]
    socket_path: Option<String>,
}

impl SocketArgs {
    pub(crate) fn server(&self) -> Server {
        match (&self.socket_name, &self.socket_path) {
            (Some(name), _) => Server::Name(name.clone()),
            (None, Some(path)) => Server::Path(path.clone()),
            (None, None) => Server::Default,
        }
    }
}

/// How the tmux server(s) are reached; shared by `watch`, `list` and `stop`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ServerArgs {
    #[command(flatten)]
    socket: SocketArgs,
    /// A tmux-compatible binary; on a remote host the remote shell expands it (`$HOME/bin/tmux`).
    #[arg(long, value_name = "PATH", default_value = "tmux")]
    tmux_bin: String,
    /// An ssh config file for `host:session` targets (`ssh -F`); ssh otherwise reads the passwd home's.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<String>,
    /// Set by `watch`: every call to an alias rides on one master connection.
    #[arg(skip)]
    pub multiplex: Option<probes::ssh::Multiplex>,
    /// A config file's `[hosts.ALIAS]` tables: that host's tmux server and
    /// binary, instead of the ones above.
    #[arg(skip)]
    pub per_host: std::collections::BTreeMap<String, HostServer>,
}

/// One host's own tmux server and binary (`[hosts.ALIAS]` in a config file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostServer {
    pub socket_name: Option<String>,
    pub socket_path: Option<String>,
    pub tmux_bin: Option<String>,
}

impl ServerArgs {
    /// The server a config file's `[server]` table names, as the flags would.
    pub(crate) fn new(
        socket_name: Option<String>,
        socket_path: Option<String>,
        tmux_bin: Option<String>,
        ssh_config: Option<String>,
    ) -> ServerArgs {
        ServerArgs {
            socket: SocketArgs {
                socket_name,
                socket_path,
            },
            tmux_bin: tmux_bin.unwrap_or_else(|| "tmux".to_string()),
            ssh_config,
            multiplex: None,
            per_host: std::collections::BTreeMap::new(),
        }
    }

    /// Whether no flag chose anything (the default server, `tmux`, ssh's own config).
    pub(crate) fn is_default(&self) -> bool {
        self.socket.socket_name.is_none()
            && self.socket.socket_path.is_none()
            && self.tmux_bin == "tmux"
            && self.ssh_config.is_none()
    }

    pub(crate) fn server(&self) -> Server {
        self.socket.server()
    }

    /// The tmux binary (`--tmux-bin`, `[server] tmux_bin`).
    pub(crate) fn tmux_bin(&self) -> &str {
        &self.tmux_bin
    }

    /// The tmux client for `host` (`None`: this machine).
    pub(crate) fn tmux(&self, host: Option<&str>, timeout: Duration) -> Tmux {
        let own = host.and_then(|h| self.per_host.get(h));
        let server = match own {
            Some(HostServer {
                socket_name: Some(name),
                ..
            }) => Server::Name(name.clone()),
            Some(HostServer {
                socket_path: Some(path),
                ..
            }) => Server::Path(path.clone()),
            _ => self.server(),
        };
        let mut tmux = Tmux::new(server);
        tmux.program = own
            .and_then(|o| o.tmux_bin.clone())
            .unwrap_or_else(|| self.tmux_bin.clone());
        tmux.timeout = timeout;
        tmux.remote = host.map(|alias| self.remote(alias));
        tmux
    }

    /// An ssh alias, reached with `--ssh-config` when one was given.
    pub(crate) fn remote(&self, alias: &str) -> Remote {
        let remote = Remote::new(alias, self.ssh_config.clone());
        match &self.multiplex {
            Some(multiplex) => remote.multiplexed(multiplex),
            None => remote,
        }
    }

    pub(crate) fn forward(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(name) = &self.socket.socket_name {
            args.extend(["-L".to_string(), name.clone()]);
        }
        if let Some(path) = &self.socket.socket_path {
            args.extend(["-S".to_string(), path.clone()]);
        }
        args.extend(["--tmux-bin".to_string(), self.tmux_bin.clone()]);
        if let Some(config) = &self.ssh_config {
            args.extend(["--ssh-config".to_string(), config.clone()]);
        }
        args
    }

    /// A key for the state folder that tells tmux servers apart by the
    /// socket file they listen on, however it was spelled (`-L r`, `-S
    /// /tmp/tmux-0/r`): one server, one folder, one lock per target.
    pub(crate) fn state_key(&self) -> String {
        state_key_of(&self.server())
    }

    /// The server's name for alerts (the `server` label, `BMB_SERVER`): the
    /// socket file its state key is made of, as a person reads it.
    pub(crate) fn identity(&self) -> String {
        identity_of(&self.server())
    }

    /// The tmux client for a target on `host` that may name a server of its
    /// own (`socket_name`/`socket_path` in its `[[targets]]` table).
    pub(crate) fn tmux_on(
        &self,
        host: Option<&str>,
        own: Option<&Server>,
        timeout: Duration,
    ) -> Tmux {
        let mut tmux = self.tmux(host, timeout);
        if let Some(server) = own {
            tmux.server = server.clone();
        }
        tmux
    }
}

/// [`ServerArgs::state_key`] of any server: its socket file, in hex.
pub(crate) fn state_key_of(server: &Server) -> String {
    format!("S-{}", hex(&server.socket_file().to_string_lossy()))
}

/// [`ServerArgs::identity`] of any server: its socket file.
pub(crate) fn identity_of(server: &Server) -> String {
    server.socket_file().to_string_lossy().into_owned()
}

impl ServerArgs {
    /// The key this folder had when it went by the spelling (before the
    /// socket file named it), so a monitor upgraded in place keeps its memory.
    pub(crate) fn legacy_state_key(&self) -> String {
        match (&self.socket.socket_name, &self.socket.socket_path) {
            (Some(name), _) => format!("L-{}", hex(name)),
            (None, Some(path)) => format!("S-{}", hex(path)),
            (None, None) => "default".to_string(),
        }
    }
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}
