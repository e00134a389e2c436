//! `bmb-monitor audit` with its DEFAULT auditor, the real Claude Code in print
//! mode (the pinned release, installed into target/capture on first use),
//! against the loopback mock of the Messages API (xtask/capture/audit_mock.py)
//! scripted to answer like an auditor: the report keeps what is cited, rejects
//! the planted bad citations and the generic "holds", and the project is left
//! as it was.
// These tests start python3 (the mock) and keep its pipes open.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bmb-monitor");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The mock, serving until dropped; what it was sent is under `dumps`.
struct AuditMock {
    child: Child,
    stdin: Option<ChildStdin>,
    port: u16,
    claude: PathBuf,
    dumps: PathBuf,
}

impl AuditMock {
    fn start(steps: &Value, dir: &Path) -> AuditMock {
        let steps_file = dir.join("steps.json");
        std::fs::write(&steps_file, steps.to_string()).expect("write the steps");
        let dumps = dir.join("requests");
        let mut child = Command::new("python3")
            .arg(workspace().join("xtask/capture/audit_mock.py"))
            .arg(&steps_file)
            .arg(&dumps)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs xtask/capture/audit_mock.py (needs python3 and npm)");
        let stdin = child.stdin.take();
        let mut line = String::new();
        let read = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
        let ready: Value = match (read, serde_json::from_str(line.trim())) {
            (Ok(_), Ok(ready)) => ready,
            _ => {
                let status = child.wait().expect("wait");
                panic!("audit_mock.py never got ready ({status}); see its stderr above");
            }
        };
        AuditMock {
            child,
            stdin,
            port: ready["port"].as_u64().expect("port") as u16,
            claude: PathBuf::from(ready["claude"].as_str().expect("claude")),
            dumps,
        }
    }

    /// Every request body the mock received, in order.
    fn requests(&self) -> Vec<Value> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.dumps)
            .expect("the dump folder")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("req-"))
            })
            .collect();
        names.sort();
        names
            .iter()
            .map(|path| serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON"))
            .collect()
    }

    /// The mock's event log, one JSON object a line.
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dumps.join("log.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON event"))
            .collect()
    }
}

impl Drop for AuditMock {
    fn drop(&mut self) {
        // Closing stdin ends the mock; if it is still there after that, it is
        // ended by its pid (our own child).
        drop(self.stdin.take());
        let ended =
            bmb_testkit::bin::wait_until(10, || self.child.try_wait().ok().flatten().is_some());
        if !ended {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

use bmb_testkit::git;

/// HEAD and `git status --porcelain --ignored`: what an auditor must not change.
fn git_state(dir: &Path) -> (String, String) {
    (
        git(dir, &["rev-parse", "HEAD"]),
        git(dir, &["status", "--porcelain", "--ignored"]),
    )
}

/// The line of the sample project's store.rs that breaks its rules.
const BREAKING_LINE: usize = 4;
const BREAKING_QUOTE: &str = r#"let mut file = std::fs::File::create("/tmp/cache.bin")?;"#;

/// A committed project whose CLAUDE.md states three storage rules and whose
/// src/store.rs breaks the first two at line 4. Its own Claude Code settings
/// have hooks that would write into it, were they run.
fn sample_project(root: &Path) {
    std::fs::create_dir(root.join(".claude")).unwrap();
    let hook = |event: &str| json!([{"hooks": [{"type": "command", "command": format!("touch hooked-{event}")}]}]);
    std::fs::write(
        root.join(".claude/settings.json"),
        json!({"hooks": {
            "SessionStart": hook("SessionStart"),
            "UserPromptSubmit": hook("UserPromptSubmit"),
            "PreToolUse": hook("PreToolUse"),
            "Stop": hook("Stop"),
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("CLAUDE.md"),
        "# House rules\n\n## Storage\n\n- Never write outside the data folder.\n\
         - Open every file through `store::open`, never with `std::fs` directly.\n\
         - A cache lives under `data/cache/`.\n",
    )
    .unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/store.rs"),
        format!(
            "use std::io::Write;\n\npub fn save_cache(bytes: &[u8]) -> std::io::Result<()> {{\n    {BREAKING_QUOTE}\n    file.write_all(bytes)\n}}\n"
        ),
    )
    .unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "start"]);
}

/// The scripted model: first a turn that reads the cited file, greps the
/// project, tries to read a file outside it and to write twice (a shell
/// command and the Write tool); then, once the tool results are in, the
/// audit reply in JSON lines: one good finding, two planted bad citations,
/// one generic "holds", and prose around them.
fn steps(root: &Path, outside: &Path) -> Value {
    let store = root.join("src/store.rs").display().to_string();
    let bashed = root.join("bashed").display().to_string();
    let written = root.join("written.txt").display().to_string();
    let reply = [
        "Here is my audit of the Storage rules.".to_string(),
        json!({"severity": "high", "rank": 1,
               "claim": "save_cache writes its cache to /tmp with std::fs, outside the data folder",
               "file": "src/store.rs", "line": BREAKING_LINE, "quote": BREAKING_QUOTE})
        .to_string(),
        json!({"severity": "medium", "rank": 2,
               "claim": "the cache file is never closed before the process exits",
               "file": "src/store.rs", "line": 40, "quote": "drop(file);"})
        .to_string(),
        json!({"severity": "low", "rank": 3,
               "claim": "store::open is bypassed by the cache writer",
               "file": "src/store.rs", "line": 1, "quote": "store::open(path)"})
        .to_string(),
        json!({"holds": "all clean", "file": "CLAUDE.md", "line": 7}).to_string(),
        "That is all.".to_string(),
    ]
    .join("\n");
    json!([
        {"when": "user_text", "blocks": [
            {"text": "Reading the storage code."},
            {"tool": "Read", "id": "toolu_read_cited", "input": {"file_path": store}},
            {"tool": "Grep", "id": "toolu_grep_project", "input": {"pattern": "File::create"}},
            {"tool": "Read", "id": "toolu_read_outside", "input": {"file_path": outside.display().to_string()}},
            {"tool": "Bash", "id": "toolu_bash", "input": {"command": format!("touch {bashed}"), "description": "touch"}},
            {"tool": "Write", "id": "toolu_write", "input": {"file_path": written, "content": "x"}},
        ]},
        {"when": "tool_result", "blocks": [{"text": reply, "chunk": 64}]},
    ])
}

/// The user text of a request's messages (the prompt Claude Code read on stdin is among them).
fn user_texts(request: &Value) -> String {
    let mut texts = String::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        if message["role"] != "user" {
            continue;
        }
        match &message["content"] {
            Value::String(text) => texts.push_str(text),
            Value::Array(blocks) => {
                for block in blocks {
                    if let Some(text) = block["text"].as_str() {
                        texts.push_str(text);
                    }
                }
            }
            _ => {}
        }
    }
    texts
}

/// The tool results of a request's last message: (tool_use_id, is_error, content).
fn tool_results(request: &Value) -> Vec<(String, bool, String)> {
    let messages = request["messages"].as_array().expect("messages");
    let last = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let content = match &b["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (
                b["tool_use_id"].as_str().unwrap_or("").to_string(),
                b["is_error"] == true,
                content,
            )
        })
        .collect()
}

#[test]
fn the_real_claude_code_as_the_default_auditor_keeps_the_cited_and_rejects_the_planted() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    sample_project(&root);
    let work = tempfile::tempdir().unwrap();
    // A file outside the project, which the auditor must not be able to read.
    let outside = work.path().canonicalize().unwrap().join("secret.txt");
    std::fs::write(&outside, "SECRET-OUTSIDE-THE-PROJECT\n").unwrap();
    let mock = AuditMock::start(&steps(&root, &outside), work.path());

    // `claude` on PATH is the pinned release: the default agent command runs
    // as a user's would. HOME is a throwaway one (Claude Code keeps its
    // config there); nothing of the machine's environment reaches it.
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(&mock.claude, bin.join("claude")).unwrap();
    let home = work.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let state = work.path().join("state");
    let url = format!("http://127.0.0.1:{}", mock.port);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );

    let before = git_state(&root);
    let mut command = bmb_testkit::bin::command(BIN);
    command
        .env_clear()
        .arg("audit")
        .arg(&root)
        .args(["--json", "--timeout", "300"])
        .env("PATH", path)
        .env("HOME", &home)
        .env("XDG_STATE_HOME", &state)
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy")
        .env("ANTHROPIC_BASE_URL", &url)
        // A stray outbound call goes to the mock, which refuses and logs it.
        .env("HTTP_PROXY", &url)
        .env("HTTPS_PROXY", &url)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1");
    let output = bmb_testkit::bin::run(command, b"", Duration::from_secs(600));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "one JSON object ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    });

    // The report: the good finding kept, each planted citation rejected with
    // its reason, the generic "holds" rejected as noise, the prose ignored.
    let dimensions = report["dimensions"].as_array().expect("dimensions");
    assert_eq!(dimensions.len(), 1, "{report}");
    let storage = &dimensions[0];
    assert_eq!(storage["name"], "Storage", "{report}");
    assert_eq!(
        storage["failed"],
        Value::Null,
        "the auditor answered: {report}"
    );
    let findings = storage["findings"].as_array().expect("findings");
    assert_eq!(
        findings.len(),
        1,
        "only the cited finding is kept: {report}"
    );
    assert_eq!(findings[0]["file"], "src/store.rs", "{report}");
    assert_eq!(findings[0]["line"], BREAKING_LINE, "{report}");
    assert_eq!(findings[0]["quote"], BREAKING_QUOTE, "{report}");
    assert_eq!(findings[0]["severity"], "high", "{report}");
    assert_eq!(findings[0]["status"], "new", "{report}");
    let rejected: Vec<(String, String)> = storage["rejected"]
        .as_array()
        .expect("rejected")
        .iter()
        .map(|r| {
            (
                r["reason"].as_str().unwrap_or("").to_string(),
                r["line"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(rejected.len(), 3, "{report}");
    let reason_of = |needle: &str| {
        rejected
            .iter()
            .find(|(_, line)| line.contains(needle))
            .map(|(reason, _)| reason.as_str())
    };
    assert_eq!(reason_of("never closed"), Some("no_such_line"), "{report}");
    assert_eq!(
        reason_of("is bypassed"),
        Some("quote_not_there"),
        "{report}"
    );
    assert_eq!(reason_of("all clean"), Some("generic"), "{report}");
    assert_eq!(storage["holds"], json!([]), "{report}");
    assert_eq!(storage["ignored_lines"], 2, "the prose: {report}");
    assert_eq!(report["changed_by_auditors"], Value::Null, "{report}");

    // The mock was really asked, by the real Claude Code, with bmb's prompt
    // (read on its stdin) and only the read-only tools.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the tool turn and the answer");
    let prompt = user_texts(&requests[0]);
    assert!(
        prompt.contains("You are a read-only auditor") && prompt.contains("\"Storage\""),
        "bmb's prompt for the Storage dimension: {prompt}"
    );
    for request in &requests {
        // Every tool offered is Read, Grep or Glob, but for inert placeholders
        // marked `defer_loading` (2.1.332's `DeferredToolPlaceholder`).
        let callable: BTreeSet<&str> = request["tools"]
            .as_array()
            .expect("the request lists tools")
            .iter()
            .filter(|tool| tool["defer_loading"] != true)
            .filter_map(|tool| tool["name"].as_str())
            .collect();
        assert_eq!(
            callable,
            BTreeSet::from(["Glob", "Grep", "Read"]),
            "{}",
            request["tools"]
        );
    }
    // The tool turn: the Read and the Grep ran in the project (the cited line
    // is in their results); the read outside the project, the shell command
    // and the Write were refused.
    let results = tool_results(&requests[1]);
    let result_of = |id: &str| {
        results
            .iter()
            .find(|(of, _, _)| of == id)
            .map(|(_, failed, said)| (*failed, said.as_str()))
            .unwrap_or_else(|| panic!("a result for {id}: {results:?}"))
    };
    let (failed, read) = result_of("toolu_read_cited");
    assert!(!failed && read.contains(BREAKING_QUOTE), "{results:?}");
    let (failed, grep) = result_of("toolu_grep_project");
    assert!(!failed && grep.contains("src/store.rs"), "{results:?}");
    let (failed, outside_read) = result_of("toolu_read_outside");
    assert!(
        failed && outside_read.contains("denied") && !outside_read.contains("SECRET"),
        "{results:?}"
    );
    for id in ["toolu_bash", "toolu_write"] {
        let (failed, said) = result_of(id);
        assert!(
            failed && said.contains("No such tool available"),
            "{results:?}"
        );
    }
    let events = mock.events();
    let refused: Vec<&Value> = events
        .iter()
        .filter(|e| e["ev"] == "proxy_refused")
        .collect();
    assert!(refused.is_empty(), "no call beyond the mock: {refused:?}");

    // Read-only, verified independently of bmb's own check.
    assert_eq!(git_state(&root), before, "the project's git state");
    assert!(!root.join("bashed").exists() && !root.join("written.txt").exists());
    let hooked: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("hooked-"))
        .collect();
    assert!(hooked.is_empty(), "the project's own hooks ran: {hooked:?}");
}
