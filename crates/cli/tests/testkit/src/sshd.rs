//! A private `sshd` on 127.0.0.1 for end-to-end tests of remote targets
//! (SPEC §8: "a real sshd on 127.0.0.1 with a throwaway key and a throwaway
//! ssh_config alias").
//!
//! [`Sshd::start`] writes everything into its own temporary folder: a host
//! key, a client key and the `authorized_keys` holding it, an `sshd_config`
//! (127.0.0.1 only, keys only, `StrictModes no` because the keys live under a
//! temporary folder, `UsePAM no`), and an `ssh_config` whose `Host` alias
//! reaches it. The daemon runs in the foreground (`-D -e`) as this test's own
//! child and is ended by its pid on drop, never by name.
//!
//! The remote shell's `HOME` is a fresh empty folder of the harness
//! ([`Sshd::remote_home`]), set with sshd's `SetEnv`, so no dotfile of the
//! machine's root user runs in a test and a test can tell what the REMOTE
//! shell expanded from what the local side did.
//!
//! No sshd is no skip: [`Sshd::start`] panics saying what to install
//! (`.ci/run` installs `openssh-server`).

// sshd must stay running as a child of the test while the monitor talks to
// it, which `probes::run` (run to completion) cannot do; that one spawn is
// the only `Command::new` here.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use probes::run::{Invocation, Limits, run};

// Where the tests have always taken it from; the daemons' harnesses share it.
pub use crate::daemon::free_port;

pub const SSHD: &str = "/usr/sbin/sshd";

/// A running private sshd and the files that reach it.
pub struct Sshd {
    child: Child,
    port: u16,
    alias: String,
    config: PathBuf,
    remote_home: PathBuf,
    client_key: PathBuf,
    dir: tempfile::TempDir,
}

impl Sshd {
    /// Starts a daemon reachable as `ssh -F <config()> <alias>`. `remote_env`
    /// is set in every remote session with sshd's `SetEnv` (after `HOME`,
    /// which is always [`Sshd::remote_home`]).
    pub fn start(alias: &str, remote_env: &[(&str, &str)]) -> Sshd {
        assert!(
            Path::new(SSHD).is_file(),
            "{SSHD} is not installed: the remote tests need a real sshd on 127.0.0.1 \
             (install openssh-server and openssh-client; .ci/run does)"
        );
        let dir = tempfile::Builder::new()
            .prefix("bmb-sshd-")
            .tempdir()
            .expect("temporary folder for sshd");
        let root = dir.path().to_path_buf();
        let host_key = root.join("host_key");
        let client_key = root.join("client_key");
        keygen(&host_key);
        keygen(&client_key);
        let authorized = root.join("authorized_keys");
        std::fs::copy(client_key.with_extension("pub"), &authorized)
            .expect("write authorized_keys");
        let remote_home = root.join("remote-home");
        std::fs::create_dir(&remote_home).expect("remote HOME folder");
        // sshd's privilege-separation folder; a fresh container lacks it.
        if !Path::new("/run/sshd").is_dir() {
            std::fs::create_dir_all("/run/sshd").expect("create /run/sshd (are we root?)");
        }

        let mut set_env = format!(" \"HOME={}\"", remote_home.display());
        for (key, value) in remote_env {
            set_env.push_str(&format!(" \"{key}={value}\""));
        }
        // A free port can be taken between our probe and sshd's bind: retry.
        let mut last_log = String::new();
        for _ in 0..5 {
            let port = free_port();
            let sshd_config = root.join("sshd_config");
            std::fs::write(
                &sshd_config,
                format!(
                    "ListenAddress 127.0.0.1\n\
                     Port {port}\n\
                     HostKey {host_key}\n\
                     PidFile {pid}\n\
                     AuthorizedKeysFile {authorized}\n\
                     StrictModes no\n\
                     PubkeyAuthentication yes\n\
                     PasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\n\
                     UsePAM no\n\
                     PermitRootLogin prohibit-password\n\
                     X11Forwarding no\n\
                     AllowTcpForwarding no\n\
                     PrintMotd no\n\
                     MaxStartups 64\n\
                     SetEnv{set_env}\n",
                    host_key = host_key.display(),
                    pid = root.join("sshd.pid").display(),
                    authorized = authorized.display(),
                ),
            )
            .expect("write sshd_config");
            let log_path = root.join("sshd.log");
            let mut command = Command::new(SSHD);
            command
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&sshd_config)
                .arg("-p")
                .arg(port.to_string());
            let mut child = crate::daemon::spawn_logged(command, SSHD, &log_path);
            match wait_ready(&mut child, port, &log_path) {
                Ready::Yes => {
                    let config = root.join("ssh_config");
                    let block = host_block(alias, port, Some(&client_key));
                    std::fs::write(&config, block).expect("write ssh_config");
                    return Sshd {
                        child,
                        port,
                        alias: alias.to_string(),
                        config,
                        remote_home,
                        client_key,
                        dir,
                    };
                }
                // It has exited (and been reaped): try another port.
                Ready::PortTaken(log) => last_log = log,
            }
        }
        panic!("sshd could not bind a free port in 5 attempts; its last log:\n{last_log}");
    }

    /// The alias the harness's ssh config names.
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// The throwaway `ssh_config` holding [`Sshd::alias`]: pass it as `--ssh-config`.
    pub fn config(&self) -> &Path {
        &self.config
    }

    /// A `Host` block for another alias reaching this same daemon.
    pub fn host_block(&self, alias: &str) -> String {
        host_block(alias, self.port, Some(&self.client_key))
    }

    /// An `ssh_config` at `path` with [`Sshd::alias`] and `second`, another
    /// alias of this same daemon: two hosts for the tests of more than one.
    pub fn two_hosts_config(&self, path: &Path, second: &str) -> std::path::PathBuf {
        let first = std::fs::read_to_string(&self.config).expect("the harness's ssh config");
        std::fs::write(path, format!("{first}{}", self.host_block(second)))
            .expect("a two-host ssh config");
        path.to_path_buf()
    }

    /// The remote shell's `$HOME` (an empty folder the harness owns).
    pub fn remote_home(&self) -> &Path {
        &self.remote_home
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The harness's folder (keys, configs, the daemon's log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What the daemon logged so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    fn stop(&mut self) {
        crate::stop_child(&mut self.child);
    }

    /// The host goes down as a stopped sshd service does: the daemon and
    /// every session it forked (a client's multiplexed master among them)
    /// are killed, by pid, so no connection to it stays open.
    pub fn kill_with_sessions(&mut self) {
        let sessions = descendants(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in sessions {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// Every process under `root` (children first found, then theirs), read
/// from `/proc/<pid>/stat`'s parent field.
fn descendants(root: u32) -> Vec<i32> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: the comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root as i32];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        at += 1;
    }
    found.remove(0);
    found
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits until the daemon WE started listens (its own log line) and answers
/// with an ssh banner; bounded.
fn wait_ready(child: &mut Child, port: u16, log_path: &Path) -> Ready {
    let deadline = Instant::now() + Duration::from_secs(20);
    let listening = format!("Server listening on 127.0.0.1 port {port}");
    loop {
        let log = std::fs::read_to_string(log_path).unwrap_or_default();
        if let Ok(Some(status)) = child.try_wait() {
            if log.contains("Address already in use") {
                return Ready::PortTaken(log);
            }
            panic!("sshd exited with {status} before listening; its log:\n{log}");
        }
        if log.contains(&listening) && answers_ssh(port) {
            return Ready::Yes;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sshd did not answer on 127.0.0.1:{port} within 20 s; its log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

enum Ready {
    Yes,
    PortTaken(String),
}

/// `Host ALIAS` reaching 127.0.0.1:PORT as root with a throwaway identity, no
/// host-key bookkeeping, errors only.
pub fn host_block(alias: &str, port: u16, identity: Option<&Path>) -> String {
    let mut block = format!(
        "Host {alias}\n\
         \x20 HostName 127.0.0.1\n\
         \x20 Port {port}\n\
         \x20 User root\n\
         \x20 StrictHostKeyChecking no\n\
         \x20 UserKnownHostsFile /dev/null\n\
         \x20 LogLevel ERROR\n"
    );
    if let Some(identity) = identity {
        block.push_str(&format!(
            "  IdentityFile {}\n  IdentitiesOnly yes\n",
            identity.display()
        ));
    }
    block
}

fn answers_ssh(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut banner = [0u8; 4];
    stream.read_exact(&mut banner).is_ok() && &banner == b"SSH-"
}

fn keygen(path: &Path) {
    let outcome = run(
        &Invocation::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "bmb-test", "-f"])
            .arg(path),
        &Limits::with_timeout(Duration::from_secs(30)),
    );
    assert!(
        outcome.success_stdout().is_some(),
        "ssh-keygen (openssh-client) for {}: {}",
        path.display(),
        outcome.describe()
    );
}
