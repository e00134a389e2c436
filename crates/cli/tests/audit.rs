//! `bmb-monitor audit` end to end: a real git project with its own rules, a
//! fake auditor (a shell script) per scenario, the real binary.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_bmb-monitor");

/// A sample project: a CLAUDE.md with two sections of rules, a source file
/// the auditors cite, committed in a real git repository.
struct Project {
    dir: tempfile::TempDir,
    state: tempfile::TempDir,
}

use bmb_testkit::git;

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("CLAUDE.md"),
            "# Project rules\n\n## Testing\n\n- Every test must wait for an event, never sleep.\n\n## Storage\n\n- Never write outside the data folder.\n",
        )
        .unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(
            root.join("src/app.rs"),
            "fn main() {\n    std::thread::sleep(std::time::Duration::from_secs(1));\n    std::fs::write(\"/tmp/x\", \"\").unwrap();\n}\n",
        )
        .unwrap();
        git(root, &["init", "-q"]);
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "start"]);
        Project {
            dir,
            state: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// Writes `script` as the auditor and runs `audit` with it.
    fn audit(&self, script: &str, extra: &[&str]) -> Output {
        let auditor = self.state.path().join("auditor.sh");
        std::fs::write(&auditor, script).unwrap();
        let mut command = bmb_testkit::bin::command(BIN);
        command
            .arg("audit")
            .arg(self.root())
            .args(["--agent-cmd", &format!("sh {}", auditor.display())])
            .args(extra)
            .env("XDG_STATE_HOME", self.state.path());
        bmb_testkit::bin::run(command, b"", Duration::from_secs(120))
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// An auditor whose Testing answer holds one good finding and every kind of
/// bad citation, and whose Storage answer is a specific holding rule.
const MIXED: &str = r#"cat > /dev/null
case "$BMB_AUDIT_DIMENSION" in
*Testing*)
  echo 'Here are my findings:'
  echo '{"severity":"high","rank":1,"claim":"src/app.rs sleeps instead of waiting for an event","file":"src/app.rs","line":2,"quote":"std::thread::sleep(std::time::Duration::from_secs(1));"}'
  echo '{"severity":"medium","rank":2,"claim":"a missing file","file":"src/gone.rs","line":1,"quote":"x"}'
  echo '{"severity":"low","rank":3,"claim":"a line past the end","file":"src/app.rs","line":99,"quote":"x"}'
  echo '{"severity":"low","rank":4,"claim":"a quote that is not there","file":"src/app.rs","line":1,"quote":"unsafe { launch() }"}'
  echo '{"severity":"high","rank":5,"claim":"escapes","file":"../../etc/passwd","line":1,"quote":"root"}'
  echo '{"holds":"no issues found","file":"CLAUDE.md","line":5}'
  echo 'garbage {not json'
  ;;
*Storage*)
  echo '{"holds":"the only write outside the data folder is src/app.rs line 3, which a test fixture owns","file":"src/app.rs","line":3}'
  ;;
esac
"#;

#[test]
fn plan_prints_the_projects_own_dimensions_and_runs_nothing() {
    let project = Project::new();
    let marker = project.state.path().join("ran");
    let output = project.audit(&format!("touch {}", marker.display()), &["--plan"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let plan = text(&output.stdout);
    assert!(
        plan.contains("Testing") && plan.contains("Storage"),
        "{plan}"
    );
    assert!(
        plan.contains("CLAUDE.md:5"),
        "rules carry file:line: {plan}"
    );
    assert!(!marker.exists(), "--plan runs no auditor");
}

#[test]
fn plan_on_this_repository_draws_from_its_architecture_invariants() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut command = bmb_testkit::bin::command(BIN);
    command.arg("audit").arg(&repo).arg("--plan");
    let output = bmb_testkit::bin::run(command, b"", Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let plan = text(&output.stdout);
    assert!(plan.contains("ARCHITECTURE.md:"), "{plan}");
    assert!(
        plan.contains("classify"),
        "the classify crate's invariants: {plan}"
    );
}

#[test]
fn only_cited_findings_survive_and_every_rejection_says_why() {
    let project = Project::new();
    let output = project.audit(MIXED, &["--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");
    let all = report.to_string();
    assert!(all.contains("sleeps instead of waiting"), "{all}");
    for planted in [
        "a missing file",
        "a line past the end",
        "a quote that is not there",
        "escapes",
        "no issues found",
    ] {
        assert!(
            all.contains(planted),
            "kept apart as rejected: {planted}: {all}"
        );
    }
    assert!(
        all.contains("which a test fixture owns"),
        "a specific holding rule is kept: {all}"
    );
    assert!(
        !all.contains("garbage"),
        "lines that are not objects are ignored: {all}"
    );
    // The markdown report, kept for the operator.
    let kept = std::fs::read_dir(project.state.path().join("bmb-monitor/audits"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let markdown = std::fs::read_to_string(kept.join("report.md")).unwrap();
    assert!(markdown.contains("sleeps instead of waiting"), "{markdown}");
}

#[test]
fn a_second_audit_marks_what_is_still_open_and_what_is_gone() {
    let project = Project::new();
    let first = text(&project.audit(MIXED, &[]).stdout);
    assert!(first.to_lowercase().contains("new"), "{first}");
    let again = text(&project.audit(MIXED, &[]).stdout);
    assert!(again.to_lowercase().contains("still open"), "{again}");
    // An auditor that answers nothing says nothing of what is gone.
    let silent = text(&project.audit("cat > /dev/null\n", &[]).stdout);
    assert!(!silent.contains("gone"), "{silent}");
    assert!(
        silent.contains("its earlier findings are kept as they were"),
        "{silent}"
    );
    // The auditor answers and no longer reports it, but its quote is still
    // in the file: missed once is not gone (issue 18).
    let holds = r#"cat > /dev/null
echo '{"holds":"src/app.rs waits on the ready file at line 2 now, no sleep is left in src","file":"src/app.rs","line":2}'
"#;
    let missed = text(&project.audit(holds, &[]).stdout);
    assert!(!missed.contains("gone"), "{missed}");
    assert!(
        missed.contains("not reported this time, its quote still there"),
        "{missed}"
    );
    // Twice in a row: gone.
    let twice = text(&project.audit(holds, &[]).stdout);
    assert!(
        twice.contains("gone (high, not reported twice in a row)"),
        "{twice}"
    );
    assert!(!twice.contains("still open"), "{twice}");
    // A finding whose quote left the file is gone at once.
    let project = Project::new();
    project.audit(MIXED, &[]);
    std::fs::write(
        project.root().join("src/app.rs"),
        "fn main() {\n    wait_for_ready();\n    std::fs::write(\"/tmp/x\", \"\").unwrap();\n}\n",
    )
    .unwrap();
    let fixed = text(&project.audit(holds, &[]).stdout);
    assert!(
        fixed.contains("gone (high, its quote left the file)"),
        "{fixed}"
    );
}

#[test]
fn an_auditor_that_hangs_with_a_grandchild_is_ended_and_is_one_line() {
    let project = Project::new();
    let pid_file = project.state.path().join("grandchild.pid");
    let script = format!(
        "cat > /dev/null\ncase \"$BMB_AUDIT_DIMENSION\" in *Testing*) sh -c 'echo $$ > {}; exec sleep 300' & wait ;; esac\n",
        pid_file.display()
    );
    let output = project.audit(&script, &["--timeout", "2"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "never fatal: {}",
        text(&output.stderr)
    );
    let report = text(&output.stdout);
    assert!(report.contains("did not finish in 2 s"), "{report}");
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        bmb_testkit::bin::wait_until(10, || probes::os::procfs::Stat::of(grandchild)
            .is_none_or(|s| s.has_exited())),
        "the grandchild was ended with its group"
    );
}

#[test]
fn an_auditor_that_edits_the_project_is_said_first() {
    let project = Project::new();
    let script = "cat > /dev/null\necho changed >> src/app.rs\n";
    let output = project.audit(script, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report = text(&output.stdout);
    let first = report
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    assert!(
        first.contains("changed while the auditors ran"),
        "said first: {report}"
    );
}

/// Found by a review: writes git's status does not list (an ignored file,
/// `.git/config`, a hook) went unseen, and a project outside git was
/// reported as if verified.
#[test]
fn writes_git_status_hides_are_seen_and_an_unverifiable_audit_says_so() {
    for write in [
        "echo planted > build.log",
        "git config core.planted 1",
        "echo 'exit 0' > .git/hooks/post-checkout",
    ] {
        let project = Project::new();
        std::fs::write(project.root().join(".git/info/exclude"), "*.log\n").unwrap();
        let output = project.audit(&format!("cat > /dev/null\n{write}\n"), &[]);
        let report = text(&output.stdout);
        assert!(
            report.starts_with("**The auditors changed the project:**"),
            "{write}: {report}"
        );
    }
    let project = Project::new();
    std::fs::remove_dir_all(project.root().join(".git")).unwrap();
    let output = project.audit("cat > /dev/null\necho planted > evidence.txt\n", &[]);
    let report = text(&output.stdout);
    assert!(
        report.starts_with("**Not verified read-only:** the auditors' writes cannot be seen ("),
        "{report}"
    );
    assert!(
        report.contains("is not inside a git repository"),
        "{report}"
    );
}

/// Nothing is lost: an unreadable last report is moved aside, not
/// overwritten by the next.
#[test]
fn an_unreadable_last_report_is_kept_aside() {
    let project = Project::new();
    let first = project.audit(MIXED, &[]);
    assert_eq!(first.status.code(), Some(0));
    let folder = std::fs::read_dir(project.state.path().join("bmb-monitor/audits"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(folder.join("last.json"), "{not json").unwrap();
    let again = project.audit(MIXED, &[]);
    assert_eq!(again.status.code(), Some(0));
    let aside = folder.join("last.json.unreadable");
    assert!(
        text(&again.stderr).contains(&format!("it is kept as {}", aside.display())),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(std::fs::read_to_string(aside).unwrap(), "{not json");
    assert!(
        std::fs::read_to_string(folder.join("last.json"))
            .unwrap()
            .starts_with('{')
    );
}

/// A stopped audit is not an audit: the last one is kept as it was.
#[test]
fn a_stopped_audit_keeps_the_last_one() {
    let project = Project::new();
    let mut audit = project.held_audit();
    assert!(bmb_testkit::bin::wait_until(60, || lines_of(
        &project.state.path().join("runs")
    ) == 2));
    audit.signal(rustix::process::Signal::TERM);
    assert_eq!(audit.wait_exit(30).and_then(|s| s.code()), Some(0));
    assert!(
        bmb_testkit::bin::wait_until(10, || audit
            .err()
            .iter()
            .any(|l| l.contains("stopped before every auditor answered; this audit is not kept"))),
        "{:?}",
        audit.err()
    );
    assert!(audit.out().is_empty(), "{:?}", audit.out());
    let audits = project.state.path().join("bmb-monitor/audits");
    let kept = std::fs::read_dir(&audits)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .any(|folder| folder.path().join("last.json").exists());
    assert!(!kept, "nothing replaced the (absent) last audit");
}

#[test]
fn a_project_with_no_rules_of_its_own_gets_the_four_fallbacks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# A project\n").unwrap();
    let mut command = bmb_testkit::bin::command(BIN);
    command.arg("audit").arg(dir.path()).arg("--plan");
    let output = bmb_testkit::bin::run(command, b"", Duration::from_secs(60));
    let plan = text(&output.stdout).to_lowercase();
    for fallback in [
        "design and token",
        "access control",
        "test reality",
        "documentation integrity",
    ] {
        assert!(plan.contains(fallback), "{fallback}: {plan}");
    }
}

/// An auditor that says it runs (one line per dimension in `runs`, its pid
/// in `pids`), then holds until `release` exists, then answers one holding rule.
fn held_auditor(state: &Path) -> String {
    format!(
        r#"cat > /dev/null
echo "$BMB_AUDIT_DIMENSION" >> '{runs}'
echo $$ >> '{pids}'
while [ ! -e '{release}' ]; do sleep 0.05; done
echo '{{"holds":"the only write outside the data folder is src/app.rs line 3, which a test fixture owns","file":"src/app.rs","line":3}}'
"#,
        runs = state.join("runs").display(),
        pids = state.join("pids").display(),
        release = state.join("release").display(),
    )
}

/// `watch --audit` on a private tmux pane that shows a turn in progress
/// (nothing to act on), polling every second.
fn watch_with_audit(
    project: &Project,
    tmux: &bmb_testkit::tmux::PrivateTmux,
    every: &str,
) -> bmb_testkit::bin::Running {
    let auditor = project.state.path().join("auditor.sh");
    std::fs::write(&auditor, held_auditor(project.state.path())).unwrap();
    let received = tmux.dir.path().join("received");
    tmux.replay(
        "work",
        &bmb_testkit::tmux::capture_path("working-bash-sleep"),
        &received,
    );
    start_watch(project, tmux, every)
}

/// `watch` of the pane `work` with the project's audit every `every`.
fn start_watch(
    project: &Project,
    tmux: &bmb_testkit::tmux::PrivateTmux,
    every: &str,
) -> bmb_testkit::bin::Running {
    let auditor = project.state.path().join("auditor.sh");
    let mut command = bmb_testkit::bin::command(BIN);
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["work", "--interval", "1", "--work-probe", "echo 0"])
        .arg("--audit")
        .arg(project.root())
        .args(["--audit-every", every])
        .args(["--audit-agent-cmd", &format!("sh {}", auditor.display())])
        .env("XDG_STATE_HOME", project.state.path());
    bmb_testkit::bin::Running::start(command)
}

impl Project {
    /// `audit` of the project with [`held_auditor`], running.
    fn held_audit(&self) -> bmb_testkit::bin::Running {
        let auditor = self.state.path().join("auditor.sh");
        std::fs::write(&auditor, held_auditor(self.state.path())).unwrap();
        let mut command = bmb_testkit::bin::command(BIN);
        command
            .arg("audit")
            .arg(self.root())
            .args(["--agent-cmd", &format!("sh {}", auditor.display())])
            .env("XDG_STATE_HOME", self.state.path());
        bmb_testkit::bin::Running::start(command)
    }
}

fn lines_of(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

fn said(watch: &bmb_testkit::bin::Running, needle: &str) -> usize {
    watch.err().iter().filter(|l| l.contains(needle)).count()
}

/// Seed: the audit "is not something the poll loop does inline". Polls go on
/// while both auditors hold; the audit's end is one line; its report is kept.
#[test]
fn a_watcher_keeps_polling_while_its_audit_runs() {
    let project = Project::new();
    let tmux = bmb_testkit::tmux::PrivateTmux::new();
    let mut watch = watch_with_audit(&project, &tmux, "1h");
    let runs = project.state.path().join("runs");
    assert!(
        bmb_testkit::bin::wait_until(60, || lines_of(&runs) == 2),
        "both auditors start at once; stderr: {:?}",
        watch.err()
    );
    // Both auditors hold: every poll from here on happened during the audit.
    let polls = watch.out().len();
    assert!(
        bmb_testkit::bin::wait_until(60, || watch.out().len() >= polls + 3),
        "the loop polled {} times while the audit ran",
        watch.out().len() - polls
    );
    assert_eq!(said(&watch, "done:"), 0, "{:?}", watch.err());
    std::fs::write(project.state.path().join("release"), "").unwrap();
    assert!(
        bmb_testkit::bin::wait_until(60, || said(&watch, "done:") == 1),
        "{:?}",
        watch.err()
    );
    let done = watch
        .err()
        .into_iter()
        .find(|l| l.contains("done:"))
        .unwrap();
    assert!(
        done.contains("0 new") && done.contains("2 holding") && done.contains("report.md"),
        "{done}"
    );
    assert!(
        watch.out().iter().all(|l| l.contains("WORKING")),
        "{:?}",
        watch.out()
    );
    watch.signal(rustix::process::Signal::TERM);
    assert_eq!(watch.wait_exit(30).and_then(|s| s.code()), Some(0));
    let folders: Vec<_> = std::fs::read_dir(project.state.path().join("bmb-monitor/audits"))
        .unwrap()
        .collect();
    assert_eq!(folders.len(), 1);
    let folder = folders[0].as_ref().unwrap().path();
    assert!(folder.join("report.md").is_file() && folder.join("started").is_file());

    // Restarted: the last audit started within the period, so none starts
    // now. Three polls are three turns of the schedule.
    let mut again = start_watch(&project, &tmux, "1h");
    assert!(
        bmb_testkit::bin::wait_until(60, || again.out().len() >= 3),
        "{:?}",
        again.err()
    );
    assert_eq!(said(&again, "started"), 0, "{:?}", again.err());
    assert_eq!(lines_of(&runs), 2, "no auditor ran again");
    again.signal(rustix::process::Signal::TERM);
    assert_eq!(again.wait_exit(30).and_then(|s| s.code()), Some(0));
}

/// A slot that comes while the last audit still runs is skipped and said,
/// once; a stopping watcher ends the auditors it started.
#[test]
fn a_late_audit_is_skipped_and_a_stopping_watcher_ends_its_auditors() {
    let project = Project::new();
    let tmux = bmb_testkit::tmux::PrivateTmux::new();
    let mut watch = watch_with_audit(&project, &tmux, "2s");
    assert!(
        bmb_testkit::bin::wait_until(60, || said(&watch, "still runs; skipped") >= 1),
        "{:?}",
        watch.err()
    );
    assert_eq!(said(&watch, "started;"), 1, "{:?}", watch.err());
    assert_eq!(lines_of(&project.state.path().join("runs")), 2);
    let pids: Vec<i32> = std::fs::read_to_string(project.state.path().join("pids"))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    watch.signal(rustix::process::Signal::TERM);
    assert_eq!(watch.wait_exit(30).and_then(|s| s.code()), Some(0));
    for pid in pids {
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        assert!(
            bmb_testkit::bin::wait_until(30, || !alive()),
            "auditor {pid} outlived its watcher"
        );
    }
}

#[test]
fn watch_refuses_an_audit_it_cannot_run() {
    let state = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--audit", "/nonexistent/project", "--audit-every", "6h"],
            "--audit /nonexistent/project",
        ),
        (
            &["--audit", ".", "--audit-every", "6"],
            "a number needs a unit",
        ),
        (&["--audit", ".", "--audit-every", "0s"], "must be from 1s"),
        (&["--audit", "."], "--audit-every"),
        (
            &["--audit", ".", "--audit-every", "6h", "--once"],
            "not with --once",
        ),
    ];
    for (flags, needle) in cases {
        let mut command = bmb_testkit::bin::command(BIN);
        command
            .args(["watch", "-L", "bmb-none", "s"])
            .args(flags)
            .env("XDG_STATE_HOME", state.path());
        let output = bmb_testkit::bin::run(command, b"", Duration::from_secs(30));
        assert_eq!(output.status.code(), Some(2), "{flags:?}");
        let err = text(&output.stderr);
        assert!(err.contains(needle), "{flags:?}: {err}");
    }
}

/// One audit per project at a time, across processes: a second is refused
/// while the first holds, and nothing of the first is disturbed.
#[test]
fn a_second_audit_of_a_project_being_audited_is_refused() {
    let project = Project::new();
    let mut first = project.held_audit();
    let runs = project.state.path().join("runs");
    assert!(bmb_testkit::bin::wait_until(60, || lines_of(&runs) == 2));
    let second = project.audit("echo never >> /dev/null", &[]);
    assert_eq!(second.status.code(), Some(1));
    assert!(
        text(&second.stderr).contains("this project is being audited already (pid "),
        "{}",
        text(&second.stderr)
    );
    std::fs::write(project.state.path().join("release"), "").unwrap();
    assert_eq!(first.wait_exit(60).and_then(|s| s.code()), Some(0));
    // Both dimensions' holding rules are in the first audit's report.
    let clean = |out: Vec<String>| {
        out.iter()
            .filter(|l| l.contains("clean (1 of 1 rule checked, 1 holding)"))
            .count()
    };
    assert!(
        bmb_testkit::bin::wait_until(30, || clean(first.out()) == 2),
        "{:?}",
        first.out()
    );
}

/// Every file under `dir`, as bytes, with its path.
fn every_file(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(every_file(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

/// Issue 18: a secret from a gitignored `.env`, cited by an auditor, was
/// written into report.md and last.json. Its text is now in no kept file,
/// on no stream and in no alert.
#[test]
fn a_secret_from_a_gitignored_env_is_kept_nowhere() {
    let project = Project::new();
    let root = project.root();
    std::fs::write(root.join(".gitignore"), ".env\n").unwrap();
    git(&root, &["add", ".gitignore"]);
    git(&root, &["commit", "-q", "-m", "ignore .env"]);
    let secret = "sk-live-PLANTED-7f3a9c2e1b";
    std::fs::write(root.join(".env"), format!("API_KEY={secret}\n")).unwrap();
    let alert = project.state.path().join("alert.txt");
    let script = format!(
        r#"cat > /dev/null
echo '{{"severity":"high","rank":1,"claim":"the key API_KEY={secret} is in the tree","file":".env","line":1,"quote":"API_KEY={secret}"}}'
echo '{{"severity":"high","rank":1,"claim":"the key API_KEY={secret} is in the tree","file":"{root}/.env","line":1,"quote":"API_KEY={secret}"}}'
echo '{{"severity":"medium","rank":2,"claim":"src/app.rs sleeps, and API_KEY={secret} would leak","file":"src/app.rs","line":2,"quote":"std::thread::sleep(std::time::Duration::from_secs(1));"}}'
echo '{{"holds":"API_KEY={secret} stays in .env and out of src","file":".env","line":1}}'
"#,
        root = root.display()
    );
    let alert_cmd = format!("cat > '{}'", alert.display());
    for extra in [&["--alert-cmd", alert_cmd.as_str()][..], &["--json"][..]] {
        let output = project.audit(&script, extra);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            assert!(
                !text(bytes).contains(secret),
                "{stream} holds the secret: {}",
                text(bytes)
            );
        }
        let out = text(&output.stdout);
        assert!(out.contains("ignored by git"), "said why: {out}");
        assert!(out.contains("sleeps"), "the other finding is kept: {out}");
    }
    assert!(alert.exists(), "the alert ran");
    let kept = every_file(project.state.path());
    assert!(
        kept.iter().any(|(p, _)| p.ends_with("report.md"))
            && kept.iter().any(|(p, _)| p.ends_with("last.json"))
    );
    for (path, bytes) in kept {
        if path.ends_with("auditor.sh") {
            continue; // the test's own script
        }
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "{} holds the secret",
            path.display()
        );
    }
}

/// Issue 18: a symlink alias read as gone plus new, and one finding from
/// two dimensions was two. Both are one finding, still open.
#[test]
fn a_symlink_alias_and_a_second_dimension_are_the_same_finding() {
    let project = Project::new();
    let root = project.root();
    std::os::unix::fs::symlink("src/app.rs", root.join("alias.rs")).unwrap();
    git(&root, &["add", "alias.rs"]);
    git(&root, &["commit", "-q", "-m", "alias"]);
    // Both dimensions' auditors report the sleep as breaking the Testing
    // rule (CLAUDE.md:5).
    let cite = |file: &str| {
        format!(
            r#"cat > /dev/null
echo '{{"severity":"high","rank":1,"claim":"the app sleeps a second instead of waiting","file":"{file}","line":2,"quote":"std::thread::sleep(std::time::Duration::from_secs(1));","rule":"CLAUDE.md:5"}}'
"#
        )
    };
    let first: serde_json::Value =
        serde_json::from_slice(&project.audit(&cite("src/app.rs"), &["--json"]).stdout).unwrap();
    let findings = |report: &serde_json::Value| -> Vec<serde_json::Value> {
        report["dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| d["findings"].as_array().unwrap().clone())
            .collect()
    };
    // Both dimensions reported it: one finding, the other dimension named.
    let one = findings(&first);
    assert_eq!(one.len(), 1, "{first}");
    assert_eq!(one[0]["also_in"], serde_json::json!(["Storage"]), "{first}");
    let again: serde_json::Value =
        serde_json::from_slice(&project.audit(&cite("alias.rs"), &["--json"]).stdout).unwrap();
    let one = findings(&again);
    assert_eq!(one.len(), 1, "{again}");
    assert_eq!(one[0]["file"], "src/app.rs");
    assert_eq!(one[0]["status"], "still_open", "{again}");
    let gone: usize = again["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["gone"].as_array().unwrap().len())
        .sum();
    assert_eq!(gone, 0, "{again}");
}

/// Issues 18 and 19: a newline in a claim made headings, and OSC 52 or
/// clear-screen in a claim or in quoted file text reached stdout and
/// report.md verbatim.
#[test]
fn escapes_and_newlines_from_an_auditor_reshape_nothing() {
    let project = Project::new();
    let root = project.root();
    std::fs::write(
        root.join("src/banner.rs"),
        "const BANNER: &str = \"\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2J hello there\";\n",
    )
    .unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "banner"]);
    let script = r#"cat > /dev/null
case "$BMB_AUDIT_DIMENSION" in
*Testing*)
cat <<'EOF'
{"severity":"high","rank":1,"claim":"sleeps\n# Audit: 0 findings\n\u001b]52;c;aGVsbG8=\u0007\u001b[2J\u009b2J cleared","file":"src/app.rs","line":2,"quote":"std::thread::sleep(std::time::Duration::from_secs(1));"}
{"severity":"low","rank":2,"claim":"the banner writes the clipboard","file":"src/banner.rs","line":1,"quote":"\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2J hello there"}
EOF
;;
esac
"#;
    let alert = project.state.path().join("alert.txt");
    let output = project.audit(
        script,
        &["--alert-cmd", &format!("cat > '{}'", alert.display())],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let folder = std::fs::read_dir(project.state.path().join("bmb-monitor/audits"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let markdown = std::fs::read_to_string(folder.join("report.md")).unwrap();
    let alert = std::fs::read_to_string(&alert).unwrap();
    for (what, shown) in [
        ("stdout", text(&output.stdout)),
        ("report.md", markdown.clone()),
        ("alert", alert.clone()),
    ] {
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{what}: {shown:?}"
        );
        assert!(
            !shown.lines().any(|l| l.starts_with("# Audit: 0")),
            "{what}: {shown}"
        );
        assert!(
            shown.contains("sleeps # Audit: 0 findings"),
            "{what}: {shown}"
        );
    }
    assert!(
        markdown.contains("> \\u{1b}]52;c;cm0gLXJmIH4=\\u{7}\\u{1b}[2J hello there"),
        "the quoted file text is shown with its controls visible: {markdown}"
    );
    assert!(
        alert.starts_with(&format!(
            "Audit of {}: ",
            root.canonicalize().unwrap().display()
        )),
        "{alert}"
    );
    let json = project.audit(script, &["--json"]);
    assert!(
        !text(&json.stdout)
            .chars()
            .any(|c| c.is_control() && c != '\n'),
        "{:?}",
        text(&json.stdout)
    );
}

/// A `.mdc` rule's globs scope it: its auditor is told where the rules
/// apply, and the repository-wide rules' auditor is not.
#[test]
fn an_mdc_rules_globs_go_into_its_auditors_prompt() {
    let project = Project::new();
    let rules = project.root().join(".cursor/rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("tasks.mdc"),
        "---\ndescription: tasks\nglobs: **/trigger/**/*.ts\nalwaysApply: false\n---\n- Always export every task.\n",
    )
    .unwrap();
    let prompts = project.state.path().join("prompts");
    std::fs::create_dir(&prompts).unwrap();
    let script = format!("cat > \"{}/$BMB_AUDIT_DIMENSION.txt\"\n", prompts.display());
    let output = project.audit(&script, &[]);
    assert!(output.status.success(), "{output:?}");
    let scoped = std::fs::read_to_string(prompts.join("trigger.txt")).unwrap();
    assert!(
        scoped.contains(".cursor/rules/tasks.mdc:6: Always export every task.")
            && scoped
                .contains("These rules govern only these parts of the tree: **/trigger/**/*.ts"),
        "{scoped}"
    );
    let whole = std::fs::read_to_string(prompts.join("Testing.txt")).unwrap();
    assert!(!whole.contains("govern only"), "{whole}");
}
