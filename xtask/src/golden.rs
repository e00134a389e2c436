//! `cargo xtask golden`: replays every capture in `testdata/panes/` through
//! the classifier, prints a confusion matrix per profile, and fails on any
//! mismatch.
//!
//! Expected states come from the scenario that produced each capture (the
//! `meta` file) and are never re-blessed by a tool. `UPDATE_EXPECT=1`
//! re-blesses only the `--explain` snapshots (`explain.txt`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use classify::{Context, Echo, Profiles, State, Work};

/// The capture modes a case may hold; each is classified on its own.
pub(crate) const CAPTURE_FILES: [&str; 3] = ["plain.txt", "ansi.txt", "scrollback.txt"];
const REQUIRED_KEYS: [&str; 6] = ["expect", "agent", "version", "size", "source", "captured"];

/// One capture folder and its `meta`.
#[derive(Debug)]
pub(crate) struct Case {
    pub dir: PathBuf,
    pub name: String,
    pub expect: State,
    pub agent: String,
    pub work: Work,
    pub echo: Vec<String>,
    pub shape: Option<String>,
    pub source: String,
    /// The CLI release that was captured (`version:`).
    pub version: String,
    /// `typing: unsafe`: a stop with no live input box on screen (a shell
    /// after the agent exited, a pager, a dialog no profile knows), which a
    /// monitor must never type into; `typing: draft`: a stop whose box holds
    /// a person's draft, never typed over. Every other stop must read as safe.
    pub typing: Option<String>,
    /// `usage_limit: PHRASE`: a stop a usage limit holds, its reset as
    /// printed (`none` when the screen gives none). Every other case must
    /// read no usage limit at all.
    pub usage_limit: Option<String>,
}

impl Case {
    fn load(dir: &Path) -> Result<Case, String> {
        let meta_path = dir.join("meta");
        let text = std::fs::read_to_string(&meta_path)
            .map_err(|err| format!("{}: {err}", meta_path.display()))?;
        let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(format!(
                    "{}:{}: expected `key: value`",
                    meta_path.display(),
                    index + 1
                ));
            };
            let value = value.split(" #").next().unwrap_or_default().trim();
            values
                .entry(key.trim().to_string())
                .or_default()
                .push(value.to_string());
        }
        let one = |key: &str| values.get(key).and_then(|v| v.first()).cloned();
        for key in REQUIRED_KEYS {
            if one(key).is_none_or(|v| v.is_empty()) {
                return Err(format!("{}: missing `{key}`", meta_path.display()));
            }
        }
        let expect_word = one("expect").unwrap_or_default();
        let expect = State::from_word(&expect_word).ok_or_else(|| {
            format!(
                "{}: `expect: {expect_word}` is not a state",
                meta_path.display()
            )
        })?;
        let shape = one("shape");
        if expect == State::Question && shape.is_none() {
            return Err(format!(
                "{}: a QUESTION case needs `shape`",
                meta_path.display()
            ));
        }
        Ok(Case {
            dir: dir.to_path_buf(),
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            expect,
            agent: one("agent").unwrap_or_default(),
            work: one("work").map_or(Work::Unknown, |raw| Work::parse(&raw)),
            echo: values.get("echo").cloned().unwrap_or_default(),
            shape,
            source: one("source").unwrap_or_default(),
            version: one("version").unwrap_or_default(),
            typing: one("typing"),
            usage_limit: one("usage_limit"),
        })
    }

    /// The capture files present, with their text (decoded lossily, as the monitor does).
    pub(crate) fn captures(&self) -> Vec<(&'static str, String)> {
        CAPTURE_FILES
            .iter()
            .filter_map(|&file| {
                let bytes = std::fs::read(self.dir.join(file)).ok()?;
                Some((file, String::from_utf8_lossy(&bytes).into_owned()))
            })
            .collect()
    }
}

/// Every case under `root` (`testdata/panes`), sorted by path.
pub(crate) fn load_cases(root: &Path) -> Result<Vec<Case>, Vec<String>> {
    let mut dirs = Vec::new();
    let agents =
        std::fs::read_dir(root).map_err(|err| vec![format!("{}: {err}", root.display())])?;
    for agent in agents.filter_map(Result::ok) {
        dirs.extend(case_dirs(&agent.path()));
    }
    load_dirs(dirs)
}

/// The cases directly under `dir` (a capture driver's `--out`), sorted by path, and what could not
/// be loaded (an unreadable folder or `meta`), one line each.
pub(crate) fn load_cases_in(dir: &Path) -> (Vec<Case>, Vec<String>) {
    if let Err(err) = std::fs::read_dir(dir) {
        return (Vec::new(), vec![format!("{}: {err}", dir.display())]);
    }
    load_each(case_dirs(dir))
}

/// The folders under `dir` that hold a `meta`.
fn case_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("meta").is_file())
        .collect()
}

fn load_dirs(dirs: Vec<PathBuf>) -> Result<Vec<Case>, Vec<String>> {
    let (cases, errors) = load_each(dirs);
    if errors.is_empty() {
        Ok(cases)
    } else {
        Err(errors)
    }
}

fn load_each(mut dirs: Vec<PathBuf>) -> (Vec<Case>, Vec<String>) {
    dirs.sort();
    let (mut cases, mut errors) = (Vec::new(), Vec::new());
    for dir in dirs {
        match Case::load(&dir) {
            Ok(case) => cases.push(case),
            Err(err) => errors.push(err),
        }
    }
    (cases, errors)
}

/// What a replay found.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Per profile: (expected, got) → count.
    pub matrix: BTreeMap<String, BTreeMap<(State, State), usize>>,
    pub failures: Vec<String>,
    pub cases: usize,
    /// Cases whose every capture classified to the expected state with the case's own profile.
    pub matching_cases: usize,
    pub captures: usize,
    /// Per agent: cases that are real captures (not reconstructions).
    pub real_cases: BTreeMap<String, usize>,
    /// The question shapes the corpus holds.
    pub shapes: std::collections::BTreeSet<String>,
    pub snapshots_written: usize,
}

pub(crate) fn testdata_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/panes")
}

/// What happens to the `--explain` snapshots (`explain.txt`) during a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Snapshots {
    /// A missing or different snapshot is a failure (`cargo xtask golden`).
    Check,
    /// Rewrite the snapshots that differ (`UPDATE_EXPECT=1`).
    Update,
    /// Fresh captures (`cargo xtask drift`) have no snapshot to hold them to.
    Skip,
}

/// Replays the corpus. With `update`, rewrites the `--explain` snapshots.
pub(crate) fn replay(root: &Path, update: bool) -> Report {
    let snapshots = if update {
        Snapshots::Update
    } else {
        Snapshots::Check
    };
    replay_cases(load_cases(root), snapshots)
}

/// Classifies every capture of the loaded cases, as the monitor would with `--profile auto`.
pub(crate) fn replay_cases(cases: Result<Vec<Case>, Vec<String>>, snapshots: Snapshots) -> Report {
    let mut report = Report::default();
    let cases = match cases {
        Ok(cases) => cases,
        Err(errors) => {
            report.failures = errors;
            return report;
        }
    };
    let profiles = Profiles::builtin();
    for case in &cases {
        report.cases += 1;
        if case.source == "real" || case.source == "peer" {
            *report.real_cases.entry(case.agent.clone()).or_default() += 1;
        }
        report.shapes.extend(case.shape.clone());
        let echo = Echo::new(&case.echo);
        let context = Context::new(profiles).with_echo(&echo);
        let captures = case.captures();
        let mut case_matches = !captures.is_empty();
        if captures.is_empty() {
            report.failures.push(format!(
                "{}: no capture file ({})",
                case.name,
                CAPTURE_FILES.join(", ")
            ));
        }
        for (file, pane) in &captures {
            report.captures += 1;
            let verdict = classify::classify_with(pane, case.work, &context);
            let cell = report.matrix.entry(verdict.profile.clone()).or_default();
            *cell.entry((case.expect, verdict.state)).or_default() += 1;
            if verdict.state != case.expect {
                case_matches = false;
                let evidence = verdict.evidence.as_ref().map_or("", |e| e.text.as_str());
                report.failures.push(format!(
                    "{}/{file}: expected {}, got {} by rule {} on `{}`",
                    case.name,
                    case.expect,
                    verdict.state,
                    verdict.rule,
                    evidence.trim()
                ));
            }
            let stop = matches!(verdict.state, State::Stalled | State::Blocked);
            let refused = verdict.typing_refusal_word();
            let said = match (case.typing.as_deref(), refused) {
                (None, None)
                | (Some("unsafe"), Some("unreadable"))
                | (Some("draft"), Some("draft")) => None,
                (None, Some(word)) => Some(format!(
                    "not safe to type into ({word}: {}), so a monitor would never nudge it",
                    verdict.typing_refusal().unwrap_or_default()
                )),
                (Some(want), word) => Some(format!(
                    "{}, but the case says `typing: {want}`",
                    word.map_or("safe to type into".to_string(), |w| format!(
                        "not typed into ({w})"
                    ))
                )),
            };
            if let (true, Some(said)) = (stop, said) {
                case_matches = false;
                report
                    .failures
                    .push(format!("{}/{file}: a stop read as {said}", case.name));
            }
            let limit = verdict
                .usage_limit
                .as_ref()
                .map(|limit| limit.reset.as_deref().unwrap_or("none"));
            if limit != case.usage_limit.as_deref() {
                case_matches = false;
                report.failures.push(format!(
                    "{}/{file}: usage limit read as {limit:?}, the case says {:?}",
                    case.name, case.usage_limit
                ));
            }
            if verdict.profile != case.agent {
                case_matches = false;
                report.failures.push(format!(
                    "{}/{file}: auto picked profile `{}`, the capture is `{}`",
                    case.name, verdict.profile, case.agent
                ));
            }
            if *file == CAPTURE_FILES[0] && snapshots != Snapshots::Skip {
                let explained =
                    classify::explain(pane, &verdict, case.work, profiles.get(&verdict.profile));
                check_snapshot(
                    case,
                    &explained,
                    snapshots == Snapshots::Update,
                    &mut report,
                );
            }
        }
        // A case matches on its classification; a snapshot only explains it.
        report.matching_cases += usize::from(case_matches);
    }
    report
}

fn check_snapshot(case: &Case, explained: &str, update: bool, report: &mut Report) {
    let path = case.dir.join("explain.txt");
    let current = std::fs::read_to_string(&path).ok();
    if current.as_deref() == Some(explained) {
        return;
    }
    if update {
        match std::fs::write(&path, explained) {
            Ok(()) => report.snapshots_written += 1,
            Err(err) => report
                .failures
                .push(format!("{}: cannot write snapshot: {err}", path.display())),
        }
        return;
    }
    let what = if current.is_none() {
        "is missing"
    } else {
        "differs"
    };
    report.failures.push(format!(
        "{}/explain.txt {what} (review `bmb-monitor classify --explain`, then re-bless with UPDATE_EXPECT=1 cargo xtask golden)",
        case.name
    ));
}

/// The golden replay's report: the matrices, the totals, every mismatch.
pub(crate) fn render(report: &Report) -> String {
    let mut out = render_matrices(report);
    let _ = writeln!(
        out,
        "{} cases, {} captures, {} mismatches",
        report.cases,
        report.captures,
        report.failures.len()
    );
    out.push_str(&render_failures(report));
    if report.snapshots_written > 0 {
        let _ = writeln!(
            out,
            "re-blessed {} --explain snapshots",
            report.snapshots_written
        );
    }
    out
}

/// One `MISMATCH …` line per failure: the case and file, expected and classified state, the rule, the evidence line.
pub(crate) fn render_failures(report: &Report) -> String {
    let mut out = String::new();
    for failure in &report.failures {
        let _ = writeln!(out, "MISMATCH {failure}");
    }
    out
}

/// The confusion matrix of each profile, expected states down, verdicts across.
pub(crate) fn render_matrices(report: &Report) -> String {
    let mut out = String::new();
    for (profile, cells) in &report.matrix {
        let _ = writeln!(
            out,
            "profile {profile}: expected (rows) vs classified (columns)"
        );
        let _ = write!(out, "{:>10}", "");
        for got in State::ALL {
            let _ = write!(out, "{:>10}", got.as_str());
        }
        out.push('\n');
        for expected in State::ALL {
            let _ = write!(out, "{:>10}", expected.as_str());
            for got in State::ALL {
                let count = cells.get(&(expected, got)).copied().unwrap_or(0);
                let _ = write!(out, "{count:>10}");
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{render, replay, testdata_root};

    /// `cargo test` enforces the corpus: every capture classifies to the
    /// state its scenario produced, and every `--explain` snapshot holds.
    /// Every case on disk is replayed (counted by a walk of its own, at any
    /// depth, so a case the loader skipped fails here), and every agent has
    /// real captures.
    #[test]
    fn every_capture_in_the_golden_corpus_classifies_to_its_expected_state() {
        let root = testdata_root();
        let report = replay(&root, false);
        assert!(report.failures.is_empty(), "{}", render(&report));
        let on_disk = folders_with_meta(&root);
        assert_eq!(
            report.cases,
            on_disk,
            "{on_disk} case folders hold a `meta` under {}, {} were replayed",
            root.display(),
            report.cases
        );
        for agent in ["claude", "codex", "gemini", "opencode", "aider"] {
            assert!(
                report.real_cases.get(agent).copied().unwrap_or(0) > 0,
                "no real capture of {agent} was replayed"
            );
        }
    }

    fn folders_with_meta(dir: &std::path::Path) -> usize {
        let entries = std::fs::read_dir(dir).expect("the corpus folder reads");
        let mut count = usize::from(dir.join("meta").is_file());
        for entry in entries {
            let path = entry.expect("a corpus entry reads").path();
            if path.is_dir() {
                count += folders_with_meta(&path);
            }
        }
        count
    }
}
