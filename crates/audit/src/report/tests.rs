//! Reports from checked outcomes, and the second audit against the first
//! through the saved JSON.

use serde_json::json;

use super::*;
use crate::cite::{RejectReason, Severity};
use crate::wire::PreviousError;

fn finding(severity: Severity, rank: u32, file: &str, line: usize, quote: &str) -> Finding {
    Finding {
        severity,
        rank,
        claim: format!("claim about {quote}"),
        file: file.to_string(),
        line,
        quote: quote.to_string(),
        occurrence: 1,
        rule: None,
        rule_text: None,
    }
}

/// A project whose files are all gone: a finding not reported is gone at once.
struct NoFiles;

impl ProjectFiles for NoFiles {
    fn root(&self) -> &str {
        "/p"
    }

    fn look(&mut self, _: &str) -> Look {
        Look::Missing
    }
}

fn synth(
    results: Vec<DimensionResult>,
    previous: Option<&Previous>,
    changed: Option<String>,
) -> Report {
    synthesise(results, previous, changed, &mut NoFiles)
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
        rules: Vec::new(),
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
                for f in kept.gone.iter().map(|g| &g.finding) {
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
    let report = synth(
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
    let first = synth(
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

    let second = synth(
        vec![
            dimension(
                "Purity",
                checked(vec![
                    // The same quote, re-indented and moved down: still open.
                    finding(Severity::High, 1, "src/a.rs", 14, "  std::fs::read "),
                    finding(Severity::Medium, 1, "src/c.rs", 2, "spawn_child(argv)"),
                ]),
            ),
            // The same quote in another dimension is the same finding.
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
            "Tests low 1 src/b.rs:5 still_open",
            "Tests medium 1 t.rs:1 gone",
            "Docs failed: timed out after 900 s",
        ]
    );
    // The failed dimension's finding is carried, so a third audit still knows it.
    assert_eq!(second.carried.len(), 1);
    assert_eq!(second.carried[0].dimension, "Docs");
    let third_previous = Previous::from_json(&second.to_json()).unwrap();
    let third = synth(
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
    let report = synth(
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
                        rule: None,
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
        "# Audit: 0 findings in 1 checked dimension (0 new); 1 of 2 auditors failed\n\
         \n\
         ## Isolation: the auditor failed: exited with status 2\n\
         \n\
         ## Tests: clean (1 holding, 1 rejected)\n\
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
        &synth(
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
    let report = synth(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 3, "std::fs")]),
        )],
        Some(&previous),
        None,
    );
    assert_eq!(
        report.markdown(),
        "# Audit: 1 finding in 1 checked dimension (1 new); 1 gone\n\
         \n\
         ## Purity (0 holding)\n\
         \n\
         - **high** new, `a.rs:3`: claim about std::fs\n\
         \x20 > std::fs\n\
         - gone (low, its quote left the file), was `b.rs:1`: claim about old\n"
    );
}

#[test]
fn the_auditors_changes_come_first_in_the_report_and_the_alert() {
    let clean = Outcome::Checked(Checked {
        holds: vec![Holds {
            holds: "watchdog has no std::fs: grep finds none under crates/watchdog".to_string(),
            file: "CLAUDE.md".to_string(),
            line: 2,
            rule: None,
        }],
        ..Checked::default()
    });
    let report = synth(
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
        Some(
            "Audit: 0 findings in 1 checked dimension (0 new)\n\
             The auditors changed the project: HEAD moved from 1a2b3c to 4d5e6f"
        )
    );
}

#[test]
fn the_alert_carries_the_new_findings_and_the_count_of_the_rest() {
    let previous = Previous::from_json(
        &synth(
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
    let report = synth(
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
            "Audit: 3 findings in 2 checked dimensions (2 new); 1 still open; 1 gone; 1 of 3 auditors failed\n\
             The auditors changed the project: a file was edited: src/x.rs\n\
             - [medium] Tests: t.rs:4: claim about sleep\n\
             - [low] Purity: c.rs:7: claim about fresh"
        )
    );
    // The same audit again: nothing is news.
    let again = synth(
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
    let report = synth(
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
                        rule: None,
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
            "version": 1,
            "changed_by_auditors": null,
            "unverified": null,
            "dimensions": [
                {
                    "name": "Purity",
                    "failed": null,
                    "findings": [{
                        "severity": "high", "rank": 1, "claim": "claim about std::fs",
                        "file": "a.rs", "line": 3, "quote": "std::fs", "occurrence": 1,
                        "rule": null, "rule_text": null, "status": "new", "key": "[\"a.rs\",\"std::fs\",1,null]",
                        "also_in": [],
                    }],
                    "unconfirmed": [],
                    "gone": [],
                    "holds": [{
                        "holds": "the only Command is in crates/probes, clippy.toml denies it elsewhere",
                        "file": "clippy.toml", "line": 2, "rule": null,
                    }],
                    "rejected": [{
                        "line": "{…}",
                        "why": "line 9 is not in the file (4 lines)",
                        "reason": "no_such_line",
                    }],
                    "ignored_lines": 3,
                    "rules_checked": [],
                    "rules_unchecked": [],
                },
                {
                    "name": "Docs", "failed": "timed out", "findings": [], "unconfirmed": [],
                    "gone": [], "holds": [], "rejected": [], "ignored_lines": 0,
                    "rules_checked": [], "rules_unchecked": [],
                },
            ],
            "carried": [],
            "project": "",
        })
    );
}

/// The JSON is the wire type's: read back through it, it writes the same
/// value again, so an embedder that reads `--json` typed loses nothing.
#[test]
fn the_report_json_reads_back_as_its_wire_type_whole() {
    let report = synth(
        vec![
            dimension(
                "Purity",
                checked(vec![finding(Severity::High, 1, "src/a.rs", 3, "std::fs")]),
            ),
            dimension("Docs", Outcome::Failed("timed out".to_string())),
        ],
        None,
        Some("HEAD moved".to_string()),
    );
    let json = report.to_json();
    let wire: crate::wire::ReportJson = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(wire.version, crate::wire::REPORT_VERSION);
    assert_eq!(wire.dimensions[0].findings[0].status, Status::New);
    assert_eq!(serde_json::to_value(&wire).unwrap(), json);
}

/// A report of a later format is refused, not misread; one from before the
/// version was written is of the first.
#[test]
fn a_saved_audit_of_a_newer_version_is_refused_and_one_without_is_the_first() {
    let mut saved = synth(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "src/a.rs", 3, "std::fs")]),
        )],
        None,
        None,
    )
    .to_json();
    saved["version"] = json!(2);
    let refused = Previous::from_json(&saved);
    assert_eq!(refused, Err(PreviousError::Newer { version: 2 }));
    assert_eq!(
        refused.unwrap_err().to_string(),
        "the saved audit is of format version 2, newer than this bmb reads (1)"
    );
    saved["version"] = json!("one");
    assert_eq!(
        Previous::from_json(&saved),
        Err(PreviousError::Malformed {
            at: "version".to_string()
        })
    );
    saved.as_object_mut().unwrap().remove("version");
    assert_eq!(Previous::from_json(&saved).unwrap().findings().len(), 1);
    let wire: crate::wire::ReportJson = serde_json::from_value(saved).unwrap();
    assert_eq!(wire.version, 1);
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
fn a_key_is_the_file_the_normalised_quote_the_match_and_the_rule() {
    assert_eq!(
        finding_key("a.rs", "  x   y ", 1, None),
        finding_key("a.rs", "x y", 1, None)
    );
    // NFD and NFC are one text.
    assert_eq!(
        finding_key("a.rs", "caf\u{65}\u{301}", 1, None),
        finding_key("a.rs", "caf\u{e9}", 1, None)
    );
    assert_ne!(
        finding_key("a.rs", "x", 1, None),
        finding_key("b.rs", "x", 1, None)
    );
    assert_ne!(
        finding_key("a.rs", "x", 1, None),
        finding_key("a.rs", "x", 2, None)
    );
    assert_ne!(
        finding_key("a.rs", "x", 1, Some("Never sleep in a test")),
        finding_key("a.rs", "x", 1, Some("Never write outside data/"))
    );
    // The rule is known by its words, not by where it stands.
    assert_eq!(
        finding_key("a.rs", "x", 1, Some("Never  sleep in a test.")),
        finding_key("a.rs", "x", 1, Some("never sleep in a test"))
    );
    // A separator in one part cannot pose as two parts.
    assert_ne!(
        finding_key("a\",\"b", "x", 1, None),
        finding_key("a", "b\",\"x", 1, None)
    );
}

/// Found by a review: an auditor that answered nothing (or only what the
/// check rejected) marked every open finding gone, and the next audit
/// alerted them all again as new.
#[test]
fn an_answer_with_nothing_that_survived_keeps_the_open_findings_unknown() {
    let first = synth(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 1, "kept")]),
        )],
        None,
        None,
    );
    let previous = Previous::from_json(&first.to_json()).unwrap();
    let empty = synth(
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
            "Audit: 0 findings in 0 checked dimensions (0 new); 1 finding carried from dimensions not checked; 1 of 1 auditor failed\n\
             The audit learned nothing: its auditor failed (Purity: no finding and no holding rule survived the check (1 rejected: generic, 2 other lines), so its earlier findings are kept as they were)"
        )
    );
    // The finding is carried, so the next real answer finds it still open.
    let previous = Previous::from_json(&empty.to_json()).unwrap();
    let again = synth(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 1, "kept")]),
        )],
        Some(&previous),
        None,
    );
    assert_eq!(again.alert(), None, "{:?}", again.alert());
}

/// Files whose text is given: a finding not reported is gone only when its
/// quote left the file.
struct Files(Vec<(&'static str, &'static str)>);

impl ProjectFiles for Files {
    fn root(&self) -> &str {
        "/p"
    }

    fn look(&mut self, path: &str) -> Look {
        match self.0.iter().find(|(name, _)| *name == path) {
            Some((name, text)) => Look::Text {
                canonical: name.to_string(),
                lines: text.lines().map(str::to_string).collect(),
            },
            None => Look::Missing,
        }
    }
}

/// Issue 18: a finding missed by one audit was marked gone while its quote
/// was still in the file, and alerted again as new the next time.
#[test]
fn a_finding_missed_once_is_not_gone_and_twice_is() {
    let mut files = Files(vec![("a.rs", "fn main() {\n    kept_quote();\n}\n")]);
    let holding = || {
        Outcome::Checked(Checked {
            holds: vec![Holds {
                holds: "a.rs has one caller".to_string(),
                file: "a.rs".to_string(),
                line: 1,
                rule: None,
            }],
            ..Checked::default()
        })
    };
    let first = synthesise(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 2, "kept_quote();")]),
        )],
        None,
        None,
        &mut files,
    );
    let missed = synthesise(
        vec![dimension("Purity", holding())],
        Some(&Previous::from_json(&first.to_json()).unwrap()),
        None,
        &mut files,
    );
    let Verdict::Kept(kept) = &missed.dimensions[0].verdict else {
        panic!("{missed:?}")
    };
    assert!(kept.gone.is_empty(), "{kept:?}");
    assert_eq!(kept.unconfirmed.len(), 1);
    assert!(
        missed
            .markdown()
            .contains("- not reported this time, its quote still there (high), `a.rs:2`"),
        "{}",
        missed.markdown()
    );
    // Reported again: still open, not new.
    let back = synthesise(
        vec![dimension(
            "Purity",
            checked(vec![finding(Severity::High, 1, "a.rs", 2, "kept_quote();")]),
        )],
        Some(&Previous::from_json(&missed.to_json()).unwrap()),
        None,
        &mut files,
    );
    assert_eq!(ranking(&back), ["Purity high 1 a.rs:2 still_open"]);
    assert_eq!(back.alert(), None);
    // Missed twice in a row: gone.
    let twice = synthesise(
        vec![dimension("Purity", holding())],
        Some(&Previous::from_json(&missed.to_json()).unwrap()),
        None,
        &mut files,
    );
    let Verdict::Kept(kept) = &twice.dimensions[0].verdict else {
        panic!()
    };
    assert_eq!(kept.gone.len(), 1);
    assert_eq!(kept.gone[0].why, GoneWhy::Unreported);
}

/// Issue 18: the same finding from two dimensions was alerted twice.
#[test]
fn the_same_finding_from_two_dimensions_is_one_finding() {
    let report = synth(
        vec![
            dimension(
                "Purity",
                checked(vec![finding(Severity::High, 1, "a.rs", 2, "std::fs::read")]),
            ),
            dimension(
                "Storage",
                checked(vec![
                    finding(Severity::Medium, 3, "a.rs", 2, "std::fs::read"),
                    finding(Severity::Low, 1, "b.rs", 1, "other_thing"),
                ]),
            ),
        ],
        None,
        None,
    );
    assert_eq!(
        ranking(&report),
        ["Purity high 1 a.rs:2 new", "Storage low 1 b.rs:1 new"]
    );
    let alert = report.alert().unwrap();
    assert_eq!(alert.matches("a.rs:2").count(), 1, "{alert}");
    assert!(
        report
            .markdown()
            .contains("claim about std::fs::read (also found by: Storage)"),
        "{}",
        report.markdown()
    );
}

/// Issue 18: one holding line marked a nine-rule dimension clean. Each
/// dimension says which of its rules were checked; it is clean only when
/// all were.
#[test]
fn one_holding_line_does_not_clear_a_dimension_of_several_rules() {
    let holds = |rule: Option<&str>| Holds {
        holds: "a.rs waits for the ready file".to_string(),
        file: "a.rs".to_string(),
        line: 1,
        rule: rule.map(str::to_string),
    };
    let result = |holding: Vec<Holds>| DimensionResult {
        name: "Testing".to_string(),
        rules: vec![
            "CLAUDE.md:3".to_string(),
            "CLAUDE.md:4".to_string(),
            "CLAUDE.md:5".to_string(),
        ],
        outcome: Outcome::Checked(Checked {
            holds: holding,
            ..Checked::default()
        }),
    };
    let partial = synth(
        vec![result(vec![holds(None), holds(Some("CLAUDE.md:4"))])],
        None,
        None,
    );
    let markdown = partial.markdown();
    assert!(
        markdown.contains("## Testing (1 of 3 rules checked, 2 holding)"),
        "{markdown}"
    );
    assert!(
        markdown.contains("- rules not checked: `CLAUDE.md:3`, `CLAUDE.md:5`"),
        "{markdown}"
    );
    assert!(!markdown.contains("clean"), "{markdown}");
    let json = partial.to_json();
    assert_eq!(
        json["dimensions"][0]["rules_checked"],
        json!(["CLAUDE.md:4"])
    );
    let all = synth(
        vec![result(vec![
            holds(Some("CLAUDE.md:3")),
            holds(Some("CLAUDE.md:4")),
            holds(Some("CLAUDE.md:5")),
        ])],
        None,
        None,
    );
    assert!(
        all.markdown()
            .contains("## Testing: clean (3 of 3 rules checked, 3 holding)"),
        "{}",
        all.markdown()
    );
}

/// Issues 18 and 19: a newline in a claim made headings in the report and
/// fake lines in the alert; OSC 52 and clear-screen reached the terminal
/// and report.md, from a claim and from quoted file text.
#[test]
fn auditor_text_cannot_reshape_the_report_or_the_alert() {
    let mut hostile = finding(
        Severity::High,
        1,
        "a.rs",
        2,
        "x\u{1b}]52;c;cm0gLXJm\u{7}y\u{1b}[2J",
    );
    hostile.claim =
        "real claim\n# Audit: 0 findings\n- [high] Fake: forged line\u{1b}]52;c;aGk=\u{7}\u{1b}[2J"
            .to_string();
    let mut report = synth(
        vec![
            dimension("Purity\n## Injected", checked(vec![hostile])),
            dimension(
                "Docs",
                Outcome::Failed("exited 1:\n# boom\u{1b}[2J".to_string()),
            ),
        ],
        None,
        None,
    );
    report.project = "/srv/app".to_string();
    let markdown = report.markdown();
    let alert = report.alert().unwrap();
    for text in [&markdown, &alert] {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("# Audit: 0")
                || l.starts_with("- [high] Fake")
                || l.starts_with("## Injected")
                || l.starts_with("# boom")),
            "{text}"
        );
    }
    // The quote is shown with its controls made visible, not acted on.
    assert!(
        markdown.contains("> x\\u{1b}]52;c;cm0gLXJm\\u{7}y\\u{1b}[2J"),
        "{markdown}"
    );
    assert_eq!(alert.lines().count(), 2, "{alert}");
    assert!(
        alert.starts_with(
            "Audit of /srv/app: 1 finding in 1 checked dimension (1 new); 1 of 2 auditors failed\n"
        ),
        "{alert}"
    );
}

/// Issue 18: the alert never named the project, had no cap, and "0
/// findings" was the headline while carried findings were unchecked.
#[test]
fn the_alert_names_the_project_counts_carried_apart_and_is_capped() {
    let many: Vec<Finding> = (0..40)
        .map(|i| {
            let mut f = finding(
                Severity::Low,
                i,
                "a.rs",
                i as usize + 1,
                &format!("quote number {i}"),
            );
            f.claim = format!("claim {i} {}", "long words ".repeat(40));
            f
        })
        .collect();
    let previous = Previous::from_json(
        &synth(
            vec![dimension(
                "Old",
                checked(vec![finding(Severity::Low, 1, "o.rs", 1, "old_one")]),
            )],
            None,
            None,
        )
        .to_json(),
    )
    .unwrap();
    let mut report = synth(
        vec![
            dimension("Purity", checked(many)),
            dimension("Old", Outcome::Failed("timed out".to_string())),
        ],
        Some(&previous),
        None,
    );
    report.project = "/srv/app".to_string();
    let alert = report.alert().unwrap();
    assert!(
        alert.chars().count() <= ALERT_CHARS,
        "{}",
        alert.chars().count()
    );
    let first = alert.lines().next().unwrap();
    assert_eq!(
        first,
        "Audit of /srv/app: 40 findings in 1 checked dimension (40 new); 1 finding carried from dimensions not checked; 1 of 2 auditors failed"
    );
    assert!(alert.lines().filter(|l| l.starts_with("- [low]")).count() <= ALERT_FINDINGS);
    assert!(
        alert.ends_with("… (cut; the report has the rest)")
            || alert.ends_with("and 30 more new (the report lists them)"),
        "{alert}"
    );
    assert!(
        report.markdown().starts_with(&format!("# {first}\n")),
        "{}",
        report.markdown()
    );
}
