//! Run a command under a wall clock, and leave nothing behind.
//!
//! Every subprocess `bmb-monitor` starts (git, tmux, ssh, a user's probe) goes
//! through [`run`]. The child is started in a NEW PROCESS GROUP, so that on
//! timeout the whole group (the negative pid) gets SIGTERM, then after a grace
//! period SIGKILL: a grandchild holding the pipe cannot freeze the monitor's
//! loop, and none survives it (the cargo-nextest template, SPEC §4, §9).
//!
//! Output is captured on two reader threads and BOUNDED: past the limit the
//! bytes are drained and dropped (so the child never blocks on a full pipe)
//! and the capture says it was truncated. A 50 MB pane costs the limit, not
//! 50 MB.
//!
//! **Architecture Invariant:** this is the only place in the product that
//! calls `std::process::Command::new`.
#![expect(
    clippy::disallowed_methods,
    reason = "the one module that starts processes (the invariant above)"
)]

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use wait_timeout::ChildExt;

use crate::os::run_id;

/// What to run: a program and its arguments, never a string a shell splits
/// (use [`Invocation::shell`] when a shell is the point, as for a user's probe).
#[derive(Debug, Clone)]
pub struct Invocation {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, Option<OsString>)>,
    stdin: Option<Vec<u8>>,
}

impl Invocation {
    /// `program` is looked up on `PATH` as `execvp` does.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Invocation {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stdin: None,
        }
    }

    /// `sh -c SCRIPT`: for commands the user wrote as one string (probes,
    /// alert commands). The script reaches the shell through its
    /// environment, never its argv: a token in an alert command's
    /// `curl -H` is not in `ps` for every local user to read (only
    /// `/proc/<pid>/environ`, which only its owner can). The shell takes it
    /// out of the environment before it runs, so nothing it starts inherits it;
    /// arguments added after this are `$0`, `$1`, … as with `sh -c`.
    pub fn shell(script: impl AsRef<OsStr>) -> Self {
        Invocation::new("sh")
            .arg("-c")
            .arg(SHELL_TRAMPOLINE)
            .env(SHELL_SCRIPT_VAR, script)
    }

    /// Adds one argument, passed as is (no shell).
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments, each passed as is (no shell).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Runs the command in `dir`.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// Sets `key` in the command's environment.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Takes `key` out of the command's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Bytes written to the child's stdin, which is then closed. Without
    /// this, stdin is `/dev/null`: a monitor's probe must never wait on a terminal.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// The program and its arguments, for messages (`git status --porcelain`).
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|s| s.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Where [`Invocation::shell`] puts the script.
const SHELL_SCRIPT_VAR: &str = "BMB_SH_SCRIPT";

/// What `sh -c` runs for [`Invocation::shell`]: the script, read from the
/// environment (then removed from it), run as `sh -c` would run it.
const SHELL_TRAMPOLINE: &str =
    "__bmb_sh_script=$BMB_SH_SCRIPT; unset BMB_SH_SCRIPT; eval \"$__bmb_sh_script\"";

/// The wall clock and the output bound for one run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From spawn to the end of output; past it the group is signalled.
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Per stream; the rest is drained and dropped.
    pub max_output: usize,
    /// A stop request (SIGTERM, SIGINT: [`crate::os::signals`]) ends the run at
    /// once, so a monitor ends within two seconds whatever it waits on. Off
    /// for the clean-up a stopping process still has to do.
    pub stops_with_the_process: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(10),
            grace: Duration::from_millis(500),
            max_output: 1 << 20,
            stops_with_the_process: true,
        }
    }
}

impl Limits {
    /// The default bounds with another wall clock.
    pub fn with_timeout(timeout: Duration) -> Self {
        Limits {
            timeout,
            ..Limits::default()
        }
    }

    /// The same limits for clean-up that must run while the process stops
    /// (ending a server it started): only its own wall clock ends it.
    pub fn for_cleanup(self) -> Self {
        Limits {
            stops_with_the_process: false,
            ..self
        }
    }
}

/// One stream's bytes, at most [`Limits::max_output`] of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// What was kept, from the start.
    pub bytes: Vec<u8>,
    /// More was written than was kept.
    pub truncated: bool,
}

impl Captured {
    /// The bytes as text, invalid UTF-8 replaced. Valid text (nearly
    /// always) is checked by `str::from_utf8`, which skips ASCII a word at a
    /// time, where the lossy scan goes byte by byte: a host's whole answer
    /// is read this way every cycle.
    pub fn text(&self) -> String {
        match std::str::from_utf8(&self.bytes) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(&self.bytes).into_owned(),
        }
    }
}

/// How a run ended. Never a panic and never an `Err` the caller can forget:
/// each of the three is a fact to render.
#[derive(Debug)]
pub enum Outcome {
    /// The child ended on its own. `code` is `None` when a signal (not ours) ended it.
    Exited {
        /// The exit code; `None` when a signal ended it.
        code: Option<i32>,
        /// The signal that ended it, when one did.
        signal: Option<i32>,
        /// What it wrote to stdout.
        stdout: Captured,
        /// What it wrote to stderr.
        stderr: Captured,
    },
    /// The wall clock ran out, or the monitor is stopping (SIGTERM, SIGINT):
    /// the whole process group was terminated.
    TimedOut {
        /// How long it had run.
        after: Duration,
        /// Ended because a stop was requested, not by the clock.
        stopping: bool,
        /// What it wrote to stdout before it was ended.
        stdout: Captured,
        /// What it wrote to stderr before it was ended.
        stderr: Captured,
    },
    /// The program could not be started (not found, not executable, ...).
    FailedToSpawn {
        /// Why, as the OS said it.
        error: String,
    },
}

impl Outcome {
    /// Stdout when the child exited 0 and its whole answer was kept, else
    /// `None`: the common "did it answer?" question. An answer cut at the
    /// byte limit is no answer (`0000…` cut, then `1` would read as 0).
    pub fn success_stdout(&self) -> Option<&Captured> {
        match self {
            Outcome::Exited {
                code: Some(0),
                stdout,
                ..
            } if !stdout.truncated => Some(stdout),
            _ => None,
        }
    }

    /// One lowercase line saying what happened, for error messages.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Exited {
                code: Some(0),
                stdout,
                ..
            } if stdout.truncated => format!(
                "printed more than {} bytes, so its answer was cut and is not read",
                stdout.bytes.len()
            ),
            Outcome::Exited {
                code: Some(code),
                stderr,
                ..
            } => {
                let text = stderr.text();
                let first = printable_line(text.lines().next().unwrap_or(""));
                if first.is_empty() {
                    format!("exited with code {code}")
                } else {
                    format!("exited with code {code}: {first}")
                }
            }
            Outcome::Exited { signal, .. } => {
                format!("killed by signal {}", signal.unwrap_or(0))
            }
            Outcome::TimedOut { stopping: true, .. } => {
                "was ended because the monitor is stopping".to_string()
            }
            Outcome::TimedOut { after, .. } => {
                format!("timed out after {:.1}s", after.as_secs_f64())
            }
            Outcome::FailedToSpawn { error } => format!("failed to start: {error}"),
        }
    }
}

/// A command that gave no answer: what ran, and what happened instead (the
/// outcome's [`Outcome::describe`] line). Renders as "`git status …` exited
/// with code 128: fatal: …".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFailed {
    /// The program and its arguments ([`Invocation::display`]).
    pub command: String,
    /// What happened instead of an answer, as one lowercase fragment.
    pub outcome: String,
}

impl CommandFailed {
    /// What `what` was and how `outcome` ended it, rendered once.
    pub fn new(what: &Invocation, outcome: &Outcome) -> CommandFailed {
        CommandFailed {
            command: what.display(),
            outcome: outcome.describe(),
        }
    }
}

impl std::fmt::Display for CommandFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` {}", self.command, self.outcome)
    }
}

impl std::error::Error for CommandFailed {}

/// A subprocess's line as it may reach a terminal: escape sequences and
/// control characters dropped (a hostile program's stderr can carry a title,
/// clear-screen or clipboard escape), at most 300 characters.
fn printable_line(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // ESC [ … final byte, or ESC ] … BEL / ST: the whole sequence goes.
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.peek() == Some(&'\\')) {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                _ => {}
            },
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.trim().chars().take(300).collect()
}

/// Subprocesses started by this process so far, counted so that tests and
/// benchmarks can assert how many a poll cycle costs (a loop runs forever).
static SPAWNED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The count this thread's spawns go to: its own, or the one a helper
    /// thread adopted from the thread it works for ([`ThreadTally::count_here`]).
    static SPAWNED_BY_THIS_THREAD: std::cell::RefCell<std::sync::Arc<AtomicU64>> =
        std::cell::RefCell::new(std::sync::Arc::new(AtomicU64::new(0)));
}

/// One more subprocess started from this thread.
fn count_spawn() {
    SPAWNED.fetch_add(1, Ordering::Relaxed);
    SPAWNED_BY_THIS_THREAD.with(|count| count.borrow().fetch_add(1, Ordering::Relaxed));
}

/// The calling thread's spawn count, to hand to the helper threads that do
/// its work (one per ssh host): what they start counts as the caller's, so
/// a test still sees what a whole cycle cost.
#[derive(Debug, Clone)]
pub struct ThreadTally(std::sync::Arc<AtomicU64>);

impl ThreadTally {
    /// The calling thread's.
    pub fn of_this_thread() -> ThreadTally {
        ThreadTally(SPAWNED_BY_THIS_THREAD.with(|count| std::sync::Arc::clone(&count.borrow())))
    }

    /// From now on, what the calling thread starts is counted in this tally.
    pub fn count_here(&self) {
        SPAWNED_BY_THIS_THREAD.with(|count| *count.borrow_mut() = std::sync::Arc::clone(&self.0));
    }
}

/// How many subprocesses [`run`] has started in this process.
pub fn spawned() -> u64 {
    SPAWNED.load(Ordering::Relaxed)
}

/// How many subprocesses [`run`] has started from the calling thread: what a
/// test counts, undisturbed by tests running beside it.
pub fn spawned_by_this_thread() -> u64 {
    SPAWNED_BY_THIS_THREAD.with(|count| count.borrow().load(Ordering::Relaxed))
}

/// Run `what` under `limits`. Returns within about `timeout + 2 × grace`
/// whatever the child does, and leaves no member of its process group behind
/// on timeout.
#[expect(
    unsafe_code,
    reason = "pre_exec sets the child's parent-death signal; see SAFETY below"
)]
pub fn run(what: &Invocation, limits: &Limits) -> Outcome {
    let started = Instant::now();
    let deadline = started + limits.timeout;

    // A tag every descendant inherits, so one that left the process group
    // (`setsid`, a daemon) is still found and ended with the run.
    let tag = next_tag();
    let mut command = Command::new(&what.program);
    command
        .env(RUN_TAG_VAR, &tag)
        .args(&what.args)
        // A new group whose id is the child's pid: the unit we signal on timeout.
        .process_group(0)
        .stdin(if what.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &what.cwd {
        command.current_dir(dir);
    }
    // Dies with us: a monitor killed with SIGKILL does not leave its probe
    // or alert command running. The signal comes when the THREAD that forked
    // the child ends, and this one waits for the child before it returns, so
    // it never comes early. (Not what that command started in turn: the
    // setting is not inherited across fork, which also keeps a tmux server
    // started by a call from dying with it; the next run ends those by their
    // tag, [`end_orphans_of`].)
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are sound: prctl(2) is one, and nothing here
    // allocates or takes a lock. `pre_exec` is the only hook std has there,
    // and no crate sets a std `Command`'s parent-death signal without it.
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
    for (key, value) in &what.env {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }

    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            // Out of descriptors is the monitor's trouble, not the
            // program's: said as what it is, with what would fix it.
            let error = match crate::os::own::out_of_fds(&error) {
                Some(why) => format!(
                    "{}: {why} ({error}): raise its open-file limit (LimitNOFILE= in its unit, `ulimit -n`)",
                    what.program.to_string_lossy()
                ),
                None => format!("{}: {error}", what.program.to_string_lossy()),
            };
            return Outcome::FailedToSpawn { error };
        }
    };
    count_spawn();
    let group = Pid::from_child(&child);

    if let (Some(bytes), Some(mut stdin)) = (what.stdin.clone(), child.stdin.take()) {
        // On its own thread: a child that never reads must not block us past the clock.
        thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let stdout = spawn_reader(child.stdout.take(), limits.max_output);
    let stderr = spawn_reader(child.stderr.take(), limits.max_output);

    let stops = limits.stops_with_the_process;
    let status = wait_until(&mut child, deadline, stops);
    let Some(status) = status else {
        terminate_group(&mut child, group, limits.grace);
        kill_tagged(&tag);
        return Outcome::TimedOut {
            after: started.elapsed(),
            stopping: stops && crate::os::signals::stop_requested(),
            stdout: collect(stdout, Instant::now() + limits.grace),
            stderr: collect(stderr, Instant::now() + limits.grace),
        };
    };

    // The child has exited, but a descendant it left behind may still hold
    // the pipes open. Its answer is what it printed before it exited: give
    // the pipes a grace to close, then end what is left (the group, and any
    // descendant that left it) so nothing outlives the run and the readers
    // see the end of what was written.
    let settle = deadline.min(Instant::now() + limits.grace);
    let stdout_done = await_reader(&stdout, settle);
    let stderr_done = await_reader(&stderr, settle);
    if !(stdout_done && stderr_done) {
        signal_group(group, Signal::KILL);
        kill_tagged(&tag);
    }
    Outcome::Exited {
        code: status.code(),
        signal: status.signal(),
        stdout: collect(stdout, Instant::now() + limits.grace),
        stderr: collect(stderr, Instant::now() + limits.grace),
    }
}

/// A reader thread's result, delivered once.
struct Reader {
    done: mpsc::Receiver<Captured>,
    early: std::cell::RefCell<Option<Captured>>,
}

fn spawn_reader<R: Read + Send + 'static>(pipe: Option<R>, max: usize) -> Reader {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        thread::spawn(move || {
            let mut captured = Captured::default();
            let mut buf = [0u8; 8192];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = max.saturating_sub(captured.bytes.len());
                        captured.bytes.extend_from_slice(&buf[..n.min(room)]);
                        if n > room {
                            captured.truncated = true;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            let _ = tx.send(captured);
        });
    } else {
        let _ = tx.send(Captured::default());
    }
    Reader {
        done: rx,
        early: std::cell::RefCell::new(None),
    }
}

/// Wait for end of output until `deadline`; true when the stream closed.
fn await_reader(reader: &Reader, deadline: Instant) -> bool {
    if reader.early.borrow().is_some() {
        return true;
    }
    let wait = deadline.saturating_duration_since(Instant::now());
    match reader.done.recv_timeout(wait) {
        Ok(captured) => {
            *reader.early.borrow_mut() = Some(captured);
            true
        }
        Err(_) => false,
    }
}

/// The stream's capture, or an empty one when a process outside the group
/// still holds the pipe past `deadline` (its reader thread is abandoned).
fn collect(reader: Reader, deadline: Instant) -> Captured {
    if let Some(captured) = reader.early.into_inner() {
        return captured;
    }
    let wait = deadline.saturating_duration_since(Instant::now());
    reader.done.recv_timeout(wait).unwrap_or(Captured {
        bytes: Vec::new(),
        truncated: true,
    })
}

/// How often a wait looks at the stop flag: a SIGTERM ends a monitor
/// within this, plus the child group's grace, whatever it is waiting for.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// The child's exit status, or `None` when the deadline passed or, with
/// `stops`, the process is stopping (SIGTERM, SIGINT: see [`crate::os::signals`]).
fn wait_until(
    child: &mut Child,
    deadline: Instant,
    stops: bool,
) -> Option<std::process::ExitStatus> {
    loop {
        if stops && crate::os::signals::stop_requested() {
            return None;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        match child.wait_timeout(left.min(STOP_CHECK)) {
            Ok(Some(status)) => return Some(status),
            Ok(None) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// [`run`] for each of `what`, at most `at_most` at a time (each on a
/// thread of its own, every thread's spawns counted for the caller, as
/// [`ThreadTally`] says): the outcomes in `what`'s order, each with how long
/// it ran. A batch of `n` ends within `ceil(n / at_most)` timeouts (plus the
/// grace periods) whatever its commands do. `at_most` 0 is taken as 1.
pub fn run_side_by_side(
    what: &[Invocation],
    limits: &Limits,
    at_most: usize,
) -> Vec<(Outcome, Duration)> {
    let threads = at_most.max(1).min(what.len());
    if threads <= 1 {
        return what
            .iter()
            .map(|one| {
                let started = Instant::now();
                let outcome = run(one, limits);
                (outcome, started.elapsed())
            })
            .collect();
    }
    let next = AtomicUsize::new(0);
    let tally = ThreadTally::of_this_thread();
    let slots: Vec<std::sync::Mutex<Option<(Outcome, Duration)>>> =
        what.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                tally.count_here();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(one) = what.get(index) else { break };
                    let started = Instant::now();
                    let outcome = run(one, limits);
                    let ran = (outcome, started.elapsed());
                    match slots[index].lock() {
                        Ok(mut slot) => *slot = Some(ran),
                        Err(poisoned) => *poisoned.into_inner() = Some(ran),
                    }
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            let taken = match slot.into_inner() {
                Ok(taken) => taken,
                Err(poisoned) => poisoned.into_inner(),
            };
            taken.unwrap_or_else(|| {
                (
                    Outcome::FailedToSpawn {
                        error: "its thread ended before it ran".to_string(),
                    },
                    Duration::ZERO,
                )
            })
        })
        .collect()
}

/// A long-running child (a monitor under a benchmark, a daemon under a
/// test) in its own process group, its stdout and stderr sent to files or
/// dropped. Stopping it ends the whole group; so does dropping it.
#[derive(Debug)]
pub struct Background {
    child: Child,
    grace: Duration,
}

impl Background {
    /// Starts `what` (its stdin is `/dev/null`); `stdout` receives its output.
    pub fn start(what: &Invocation, stdout: Option<std::fs::File>) -> std::io::Result<Background> {
        let mut command = Command::new(&what.program);
        command
            .args(&what.args)
            .process_group(0)
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        command.stdout(stdout.map_or_else(Stdio::null, Stdio::from));
        if let Some(dir) = &what.cwd {
            command.current_dir(dir);
        }
        for (key, value) in &what.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        let child = command.spawn()?;
        count_spawn();
        Ok(Background {
            child,
            grace: Limits::default().grace,
        })
    }

    /// The child's pid (its process group's, too).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM to the group, the grace period, then SIGKILL; returns how it ended.
    pub fn stop(mut self) -> Option<std::process::ExitStatus> {
        self.end()
    }

    fn end(&mut self) -> Option<std::process::ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let group = Pid::from_child(&self.child);
        terminate_group(&mut self.child, group, self.grace);
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.end();
    }
}

/// SIGTERM the whole group, give it `grace`, then SIGKILL the group and reap.
fn terminate_group(child: &mut Child, group: Pid, grace: Duration) {
    signal_group(group, Signal::TERM);
    let _ = child.wait_timeout(grace);
    // Always, not only when the leader survived: a grandchild that ignores
    // SIGTERM outlives a leader that obeyed it.
    signal_group(group, Signal::KILL);
    let _ = child.wait();
}

/// The environment variable that tags a run's descendants:
/// `BMB_RUN=<this process's run>.<n>` (see [`run_id::this_run`]), after the tag this
/// process was started with, if any, and a `/`: a command a tagged process
/// starts (an audit's auditors, under the watcher that started the audit)
/// carries every run of its family, so the oldest one's next run finds it.
pub(crate) const RUN_TAG_VAR: &str = "BMB_RUN";
static RUN_TAGS: AtomicU64 = AtomicU64::new(0);

/// The most of an inherited tag that is carried on: a family deeper than
/// this (some 30 runs) starts again from this process.
const MAX_INHERITED_TAG: usize = 1024;

/// The tag for the next command this process starts: the tag it inherited
/// (when it is one: runs and counters, `/`-separated), a `/`, then
/// `<this run>.<n>`.
fn next_tag() -> String {
    static INHERITED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let inherited = INHERITED.get_or_init(|| {
        std::env::var(RUN_TAG_VAR).ok().filter(|tag| {
            !tag.is_empty()
                && tag.len() <= MAX_INHERITED_TAG
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b"-./".contains(&b))
        })
    });
    let own = format!(
        "{}.{}",
        run_id::this_run(),
        RUN_TAGS.fetch_add(1, Ordering::Relaxed)
    );
    match inherited {
        Some(family) => format!("{family}/{own}"),
        None => own,
    }
}

/// Whether the value of a `BMB_RUN` variable names `run` among its family
/// (one of its `/`-separated parts is `<run>.<n>`).
fn tag_names_run(value: &[u8], run: &str) -> bool {
    value.split(|&b| b == b'/').any(|part| {
        part.strip_prefix(run.as_bytes())
            .is_some_and(|rest| rest.first() == Some(&b'.'))
    })
}

/// Whether the value of a `BMB_RUN` variable is `tag` or a tag set under it
/// (a descendant's command's, `tag/…`).
fn tag_is_or_under(value: &[u8], tag: &str) -> bool {
    value
        .strip_prefix(tag.as_bytes())
        .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
}

/// A tmux server, or a process in one of its panes (tmux names its server
/// `tmux: server`; its binary may be another tmux-compatible one): never
/// ended as an orphan, whatever its tag says.
fn under_a_tmux_server(pid: u32) -> bool {
    let mut at = pid;
    for _ in 0..64 {
        let Some(stat) = crate::os::procfs::Stat::of(at) else {
            return false;
        };
        let exe = std::fs::read_link(format!("/proc/{at}/exe")).ok();
        let named_tmux = exe
            .as_deref()
            .and_then(Path::file_name)
            .is_some_and(|name| name.to_string_lossy().starts_with("tmux"));
        if stat.comm().starts_with("tmux") || named_tmux {
            return true;
        }
        match stat.ppid() {
            Some(parent) if parent > 1 => at = parent,
            _ => return false,
        }
    }
    false
}

/// Ends (SIGKILL) what an earlier run of `run` left: every process whose
/// environment carries a tag of that run (its own, or one set under it by
/// a process it tagged, such as an audit's auditor), unless it is a tmux server or
/// runs under one. Nothing while that run's process still lives (a
/// monitor that let go of a target is not gone), nor for this run. Returns
/// the pids ended. One scan of `/proc`; a run's processes are ended once
/// per process, however many of its locks name it.
pub fn end_orphans_of(run: &str) -> Vec<u32> {
    static ENDED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    if run.is_empty() || run == run_id::this_run() || run_id::run_is_alive(run) {
        return Vec::new();
    }
    {
        let mut ended = ENDED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if ended.iter().any(|r| r == run) {
            return Vec::new();
        }
        ended.push(run.to_string());
    }
    let var = format!("{RUN_TAG_VAR}=");
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut killed = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(environ) = crate::fs::file::read_regular(&entry.path().join("environ"), 1 << 20)
        else {
            continue;
        };
        let tagged = environ.split(|&b| b == 0).any(|entry| {
            entry
                .strip_prefix(var.as_bytes())
                .is_some_and(|value| tag_names_run(value, run))
        });
        let gone = crate::os::procfs::Stat::of(pid).is_none_or(|stat| stat.has_exited());
        if !tagged || gone || under_a_tmux_server(pid) {
            continue;
        }
        let Some(process) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            continue;
        };
        if kill_process(process, Signal::KILL).is_ok() {
            killed.push(pid);
        }
    }
    killed
}

/// SIGKILL to every process whose environment carries this run's tag, or a
/// tag set under it: the descendants that left its process group. One scan of `/proc`, only when a
/// run left something behind.
fn kill_tagged(tag: &str) {
    let var = format!("{RUN_TAG_VAR}=");
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Some(process) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            continue;
        };
        let Ok(environ) = crate::fs::file::read_regular(&entry.path().join("environ"), 1 << 20)
        else {
            continue;
        };
        if environ.split(|&b| b == 0).any(|entry| {
            entry
                .strip_prefix(var.as_bytes())
                .is_some_and(|value| tag_is_or_under(value, tag))
        }) {
            // One that exited since (ESRCH) needs nothing more.
            let _ = kill_process(process, Signal::KILL);
        }
    }
}

/// `kill(-group, signal)`. ESRCH (the group is already gone) is fine.
fn signal_group(group: Pid, signal: Signal) {
    let _ = kill_process_group(group, signal);
}

/// A long-lived child spoken to over its stdin and stdout, one request and
/// one answer at a time: the fleet's ssh session per host
/// ([`crate::remote::host::HostSession`]), so a cycle forks nothing. It runs in a
/// process group of its own and dies with this process (as [`run`]'s
/// children do); [`Session::kill`] (and dropping it) ends the group.
///
/// Its stdout is read on a thread into a bounded queue, so a child that
/// floods it blocks on its pipe rather than growing this process; a read
/// past its own bound ([`Session::read_until`]) is an error, and the caller
/// kills the session.
pub struct Session {
    child: Child,
    group: Pid,
    requests: Option<mpsc::Sender<Vec<u8>>>,
    output: mpsc::Receiver<Vec<u8>>,
    stderr: std::sync::Arc<SessionStderr>,
    pending: Vec<u8>,
    closed: bool,
}

/// Why [`Session::read_until`] has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionError {
    /// The deadline passed first; what came so far.
    TimedOut {
        /// How many bytes had come, unanswered.
        partial: usize,
    },
    /// The child closed its stdout (it ended) before the marker.
    Closed {
        /// How many bytes had come, unanswered.
        partial: usize,
    },
    /// More than the bound arrived without the marker.
    TooLong {
        /// The bound, in bytes.
        max: usize,
    },
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::TimedOut { partial } => {
                write!(f, "gave no complete answer in time ({partial} bytes came)")
            }
            SessionError::Closed { partial } => {
                write!(
                    f,
                    "ended before its answer was complete ({partial} bytes came)"
                )
            }
            SessionError::TooLong { max } => {
                write!(f, "answered more than {max} bytes without its end marker")
            }
        }
    }
}

impl std::error::Error for SessionError {}

/// The last bytes of a session's stderr that are kept, for messages.
const SESSION_STDERR_TAIL: usize = 4096;
/// How long [`Session::stderr`] waits, once the child closed its stdout,
/// for the last of its stderr (ssh writes why it failed just before it
/// exits, and the two pipes are read by two threads).
const SESSION_STDERR_LAST: Duration = Duration::from_secs(1);

/// A session's stderr tail, and whether its pipe reached its end.
#[derive(Default)]
struct SessionStderr {
    tail: std::sync::Mutex<(Vec<u8>, bool)>,
    ended: std::sync::Condvar,
}
/// Chunks of stdout queued ahead of the reader (8 KiB each).
const SESSION_QUEUE: usize = 64;

impl Session {
    /// Starts `what` with its three streams piped (`what`'s own stdin bytes,
    /// if any, are the first request).
    #[expect(
        unsafe_code,
        reason = "pre_exec sets the child's parent-death signal; see SAFETY below"
    )]
    pub fn start(what: &Invocation) -> std::io::Result<Session> {
        let tag = next_tag();
        let mut command = Command::new(&what.program);
        command
            .env(RUN_TAG_VAR, &tag)
            .args(&what.args)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &what.cwd {
            command.current_dir(dir);
        }
        // SAFETY: as in `run`: prctl(2) is async-signal-safe and nothing
        // here allocates or locks.
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        for (key, value) in &what.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        let mut child = command.spawn()?;
        count_spawn();
        let group = Pid::from_child(&child);
        // Writes on a thread of their own: a child that stops reading
        // blocks that thread, never the caller (it ends with the pipe).
        let (requests, queued) = mpsc::channel::<Vec<u8>>();
        if let Some(mut stdin) = child.stdin.take() {
            thread::spawn(move || {
                for bytes in queued {
                    if stdin
                        .write_all(&bytes)
                        .and_then(|()| stdin.flush())
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
        let (chunks, output) = mpsc::sync_channel::<Vec<u8>>(SESSION_QUEUE);
        if let Some(mut stdout) = child.stdout.take() {
            thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match stdout.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => {
                            if chunks.send(buf[..n].to_vec()).is_err() {
                                return;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => return,
                    }
                }
            });
        }
        let stderr = std::sync::Arc::new(SessionStderr::default());
        if let Some(mut pipe) = child.stderr.take() {
            let shared = std::sync::Arc::clone(&stderr);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(n) if n > 0 => {
                            let mut tail = shared.tail.lock().unwrap_or_else(|e| e.into_inner());
                            tail.0.extend_from_slice(&buf[..n]);
                            let over = tail.0.len().saturating_sub(SESSION_STDERR_TAIL);
                            tail.0.drain(..over);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        // The end of the pipe, or an error that ends it.
                        _ => {
                            shared.tail.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
                            shared.ended.notify_all();
                            return;
                        }
                    }
                }
            });
        } else {
            stderr.tail.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        }
        let session = Session {
            child,
            group,
            requests: Some(requests),
            output,
            stderr,
            pending: Vec::new(),
            closed: false,
        };
        if let Some(first) = &what.stdin {
            session.send(first.clone());
        }
        Ok(session)
    }

    /// The shell's pid (its process group's, too).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Queues `bytes` for the child's stdin (never blocks).
    pub fn send(&self, bytes: Vec<u8>) {
        if let Some(requests) = &self.requests {
            let _ = requests.send(bytes);
        }
    }

    /// Everything up to and including the first `marker` after what was
    /// read before, within `deadline` and `max` bytes; what follows the
    /// marker is kept for the next read.
    pub fn read_until(
        &mut self,
        marker: &[u8],
        deadline: Instant,
        max: usize,
    ) -> Result<Vec<u8>, SessionError> {
        let mut searched: usize = 0;
        // Built once per answer: the answer comes in many chunks, and a
        // searcher costs more to build than one chunk does to search.
        let finder = memchr::memmem::Finder::new(marker);
        loop {
            let from = searched.saturating_sub(marker.len());
            if let Some(at) = finder.find(&self.pending[from..]) {
                let end = from + at + marker.len();
                let rest = self.pending.split_off(end);
                return Ok(std::mem::replace(&mut self.pending, rest));
            }
            searched = self.pending.len();
            if self.pending.len() > max {
                return Err(SessionError::TooLong { max });
            }
            if self.closed {
                return Err(SessionError::Closed {
                    partial: self.pending.len(),
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left.min(STOP_CHECK)) {
                Ok(chunk) => self.pending.extend_from_slice(&chunk),
                Err(mpsc::RecvTimeoutError::Disconnected) => self.closed = true,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if Instant::now() >= deadline {
                        return Err(SessionError::TimedOut {
                            partial: self.pending.len(),
                        });
                    }
                }
            }
        }
    }

    /// What the child wrote on stderr lately (its last 4 KiB). Once the
    /// child closed its stdout, this waits (a second at most) for its stderr
    /// to end too, so the reason it gave on its way out is in the message.
    pub fn stderr(&self) -> Captured {
        let mut tail = self.stderr.tail.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed {
            let until = Instant::now() + SESSION_STDERR_LAST;
            while !tail.1 {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                tail = self
                    .stderr
                    .ended
                    .wait_timeout(tail, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        Captured {
            bytes: tail.0.clone(),
            truncated: false,
        }
    }

    /// True while the child has not exited.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Ends the child's group (SIGTERM, a short grace, SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        self.requests = None;
        if let Ok(Some(_)) = self.child.try_wait() {
            signal_group(self.group, Signal::KILL);
            return;
        }
        terminate_group(&mut self.child, self.group, Duration::from_millis(200));
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_text_is_the_bytes_with_invalid_utf8_replaced() {
        let text = |bytes: &[u8]| {
            Captured {
                bytes: bytes.to_vec(),
                truncated: false,
            }
            .text()
        };
        assert_eq!(text("✻ Working… ─\n".as_bytes()), "✻ Working… ─\n");
        assert_eq!(text(b"a\xffb\xe2\x9c"), "a\u{fffd}b\u{fffd}");
        assert_eq!(text(b""), "");
    }

    /// Still running: neither gone nor a zombie waiting to be reaped.
    fn running(pid: u32) -> bool {
        crate::os::pid::Pid::new(pid).is_some_and(crate::os::process::is_alive)
    }

    #[test]
    fn a_tag_names_every_run_of_its_family_and_only_whole_runs() {
        let tag = b"41-900.3/77-950.0";
        assert!(
            tag_names_run(tag, "41-900"),
            "the run that started the family"
        );
        assert!(tag_names_run(tag, "77-950"), "the run that set it");
        assert!(
            !tag_names_run(tag, "41-90"),
            "a run whose name it begins with"
        );
        assert!(!tag_names_run(tag, "1-900"));
        assert!(!tag_names_run(b"41-9000.1", "41-900"));
        assert!(tag_is_or_under(b"41-900.3", "41-900.3"));
        assert!(tag_is_or_under(tag, "41-900.3"), "set under it");
        assert!(
            !tag_is_or_under(b"41-900.31", "41-900.3"),
            "another of its run's tags"
        );
    }

    #[test]
    fn a_session_answers_request_after_request_and_bounds_what_it_reads() {
        let script = "while IFS= read -r l; do printf '%s\\nDONE\\n' \"$l$l\"; done";
        let mut session = Session::start(&Invocation::shell(script)).unwrap();
        // This thread's count: other tests spawn beside it.
        let before = spawned_by_this_thread();
        for word in ["ab", "cd"] {
            session.send(format!("{word}\n").into_bytes());
            let answer = session
                .read_until(b"\nDONE\n", Instant::now() + Duration::from_secs(10), 1024)
                .unwrap();
            assert_eq!(answer, format!("{word}{word}\nDONE\n").into_bytes());
        }
        assert_eq!(spawned_by_this_thread(), before, "no process per request");
        // A flood without the marker is cut at the bound.
        session.send(format!("{}\n", "x".repeat(5000)).into_bytes());
        assert_eq!(
            session.read_until(b"NEVER", Instant::now() + Duration::from_secs(10), 4096),
            Err(SessionError::TooLong { max: 4096 })
        );
        let pid = session.id();
        session.kill();
        assert!(!running(pid));
        // A silent child is a timeout; one that ended is closed.
        let mut silent = Session::start(&Invocation::new("sleep").arg("600")).unwrap();
        assert!(matches!(
            silent.read_until(b"x", Instant::now() + Duration::from_millis(300), 10),
            Err(SessionError::TimedOut { partial: 0 })
        ));
        let mut ended =
            Session::start(&Invocation::shell("printf partial; echo oops >&2")).unwrap();
        assert_eq!(
            ended.read_until(b"x", Instant::now() + Duration::from_secs(10), 100),
            Err(SessionError::Closed { partial: 7 })
        );
        // Read at once after the close, as a cycle's message is: what it
        // said on its way out is there (the stderr pipe's end is waited for).
        assert!(ended.stderr().text().contains("oops"), "its stderr is kept");
    }

    /// A command that takes the next rank in `dir` (an atomic `mkdir`),
    /// says how many of its kind are alive (its own file among them), then
    /// meets the one ranked before it and the one after it on fifos: run
    /// one after another, the first waits for ever for the second.
    fn rendezvous(dir: &Path, total: usize) -> Invocation {
        for rank in 1..=total {
            let fifo = dir.join(format!("fifo.{rank}"));
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &fifo,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )
            .unwrap();
        }
        Invocation::shell(
            "d=$RENDEZVOUS; i=1
             until mkdir \"$d/rank.$i\" 2>/dev/null; do i=$((i+1)); done
             : > \"$d/alive.$$\"
             ls \"$d\" | grep -c '^alive\\.' >> \"$d/counts\"
             if [ \"$i\" -gt 1 ]; then echo go > \"$d/fifo.$((i-1))\"; fi
             if [ \"$i\" -lt \"$TOTAL\" ]; then read x < \"$d/fifo.$i\"; fi
             rm \"$d/alive.$$\"
             echo \"$i\"",
        )
        .env("RENDEZVOUS", dir)
        .env("TOTAL", total.to_string())
    }

    #[test]
    fn side_by_side_runs_run_at_once_up_to_their_bound_and_answer_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let total = 7;
        let one = rendezvous(dir.path(), total);
        let all = vec![one; total];
        let before = spawned_by_this_thread();
        // The timeout is a hang guard: one after another, this would meet it.
        let ran = run_side_by_side(&all, &Limits::with_timeout(Duration::from_secs(30)), 3);
        assert_eq!(spawned_by_this_thread() - before, total as u64);
        let mut ranks: Vec<u32> = ran
            .iter()
            .map(|(outcome, _)| {
                let out = outcome
                    .success_stdout()
                    .unwrap_or_else(|| panic!("{outcome:?}"));
                out.text().trim().parse().unwrap()
            })
            .collect();
        ranks.sort_unstable();
        assert_eq!(ranks, (1..=total as u32).collect::<Vec<_>>());
        let counts: Vec<usize> = std::fs::read_to_string(dir.path().join("counts"))
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        let most = counts.iter().copied().max().unwrap();
        assert!(
            (2..=3).contains(&most),
            "at most 3 at once, and more than one: {counts:?}"
        );
        // In the order given.
        let echoes: Vec<Invocation> = (0..5)
            .map(|i| Invocation::shell(format!("echo {i}")))
            .collect();
        let ran = run_side_by_side(&echoes, &Limits::default(), 2);
        let said: Vec<String> = ran
            .iter()
            .map(|(o, _)| o.success_stdout().unwrap().text().trim().to_string())
            .collect();
        assert_eq!(said, ["0", "1", "2", "3", "4"]);
    }

    #[test]
    fn one_at_a_time_the_rendezvous_meets_its_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let all = vec![rendezvous(dir.path(), 2); 2];
        let ran = run_side_by_side(&all, &Limits::with_timeout(Duration::from_secs(1)), 1);
        assert!(
            matches!(ran[0].0, Outcome::TimedOut { .. }),
            "{:?}",
            ran[0].0
        );
    }

    #[test]
    fn a_helper_thread_that_adopts_the_tally_counts_for_its_caller() {
        let before = spawned_by_this_thread();
        let tally = ThreadTally::of_this_thread();
        thread::scope(|scope| {
            scope.spawn(|| {
                tally.count_here();
                run(&Invocation::new("true"), &Limits::default());
            });
            // One that does not adopt it counts for itself only.
            scope.spawn(|| run(&Invocation::new("true"), &Limits::default()));
        });
        assert_eq!(spawned_by_this_thread() - before, 1);
    }

    #[test]
    fn exit_code_and_both_streams_are_captured() {
        let outcome = run(
            &Invocation::shell("printf out; printf err >&2; exit 3"),
            &Limits::default(),
        );
        match outcome {
            Outcome::Exited {
                code,
                stdout,
                stderr,
                ..
            } => {
                assert_eq!(code, Some(3));
                assert_eq!(stdout.text(), "out");
                assert_eq!(stderr.text(), "err");
            }
            other => panic!("expected Exited, got {other:?}"),
        }
    }

    #[test]
    fn arguments_cwd_env_and_stdin_reach_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let outcome = run(
            &Invocation::new("sh")
                .args([
                    "-c",
                    "pwd; printf '%s|' \"$1\" \"$PROBE_X\"; cat",
                    "sh",
                    "a b",
                ])
                .current_dir(dir.path())
                .env("PROBE_X", "x y")
                .stdin("fed"),
            &Limits::default(),
        );
        let stdout = outcome.success_stdout().expect("exit 0").text();
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(
            stdout,
            format!("{}\na b|x y|fed", canonical.display()),
            "{outcome:?}"
        );
    }

    #[test]
    fn output_is_bounded_and_says_so() {
        let limits = Limits {
            max_output: 1000,
            ..Limits::default()
        };
        let outcome = run(&Invocation::shell("head -c 200000 /dev/zero"), &limits);
        let Outcome::Exited { stdout, .. } = &outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(stdout.bytes.len(), 1000);
        assert!(stdout.truncated);
        // A cut answer is no answer, and says why.
        assert!(outcome.success_stdout().is_none());
        assert!(
            outcome.describe().contains("was cut"),
            "{}",
            outcome.describe()
        );
    }

    #[test]
    fn a_descendant_that_left_the_group_neither_loses_the_answer_nor_outlives_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("escaped.pid");
        let script = format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 300' & echo 3",
            pid_file.display()
        );
        let limits = Limits::with_timeout(Duration::from_secs(60));
        let outcome = run(&Invocation::shell(&script), &limits);
        let answer = outcome.success_stdout().map(Captured::text);
        assert_eq!(answer.as_deref(), Some("3\n"), "{outcome:?}");
        let escaped: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Gone, or a zombie about to be reaped by init: never still sleeping.
        let deadline = Instant::now() + Duration::from_secs(10);
        while running(escaped) {
            assert!(
                Instant::now() < deadline,
                "the escaped sleep {escaped} survived the run"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_programs_stderr_reaches_an_error_line_without_escapes() {
        let script =
            r"printf '\033]0;pwned\007\033[2Jbad\033]52;c;eHh4\007 \001thing\n' >&2; exit 3";
        let outcome = run(&Invocation::shell(script), &Limits::default());
        assert_eq!(outcome.describe(), "exited with code 3: bad thing");
    }

    #[test]
    fn a_missing_program_is_failed_to_spawn() {
        let outcome = run(
            &Invocation::new("/nonexistent/bmb-monitor-no-such-program"),
            &Limits::default(),
        );
        match outcome {
            Outcome::FailedToSpawn { error } => assert!(error.contains("no-such-program")),
            other => panic!("expected FailedToSpawn, got {other:?}"),
        }
    }

    #[test]
    fn a_background_child_writes_to_its_file_and_stopping_it_ends_its_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let script = "sleep 300 & echo $!; echo started; wait";
        let bg = Background::start(
            &Invocation::shell(script),
            Some(std::fs::File::create(&out).unwrap()),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !std::fs::read_to_string(&out).unwrap().contains("started") {
            assert!(Instant::now() < deadline, "the child never wrote");
            thread::sleep(Duration::from_millis(10));
        }
        let grandchild: u32 = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let leader = bg.id();
        assert!(bg.stop().is_some());
        // A killed orphan is gone, or a zombie until its new parent reaps it;
        // the signal lands asynchronously, hence the bounded wait.
        for pid in [leader, grandchild] {
            let deadline = Instant::now() + Duration::from_secs(10);
            while running(pid) {
                assert!(
                    Instant::now() < deadline,
                    "process {pid} of the stopped group is still running"
                );
                thread::sleep(Duration::from_millis(10));
            }
        }
    }

    #[test]
    fn timeout_kills_the_whole_group_including_a_grandchild_holding_the_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        // The grandchild ignores SIGTERM and holds stdout: only SIGKILL to the
        // group ends it, and only ending it lets the readers finish.
        let script = format!(
            "(trap '' TERM; exec sleep 300) & echo $! > '{}'; echo started; wait",
            pid_file.display()
        );
        let limits = Limits {
            timeout: Duration::from_millis(300),
            grace: Duration::from_millis(100),
            max_output: 1024,
            ..Limits::default()
        };
        let outcome = run(&Invocation::shell(script), &limits);
        let grandchild: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        match &outcome {
            Outcome::TimedOut { stdout, .. } => assert_eq!(stdout.text(), "started\n"),
            other => panic!("expected TimedOut, got {other:?}"),
        }
        // The grandchild was not our child, so it is reaped by init; give that a moment.
        let mut alive = running(grandchild);
        for _ in 0..100 {
            if !alive {
                break;
            }
            thread::sleep(Duration::from_millis(20));
            alive = running(grandchild);
        }
        assert!(!alive, "grandchild {grandchild} survived the timeout");
    }

    #[test]
    fn a_background_grandchild_left_after_exit_is_killed_not_waited_for_forever() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("bg.pid");
        let script = format!("sleep 300 & echo $! > '{}'; echo done", pid_file.display());
        let limits = Limits {
            timeout: Duration::from_millis(300),
            grace: Duration::from_millis(100),
            max_output: 1024,
            ..Limits::default()
        };
        let outcome = run(&Invocation::shell(script), &limits);
        let grandchild: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        match &outcome {
            Outcome::Exited { code, stdout, .. } => {
                assert_eq!(*code, Some(0));
                assert_eq!(stdout.text(), "done\n");
            }
            other => panic!("expected Exited, got {other:?}"),
        }
        let mut alive = true;
        for _ in 0..100 {
            alive = running(grandchild);
            if !alive {
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive, "background grandchild {grandchild} survived");
    }
}
