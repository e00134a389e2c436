//! What the harnesses of the real daemons (sshd, Alertmanager, Prometheus)
//! share: a free port, starting one with its output in a log file, ended
//! with the test's thread; for the Prometheus family, starting one on a free port
//! of 127.0.0.1 in its own folder until it answers `/-/ready`, and a GET
//! of its HTTP API.
// Starting the daemon is the harness's job.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on right now (the kernel's choice).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// Starts `command` (the daemon `program`) with no stdin and its stdout
/// and stderr in a new file at `log_path`; the kernel ends it if the
/// thread that started it dies first.
pub(crate) fn spawn_logged(mut command: Command, program: &str, log_path: &Path) -> Child {
    let log = std::fs::File::create(log_path).expect("log file");
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log file"))
        .stderr(log);
    crate::dies_with_this_thread(&mut command);
    command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"))
}

/// A daemon of the Prometheus family: what it is called in its logs' names
/// and in what the harness says, its program, and how long one attempt to
/// start it may take to answer, asked every `poll`.
pub(crate) struct Daemon<'d> {
    name: &'d str,
    program: &'d str,
    patience_secs: u64,
    poll: Duration,
}

impl<'d> Daemon<'d> {
    pub(crate) fn new(name: &'d str, program: &'d str, patience_secs: u64, poll: Duration) -> Self {
        Daemon {
            name,
            program,
            patience_secs,
            poll,
        }
    }

    /// Starts it in `dir` with `--config.file=CONFIG`, a listen address on
    /// `port` (a port a test reserved for it: one attempt) or on a free one
    /// (five attempts, each on another port, as one may be taken between
    /// our probe and its bind), and `extra` arguments; its log is
    /// `<dir>/<name>-<attempt>.log`. Waits until it answers `/-/ready`: its
    /// child and port. Panics with its log when it never answers.
    pub(crate) fn start(
        &self,
        dir: &Path,
        config: &Path,
        port: Option<u16>,
        extra: &[String],
    ) -> (Child, u16) {
        let Daemon { name, program, .. } = *self;
        let mut last_log = String::new();
        let attempts = if port.is_some() { 1 } else { 5 };
        for attempt in 0..attempts {
            let port = port.unwrap_or_else(free_port);
            let log_path = dir.join(format!("{name}-{attempt}.log"));
            let mut command = Command::new(program);
            command
                .arg(format!("--config.file={}", config.display()))
                .args(extra)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .current_dir(dir);
            let mut child = spawn_logged(command, program, &log_path);
            let deadline = Instant::now() + Duration::from_secs(self.patience_secs);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    last_log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    break;
                }
                if get(port, "/-/ready").is_ok() {
                    return (child, port);
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{name} did not answer on 127.0.0.1:{port} within {} s; its log:\n{}",
                        self.patience_secs,
                        std::fs::read_to_string(&log_path).unwrap_or_default()
                    );
                }
                std::thread::sleep(self.poll);
            }
        }
        panic!("{name} could not start in {attempts} attempts; its last log:\n{last_log}");
    }
}

/// `GET http://127.0.0.1:PORT/PATH` (5 s at most), its body when it answered 200.
pub(crate) fn get(port: u16, path: &str) -> Result<String, String> {
    crate::http::get(
        &format!("http://127.0.0.1:{port}{path}"),
        Duration::from_secs(5),
    )
}
