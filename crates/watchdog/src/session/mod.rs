//! The session monitor (seed `omega-session-monitor.txt`): the state machine
//! for one target and what reads its reports (the alert book, the board),
//! with the targets it is given and the readings it takes in.

pub mod alerts;
pub mod board;
mod monitor;
pub mod target;
pub mod usage_limit;
pub mod witness;

pub use monitor::*;
