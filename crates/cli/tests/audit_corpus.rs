//! `audit --plan` on real projects' rules files (`tests/fixtures/rules-corpus/`,
//! each project's files copied byte for byte, with their licences and
//! commits in its `SOURCES.md`), against labels of our own: the rules a
//! maintainer would most want audited are in, descriptions, links and names
//! are out, and the plan costs what a maintainer would pay for.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_bmb-monitor");

/// The default `--max-dimensions`.
const MAX: usize = 12;

fn corpus(project: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rules-corpus")
        .join(project)
}

/// The plan of a corpus project, as `--plan --json` prints it.
struct Plan {
    project: &'static str,
    json: Value,
}

impl Plan {
    fn of(project: &'static str) -> Plan {
        let mut command = bmb_testkit::bin::command(BIN);
        command
            .arg("audit")
            .arg(corpus(project))
            .args(["--plan", "--json", "--audit-every", "6h"]);
        let output = bmb_testkit::bin::run(command, b"", Duration::from_secs(120));
        assert!(output.status.success(), "{project}: {output:?}");
        assert!(output.stderr.is_empty(), "{project}: {output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert_eq!(stdout.lines().count(), 1, "one JSON object: {stdout}");
        Plan {
            project,
            json: serde_json::from_str(&stdout).unwrap(),
        }
    }

    fn dimensions(&self) -> &Vec<Value> {
        self.json["dimensions"].as_array().unwrap()
    }

    /// Every rule: (file, line, text, dimension).
    fn rules(&self) -> Vec<(String, u64, String, String)> {
        let mut out = Vec::new();
        for dimension in self.dimensions() {
            let name = dimension["name"].as_str().unwrap().to_string();
            for rule in dimension["rules"].as_array().unwrap() {
                out.push((
                    rule["file"].as_str().unwrap().to_string(),
                    rule["line"].as_u64().unwrap(),
                    rule["text"].as_str().unwrap().to_string(),
                    name.clone(),
                ));
            }
        }
        out
    }

    /// The rules whose text holds `needle`.
    fn with(&self, needle: &str) -> Vec<(String, u64, String, String)> {
        self.rules()
            .into_iter()
            .filter(|(_, _, text, _)| text.contains(needle))
            .collect()
    }

    fn assert_in(&self, needle: &str) {
        assert!(
            !self.with(needle).is_empty(),
            "{}: no rule says {needle:?}",
            self.project
        );
    }

    fn assert_out(&self, needle: &str) {
        let found = self.with(needle);
        assert!(found.is_empty(), "{}: not a rule: {found:?}", self.project);
    }

    /// What was read, as (path, from).
    fn read(&self) -> Vec<(String, Option<String>)> {
        self.json["read"]
            .as_array()
            .unwrap()
            .iter()
            .map(|read| {
                (
                    read["path"].as_str().unwrap().to_string(),
                    read["from"].as_str().map(str::to_string),
                )
            })
            .collect()
    }
}

const PROJECTS: [&str; 7] = [
    "ruff",
    "rust-analyzer",
    "pydantic-ai",
    "biome",
    "trigger.dev",
    "nextest",
    "openai-agents-python",
];

/// Markup that the rule's text may have dropped from its line.
fn bare(text: &str) -> String {
    text.replace(['`', '*', '|', '_'], "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_plan_is_affordable_and_every_rule_is_cited_at_its_own_line() {
    for project in PROJECTS {
        let plan = Plan::of(project);
        let count = plan.dimensions().len();
        assert!((3..=MAX).contains(&count), "{project}: {count} dimensions");
        let cost = &plan.json["cost"];
        assert_eq!(cost["runs_per_audit"], count, "{project}: {cost}");
        assert_eq!(cost["audits_per_day"], 4.0, "{project}: {cost}");
        assert_eq!(
            cost["runs_per_day"],
            4.0 * count as f64,
            "{project}: {cost}"
        );
        assert_eq!(cost["audit_every_secs"], 21_600, "{project}: {cost}");
        for dimension in plan.dimensions() {
            assert!(!dimension["sources"].as_array().unwrap().is_empty());
            assert!(!dimension["rules"].as_array().unwrap().is_empty());
        }
        for (file, line, text, _) in plan.rules() {
            let content = std::fs::read_to_string(corpus(project).join(&file)).unwrap();
            let lines: Vec<&str> = content.lines().collect();
            let at = lines[line as usize - 1];
            // A rule may wrap: its first words are on its line and the next two.
            let end = (line as usize + 2).min(lines.len());
            let window = bare(&lines[line as usize - 1..end].join(" "));
            let first: String = bare(&text).split(' ').take(3).collect::<Vec<_>>().join(" ");
            assert!(
                window.contains(&first),
                "{project}: {file}:{line} is {at:?}, not {text:?}"
            );
            assert!(!at.trim_start().starts_with('#'), "a heading: {at}");
        }
    }
}

/// ruff's orders stand in paragraphs of a file that also has must/never
/// sentences: they were dropped.
#[test]
fn ruff_the_orders_in_paragraphs_are_rules() {
    let plan = Plan::of("ruff");
    plan.assert_in("`db` should be the first parameter");
    plan.assert_in("Prefer boxed slices");
    plan.assert_in(
        "Before editing the release workflow, check whether the relevant section is generated.",
    );
    // CLAUDE.md is `@AGENTS.md`: one file's rules, read once.
    assert_eq!(
        plan.read(),
        [
            ("AGENTS.md".to_string(), None),
            ("CLAUDE.md".to_string(), None)
        ]
    );
}

/// rust-analyzer's CLAUDE.md (AGENTS.md is a symlink to it) lists
/// `docs/book/src/contributing/architecture.md`, which holds its
/// Architecture Invariants: every one is a rule, cited at its line.
#[test]
fn rust_analyzer_every_architecture_invariant_of_the_document_it_points_to_is_a_rule() {
    let plan = Plan::of("rust-analyzer");
    let doc = "docs/book/src/contributing/architecture.md";
    assert!(
        plan.read()
            .contains(&(doc.to_string(), Some("AGENTS.md".to_string()))),
        "{:?}",
        plan.read()
    );
    let text = std::fs::read_to_string(corpus("rust-analyzer").join(doc)).unwrap();
    let invariants: Vec<u64> = text
        .lines()
        .enumerate()
        // One of them opens with a space: still an invariant.
        .filter(|(_, line)| line.trim_start().starts_with("**Architecture Invariant:**"))
        .map(|(index, _)| index as u64 + 1)
        .collect();
    assert!(invariants.len() >= 20, "{invariants:?}");
    let mut cited: Vec<u64> = plan
        .rules()
        .into_iter()
        .filter(|(file, _, _, _)| file == doc)
        .map(|(_, line, _, _)| line)
        .collect();
    cited.sort();
    assert_eq!(
        cited, invariants,
        "the document's rules are its invariants, all of them"
    );
    // Its AI policy is conduct: nothing in the tree at rest shows it kept,
    // so past the cap it is what is left out, and said.
    plan.assert_out("Do not use AI to author issue/PR comments");
    let left_out = plan.json["left_out"].to_string();
    assert!(
        left_out.contains("Contributing and conduct") && left_out.contains("mostly conduct"),
        "{left_out}"
    );
    // Its prose around the invariants describes, and is no rule.
    plan.assert_out("Pay attention to the");
}

/// pydantic-ai's CI security rules live in `.github/workflows/AGENTS.md`,
/// and its AGENTS.md says "always read agent_docs/index.md".
#[test]
fn pydantic_ai_the_ci_rules_and_the_guide_it_orders_read_are_in_and_package_descriptions_are_not() {
    let plan = Plan::of("pydantic-ai");
    let ci: Vec<&Value> = plan
        .dimensions()
        .iter()
        .filter(|d| {
            d["sources"]
                .as_array()
                .unwrap()
                .contains(&Value::from(".github/workflows/AGENTS.md"))
        })
        .collect();
    assert_eq!(ci.len(), 1, "one dimension for the CI's rules");
    assert_eq!(ci[0]["scope"], serde_json::json!([".github/workflows/"]));
    assert!(ci[0]["rules"].as_array().unwrap().len() >= 5, "{}", ci[0]);
    assert!(plan.read().contains(&(
        "agent_docs/index.md".to_string(),
        Some("AGENTS.md".to_string())
    )));
    assert!(
        plan.rules()
            .iter()
            .any(|(file, ..)| file == "agent_docs/index.md")
    );
    // Descriptions of the packages, and a list of links to docs.
    plan.assert_out("the [agent framework](docs/agent.md)");
    plan.assert_out("the type-hint based [graph library]");
}

/// biome's CLAUDE.md is its CONTRIBUTING.md: a table of contents and the
/// names of its team members are no rules.
#[test]
fn biome_names_and_a_table_of_contents_are_not_rules() {
    let plan = Plan::of("biome");
    plan.assert_in("Do not use emojis in source");
    plan.assert_in("Run `just f` and `just l` before committing.");
    for name in ["@arendjr", "@ematipico", "Lead team", "#lead-team", "(#"] {
        plan.assert_out(name);
    }
    // The table of generated artifacts is headed "Required command": its rows are rules.
    plan.assert_in("just gen-grammar");
    // The same file under two names is read once, and said.
    let skipped = plan.json["skipped"].to_string();
    assert!(
        skipped.contains("the same file as") || plan.read().len() == 2,
        "{skipped}"
    );
}

/// trigger.dev states its import rule in five files, and scopes its task
/// guide to `**/trigger/**` in a `.mdc`'s front matter.
#[test]
fn trigger_dev_one_rule_stated_in_many_files_keeps_its_sources_and_mdc_globs_scope_their_rules() {
    let plan = Plan::of("trigger.dev");
    let import = plan.with("Always import from `@trigger.dev/sdk`");
    assert!(import.len() <= 2, "{import:?}");
    let also: usize = plan
        .dimensions()
        .iter()
        .flat_map(|d| d["rules"].as_array().unwrap())
        .filter(|rule| {
            rule["text"]
                .as_str()
                .unwrap()
                .contains("import from `@trigger.dev/sdk`")
        })
        .map(|rule| rule["also"].as_array().unwrap().len())
        .sum();
    assert!(also >= 2, "the other places are kept");
    assert!(
        plan.json["repeated"].as_u64().unwrap() >= 2,
        "{}",
        plan.json["repeated"]
    );
    for dimension in plan.dimensions() {
        let from_tasks = dimension["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|rule| rule["file"] == ".cursor/rules/writing-tasks.mdc");
        if from_tasks {
            let scope = dimension["scope"].to_string();
            assert!(
                scope.contains("**/trigger/**"),
                "{}: {scope}",
                dimension["name"]
            );
        }
    }
    plan.assert_out("Run metadata access");
    plan.assert_out("**Run engine config**");
}

/// openai-agents-python orders "read [Runner lifecycle](.agents/references/…)".
#[test]
fn openai_agents_the_contracts_it_orders_read_are_read_and_what_is_missing_is_said() {
    let plan = Plan::of("openai-agents-python");
    for reference in [
        ".agents/references/README.md",
        ".agents/references/runner-lifecycle.md",
        ".agents/references/tool-identity.md",
    ] {
        assert!(
            plan.read()
                .contains(&(reference.to_string(), Some("AGENTS.md".to_string()))),
            "{reference}: {:?}",
            plan.read()
        );
    }
    // The corpus keeps three of its sixteen references: the rest are said.
    let skipped = plan.json["skipped"].to_string();
    assert!(
        skipped.contains(".agents/references/tracing-lifecycle.md")
            && skipped.contains("no such file"),
        "{skipped}"
    );
}

/// nextest's nested AGENTS.md files govern their folders.
#[test]
fn nextest_a_nested_agents_md_governs_its_folder() {
    let plan = Plan::of("nextest");
    let runner: Vec<&Value> = plan
        .dimensions()
        .iter()
        .filter(|d| d["scope"] == serde_json::json!(["nextest-runner/src/runner/"]))
        .collect();
    assert!(!runner.is_empty());
    for dimension in plan.dimensions() {
        for rule in dimension["rules"].as_array().unwrap() {
            if rule["file"] == "nextest-runner/src/runner/AGENTS.md" {
                assert_eq!(
                    dimension["scope"],
                    serde_json::json!(["nextest-runner/src/runner/"])
                );
            }
        }
    }
}
