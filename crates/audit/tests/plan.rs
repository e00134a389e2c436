//! The acceptance for the plan: this repository's own ARCHITECTURE.md
//! yields dimensions drawn from its invariants, one per crate section, every
//! invariant cited at its line.

use bmb_audit::plan::plan;

#[test]
fn this_repositorys_architecture_md_plans_one_dimension_per_crate_from_its_invariants() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ARCHITECTURE.md");
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let sources = [("ARCHITECTURE.md".to_string(), text.clone())];
    let planned = plan(&sources, None);
    println!("{}", planned.render());

    assert!(!planned.fallback);
    let names: Vec<&str> = planned.dimensions.iter().map(|d| d.name.as_str()).collect();
    for crate_name in ["classify", "probes", "ledger", "watchdog", "audit", "cli"] {
        let section = format!("crates/{crate_name} (package bmb-");
        assert!(
            names.iter().any(|name| name.starts_with(&section)),
            "no dimension for {section} in {names:?}"
        );
    }
    // Every invariant line of the file is one rule, and nothing else is.
    let stated = lines
        .iter()
        .filter(|line| line.starts_with("**Architecture Invariant:**"))
        .count();
    let rules: Vec<_> = planned.dimensions.iter().flat_map(|d| &d.rules).collect();
    assert!(stated >= 15, "only {stated} invariants in ARCHITECTURE.md");
    assert_eq!(rules.len(), stated);
    for dimension in &planned.dimensions {
        assert!(
            dimension
                .origin
                .starts_with("ARCHITECTURE.md invariants § "),
            "{}",
            dimension.origin
        );
    }
    for rule in rules {
        let line = lines[rule.line - 1];
        let first_words: String = rule.text.chars().take(20).collect();
        assert!(line.starts_with("**Architecture Invariant:**"), "{line}");
        assert!(line.contains(&first_words), "{line} / {}", rule.text);
    }
}
