//! The demo from start to summary: the sandbox made, the script played, the
//! sandbox cleaned up on every path, and which of the four states were shown.

use std::process::ExitCode;

use super::args::Args;
use super::narrate::say;
use super::play::play;
use super::sandbox::Sandbox;
use super::script::FOUR;
use crate::output::say;

/// `bmb-monitor demo`: success only when all four states were shown and the cleanup held.
pub(crate) fn run(_args: Args) -> ExitCode {
    probes::os::signals::install_stop_handler();
    let mut sandbox = match Sandbox::create() {
        Ok(sandbox) => sandbox,
        Err(error) => {
            say(format_args!("bmb-monitor: demo: {error}"));
            return crate::exit::code(crate::exit::FAILURE);
        }
    };
    let result = play(&mut sandbox);
    let cleanup = sandbox.cleanup();
    match &cleanup {
        Ok(()) => {
            say!(
                "\ncleaned up: the private tmux server is gone, its socket and {} removed",
                sandbox.dir.display()
            );
        }
        Err(error) => {
            say!("\ncleanup: {error}");
        }
    }
    let shown = match result {
        Ok(shown) => shown,
        Err(error) => {
            say(format_args!("bmb-monitor: demo: {error}"));
            Vec::new()
        }
    };
    let missing: Vec<&str> = FOUR
        .iter()
        .copied()
        .filter(|s| !shown.contains(s))
        .collect();
    let seen: Vec<&str> = FOUR.iter().copied().filter(|s| shown.contains(s)).collect();
    let seen = if seen.is_empty() {
        "none".to_string()
    } else {
        seen.join(", ")
    };
    if missing.is_empty() && cleanup.is_ok() {
        say!("SUMMARY: states shown: {seen} (all four)");
        crate::exit::code(crate::exit::OK)
    } else if missing.is_empty() {
        say!("SUMMARY: states shown: {seen} (all four), but the cleanup failed");
        crate::exit::code(crate::exit::FAILURE)
    } else {
        say!(
            "SUMMARY: states shown: {seen}; missing: {}",
            missing.join(", ")
        );
        crate::exit::code(crate::exit::FAILURE)
    }
}
