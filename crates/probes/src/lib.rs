//! Every question `bmb-monitor` asks of the machine.
//!
//! An embedder runs its probes through [`run::run`]: a command under a wall
//! clock, in a process group of its own, its output bounded. A probe that
//! hangs (even one whose grandchild holds the pipe) costs its timeout and a
//! fact to report, never a frozen loop, and leaves no process behind.
//!
//! ```
//! use std::time::Duration;
//!
//! use bmb_probes::run::{Invocation, Limits, Outcome, run};
//!
//! // A work probe: how many items of the plan are left?
//! let work = Invocation::shell("printf 3");
//! let outcome = run(&work, &Limits::with_timeout(Duration::from_secs(10)));
//! let answer = outcome.success_stdout().map(|stdout| stdout.text());
//! assert_eq!(answer.as_deref(), Some("3"));
//!
//! // A probe that never answers, with a grandchild in the background.
//! let hung = Invocation::shell("sleep 60 & sleep 60");
//! let outcome = run(&hung, &Limits::with_timeout(Duration::from_millis(200)));
//! assert!(matches!(outcome, Outcome::TimedOut { stopping: false, .. }));
//! assert!(outcome.success_stdout().is_none());
//! assert!(outcome.describe().starts_with("timed out after"));
//! ```
//!
//! **Architecture Invariant:** this is the only product crate that starts a
//! subprocess or reads `/proc`; the monitors in `watchdog` reach the machine
//! only through port traits that the CLI implements with the functions here.

pub mod agent;
pub mod fs;
pub mod os;
pub mod project;
pub mod remote;
pub mod run;
pub mod ssh;
pub mod tmux;
