//! `bmb-monitor classify`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> ExitCode {
    ExitCode::from(crate::EXIT_USAGE)
}
