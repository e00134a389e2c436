//! The exit codes every command uses, and nothing else (README, "Exit codes").

use std::process::ExitCode;

/// The command did what it was asked; for a monitor, it ended as asked
/// (`--once`, SIGINT/SIGTERM, its agent or its parent gone, a shutdown message).
pub(crate) const OK: u8 = 0;

/// The command ran and failed at its job: the demo missed a state or could not
/// clean up, `stop` found no monitor, `watch --detach` could not start one.
pub(crate) const FAILURE: u8 = 1;

/// A usage or configuration error, found before any work: a bad flag or value
/// (clap uses 2 too), an unusable profile, a target already watched.
pub(crate) const USAGE: u8 = 2;

/// `code` as the process's exit status.
pub(crate) fn code(code: u8) -> ExitCode {
    ExitCode::from(code)
}
