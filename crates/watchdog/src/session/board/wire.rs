//! The board as it crosses processes and machines: a running `watch` writes
//! it (its board file, `/board.json`) and `status` reads it back, on this
//! machine or through `status --endpoint` from another. The wire type is its
//! own, with a version, so the model can change without a reader noticing.
//!
//! The version rule: a board without a `version` is version 1 (what every
//! monitor wrote before the field existed, the same shape); a reader reads
//! every version up to its own and refuses a newer one, naming both. A field
//! added to the rows within a version carries `#[serde(default)]`, so an
//! older writer's board still reads.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Board, CycleTimes, HostRow, TargetRow};

/// The board's wire version this build writes, and the newest it reads.
pub const BOARD_VERSION: u32 = 1;

/// The board on the wire, as written: the model's fields, borrowed, under
/// their version.
#[derive(Serialize)]
pub struct BoardOut<'a> {
    /// [`BOARD_VERSION`].
    version: u32,
    pid: u32,
    started: i64,
    updated: i64,
    interval_secs: u64,
    cycles: &'a CycleTimes,
    targets: &'a [TargetRow],
    hosts: &'a [HostRow],
}

impl<'a> From<&'a Board> for BoardOut<'a> {
    fn from(board: &'a Board) -> BoardOut<'a> {
        BoardOut {
            version: BOARD_VERSION,
            pid: board.pid,
            started: board.started,
            updated: board.updated,
            interval_secs: board.interval_secs,
            cycles: &board.cycles,
            targets: &board.targets,
            hosts: &board.hosts,
        }
    }
}

/// The board on the wire, as read.
#[derive(Deserialize)]
struct BoardIn {
    /// Absent before the field existed: version 1.
    #[serde(default = "first_version")]
    version: u32,
    pid: u32,
    started: i64,
    updated: i64,
    interval_secs: u64,
    cycles: CycleTimes,
    targets: Vec<TargetRow>,
    hosts: Vec<HostRow>,
}

fn first_version() -> u32 {
    1
}

/// Why a text is not a board this build reads.
#[derive(Debug)]
pub enum BoardError {
    /// Not JSON, or not a board's shape (serde's message, unchanged).
    Json(serde_json::Error),
    /// A board of a version newer than [`BOARD_VERSION`], from a newer monitor.
    Newer {
        /// The version the board says it is.
        version: u32,
    },
}

impl fmt::Display for BoardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoardError::Json(err) => err.fmt(f),
            BoardError::Newer { version } => write!(
                f,
                "board version {version} is newer than this bmb-monitor reads ({BOARD_VERSION}): upgrade it"
            ),
        }
    }
}

impl std::error::Error for BoardError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BoardError::Json(err) => Some(err),
            BoardError::Newer { .. } => None,
        }
    }
}

/// The board's wire text.
pub fn to_json(board: &Board) -> String {
    // A board holds strings, numbers and maps with string keys: it always serialises.
    serde_json::to_string(&BoardOut::from(board)).unwrap_or_else(|_| "{}".to_string())
}

/// A board read from its wire text, of any version up to [`BOARD_VERSION`].
pub fn from_json(text: &str) -> Result<Board, BoardError> {
    let wire: BoardIn = serde_json::from_str(text).map_err(BoardError::Json)?;
    if wire.version > BOARD_VERSION {
        return Err(BoardError::Newer {
            version: wire.version,
        });
    }
    Ok(Board {
        pid: wire.pid,
        started: wire.started,
        updated: wire.updated,
        interval_secs: wire.interval_secs,
        cycles: wire.cycles,
        targets: wire.targets,
        hosts: wire.hosts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A board as a monitor wrote it before the version field (the fields
    /// added since default): still read, as version 1.
    const UNVERSIONED: &str = r#"{"pid":42,"started":100,"updated":101,"interval_secs":1,
        "cycles":{"count":1,"sum_seconds":0.3,"last_seconds":0.3,"buckets":[0,0,0,1,0,0,0,0,0,0,0]},
        "targets":[{"target":"agent","host":"local","session":"agent","cli":null,"state":"QUESTION",
        "since":101,"polled":true,"nudges_used":0,"budget":5,"rule":null,"evidence":null,"error":null,
        "last_action":null,"counts":{"nudges":0,"escalations":{"question":1},"budget_resets":0,"unrecognised":0}}],
        "hosts":[{"host":"local","reachable":true,"error":null,"since":100,"capture_failures":0,"probe_failures":0}]}"#;

    #[test]
    fn a_board_without_a_version_reads_as_the_first() {
        let board = from_json(UNVERSIONED).expect("an unversioned board reads");
        assert_eq!(board.pid, 42);
        assert_eq!(board.targets[0].state.as_deref(), Some("QUESTION"));
        assert_eq!(
            board.targets[0].counts.escalations[&crate::session::Reason::Question],
            1
        );
        let written = to_json(&board);
        assert!(
            written.starts_with(r#"{"version":1,"pid":42,"#),
            "{written}"
        );
        assert_eq!(from_json(&written).expect("its own text reads"), board);
    }

    /// The counts are keyed by the reasons' words, in the words' order,
    /// as when the keys were the words themselves; a word this build does
    /// not give (a newer monitor's) is left out, the board still read.
    #[test]
    fn escalation_counts_are_written_by_their_words_in_order_and_unknown_ones_dropped() {
        let written = r#""escalations":{"blocked":2,"question":1,"unreadable":3}"#;
        let text = UNVERSIONED.replace(r#""escalations":{"question":1}"#, written);
        let board = from_json(&text).expect("reads");
        assert!(to_json(&board).contains(written), "{}", to_json(&board));
        let newer = UNVERSIONED.replace(
            r#""escalations":{"question":1}"#,
            r#""escalations":{"later_word":4,"question":1}"#,
        );
        let board = from_json(&newer).expect("a newer reason does not refuse the board");
        assert!(
            to_json(&board).contains(r#""escalations":{"question":1}"#),
            "{}",
            to_json(&board)
        );
    }

    #[test]
    fn a_newer_board_is_refused_naming_both_versions() {
        let newer = UNVERSIONED.replacen('{', r#"{"version":2,"#, 1);
        let err = from_json(&newer).expect_err("a newer board");
        assert_eq!(
            err.to_string(),
            "board version 2 is newer than this bmb-monitor reads (1): upgrade it"
        );
        let garbage = from_json("{").expect_err("not JSON");
        assert!(std::error::Error::source(&garbage).is_some(), "{garbage}");
    }
}
