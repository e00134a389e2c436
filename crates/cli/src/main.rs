//! `bmb-monitor`: the binary. Glue only: parse arguments, wire the real
//! adapters to the monitors' ports, map errors to exit codes.

mod classify_cmd;
mod demo_cmd;
mod lead_cmd;
mod list_cmd;
mod profiles;
mod server_args;
mod watch_cmd;
mod worker_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for a usage or configuration error (clap uses it for bad flags too).
pub const EXIT_USAGE: u8 = 2;

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
    /// Classify one pane capture read from stdin: WORKING, QUESTION, STALLED or BLOCKED.
    Classify(classify_cmd::Args),
    /// Watch a Lead's agents by metadata only; report state changes, never a heartbeat.
    Lead(lead_cmd::Args),
    /// Watch agent sessions in tmux panes (local or `host:session`): nudge, escalate, or stay silent.
    Watch(watch_cmd::Args),
    /// List the tmux sessions that can be watched, here and on every ssh alias, and their monitors.
    List(list_cmd::ListArgs),
    /// End the detached monitor of a target started with `watch --detach`.
    Stop(list_cmd::StopArgs),
    /// Play a scripted agent on a private tmux server, watched by the real monitor: all four states.
    Demo(demo_cmd::Args),
    /// Watch a dispatched agent's process: publish `gone`, `idle` and `clear` findings.
    Worker(worker_cmd::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Classify(args) => classify_cmd::run(args),
        Command::Lead(args) => lead_cmd::run(args),
        Command::Worker(args) => worker_cmd::run(args),
        Command::Watch(args) => watch_cmd::run_watch(args),
        Command::List(args) => list_cmd::run_list(args),
        Command::Stop(args) => list_cmd::run_stop(args),
        Command::Demo(args) => demo_cmd::run_demo(args),
    }
}
