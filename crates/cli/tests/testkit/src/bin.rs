//! The one way the tests start the `bmb-monitor` binary.
//!
//! [`command`] is the binary with nothing of the machine's tmux in its
//! environment (`TMUX`, `TMUX_PANE` removed: a test never reaches the user's
//! server by accident); [`run`] runs it to completion with a stdin and a hang
//! guard; [`Running`] keeps a long-running monitor's pipes open and collects
//! what it prints, line by line, for a test to wait on.

// A test must start the real binary with pipes it keeps open, which
// `probes::run` (run to completion) cannot do.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary at `exe` (a test passes `env!("CARGO_BIN_EXE_bmb-monitor")`),
/// ready for its arguments.
pub fn command(exe: &str) -> Command {
    let mut command = Command::new(exe);
    command.env_remove("TMUX").env_remove("TMUX_PANE");
    command
}

/// Runs `command` to completion with `stdin` written from a thread (a large
/// input cannot deadlock against a full stdout pipe). Panics after `guard`:
/// a hang guard, never a timing.
pub fn run(command: Command, stdin: &[u8], guard: Duration) -> Output {
    let mut child = spawn_piped(command);
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let pid = child.id();
    let (done, waited) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = match waited.recv_timeout(guard) {
        Ok(output) => output.expect("bmb-monitor ends"),
        Err(_) => {
            // Our own child, by its pid.
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(pid as i32).expect("a child's pid"),
                rustix::process::Signal::KILL,
            );
            panic!("bmb-monitor (pid {pid}) still ran after {guard:?}");
        }
    };
    writer.join().expect("writer thread");
    waiter.join().expect("waiter thread");
    output
}

/// A monitor that keeps running while the test talks to it; killed on drop
/// if it is still running.
pub struct Running {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    out: Arc<Mutex<Vec<String>>>,
    err: Arc<Mutex<Vec<String>>>,
    /// Both streams reached their end of file.
    ended: [Arc<std::sync::atomic::AtomicBool>; 2],
}

impl Running {
    /// Starts `command` with all three streams piped.
    pub fn start(command: Command) -> Running {
        let mut child = spawn_piped(command);
        let (out, out_ended) = collect(child.stdout.take().expect("stdout is piped"));
        let (err, err_ended) = collect(child.stderr.take().expect("stderr is piped"));
        Running {
            stdin: child.stdin.take(),
            child,
            out,
            err,
            ended: [out_ended, err_ended],
        }
    }

    /// `signal` to the monitor: our own child, not reaped yet, so its pid is
    /// still its own.
    pub fn signal(&self, signal: rustix::process::Signal) {
        rustix::process::kill_process(rustix::process::Pid::from_child(&self.child), signal)
            .expect("signal our own child");
    }

    /// One line on the monitor's stdin.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").expect("the monitor reads its stdin");
        stdin.flush().expect("the monitor reads its stdin");
    }

    /// Every line printed on stdout so far.
    pub fn out(&self) -> Vec<String> {
        self.out.lock().expect("collector").clone()
    }

    /// Every line printed on stderr so far.
    pub fn err(&self) -> Vec<String> {
        self.err.lock().expect("collector").clone()
    }

    /// Waits (up to `secs`) until stdout holds a line containing `needle`.
    pub fn wait_out(&self, needle: &str, secs: u64) -> bool {
        wait_until(secs, || self.out().iter().any(|l| l.contains(needle)))
    }

    /// The address `/metrics` is served on, as the monitor says it on
    /// stderr (`metrics on http://ADDRESS/metrics`: with port 0 the kernel
    /// picked it); waits up to `secs` for the line, and fails the test with
    /// the monitor's stderr when it never comes.
    pub fn metrics_address(&self, secs: u64) -> String {
        let mut address = None;
        assert!(
            wait_until(secs, || {
                address = self.err().iter().find_map(|line| {
                    line.split("metrics on http://")
                        .nth(1)
                        .and_then(|rest| rest.split('/').next())
                        .map(str::to_string)
                });
                address.is_some()
            }),
            "the listener was never said: {:?}",
            self.err()
        );
        address.expect("an address")
    }

    /// Waits (up to `secs`) for the monitor to exit and for what it printed
    /// to be collected (both streams at their end, unless a process it left
    /// still holds one open past the deadline).
    pub fn wait_exit(&mut self, secs: u64) -> Option<ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let ended = || {
                    self.ended
                        .iter()
                        .all(|e| e.load(std::sync::atomic::Ordering::SeqCst))
                };
                while !ended() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `command` with all three streams piped.
fn spawn_piped(mut command: Command) -> Child {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bmb-monitor starts")
}

/// A stream's lines as they come; the flag is set at its end of file.
type Collected = (Arc<Mutex<Vec<String>>>, Arc<std::sync::atomic::AtomicBool>);

fn collect(stream: impl std::io::Read + Send + 'static) -> Collected {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (sink, ended) = (Arc::clone(&lines), Arc::clone(&done));
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            sink.lock().expect("collector").push(line);
        }
        ended.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    (lines, done)
}

/// Polls `cond` until it holds or `secs` pass; its last answer.
pub fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}
