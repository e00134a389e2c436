//! `bmb-monitor watch`: the session monitor (seed
//! `omega-session-monitor.txt`) on real tmux, local and over ssh.
//!
//! Glue around [`watchdog::session::TargetMonitor`]: each cycle captures every
//! watched pane (two tmux invocations per server), runs the probes, lets the
//! monitor decide, then persists, sends and alerts in the order it said.
//! The loop never exits on a runtime error: each is rendered and survived.

mod alert;
mod alertmanager;
mod args;
mod audit;
mod check;
mod config;
mod config_file;
mod cycle;
mod detach;
mod discover;
mod fd_budget;
mod hosts;
mod metrics;
mod outage;
mod probe_kind;
mod processes;
mod report;
mod run;
mod serve;
mod settings;
mod socket_lock;
mod target_settings;
mod watchdog_budget;

pub(crate) use args::{Args, ProbesOn};
pub(crate) use config_file::config_endpoint;
pub(crate) use run::run;
