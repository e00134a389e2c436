//! `bmb-monitor demo`'s flags: none.

#[derive(clap::Args, Debug)]
pub(crate) struct Args {}
