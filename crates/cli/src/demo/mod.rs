//! `bmb-monitor demo`: the main job on a fresh machine with no agent CLI
//! installed (SPEC §4). A PRIVATE tmux server (`-S` socket in the demo's own
//! temporary folder, `-f /dev/null`) holds one session whose pane plays real
//! captured Claude Code screens in sequence; the REAL monitor (this binary's
//! `watch --once`, one poll per step) watches it with a work probe, a progress
//! probe and an alert command that only read or write files in that folder,
//! and with `XDG_STATE_HOME` there too, so the user's state is never touched.
//! The pane records every key it receives (raw mode, no echo), so the demo can
//! show that a nudge arrived and that a question got no key.
//!
//! Every path ends in [`Sandbox::cleanup`]: the server is killed by its own
//! socket (and its pid waited for), the socket and the folder removed; Ctrl-C
//! only sets the stop flag, so the demo stops between steps and cleans up too.

mod args;
mod narrate;
mod play;
mod run;
mod sandbox;
mod script;

pub(crate) use args::Args;
pub(crate) use run::run;
