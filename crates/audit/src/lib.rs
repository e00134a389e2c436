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
//!   serde-derived types of their own with the version of their shape, and
//!   the saved report read back as the previous audit.
//! - [`cadence`]: when a project's next audit is due beside the poll loop,
//!   and a late slot skipped while the last audit still runs.
//!
//! An embedder reads the project's rules files and hands them to [`plan`],
//! runs one auditor per dimension its own way, and hands each auditor's
//! output to [`cite::check`] with its port onto the project's files; here
//! the files are a fake, and the auditor's answer a string:
//!
//! ```
//! use bmb_audit::cite::{self, Look, ProjectFiles};
//! use bmb_audit::plan::plan;
//! use bmb_audit::report::{self, DimensionResult, Outcome};
//!
//! /// The project's files, as the port hands them out.
//! struct Files;
//!
//! impl ProjectFiles for Files {
//!     fn root(&self) -> &str {
//!         "/work/shop"
//!     }
//!     fn look(&mut self, path: &str) -> Look {
//!         match path {
//!             "src/db.rs" => Look::Text {
//!                 canonical: path.to_string(),
//!                 lines: vec!["fn open() {".to_string(), "    let db = Db::mock();".to_string()],
//!             },
//!             _ => Look::Missing,
//!         }
//!     }
//! }
//!
//! let rules = [("CLAUDE.md".to_string(), "# Testing\n\n- Never mock the database.\n".to_string())];
//! let planned = plan(&rules, None);
//! assert_eq!(planned.dimensions.len(), 1);
//! let dimension = &planned.dimensions[0];
//!
//! // The auditor's stdout: one finding whose quote is there, one whose file is not.
//! let said = concat!(
//!     r#"{"severity":"high","rank":1,"claim":"the tests mock the database","file":"src/db.rs","line":2,"quote":"Db::mock()"}"#,
//!     "\n",
//!     r#"{"severity":"low","rank":2,"claim":"a made-up file","file":"src/nope.rs","line":1,"quote":"x"}"#,
//! );
//! let scope = cite::Scope { rules: &dimension.rules, plan_rules: &dimension.rules };
//! let checked = cite::check(said, scope, &mut Files);
//! assert_eq!(checked.findings.len(), 1); // the other is rejected, with why
//! assert_eq!(checked.rejected.len(), 1);
//!
//! let results = vec![DimensionResult {
//!     name: dimension.name.clone(),
//!     rules: dimension.rules.iter().map(cite::rule_ref).collect(),
//!     outcome: Outcome::Checked(checked),
//! }];
//! let first = report::synthesise(results, None, None, &mut Files);
//! assert!(first.alert().is_some()); // a new finding is news
//! let kept = first.to_json(); // what the caller keeps for the next audit
//! assert_eq!(kept["version"], 1);
//! assert_eq!(kept["dimensions"][0]["findings"][0]["status"], "new");
//! ```

pub mod cadence;
pub mod cite;
pub mod plan;
pub mod report;
pub mod wire;
