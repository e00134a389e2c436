//! The tmux adapter: list panes and sessions, capture many sessions' panes in
//! two invocations, type a line into a pane; locally or on an ssh alias.

mod client;

pub use client::*;
