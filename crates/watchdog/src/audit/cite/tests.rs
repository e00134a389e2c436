//! `check` tables: an auditor's stdout in, what survived out, one line each.

use std::collections::BTreeMap;

use super::*;

/// A small project: a source file, a rules file, and what the port was asked.
struct FakeProject {
    files: BTreeMap<&'static str, &'static str>,
    asked: Vec<String>,
}

impl FakeProject {
    fn new() -> FakeProject {
        let files = BTreeMap::from([
            (
                "src/lib.rs",
                "//! The crate.\n\
                 pub fn read() {\n\
                 \x20   std::fs::read_to_string(\"x\").unwrap();\n\
                 }\n",
            ),
            (
                "CLAUDE.md",
                "# Rules\n\
                 - watchdog does no I/O\n\
                 - tests never sleep then assert nothing happened\n",
            ),
        ]);
        FakeProject {
            files,
            asked: Vec::new(),
        }
    }
}

impl ProjectFiles for FakeProject {
    fn lines(&mut self, path: &str) -> Option<Vec<String>> {
        self.asked.push(path.to_string());
        let text = self.files.get(path)?;
        Some(text.lines().map(str::to_string).collect())
    }
}

const RULES: [&str; 2] = [
    "watchdog does no I/O",
    "tests never sleep then assert nothing happened",
];

/// What came out, one line per item, in the order of the output.
fn render(checked: &Checked) -> String {
    let mut out = Vec::new();
    for f in &checked.findings {
        out.push(format!(
            "finding {} {} {}:{} {:?} {:?}",
            f.severity, f.rank, f.file, f.line, f.claim, f.quote
        ));
    }
    for h in &checked.holds {
        out.push(format!("holds {}:{} {:?}", h.file, h.line, h.holds));
    }
    for r in &checked.rejected {
        out.push(format!("rejected {}: {}", r.why.code(), r.why));
    }
    out.push(format!("ignored {}", checked.ignored_lines));
    out.join("\n")
}

fn check_output(output: &str, expected: &str) -> FakeProject {
    let mut project = FakeProject::new();
    let checked = check(output, &RULES, &mut project);
    assert_eq!(render(&checked), expected, "for output:\n{output}");
    project
}

const GOOD: &str = r#"{"severity":"high","rank":1,"claim":"the crate reads a file with std::fs although watchdog is pure","file":"src/lib.rs","line":3,"quote":"std::fs::read_to_string(\"x\")"}"#;

#[test]
fn good_findings_are_kept_with_their_citation() {
    check_output(
        &format!(
            "{GOOD}\n\
             {{\"severity\":\"low\",\"rank\":2,\"claim\":\"an unwrap on a read can take the poll down\",\"file\":\"./src//lib.rs\",\"line\":3,\"quote\":\"   .unwrap();\",\"extra\":true}}"
        ),
        "finding high 1 src/lib.rs:3 \"the crate reads a file with std::fs although watchdog is pure\" \"std::fs::read_to_string(\\\"x\\\")\"\n\
         finding low 2 src/lib.rs:3 \"an unwrap on a read can take the poll down\" \"   .unwrap();\"\n\
         ignored 0",
    );
}

#[test]
fn a_citation_to_a_missing_file_is_rejected() {
    check_output(
        r#"{"severity":"high","rank":1,"claim":"a claim about a file that is not there","file":"src/gone.rs","line":1,"quote":"x"}"#,
        "rejected no_such_file: no such file in the project\nignored 0",
    );
}

#[test]
fn a_line_past_the_end_or_zero_is_rejected_with_the_length() {
    check_output(
        r#"{"severity":"high","rank":1,"claim":"a claim past the end of it","file":"src/lib.rs","line":9,"quote":"}"}
{"severity":"high","rank":1,"claim":"a claim before the start of it","file":"src/lib.rs","line":0,"quote":"}"}"#,
        "rejected no_such_line: line 9 is not in the file (4 lines)\n\
         rejected no_such_line: line 0 is not in the file (4 lines)\n\
         ignored 0",
    );
}

#[test]
fn a_quote_must_be_at_or_next_to_its_line() {
    check_output(
        // Line 1 is two lines from the quote: not there. An empty quote is never there.
        // The line before or after the cited one, or across both, is there.
        r#"{"severity":"medium","rank":1,"claim":"reads a file where it should not","file":"src/lib.rs","line":1,"quote":"std::fs::read_to_string"}
{"severity":"medium","rank":1,"claim":"reads a file where it should not","file":"src/lib.rs","line":3,"quote":"   "}
{"severity":"medium","rank":2,"claim":"reads a file where it should not","file":"src/lib.rs","line":2,"quote":"std::fs::read_to_string"}
{"severity":"medium","rank":3,"claim":"the function spans its read","file":"src/lib.rs","line":2,"quote":"pub fn read() {  std::fs::read_to_string"}
{"severity":"low","rank":4,"claim":"a public reader with no doc","file":"src/lib.rs","line":3,"quote":"pub fn read()"}"#,
        "finding medium 2 src/lib.rs:2 \"reads a file where it should not\" \"std::fs::read_to_string\"\n\
         finding medium 3 src/lib.rs:2 \"the function spans its read\" \"pub fn read() {  std::fs::read_to_string\"\n\
         finding low 4 src/lib.rs:3 \"a public reader with no doc\" \"pub fn read()\"\n\
         rejected quote_not_there: the quoted text is not at that line\n\
         rejected quote_not_there: the quoted text is not at that line\n\
         ignored 0",
    );
}

#[test]
fn a_path_that_leaves_the_project_is_rejected_before_the_port_is_asked() {
    let project = check_output(
        r#"{"severity":"high","rank":1,"claim":"reads the password file","file":"../../etc/passwd","line":1,"quote":"root"}
{"severity":"high","rank":1,"claim":"reads the password file","file":"/etc/passwd","line":1,"quote":"root"}
{"severity":"high","rank":1,"claim":"reads the password file","file":"a/../../b","line":1,"quote":"root"}
{"severity":"high","rank":1,"claim":"reads the password file","file":"src\\..\\..\\etc","line":1,"quote":"root"}
{"severity":"high","rank":1,"claim":"reads the password file","file":"src/lib.rs\u0000","line":1,"quote":"root"}
{"holds":"the holding line is specific enough to pass the noise check","file":"..","line":1}"#,
        "rejected path_escape: the path leaves the project\n\
         rejected path_escape: the path leaves the project\n\
         rejected path_escape: the path leaves the project\n\
         rejected path_escape: the path leaves the project\n\
         rejected path_escape: the path leaves the project\n\
         rejected path_escape: the path leaves the project\n\
         ignored 0",
    );
    assert_eq!(project.asked, Vec::<String>::new());
}

#[test]
fn normalise_keeps_paths_inside_the_root() {
    let cases: [(&str, Option<&str>); 9] = [
        ("src/lib.rs", Some("src/lib.rs")),
        ("./src/./lib.rs", Some("src/lib.rs")),
        ("src/../CLAUDE.md", Some("CLAUDE.md")),
        ("a/b/../../c", Some("c")),
        ("a/../../b", None),
        ("..", None),
        (".", None),
        ("/etc/passwd", None),
        ("", None),
    ];
    for (path, expected) in cases {
        assert_eq!(normalise(path).as_deref(), expected, "for {path:?}");
    }
}

#[test]
fn generic_holding_lines_are_noise_and_specific_ones_are_kept() {
    check_output(
        r#"{"holds":"no issues found","file":"CLAUDE.md","line":2}
{"holds":"All clean!","file":"CLAUDE.md","line":2}
{"holds":"looks good","file":"CLAUDE.md","line":2}
{"holds":"No issues found in the token ratchet.","file":"CLAUDE.md","line":2}
{"holds":"it holds here","file":"CLAUDE.md","line":2}
{"holds":"watchdog has no std::fs and no Command: grep finds neither under crates/watchdog","file":"CLAUDE.md","line":2}"#,
        "holds CLAUDE.md:2 \"watchdog has no std::fs and no Command: grep finds neither under crates/watchdog\"\n\
         rejected generic: a generic holding line, not a specific reason\n\
         rejected generic: a generic holding line, not a specific reason\n\
         rejected generic: a generic holding line, not a specific reason\n\
         rejected generic: a generic holding line, not a specific reason\n\
         rejected generic: a generic holding line, not a specific reason\n\
         ignored 0",
    );
}

#[test]
fn the_generic_table() {
    let cases: [(&str, bool); 14] = [
        ("no issues found", true),
        ("Everything is fine.", true),
        ("Nothing to report here at all", true),
        ("no problems", true),
        ("LGTM", true),
        ("holds", true),
        ("four words only here", true),
        (
            "no issues: every test under tests/ spawns the real binary",
            false,
        ),
        (
            "the token ratchet covers px in components, the exempt list is the token file only",
            false,
        ),
        ("each probe kills its whole process group on timeout", false),
        // Found by a review: noise in other words.
        (
            "I checked everything and found nothing wrong at all here",
            true,
        ),
        (
            "Everything checks out; the rule is fully respected in the code.",
            true,
        ),
        (
            "no violations were detected anywhere across the whole project tree",
            true,
        ),
        (
            "the code never writes files outside data/, checked with grep",
            false,
        ),
    ];
    for (holds, expected) in cases {
        assert_eq!(is_generic(holds), expected, "for {holds:?}");
    }
}

#[test]
fn a_claim_that_only_restates_a_rule_is_padding() {
    let rules: Vec<String> = RULES.iter().map(|r| words(r)).collect();
    let cases: [(&str, bool); 6] = [
        ("Watchdog does no I/O.", true),
        ("does no I/O", true),
        ("Violated: watchdog does no I/O!", true),
        ("the rule is not followed: watchdog does no I/O", false),
        (
            "watchdog does no I/O yet src/lib.rs calls std::fs::read_to_string",
            false,
        ),
        ("an unwrap on a read can take the poll down", false),
    ];
    for (claim, expected) in cases {
        assert_eq!(is_padding(claim, &rules), expected, "for {claim:?}");
    }
    check_output(
        r#"{"severity":"high","rank":1,"claim":"Watchdog does no I/O","file":"src/lib.rs","line":3,"quote":"std::fs"}"#,
        "rejected padding: the claim only restates a rule\nignored 0",
    );
}

#[test]
fn garbage_and_other_json_are_ignored_and_counted() {
    check_output(
        &format!(
            "Here are my findings:\n\
             ```json\n\
             \n\
             {GOOD}\n\
             [1, 2]\n\
             {{\"type\":\"result\",\"result\":\"summary\"}}\n\
             {{\"severity\": \"high\", unterminated\n\
             ```\n\
             I found one issue."
        ),
        "finding high 1 src/lib.rs:3 \"the crate reads a file with std::fs although watchdog is pure\" \"std::fs::read_to_string(\\\"x\\\")\"\n\
         ignored 7",
    );
}

#[test]
fn nothing_at_all_is_nothing() {
    check_output("", "ignored 0");
    check_output("\n  \n", "ignored 0");
}

#[test]
fn a_field_missing_or_wrong_is_named() {
    check_output(
        r#"{"severity":"high","rank":1,"claim":"reads a file where it should not","file":"src/lib.rs","line":3}
{"severity":"high","rank":-1,"claim":"reads a file where it should not","file":"src/lib.rs","line":3,"quote":"std"}
{"severity":"high","rank":1,"claim":"reads a file where it should not","file":"src/lib.rs","line":"3","quote":"std"}
{"severity":"high","rank":1,"claim":"...","file":"src/lib.rs","line":3,"quote":"std"}
{"severity":1,"rank":1,"claim":"reads a file where it should not","file":"src/lib.rs","line":3,"quote":"std"}
{"severity":"critical","rank":1,"claim":"reads a file where it should not","file":"src/lib.rs","line":3,"quote":"std"}
{"holds":"a specific enough holding line with no file","line":3}"#,
        "rejected missing_field: field `quote` is missing or of the wrong type\n\
         rejected missing_field: field `rank` is missing or of the wrong type\n\
         rejected missing_field: field `line` is missing or of the wrong type\n\
         rejected missing_field: field `claim` is missing or of the wrong type\n\
         rejected missing_field: field `severity` is missing or of the wrong type\n\
         rejected bad_severity: severity is not high, medium or low\n\
         rejected missing_field: field `file` is missing or of the wrong type\n\
         ignored 0",
    );
}

#[test]
fn a_rejected_line_is_kept_shortened() {
    let long = format!(
        r#"{{"severity":"high","rank":1,"claim":"{}","file":"nope","line":1,"quote":"x"}}"#,
        "é".repeat(300)
    );
    let checked = check(&long, &RULES, &mut FakeProject::new());
    let line = &checked.rejected[0].line;
    assert_eq!(line.chars().count(), REJECTED_LINE_CHARS + 1);
    assert!(line.ends_with('…'));
}

#[test]
fn each_file_is_asked_for_once() {
    let project = check_output(
        &format!("{GOOD}\n{GOOD}"),
        "finding high 1 src/lib.rs:3 \"the crate reads a file with std::fs although watchdog is pure\" \"std::fs::read_to_string(\\\"x\\\")\"\n\
         rejected duplicate: the same file and quote as a finding kept above it\n\
         ignored 0",
    );
    assert_eq!(project.asked, ["src/lib.rs"]);
}

/// Found by a review: a finding said twice, or two claims at one place, was
/// kept twice and later listed gone twice.
#[test]
fn a_second_finding_at_the_same_place_is_a_duplicate() {
    check_output(
        &format!(
            "{GOOD}\n{GOOD}\n\
             {{\"severity\":\"low\",\"rank\":3,\"claim\":\"another claim at the same quote, re-indented\",\"file\":\"src/lib.rs\",\"line\":3,\"quote\":\"std::fs::read_to_string(\\\"x\\\")  \"}}"
        ),
        "finding high 1 src/lib.rs:3 \"the crate reads a file with std::fs although watchdog is pure\" \"std::fs::read_to_string(\\\"x\\\")\"\n\
         rejected duplicate: the same file and quote as a finding kept above it\n\
         rejected duplicate: the same file and quote as a finding kept above it\n\
         ignored 0",
    );
}
