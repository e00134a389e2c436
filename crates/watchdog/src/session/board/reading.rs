//! What `status` reads back: one place a board came from, and whether its
//! monitor still runs (a board whose process is gone, or whose loop froze,
//! is never shown as current).

use super::Board;
use super::age::age;

/// Whether a board still describes a running monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    /// Its monitor runs and completes cycles.
    Live,
    /// Why it does not: its monitor is frozen (no cycle for long); the
    /// reason is shown on its rows.
    Stale(String),
    /// Why it does not: its monitor's process is gone (a `kill -9`): its
    /// rows are not shown, the board is said once in the summary.
    Gone(String),
}

/// A board is stale when its process is gone, or when it has not completed a
/// cycle for three intervals and a minute (a frozen loop): its rows are kept,
/// marked, never shown as current.
pub fn freshness(board: &Board, pid_alive: bool, now: i64) -> Freshness {
    if !pid_alive {
        return Freshness::Gone(format!(
            "monitor pid {} is gone; last cycle {} ago",
            board.pid,
            age(now - board.updated)
        ));
    }
    let patience = board.interval_secs.saturating_mul(3).saturating_add(60);
    let quiet = now.saturating_sub(board.updated);
    if quiet > 0 && quiet.unsigned_abs() > patience {
        return Freshness::Stale(format!(
            "monitor pid {} completed no cycle for {}",
            board.pid,
            age(quiet)
        ));
    }
    Freshness::Live
}

/// One place the board was read from: a monitor's board file or endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The file or the endpoint, for a row that says what failed.
    pub name: String,
    /// The board, or why it could not be read.
    pub reading: Reading,
}

#[derive(Debug, Clone, PartialEq)]
/// What one source gave: a board and whether it is current, or why there is none.
pub enum Reading {
    /// A board, and whether its monitor still runs.
    Board(Box<Board>, Freshness),
    /// The endpoint or file could not be read: why.
    Unreachable(String),
}
