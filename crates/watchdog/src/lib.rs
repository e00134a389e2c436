//! The monitors as state machines over ports.
//!
//! An embedder implements a monitor's port trait with its own adapters (the
//! `bmb-monitor` binary uses `bmb-probes`) and calls it once per interval; a
//! test implements it with a fake. Here the worker monitor watches a fake
//! machine: an agent quiet past the window on two passes, its child's CPU
//! clock frozen and the tree unchanged, with commits on the branch, is
//! `idle`, said once; its pid dying is `gone`.
//!
//! ```
//! use std::time::Duration;
//!
//! use bmb_watchdog::Clock;
//! use bmb_watchdog::worker::{
//!     CommitsReading, CpuClocks, PidReading, WorkerConfig, WorkerMonitor, WorkerPort,
//! };
//!
//! /// The machine as the monitor sees it, one answer per question.
//! struct FakeMachine {
//!     agent_alive: bool,
//!     transcript_quiet: u64,
//! }
//!
//! impl WorkerPort for FakeMachine {
//!     fn pid(&mut self) -> PidReading {
//!         if self.agent_alive { PidReading::Alive(4242) } else { PidReading::Dead(4242) }
//!     }
//!     fn transcript_quiet_seconds(&mut self) -> Option<u64> {
//!         Some(self.transcript_quiet)
//!     }
//!     fn descendant_cpu(&mut self, _pid: u32) -> Option<CpuClocks> {
//!         Some(CpuClocks::from([(5000, 70)])) // a child whose clock does not move
//!     }
//!     fn tree_fingerprint(&mut self) -> Result<String, bmb_watchdog::PortError> {
//!         Ok("HEAD 1a2b3c, nothing changed".to_string())
//!     }
//!     fn commits(&mut self) -> CommitsReading {
//!         CommitsReading::Count(2)
//!     }
//! }
//!
//! /// The clock, a port too: moved by hand.
//! struct FakeClock(i64);
//!
//! impl Clock for FakeClock {
//!     fn now(&self) -> i64 {
//!         self.0
//!     }
//!     fn hhmm(&self, _epoch: i64) -> String {
//!         "12:00".to_string()
//!     }
//!     fn hhmmss(&self, _epoch: i64) -> String {
//!         "12:00:00".to_string()
//!     }
//! }
//!
//! let mut monitor = WorkerMonitor::new(WorkerConfig {
//!     branch: "plot/step-1".to_string(),
//!     worktree: "/tmp/step-1".to_string(),
//!     interval: Duration::from_secs(60),
//!     quiet_seconds: 900,
//! });
//! let mut machine = FakeMachine { agent_alive: true, transcript_quiet: 1000 };
//! let mut clock = FakeClock(1_788_343_200);
//!
//! let mut published = Vec::new();
//! for _pass in 0..4 {
//!     if let Some(report) = monitor.pass(&mut machine, &clock).report {
//!         published.push(report.finding);
//!     }
//!     clock.0 += 60;
//!     machine.transcript_quiet += 60;
//! }
//! assert_eq!(published, ["idle"]); // published on the change only
//!
//! machine.agent_alive = false;
//! let report = monitor.pass(&mut machine, &clock).report.expect("a death is news");
//! assert_eq!(report.finding, "gone");
//! assert!(report.stdout_line().starts_with(r#"plot-monitor {"#));
//! ```
//!
//! **Architecture Invariant:** nothing here calls the OS; every observation
//! arrives through a port trait, so every branch is driven from tests with
//! fakes and a fake clock.

pub mod clock;
pub mod lead;
pub mod session;
pub mod worker;

pub use clock::Clock;

/// Why a port could not answer: the adapter's own error (a probe's error
/// type, or any `std::error::Error`), which a monitor only renders, once per
/// change. An embedder may downcast it to the type its adapter returned.
pub type PortError = Box<dyn std::error::Error + Send + Sync>;

/// The longest duration any monitor takes, in seconds (a year): a timeout,
/// stall window or interval beyond it is a mistake, refused where it
/// enters, and anything up to it adds to a clock without overflowing.
pub const MAX_DURATION_SECS: u64 = 365 * 24 * 3600;
