//! The session monitor (seed `omega-session-monitor.txt`): the state machine
//! for one target ([`TargetMonitor`]), its settings, its foreground policy and its
//! vocabulary, and what reads its reports (the alert book, the board), with
//! the targets it is given and the readings it takes in.

pub mod alerts;
pub mod board;
mod config;
mod foreground;
mod monitor;
pub mod target;
pub mod usage_limit;
pub mod witness;
mod words;

pub use config::{
    CAPTURE_FAILURE_PATIENCE, DEFAULT_BUDGET, DEFAULT_NUDGE_TEXT, RECLASSIFY_EVERY, RESET_MARGIN,
    STILL_PANE_PATIENCE, SessionConfig, builtin_profiles, probe_runs_per_target,
};
pub use foreground::{Foreground, RELAYS, SHELLS, TERMINAL_WRAPPERS, shows_an_agent};
pub use monitor::{Now, Observation, TargetMonitor, fingerprint};
#[cfg(test)]
pub(crate) use words::sample_report;
pub use words::{Action, Alert, Done, Latch, PollReport, Reason, Refusal, Wait};
