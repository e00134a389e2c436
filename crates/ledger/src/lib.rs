//! What `bmb-monitor` remembers between polls and across restarts.
//!
//! Its files are features, on by default: `journal` (the session memory's
//! journal file) and `findings` (the findings log). With both off it is pure
//! data: `session` and `escalation` call no OS, which is how `bmb-watchdog`
//! uses it.
//!
//! An embedder keeps a session monitor's memory as a journal of
//! [`session::SessionRecord`]s, one JSON line each, written BEFORE the action
//! it records (a nudge is journaled before it is typed). On start it replays
//! the journal: the echo ledger still holds what was typed, the nudge budget
//! is not fresh, and a question already relayed is not paged again, even when
//! the last write was torn by a `kill -9`.
//!
//! ```
//! use bmb_ledger::session::{
//!     EscalationKind, SessionMemory, SessionRecord, parse_records, record_line,
//! };
//!
//! let nudge = "Please continue with the next step of your plan.";
//! let mut journal = String::new();
//! for record in [
//!     SessionRecord::Progress { value: 41 },
//!     SessionRecord::Sent { text: nudge.to_string() },
//!     SessionRecord::Nudged { used: 1 },
//!     SessionRecord::Escalated { kind: EscalationKind::Question, key: "page-now".to_string() },
//! ] {
//!     journal.push_str(&record_line(&record));
//!     journal.push('\n');
//! }
//! journal.push_str(r#"{"record":"nud"#); // the write a kill -9 cut short
//!
//! // The restarted monitor: every whole record counts, the torn one is reported.
//! let (records, torn) = parse_records(&journal);
//! assert_eq!(torn.len(), 1);
//! let memory = SessionMemory::replay(&records);
//! assert_eq!(memory.sent, [nudge]); // the echo ledger: our own words are not a signal
//! assert_eq!(memory.nudges_used, 1); // no fresh budget
//! assert_eq!(memory.progress, Some(41));
//! assert!(memory.escalated.contains_key(&EscalationKind::Question)); // not paged twice
//!
//! // A long-running monitor rewrites its journal to the fewest records.
//! assert_eq!(SessionMemory::replay(&memory.compacted()), memory);
//! ```
//!
//! A worker monitor's findings go to a `findings::FindingsLog` (the `findings`
//! feature): appended one whole line per `write`, never rewritten, recreated
//! when moved away.
//!
//! ```
//! # #[cfg(feature = "findings")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use bmb_ledger::findings::FindingsLog;
//!
//! let dir = tempfile::tempdir()?;
//! let log = FindingsLog::new(dir.path().join("findings.jsonl"));
//! log.append(r#"{"finding":"idle"}"#)?;
//! log.append(r#"{"finding":"clear"}"#)?;
//! assert_eq!(
//!     std::fs::read_to_string(log.path())?,
//!     "{\"finding\":\"idle\"}\n{\"finding\":\"clear\"}\n"
//! );
//! // A line with a newline inside would split a record: it is refused.
//! assert!(log.append("{\n}").is_err());
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "findings"))]
//! # fn main() {}
//! ```

pub mod escalation;
#[cfg(feature = "findings")]
pub mod findings;
#[cfg(feature = "journal")]
pub mod journal;
pub mod session;
