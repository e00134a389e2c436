//! The audit team (seed `omega-session-monitor.txt`, "The deep audit team"):
//! the second layer, slow and rare, beside the poll loop. Pure, like the
//! other monitors: files arrive as text through the caller, auditors' output
//! as lines, and what comes out is a plan, verdicts and a report.
//!
//! - [`plan`]: the watched project's own stated rules grouped into
//!   dimensions, each rule with its `file:line`; the seed's four fallbacks
//!   only when the project states none.
//! - [`cite`]: an auditor's JSON lines read as findings and holding rules,
//!   each citation checked against the project's files (R-CITE), never
//!   trusted.
//! - [`report`]: what survived, ranked per dimension, marked new, still open
//!   or gone against the previous audit.
//! - [`wire`]: the report and the plan as the JSON they are written in,
//!   serde-derived types of their own with the version of their shape.
//! - [`cadence`]: when a project's next audit is due beside the poll loop,
//!   and a late slot skipped while the last audit still runs.

#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]
#![warn(clippy::allow_attributes, clippy::allow_attributes_without_reason)]

pub mod cadence;
pub mod cite;
pub mod plan;
pub mod report;
pub mod wire;
