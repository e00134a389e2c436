//! `bmb-monitor audit`: the seed's second layer, the deep audit team. The
//! project's own stated rules become dimensions; one read-only auditor per
//! dimension runs in parallel; every citation is checked here, never
//! trusted; the report says only what changed since the last audit.

mod args;
pub(crate) mod files;
mod news;
mod piped;
mod prompt;
mod run;
pub(crate) mod store;
mod team;

pub(crate) use args::Args;
pub(crate) use piped::PipedCommands;
pub(crate) use run::run;
