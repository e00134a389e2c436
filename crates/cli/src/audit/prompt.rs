//! What each auditor is told: its dimension, its rules with their
//! `file:line`, to be adversarial, and the output contract (README, "The
//! audit team").

use ::audit::plan::Dimension;

/// The prompt for one dimension's auditor, given on its stdin.
pub(super) fn prompt(project: &str, dimension: &Dimension, fallback: bool) -> String {
    let mut rules = String::new();
    for rule in &dimension.rules {
        rules.push_str(&format!("- {}:{}: {}\n", rule.file, rule.line, rule.text));
    }
    if !dimension.scope.is_empty() {
        // A `.mdc` rule's globs, a nested AGENTS.md's folder: where these rules apply.
        rules.push_str(&format!(
            "These rules govern only these parts of the tree: {}\n",
            dimension.scope.join(", ")
        ));
    }
    let what = if fallback {
        let looks_for = ::audit::plan::FALLBACKS
            .iter()
            .find(|(name, _)| *name == dimension.name)
            .map_or("", |(_, what)| *what);
        format!(
            "The project states no rules of its own, so audit it for: {} ({looks_for}).\n",
            dimension.name
        )
    } else {
        format!(
            "Audit it against this dimension of its OWN stated rules, \"{}\" ({}):\n{rules}",
            dimension.name, dimension.origin
        )
    };
    format!(
        "You are a read-only auditor of the project in the current directory ({project}). \
Do not change any file, do not run commands that write, do not commit.\n\n\
{what}\n\
Be ADVERSARIAL: try to falsify the project's claim about itself. Read the code and tests that \
the rules are about; a rule is broken when you can point at the line that breaks it.\n\n\
Answer with JSON lines only, one object per line:\n\
- a finding: {{\"severity\":\"high\"|\"medium\"|\"low\",\"rank\":N,\"claim\":\"what is wrong\",\
\"file\":\"path/in/project\",\"line\":N,\"quote\":\"the exact text at that line\",\"rule\":\"FILE:LINE of the rule it breaks\"}}\n\
- a rule that genuinely holds: {{\"holds\":\"one specific line on why it holds\",\
\"file\":\"path/in/project\",\"line\":N,\"rule\":\"FILE:LINE of the rule that holds\"}}\n\n\
Name the rule (its FILE:LINE as listed above) in every object: a dimension is clean only when each \
of its rules has a finding or a holding line. A holding line cites the code where the rule holds and \
names that file or what stands on that line, never the rule's own line. Quote at least a few words, \
never a gitignored file (such as .env), a binary, a generated or a vendored file.\n\n\
Every finding cites a file and line inside the project and quotes the text there; a finding \
without a citation that resolves is rejected. Rank findings, 1 first. Never pad: a finding that \
only restates the rule is rejected. \"No issues found\" is noise and is rejected: say in one \
specific line why a rule holds, citing where.\n"
    )
}
