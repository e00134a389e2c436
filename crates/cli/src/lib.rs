//! `bmb-monitor`: the binary's library. Glue only: parse arguments, wire the
//! real adapters to the monitors' ports, map errors to exit codes. Every rule
//! lives in `classify`, `ledger`, `probes` or `watchdog`, where a test drives it.
//!
//! One folder per command, one job per file; `output` is the one way any of
//! them prints.

// Every line goes through `output`, which cannot panic on a closed stream.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod audit;
pub mod classify_cmd;
pub mod clock;
pub mod demo;
pub mod exit;
pub mod lead;
pub mod list;
mod notify;
pub mod output;
pub mod profiles;
pub mod redact;
pub mod server_args;
pub mod status;
pub mod watch;
pub mod worker;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `$XDG_STATE_HOME/bmb-monitor`, else `~/.local/state/bmb-monitor`: where
/// every command keeps what it remembers.
pub fn state_dir() -> std::path::PathBuf {
    use std::path::PathBuf;
    match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("bmb-monitor"),
        None => {
            let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
            PathBuf::from(home).join(".local/state/bmb-monitor")
        }
    }
}

/// The longest duration any flag takes, in seconds (a year).
pub const MAX_SECS: u64 = watchdog::MAX_DURATION_SECS;

/// A duration flag in whole seconds, from `min` up to [`MAX_SECS`].
pub fn secs(min: u64) -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(min..=MAX_SECS)
}

#[derive(Parser)]
#[command(name = "bmb-monitor", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Audit a project against its own stated rules: one read-only auditor per dimension, every citation checked.
    Audit(audit::Args),
    /// Classify one pane capture read from stdin: WORKING, QUESTION, STALLED or BLOCKED.
    Classify(classify_cmd::Args),
    /// Watch a Lead's agents by metadata only; report state changes, never a heartbeat.
    Lead(lead::Args),
    /// Watch agent sessions in tmux panes (local or `host:session`): nudge, escalate, or stay silent.
    Watch(Box<watch::Args>),
    /// List the tmux sessions that can be watched, here and on every ssh alias, and their monitors.
    List(list::ListArgs),
    /// End the detached monitor of a target started with `watch --detach`.
    Stop(list::StopArgs),
    /// The board: every target of every running `watch`, its state, for how long, and why.
    Status(status::Args),
    /// Play a scripted agent on a private tmux server, watched by the real monitor: all four states.
    Demo(demo::Args),
    /// Watch a dispatched agent's process: publish `gone`, `idle` and `clear` findings.
    Worker(worker::Args),
}

/// Parses the command line and runs the command it names.
pub fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Audit(args) => audit::run(args),
        Command::Classify(args) => classify_cmd::run(args),
        Command::Lead(args) => lead::run(args),
        Command::Worker(args) => worker::run(args),
        Command::Watch(args) => watch::run(*args),
        Command::List(args) => list::run_list(args),
        Command::Stop(args) => list::run_stop(args),
        Command::Status(args) => status::run(args),
        Command::Demo(args) => demo::run(args),
    }
}
