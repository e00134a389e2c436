//! The tmux adapter: list panes and sessions, capture many sessions' panes in
//! two invocations, type a line into a pane; locally or on an ssh alias.
//!
//! One job per file: `client.rs` the calls and plain questions, `chain.rs` the
//! capture-chain protocol, `server.rs` which server, `life.rs` a server's
//! life (a private one started, sessions and panes made and ended), `error.rs`
//! what a call that gave no answer means.

mod chain;
mod client;
mod error;
mod life;
mod server;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use chain::{
    CAPTURE_BASE_BYTES, CAPTURE_PER_PANE_BYTES, chain_batches, chain_marker, listed_sessions,
    marker_format, parse_list, read_chain, wanted_targets,
};
pub use chain::{CapturesAndSessions, KnownPane, ListedSession, PaneCapture, fresh_nonce};
pub use client::{ENTER_AFTER, PaneRow, Tmux};
pub use error::TmuxError;
pub use server::Server;
