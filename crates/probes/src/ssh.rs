//! Remote hosts, by ssh alias: the alias goes to ssh, which resolves
//! HostName, Port, User and IdentityFile itself (seed: never a literal host).
//!
//! A remote command is one string the REMOTE shell parses, so every word is
//! quoted for that shell here: a `$VAR` or a `#{format}` must reach it
//! unexpanded by anything local (there is no local shell: ssh gets argv).

use std::time::Duration;

use crate::run::Invocation;

/// One ssh alias and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub alias: String,
    /// `ssh -F FILE`: ssh reads the passwd home's config, not `$HOME`'s, so tests pass one.
    pub config: Option<String>,
    /// Bounds only the TCP connect; the caller's wall clock bounds the rest.
    pub connect_timeout: Duration,
    /// The multiplexed connection every call to this alias shares; `None`:
    /// each call opens a connection of its own.
    pub control: Option<ControlSocket>,
}

impl Remote {
    pub fn new(alias: impl Into<String>, config: Option<String>) -> Remote {
        Remote {
            alias: alias.into(),
            config,
            connect_timeout: Duration::from_secs(5),
            control: None,
        }
    }

    /// The same alias, its calls sharing one connection kept under `multiplex`.
    pub fn multiplexed(mut self, multiplex: &Multiplex) -> Remote {
        self.control = Some(multiplex.socket_for(&self.alias, self.config.as_deref()));
        self
    }

    /// `ssh [-F FILE] -o BatchMode=yes -o ConnectTimeout=N [multiplexing] -- ALIAS COMMAND`.
    /// BatchMode: a password or host-key prompt would hang a loop nobody watches.
    pub fn invocation(&self, remote_command: &str) -> Invocation {
        let mut ssh = Invocation::new("ssh");
        if let Some(config) = &self.config {
            ssh = ssh.arg("-F").arg(config);
        }
        let connect = format!("ConnectTimeout={}", self.connect_timeout.as_secs().max(1));
        ssh = ssh.args(["-o", "BatchMode=yes", "-o", &connect]);
        if let Some(control) = &self.control {
            // The first call becomes the master (ssh forks it into the
            // background, its own session, its stdio on /dev/null, so it
            // holds none of this call's pipes); the next ones ride on it.
            let persist = format!("ControlPersist={}", control.persist.as_secs().max(1));
            ssh = ssh
                .args(["-o", "ControlMaster=auto", "-o"])
                .arg(control.option())
                .args(["-o", &persist]);
        }
        ssh.args(["--", &self.alias]).arg(remote_command)
    }

    /// Ends this alias's master connection, if one was made (`ssh -O exit`),
    /// and removes its socket. Clean-up: it runs while the process stops.
    /// Spawns nothing when there is no socket.
    pub fn close_master(&self) {
        let Some(control) = &self.control else {
            return;
        };
        if std::fs::symlink_metadata(&control.path).is_err() {
            return;
        }
        let mut ssh = Invocation::new("ssh");
        if let Some(config) = &self.config {
            ssh = ssh.arg("-F").arg(config);
        }
        let ssh = ssh
            .arg("-o")
            .arg(control.option())
            .args(["-O", "exit", "--", &self.alias]);
        let limits = crate::run::Limits::with_timeout(Duration::from_secs(5)).for_cleanup();
        let _ = crate::run::run(&ssh, &limits);
        // A master that was killed leaves its socket; nothing listens there.
        let _ = std::fs::remove_file(&control.path);
    }
}

/// Where one alias's master connection listens, and how long it outlives
/// its last call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlSocket {
    pub path: std::path::PathBuf,
    /// `ControlPersist`: an idle master ends on its own after this, so a
    /// monitor killed before it could close it leaves nothing for long.
    pub persist: Duration,
}

impl ControlSocket {
    /// `ControlPath=…`, with `%` doubled: ssh expands `%` tokens there.
    fn option(&self) -> String {
        format!(
            "ControlPath={}",
            self.path.to_string_lossy().replace('%', "%%")
        )
    }
}

/// The longest control socket path used: a Unix socket's path holds 107
/// bytes, and ssh first binds a temporary name 17 bytes longer.
pub const MAX_CONTROL_PATH: usize = 86;

/// This process's master connections: one folder only this user can enter,
/// one socket in it per alias, named by this process and a hash of the
/// alias (and its ssh config), so two monitors never share, and so never
/// close, each other's connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multiplex {
    pub dir: std::path::PathBuf,
    pub persist: Duration,
}

/// Why no folder could hold the control sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiplexError {
    /// Each folder tried, and why it would not do.
    NoFolder {
        tried: Vec<(std::path::PathBuf, String)>,
    },
}

impl std::fmt::Display for MultiplexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MultiplexError::NoFolder { tried } => {
                write!(f, "no folder for the ssh control sockets")?;
                for (dir, why) in tried {
                    write!(f, "; {}: {why}", dir.display())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for MultiplexError {}

impl Multiplex {
    /// The first of `candidates` that is, or can be made, a folder of this
    /// user's that no one else can enter, with room for a short socket path.
    pub fn prepare(
        candidates: &[std::path::PathBuf],
        persist: Duration,
    ) -> Result<Multiplex, MultiplexError> {
        let mut tried = Vec::new();
        for dir in candidates {
            match private_dir(dir) {
                Ok(()) => {
                    let multiplex = Multiplex {
                        dir: dir.clone(),
                        persist,
                    };
                    let longest = multiplex.socket_for("x", None).path;
                    if longest.as_os_str().len() <= MAX_CONTROL_PATH {
                        return Ok(multiplex);
                    }
                    tried.push((dir.clone(), "too long a path for a socket".to_string()));
                }
                Err(why) => tried.push((dir.clone(), why)),
            }
        }
        Err(MultiplexError::NoFolder { tried })
    }

    /// Where a monitor keeps its sockets, best first: `$XDG_RUNTIME_DIR/bmb-monitor`
    /// (this login's private tmpfs), `<state_dir>/ssh`, then
    /// `/tmp/bmb-monitor-<uid>` for a state folder too deep for a socket path.
    pub fn candidates(state_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut dirs = Vec::new();
        if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
            dirs.push(std::path::PathBuf::from(runtime).join("bmb-monitor"));
        }
        dirs.push(state_dir.join("ssh"));
        dirs.push(std::path::PathBuf::from(format!(
            "/tmp/bmb-monitor-{}",
            rustix::process::getuid().as_raw()
        )));
        dirs
    }

    /// `<dir>/<pid>-<16 hex digits>`: short whatever the alias.
    pub fn socket_for(&self, alias: &str, config: Option<&str>) -> ControlSocket {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        (alias, config).hash(&mut hasher);
        ControlSocket {
            path: self
                .dir
                .join(format!("{}-{:016x}", std::process::id(), hasher.finish())),
            persist: self.persist,
        }
    }
}

/// Makes `dir` (and its parents) a folder of this user's with mode 0700;
/// one that exists must already be ours, not a symlink, and is closed to others.
fn private_dir(dir: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if !dir.is_absolute() {
        return Err("not an absolute path".to_string());
    }
    if dir
        .to_string_lossy()
        .contains(|c: char| c.is_whitespace() || c == '"' || c == '\\')
    {
        return Err("ssh would split its name".to_string());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.to_string()),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a folder".to_string());
    }
    if meta.uid() != rustix::process::getuid().as_raw() {
        return Err("owned by another user".to_string());
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One word for a POSIX shell, taken literally: `'…'` with `'` as `'\''`.
pub fn quote_literal(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./=%@+,".contains(&b))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// One word for a POSIX shell in double quotes, so that the remote shell (and
/// only it) expands `$VAR` in it: a `--tmux-bin` such as `$HOME/bin/tmux`
/// names the remote host's home. Backquotes and backslashes are escaped.
pub fn quote_expandable(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('"');
    for c in word.chars() {
        if matches!(c, '"' | '\\' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The ssh config ssh itself reads: `~/.ssh/config` of the user's PASSWD home,
/// not of `$HOME` (ssh ignores `$HOME`), so a list of aliases matches what
/// ssh will resolve.
pub fn user_config_path() -> Option<std::path::PathBuf> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::current()).ok()??;
    Some(user.dir.join(".ssh").join("config"))
}

/// The `Host` aliases of the ssh config at `path` and of the files its
/// `Include` lines name (relative to `~/.ssh`, as ssh reads them; a `*` in the
/// file name matches as a shell glob does), without patterns.
pub fn host_aliases_in(path: &std::path::Path) -> Vec<String> {
    let mut aliases = Vec::new();
    let ssh_dir = path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    collect_aliases(path, &ssh_dir, 0, &mut aliases);
    aliases
}

/// ssh itself stops at 16 levels of `Include`.
const MAX_INCLUDE_DEPTH: usize = 16;

fn collect_aliases(
    path: &std::path::Path,
    ssh_dir: &std::path::Path,
    depth: usize,
    aliases: &mut Vec<String>,
) {
    // An ssh config is a few KiB; a FIFO or a huge file there is not one.
    let Ok(text) = crate::file::read_regular_text(path, 1 << 20) else {
        return;
    };
    for alias in host_aliases(&text) {
        if !aliases.contains(&alias) {
            aliases.push(alias);
        }
    }
    if depth >= MAX_INCLUDE_DEPTH {
        return;
    }
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if !words
            .next()
            .is_some_and(|keyword| keyword.eq_ignore_ascii_case("include"))
        {
            continue;
        }
        for pattern in words {
            let pattern = std::path::Path::new(pattern.trim_matches('"'));
            let pattern = if pattern.is_absolute() {
                pattern.to_path_buf()
            } else {
                ssh_dir.join(pattern)
            };
            for file in glob_file_name(&pattern) {
                collect_aliases(&file, ssh_dir, depth + 1, aliases);
            }
        }
    }
}

/// The files a path names, with `*` in its last component as a wildcard.
fn glob_file_name(pattern: &std::path::Path) -> Vec<std::path::PathBuf> {
    let (Some(dir), Some(name)) = (
        pattern.parent(),
        pattern.file_name().and_then(|n| n.to_str()),
    ) else {
        return Vec::new();
    };
    let Some((prefix, suffix)) = name.split_once('*') else {
        return vec![pattern.to_path_buf()];
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.len() >= prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
        })
        .map(|entry| entry.path())
        .collect();
    files.sort();
    files
}

/// The `Host` aliases of an ssh config, without patterns (`*`, `?`, `!`).
pub fn host_aliases(config: &str) -> Vec<String> {
    let mut hosts = Vec::new();
    for line in config.lines() {
        let line = line.trim();
        let mut words = line.split_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        let rest: Vec<&str> = if let Some((key, value)) = keyword.split_once('=') {
            if !key.eq_ignore_ascii_case("host") {
                continue;
            }
            std::iter::once(value).chain(words).collect()
        } else if keyword.eq_ignore_ascii_case("host") {
            words.collect()
        } else {
            continue;
        };
        for alias in rest {
            let alias = alias.trim_matches('"');
            if !alias.is_empty()
                && !alias.contains(['*', '?', '!'])
                && !hosts.iter().any(|h| h == alias)
            {
                hosts.push(alias.to_string());
            }
        }
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_words_survive_the_remote_shell() {
        assert_eq!(quote_literal("capture-pane"), "capture-pane");
        assert_eq!(quote_literal("=my_sess:"), "'=my_sess:'");
        assert_eq!(quote_literal("#{session_name}"), "'#{session_name}'");
        assert_eq!(quote_literal("$HOME"), "'$HOME'");
        assert_eq!(quote_literal("it's"), r"'it'\''s'");
        assert_eq!(quote_literal(""), "''");
        assert_eq!(quote_literal(";"), "';'");
    }

    #[test]
    fn expandable_words_leave_only_dollar_live() {
        assert_eq!(quote_expandable("$HOME/bin/tmux"), "\"$HOME/bin/tmux\"");
        assert_eq!(quote_expandable("a\"b`c\\d"), "\"a\\\"b\\`c\\\\d\"");
    }

    #[test]
    fn the_user_config_is_under_the_passwd_home_whatever_home_says() {
        let path = user_config_path().expect("this user has a passwd entry");
        // getent(1) asks the same NSS databases ssh does.
        let uid = rustix::process::getuid().as_raw();
        let entry = crate::run::run(
            &crate::run::Invocation::new("getent")
                .arg("passwd")
                .arg(uid.to_string()),
            &crate::run::Limits::default(),
        );
        let line = entry.success_stdout().expect("getent passwd").text();
        let home = line.trim_end().split(':').nth(5).expect("a home field");
        assert_eq!(path, std::path::Path::new(home).join(".ssh/config"));
    }

    #[test]
    fn included_configs_add_their_aliases() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("config.d")).unwrap();
        std::fs::write(
            dir.path().join("config"),
            "Include config.d/*.conf\nHost main\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("config.d/a.conf"),
            "Host alpha\nInclude b.extra\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("config.d/skip.txt"), "Host never\n").unwrap();
        std::fs::write(dir.path().join("b.extra"), "Host beta main\n").unwrap();
        assert_eq!(
            host_aliases_in(&dir.path().join("config")),
            ["main", "alpha", "beta"]
        );
    }

    #[test]
    fn host_aliases_skip_patterns_and_repeats() {
        let config = "Host box1 box2\n  HostName 10.0.0.1\nHost *\n  User me\nhost=box3\nHost box1 !bad *.corp\nMatch all\n";
        assert_eq!(host_aliases(config), ["box1", "box2", "box3"]);
    }

    #[test]
    fn control_sockets_go_to_the_first_private_folder_with_room_for_a_short_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("d".repeat(90));
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let persist = Duration::from_secs(60);
        let multiplex = Multiplex::prepare(&[deep.clone(), open.clone()], persist).unwrap();
        assert_eq!(multiplex.dir, open);
        let mode = std::fs::metadata(&open).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "closed to others");
        // Short whatever the alias, one per alias and config.
        let long = multiplex.socket_for(&"a".repeat(200), Some("/x"));
        assert!(long.path.as_os_str().len() <= MAX_CONTROL_PATH, "{long:?}");
        assert_ne!(
            multiplex.socket_for("a", None),
            multiplex.socket_for("b", None)
        );
        assert_ne!(
            multiplex.socket_for("a", None),
            multiplex.socket_for("a", Some("/x"))
        );
        let refused = Multiplex::prepare(&[deep, "relative".into()], persist).unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains("too long a path for a socket") && said.contains("not an absolute path"),
            "{said}"
        );
    }

    #[test]
    fn a_multiplexed_invocation_names_its_socket_and_closing_none_spawns_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let multiplex = Multiplex {
            dir: dir.path().join("100%"),
            persist: Duration::from_secs(90),
        };
        let remote = Remote::new("box1", None).multiplexed(&multiplex);
        let shown = remote.invocation("true").display();
        assert!(shown.contains("ControlMaster=auto"), "{shown}");
        assert!(shown.contains("ControlPersist=90"), "{shown}");
        assert!(shown.contains("/100%%/"), "a % is doubled for ssh: {shown}");
        let before = crate::run::spawned_by_this_thread();
        remote.close_master();
        assert_eq!(crate::run::spawned_by_this_thread(), before);
    }

    #[test]
    fn the_ssh_invocation_is_batch_mode_with_a_connect_timeout() {
        let remote = Remote::new("box1", Some("/tmp/cfg".into()));
        let shown = remote.invocation("tmux list-sessions").display();
        assert!(shown.contains("-F /tmp/cfg"), "{shown}");
        assert!(
            shown.contains("BatchMode=yes") && shown.contains("ConnectTimeout=5"),
            "{shown}"
        );
        assert!(shown.contains("-- box1"), "{shown}");
    }
}
