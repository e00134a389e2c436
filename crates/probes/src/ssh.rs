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
    /// The `Host` name in the ssh config, passed to ssh as is.
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
    /// An alias reached over a connection of its own per call, with the default connect timeout.
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
    /// The socket file (`ControlPath`).
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
const MAX_CONTROL_PATH: usize = 86;

/// This process's master connections: a folder made fresh for this run
/// (`mkdtemp`, mode 0700, checked with `lstat`), never one a previous run or
/// anyone else left, removed when the last clone of this is dropped; one
/// socket in it per alias (and ssh config), named by a keyed hash whose key
/// is drawn at random for this run, so no name can be guessed from an alias
/// or from any message, and two monitors never share, and so never close,
/// each other's connection.
#[derive(Debug, Clone)]
pub struct Multiplex {
    /// The run's folder that holds the sockets.
    pub dir: std::path::PathBuf,
    /// `ControlPersist` for every master started from here.
    pub persist: Duration,
    /// The folders passed over before this one, and why (one open to
    /// others, another user's): worth saying, as something may lurk there.
    pub passed_over: Vec<(std::path::PathBuf, Unusable)>,
    /// The names' key, drawn from the OS at [`Multiplex::prepare`].
    salt: u64,
    /// Removes the fresh folder (its sockets and lock) when the last clone goes.
    _folder: Option<std::sync::Arc<RunFolder>>,
}

impl PartialEq for Multiplex {
    fn eq(&self, other: &Multiplex) -> bool {
        self.dir == other.dir && self.persist == other.persist && self.salt == other.salt
    }
}

impl Eq for Multiplex {}

/// A run's own control folder, and the lock that tells a later run this one
/// still lives (a folder whose lock is free was left by a run that died).
#[derive(Debug)]
struct RunFolder {
    // Dropped in this order: the folder goes, then its lock is let go.
    _dir: tempfile::TempDir,
    _lock: crate::fs::lock::Lock,
}

/// The fresh folders are `run.` and random letters, inside the base folder.
const RUN_PREFIX: &str = "run.";
/// Inside a run's folder: held for the run's life.
const RUN_LOCK: &str = "lock";

/// Why no folder could hold the control sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiplexError {
    /// Each folder tried, and why it would not do.
    NoFolder {
        /// Each folder, and why not.
        tried: Vec<(std::path::PathBuf, Unusable)>,
    },
}

/// Why one folder will not hold the control sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unusable {
    /// The OS gave no random key for the sockets' names (no folder was tried).
    NoRandomKey(getrandom::Error),
    /// A relative path: where it is depends on the working folder.
    NotAbsolute,
    /// Whitespace, a quote or a backslash in it, which ssh's config syntax splits on.
    SplitName,
    /// It is not, and cannot be made, a private folder of this user's.
    Folder(crate::fs::folder::FolderError),
    /// The run's own folder could not be made inside it.
    RunFolder(crate::fs::file::IoCause),
    /// The run's folder's lock could not be taken.
    Lock(crate::fs::lock::LockError),
    /// A socket's path in it would be too long for a Unix socket.
    TooLong,
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::NoRandomKey(error) => write!(f, "no random key: {error}"),
            Unusable::NotAbsolute => f.write_str("not an absolute path"),
            Unusable::SplitName => f.write_str("ssh would split its name"),
            Unusable::Folder(error) => error.fmt(f),
            Unusable::RunFolder(error) => error.fmt(f),
            Unusable::Lock(error) => error.fmt(f),
            Unusable::TooLong => f.write_str("too long a path for a socket"),
        }
    }
}

impl std::error::Error for Unusable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The inner error's own cause: its words are already this one's.
        match self {
            Unusable::NoRandomKey(error) => Some(error),
            Unusable::Folder(error) => error.source(),
            Unusable::RunFolder(error) => Some(error.io()),
            Unusable::Lock(error) => error.source(),
            Unusable::NotAbsolute | Unusable::SplitName | Unusable::TooLong => None,
        }
    }
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

impl std::error::Error for MultiplexError {
    /// Why the first folder tried, the best one, would not do.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MultiplexError::NoFolder { tried } => tried
                .first()
                .map(|(_, why)| why as &(dyn std::error::Error + 'static)),
        }
    }
}

impl Multiplex {
    /// A fresh folder of this run's inside the first of `candidates` that
    /// is, or can be made, a private folder of this user's (one that exists
    /// open to others, a symlink or another user's is passed over, never
    /// tightened), with room for a short socket path. Folders that runs
    /// which died left there are removed first.
    pub fn prepare(
        candidates: &[std::path::PathBuf],
        persist: Duration,
    ) -> Result<Multiplex, MultiplexError> {
        let mut tried = Vec::new();
        let salt = {
            let mut bytes = [0u8; 8];
            if let Err(e) = getrandom::fill(&mut bytes) {
                tried.push((std::path::PathBuf::new(), Unusable::NoRandomKey(e)));
                return Err(MultiplexError::NoFolder { tried });
            }
            u64::from_ne_bytes(bytes)
        };
        for base in candidates {
            match run_folder(base) {
                Ok(folder) => {
                    let multiplex = Multiplex {
                        dir: folder._dir.path().to_path_buf(),
                        persist,
                        passed_over: tried.clone(),
                        salt,
                        _folder: Some(std::sync::Arc::new(folder)),
                    };
                    let longest = multiplex.socket_for("x", None).path;
                    if longest.as_os_str().len() <= MAX_CONTROL_PATH {
                        return Ok(multiplex);
                    }
                    tried.push((base.clone(), Unusable::TooLong));
                }
                Err(why) => tried.push((base.clone(), why)),
            }
        }
        Err(MultiplexError::NoFolder { tried })
    }

    /// A multiplex on `dir` as it is, made and removed by the caller (tests).
    pub fn at(dir: std::path::PathBuf, persist: Duration) -> Multiplex {
        Multiplex {
            dir,
            persist,
            passed_over: Vec::new(),
            salt: 0,
            _folder: None,
        }
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

    /// `<dir>/<16 hex digits>`: short whatever the alias.
    pub fn socket_for(&self, alias: &str, config: Option<&str>) -> ControlSocket {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        (self.salt, alias, config).hash(&mut hasher);
        ControlSocket {
            path: self.dir.join(format!("{:016x}", hasher.finish())),
            persist: self.persist,
        }
    }
}

/// A fresh private folder for this run inside `base` (itself private),
/// after removing the ones runs that died left there.
fn run_folder(base: &std::path::Path) -> Result<RunFolder, Unusable> {
    if !base.is_absolute() {
        return Err(Unusable::NotAbsolute);
    }
    if base
        .to_string_lossy()
        .contains(|c: char| c.is_whitespace() || c == '"' || c == '\\')
    {
        return Err(Unusable::SplitName);
    }
    crate::fs::folder::ensure_private(base).map_err(Unusable::Folder)?;
    remove_dead_runs(base);
    let dir = tempfile::Builder::new()
        .prefix(RUN_PREFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(base)
        .map_err(|e| Unusable::RunFolder(e.into()))?;
    // Made by us just now; still checked, as a planted one would fail.
    crate::fs::folder::check_private(dir.path()).map_err(Unusable::Folder)?;
    let lock = crate::fs::lock::try_lock(&dir.path().join(RUN_LOCK)).map_err(Unusable::Lock)?;
    Ok(RunFolder {
        _dir: dir,
        _lock: lock,
    })
}

/// Removes each `run.*` folder in `base` whose lock no process holds: its
/// run was killed before it could remove it (`kill -9`), and first ends the
/// masters still listening there (`ssh -O exit`: a master rewrites its
/// process title over its environment, so its run's tag cannot be read).
/// A folder without a lock yet is one a starting run is making, and is left
/// alone.
fn remove_dead_runs(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_name().to_string_lossy().starts_with(RUN_PREFIX)
            || !entry.file_type().is_ok_and(|t| t.is_dir())
        {
            continue;
        }
        let lock = entry.path().join(RUN_LOCK);
        if std::fs::symlink_metadata(&lock).is_err() {
            continue;
        }
        if let Ok(held) = crate::fs::lock::try_lock(&lock) {
            end_masters_in(&entry.path());
            let _ = std::fs::remove_dir_all(entry.path());
            drop(held);
        }
    }
}

/// `ssh -O exit` to each socket in a dead run's folder (ours, 0700, so
/// every socket there is a master that run started).
fn end_masters_in(dir: &std::path::Path) {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_type().is_ok_and(|t| t.is_socket()) {
            continue;
        }
        let control = ControlSocket {
            path: entry.path(),
            persist: Duration::ZERO,
        };
        let ssh = Invocation::new("ssh")
            .args(["-F", "/dev/null", "-o"])
            .arg(control.option())
            .args(["-O", "exit", "--", "bmb-monitor-stale"]);
        let limits = crate::run::Limits::with_timeout(Duration::from_secs(5)).for_cleanup();
        let _ = crate::run::run(&ssh, &limits);
    }
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
pub(crate) fn quote_expandable(word: &str) -> String {
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
    let Ok(text) = crate::fs::file::read_regular_text(path, 1 << 20) else {
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
fn host_aliases(config: &str) -> Vec<String> {
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

    /// Set in the child the test below starts (this test binary again, with
    /// a `HOME` of its own): that child prints what [`user_config_path`] says.
    const CONFIG_CHILD: &str = "BMB_TEST_SSH_CONFIG_CHILD";

    #[test]
    fn the_user_config_is_under_the_passwd_home_whatever_home_says() {
        let said = |path: Option<std::path::PathBuf>| format!("user_config_path={path:?}\n");
        if std::env::var_os(CONFIG_CHILD).is_some() {
            print!("{}", said(user_config_path()));
            return;
        }
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
        let expected = std::path::Path::new(home).join(".ssh/config");
        assert_eq!(user_config_path(), Some(expected.clone()));
        // The same question under another HOME, in a process of its own
        // (this test binary running only this test), since this one's
        // environment is shared by every test thread.
        let elsewhere = tempfile::tempdir().unwrap();
        assert_ne!(elsewhere.path(), std::path::Path::new(home));
        let exe = std::env::current_exe().expect("the test binary");
        let child = crate::run::run(
            &crate::run::Invocation::new(exe)
                .args([
                    "--exact",
                    "ssh::tests::the_user_config_is_under_the_passwd_home_whatever_home_says",
                    "--nocapture",
                ])
                .env("HOME", elsewhere.path())
                .env(CONFIG_CHILD, "1"),
            &crate::run::Limits::default(),
        );
        let out = child.success_stdout().expect("the child test ran").text();
        assert!(
            out.contains(&said(Some(expected))),
            "with HOME={}: {out}",
            elsewhere.path().display()
        );
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
    fn control_sockets_go_to_a_fresh_folder_in_the_first_private_one_with_room_for_a_short_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("d".repeat(90));
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o775)).unwrap();
        let base = dir.path().join("base");
        let persist = Duration::from_secs(60);
        let candidates = [deep.clone(), open.clone(), base.clone()];
        let multiplex = Multiplex::prepare(&candidates, persist).unwrap();
        assert_eq!(
            multiplex.dir.parent(),
            Some(base.as_path()),
            "{multiplex:?}"
        );
        let mode = std::fs::metadata(&open).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o775,
            "an open folder is passed over, not tightened"
        );
        for at in [&base, &multiplex.dir] {
            let mode = std::fs::metadata(at).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "closed to others: {}", at.display());
        }
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
        // A second run gets a folder of its own and names of its own.
        let second = Multiplex::prepare(&candidates, persist).unwrap();
        assert_ne!(second.dir, multiplex.dir);
        let name = |m: &Multiplex| m.socket_for("a", None).path.file_name().unwrap().to_owned();
        assert_ne!(name(&second), name(&multiplex));
        // The last clone gone, the folder goes with it.
        let (first, copy) = (multiplex.dir.clone(), multiplex.clone());
        drop(multiplex);
        assert!(first.is_dir(), "a clone still holds it");
        drop(copy);
        assert!(!first.exists());
        let refused = Multiplex::prepare(&[deep, "relative".into(), open], persist).unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains("too long a path for a socket")
                && said.contains("not an absolute path")
                && said.contains("mode 0775"),
            "{said}"
        );
        // The first folder tried is why, kept as the cause.
        let first = std::error::Error::source(&refused).expect("the first folder's why");
        assert_eq!(first.to_string(), "too long a path for a socket");
        // A folder that cannot be made keeps the OS's error beneath its why.
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let refused = Multiplex::prepare(&[file.join("below")], persist).unwrap_err();
        let why = std::error::Error::source(&refused).unwrap();
        let io = why.source().expect("the io error is kept");
        let io = io.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotADirectory);
        drop(second);
    }

    #[test]
    fn a_folder_left_by_a_run_that_died_is_removed_and_a_live_runs_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base");
        let persist = Duration::from_secs(60);
        let live = Multiplex::prepare(std::slice::from_ref(&base), persist).unwrap();
        // What `kill -9` leaves: the folder, a socket no master listens on
        // any more, its lock free.
        let dead = base.join("run.dead01");
        crate::fs::folder::ensure_private(&dead).unwrap();
        std::fs::write(dead.join(RUN_LOCK), "1").unwrap();
        drop(std::os::unix::net::UnixListener::bind(dead.join("0123456789abcdef")).unwrap());
        // One being made, its lock not taken yet.
        let starting = base.join("run.start1");
        crate::fs::folder::ensure_private(&starting).unwrap();
        let next = Multiplex::prepare(std::slice::from_ref(&base), persist).unwrap();
        assert!(!dead.exists(), "the dead run's folder is gone");
        assert!(live.dir.is_dir() && starting.is_dir());
        drop((next, live));
    }

    #[test]
    fn a_multiplexed_invocation_names_its_socket_and_closing_none_spawns_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let multiplex = Multiplex::at(dir.path().join("100%"), Duration::from_secs(90));
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
