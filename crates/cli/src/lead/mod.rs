//! `bmb-monitor lead`: the Lead's metadata watcher (seed `bmb-monitor.txt`).
//!
//! Glue around [`watchdog::lead::LeadMonitor`]: control messages from stdin
//! (polled, never blocking the loop) and from the inbox folder, the pass loop, and the sinks
//! (stdout and the Lead's pane; the Consultant's file and pane; stderr).
//! Nothing here exits on a runtime error: each is said once and survived.

mod args;
mod control;
mod lock;
pub(crate) mod port;
mod run;
mod sinks;

pub(crate) use args::Args;
pub(crate) use run::run;
