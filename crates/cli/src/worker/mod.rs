//! `bmb-monitor worker`: the worker monitor, a drop-in for `plot-worker-monitor.sh`.
//!
//! Every flag falls back to the seed's environment variable, then to the
//! seed's default, so a wrapper that started the bash script can start this
//! instead, unchanged. The real adapters for [`WorkerPort`] are here; the
//! rules are in `watchdog::worker`.

mod args;
mod log;
mod pass;
mod ports;
mod run;
mod settings;
mod wait;

pub(crate) use args::Args;
pub(crate) use run::run;
