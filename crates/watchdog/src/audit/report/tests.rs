//! Reports from checked outcomes, and the second audit against the first
//! through the saved JSON.

use serde_json::json;

use super::*;
use crate::audit::cite::RejectReason;

fn finding(severity: Severity, rank: u32, file: &str, line: usize, quote: &str) -> Finding {
    Finding {
        severity,
        rank,
        claim: format!("claim about {quote}"),
        file: file.to_string(),
        line,
        quote: quote.to_string(),
    }
}

fn checked(findings: Vec<Finding>) -> Outcome {
    Outcome::Checked(Checked {
        findings,
        ..Checked::default()
    })
}

fn dimension(name: &str, outcome: Outcome) -> DimensionResult {
    DimensionResult {
        name: name.to_string(),
        outcome,
    }
}

/// Each kept finding of a report as `dimension severity rank file:line status`.
fn ranking(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for d in &report.dimensions {
        match &d.verdict {
            Verdict::Failed(how) => out.push(format!("{} failed: {how}", d.name)),
            Verdict::Kept(kept) => {
                for r in &kept.findings {
                    let f = &r.finding;
                    let status = r.status.as_str();
                    out.push(format!(
                        "{} {} {} {}:{} {status}",
                        d.name, f.severity, f.rank, f.file, f.line
                    ));
                }
                for f in &kept.gone {
                    out.push(format!(
                        "{} {} {} {}:{} gone",
                        d.name, f.severity, f.rank, f.file, f.line
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn findings_are_ranked_by_severity_then_rank() {
    let report = synthesise(
        vec![dimension(
            "Purity",
            checked(vec![
                finding(Severity::Low, 1, "a.rs", 1, "a"),
                finding(Severity::High, 2, "b.rs", 2, "b"),
                finding(Severity::Medium, 1, "c.rs", 3, "c"),
                finding(Severity::High, 1, "d.rs", 4, "d"),
            ]),
        )],
        None,
        None,
    );
    assert_eq!(
        ranking(&report),
        [
            "Purity high 1 d.rs:4 new",
            "Purity high 2 b.rs:2 new",
            "Purity medium 1 c.rs:3 new",
            "Purity low 1 a.rs:1 new",
        ]
    );
}

#[test]
fn the_second_audit_marks_new_still_open_and_gone_through_the_saved_json() {
    let first = synthesise(
        vec![
            dimension(
                "Purity",
                checked(vec![
                    finding(Severity::High, 1, "src/a.rs", 10, "std::fs::read"),
                    finding(Severity::Low, 2, "src/b.rs", 5, "sleep(1)"),
                ]),
            ),
            dimension(
                "Tests",
                checked(vec![finding(
                    Severity::Medium,
                    1,
                    "t.rs",
                    1,
                    "assert!(true)",
                )]),
            ),
            dimension(
                "Docs",
                checked(vec![finding(Severity::Low, 1, "README.md", 3, "todo")]),
            ),
        ],
        None,
        None,
    );
    let saved = first.to_json().to_string();
    let previous = Previous::from_json(&serde_json::from_str(&saved).unwrap()).unwrap();
    assert_eq!(previous.findings().len(), 4);

    let second = synthesise(
        vec![
            dimension(
                "Purity",
                checked(vec![
                    // The same quote, re-indented and moved down: still open.
                    finding(Severity::High, 1, "src/a.rs", 14, "  std::fs::read "),
                    finding(Severity::Medium, 1, "src/c.rs", 2, "spawn_child(argv)"),
                ]),
            ),
            // The same quote in another dimension is another finding.
            dimension(
                "Tests",
                checked(vec![finding(Severity::Low, 1, "src/b.rs", 5, "sleep(1)")]),
            ),
            dimension("Docs", Outcome::Failed("timed out after 900 s".to_string())),
        ],
        Some(&previous),
        None,
    );
    assert_eq!(
        ranking(&second),
        [
            "Purity high 1 src/a.rs:14 still_open",
            "Purity medium 1 src/c.rs:2 new",
            "Purity low 2 src/b.rs:5 gone",
            "Tests low 1 src/b.rs:5 new",
            "Tests medium 1 t.rs:1 gone",
            "Docs failed: timed out after 900 s",
        ]
    );
    // The failed dimension's finding is carried, so a third audit still knows it.
    assert_eq!(second.carried.len(), 1);
    assert_eq!(second.carried[0].dimension, "Docs");
    let third_previous = Previous::from_json(&second.to_json()).unwrap();
    let third = synthesise(
        vec![dimension(
            "Docs",
            checked(vec![finding(Severity::Low, 1, "README.md", 9, "todo")]),
        )],
        Some(&third_previous),
        None,
    );
    assert_eq!(ranking(&third), ["Docs low 1 README.md:9 still_open"]);
}

#[test]
fn a_failed_dimension_is_one_line_and_a_clean_one_too() {
    let report = synthesise(
        vec![
            dimension(
                "Isolation",
                Outcome::Failed("exited with status 2".to_string()),
            ),
            dimension(
                "Tests",
                Outcome::Checked(Checked {
                    holds: vec![Holds {
                        holds: "every test spawns the real binary in its own temporary directory"
                            .to_string(),
                        file: "tests/cli.rs".to_string(),
                        line: 4,
                    }],
                    rejected: vec![Rejected {
                        line: r#"{"holds":"no issues found","file":"x","line":1}"#.to_string(),
                        why: RejectReason::Generic,
                    }],
                    ..Checked::default()
                }),
            ),
        ],
        None,
        None,
    );
    assert_eq!(
        report.markdown(),
        "# Audit: 0 findings, 0 new\n\
         \n\
         ## Isolation: the auditor failed: exited with status 2\n\
         \n\
         ## Tests: clean (1 rule holds, 1 rejected)\n\
         \n\
         ## Rejected\n\
         \n\
         - Tests: a generic holding line, not a specific reason: `{\"holds\":\"no issues found\",\"file\":\"x\",\"line\":1}`\n"
    );
    assert_eq!(report.alert(), None, "a failure alone is not news");
}

#[test]
fn a_dimension_with_findings_lists_them_with_status_and_quote() {
    let previous = Previous::from_json(
        &synthesise(
            vec![dimension(
                "Purity",
                checked(vec![finding(Severity::Low, 1, "b.rs", 1, "old")]),
            )],
            None,
            None,
        )
        .to_json(),
    )
    .unwrap();
    let report = synthesise(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 3, "std::fs")]),
        )],
        Some(&previous),
        None,
    );
    assert_eq!(
        report.markdown(),
        "# Audit: 1 finding, 1 new\n\
         \n\
         ## Purity (0 rules hold)\n\
         \n\
         - **high** new, `a.rs:3`: claim about std::fs\n\
         \x20 > std::fs\n\
         - gone (low), was `b.rs:1`: claim about old\n"
    );
}

#[test]
fn the_auditors_changes_come_first_in_the_report_and_the_alert() {
    let clean = Outcome::Checked(Checked {
        holds: vec![Holds {
            holds: "watchdog has no std::fs: grep finds none under crates/watchdog".to_string(),
            file: "CLAUDE.md".to_string(),
            line: 2,
        }],
        ..Checked::default()
    });
    let report = synthesise(
        vec![dimension("Purity", clean)],
        None,
        Some("HEAD moved from 1a2b3c to 4d5e6f".to_string()),
    );
    assert!(
        report.markdown().starts_with(
            "**The auditors changed the project:** HEAD moved from 1a2b3c to 4d5e6f\n\n# Audit"
        ),
        "{}",
        report.markdown()
    );
    assert_eq!(
        report.alert().as_deref(),
        Some("The auditors changed the project: HEAD moved from 1a2b3c to 4d5e6f")
    );
}

#[test]
fn the_alert_carries_the_new_findings_and_the_count_of_the_rest() {
    let previous = Previous::from_json(
        &synthesise(
            vec![dimension(
                "Purity",
                checked(vec![
                    finding(Severity::High, 1, "a.rs", 1, "kept"),
                    finding(Severity::Low, 1, "b.rs", 1, "fixed"),
                ]),
            )],
            None,
            None,
        )
        .to_json(),
    )
    .unwrap();
    let report = synthesise(
        vec![
            dimension(
                "Purity",
                checked(vec![
                    finding(Severity::High, 1, "a.rs", 2, "kept"),
                    finding(Severity::Low, 2, "c.rs", 7, "fresh"),
                ]),
            ),
            dimension(
                "Tests",
                checked(vec![finding(Severity::Medium, 1, "t.rs", 4, "sleep")]),
            ),
            dimension("Docs", Outcome::Failed("timed out".to_string())),
        ],
        Some(&previous),
        Some("a file was edited: src/x.rs".to_string()),
    );
    assert_eq!(
        report.alert().as_deref(),
        Some(
            "The auditors changed the project: a file was edited: src/x.rs\n\
             2 new findings:\n\
             - [medium] Tests: t.rs:4: claim about sleep\n\
             - [low] Purity: c.rs:7: claim about fresh\n\
             and 1 still open, 1 gone, 1 auditor failed"
        )
    );
    // The same audit again: nothing is news.
    let again = synthesise(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 2, "kept")]),
        )],
        Some(&Previous::from_json(&report.to_json()).unwrap()),
        None,
    );
    assert_eq!(again.alert(), None);
}

#[test]
fn the_json_keeps_findings_holds_and_rejected_apart_with_their_field_names() {
    let report = synthesise(
        vec![
            dimension(
                "Purity",
                Outcome::Checked(Checked {
                    findings: vec![finding(Severity::High, 1, "a.rs", 3, "std::fs")],
                    holds: vec![Holds {
                        holds:
                            "the only Command is in crates/probes, clippy.toml denies it elsewhere"
                                .to_string(),
                        file: "clippy.toml".to_string(),
                        line: 2,
                    }],
                    rejected: vec![Rejected {
                        line: "{…}".to_string(),
                        why: RejectReason::NoSuchLine { line: 9, lines: 4 },
                    }],
                    ignored_lines: 3,
                }),
            ),
            dimension("Docs", Outcome::Failed("timed out".to_string())),
        ],
        None,
        None,
    );
    assert_eq!(
        report.to_json(),
        json!({
            "changed_by_auditors": null,
            "unverified": null,
            "dimensions": [
                {
                    "name": "Purity",
                    "failed": null,
                    "findings": [{
                        "severity": "high", "rank": 1, "claim": "claim about std::fs",
                        "file": "a.rs", "line": 3, "quote": "std::fs",
                        "status": "new", "key": "[\"Purity\",\"a.rs\",\"std::fs\"]",
                    }],
                    "gone": [],
                    "holds": [{
                        "holds": "the only Command is in crates/probes, clippy.toml denies it elsewhere",
                        "file": "clippy.toml", "line": 2,
                    }],
                    "rejected": [{
                        "line": "{…}",
                        "why": "line 9 is not in the file (4 lines)",
                        "reason": "no_such_line",
                    }],
                    "ignored_lines": 3,
                },
                {
                    "name": "Docs", "failed": "timed out", "findings": [], "gone": [],
                    "holds": [], "rejected": [], "ignored_lines": 0,
                },
            ],
            "carried": [],
        })
    );
}

#[test]
fn a_saved_audit_that_is_not_one_names_what_is_wrong() {
    let cases = [
        (json!({}), "dimensions"),
        (
            json!({"dimensions": [{"findings": []}], "carried": []}),
            "dimensions[0].name",
        ),
        (
            json!({"dimensions": [{"name": "P", "findings": [{"severity": "grave"}]}], "carried": []}),
            "dimensions[0].findings[0].severity",
        ),
        (
            json!({"dimensions": [], "carried": [{"dimension": "P", "severity": "low"}]}),
            "carried[0].rank",
        ),
    ];
    for (value, at) in cases {
        assert_eq!(
            Previous::from_json(&value),
            Err(PreviousError::Malformed { at: at.to_string() }),
            "for {value}"
        );
    }
}

#[test]
fn a_key_is_the_dimension_the_file_and_the_squeezed_quote() {
    assert_eq!(
        finding_key("P", "a.rs", "  x   y "),
        finding_key("P", "a.rs", "x y")
    );
    assert_ne!(finding_key("P", "a.rs", "x"), finding_key("Q", "a.rs", "x"));
    assert_ne!(finding_key("P", "a.rs", "x"), finding_key("P", "b.rs", "x"));
    // A separator in one part cannot pose as two parts.
    assert_ne!(
        finding_key("P", "a\",\"b", "x"),
        finding_key("P", "a", "b\",\"x")
    );
}

/// Found by a review: an auditor that answered nothing (or only what the
/// check rejected) marked every open finding gone, and the next audit
/// alerted them all again as new.
#[test]
fn an_answer_with_nothing_that_survived_keeps_the_open_findings_unknown() {
    let first = synthesise(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 1, "kept")]),
        )],
        None,
        None,
    );
    let previous = Previous::from_json(&first.to_json()).unwrap();
    let empty = synthesise(
        vec![dimension(
            "Purity",
            Outcome::Checked(Checked {
                rejected: vec![Rejected {
                    line: "{}".to_string(),
                    why: RejectReason::Generic,
                }],
                ignored_lines: 2,
                ..Checked::default()
            }),
        )],
        Some(&previous),
        None,
    );
    assert_eq!(
        ranking(&empty),
        [
            "Purity failed: no finding and no holding rule survived the check (1 rejected: generic, 2 other lines), so its earlier findings are kept as they were"
        ]
    );
    assert_eq!(
        empty.alert().as_deref(),
        Some(
            "The audit learned nothing: its auditor failed (Purity: no finding and no holding rule survived the check (1 rejected: generic, 2 other lines), so its earlier findings are kept as they were)"
        )
    );
    // The finding is carried, so the next real answer finds it still open.
    let previous = Previous::from_json(&empty.to_json()).unwrap();
    let again = synthesise(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 1, "kept")]),
        )],
        Some(&previous),
        None,
    );
    assert_eq!(again.alert(), None, "{:?}", again.alert());
}
