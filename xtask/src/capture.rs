//! `cargo xtask capture [--scenario NAME[,NAME...]] [--size WxH] [--jobs N] [--list]`
//!
//! Regenerates the real Claude Code captures in `testdata/panes/claude/`: installs the CLI from npm
//! into `target/capture/` when it is missing, then runs `python3 xtask/capture/scenarios.py`, which
//! drives the real CLI in private tmux servers against a scripted mock of the Anthropic API on
//! 127.0.0.1 (see `xtask/capture/` and `testdata/README.md`). Nothing reaches beyond 127.0.0.1.
//!
//! This is a developer chore, not product code, so it spawns its tools directly (the product's rule
//! that every subprocess goes through `crates/probes` does not apply to xtask).

#![expect(
    clippy::disallowed_methods,
    reason = "xtask runs the capture tools and CLIs itself, not through the product's probes"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask capture [--agent claude|codex|gemini|opencode|aider] [--scenario NAME[,NAME...]]...
                           [--version V] [--color truecolor|256|no-color] [--tag TAG]
                           [--permission-mode MODE (claude)] [--no-background-color (gemini)]
                           [--size WxH] [--jobs N] [--out DIR] [--list]

Runs a real agent CLI (default: Claude Code) in private tmux servers against a scripted loopback mock of
its model API (xtask/capture/), and writes testdata/panes/<agent>/<case>/{plain.txt,ansi.txt,scrollback.txt,meta}
(or under --out DIR). The CLI is installed under target/capture/<agent>/<version>/ when missing: Claude Code,
Codex CLI, Gemini CLI and OpenCode from npm, Aider from PyPI into a venv. The release is always named:
--version, else the one pinned in xtask/capture/capctx.py (PINNED), never an implicit `latest` (on Node 20
npm's `latest` is the newest release whose engines allow Node 20). --color sets the terminal's colour class,
--tag appends -TAG to the case names (a second rendering beside the first); --no-background-color sets
Gemini CLI's `ui.useBackgroundColor: false`. Needs tmux, python3 and npm.";

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

pub(crate) fn have(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// Flags passed through to scenarios.py; anything else is a usage error here, before any work starts.
fn check_args(args: &[String]) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--list" | "--no-background-color" => {}
            "--scenario" | "--size" | "--jobs" | "--out" | "--claude" | "--agent" | "--version"
            | "--color" | "--tag" | "--permission-mode" => {
                if it.next().is_none() {
                    return Err(format!("`{a}` needs a value"));
                }
            }
            s if s.starts_with("--scenario=")
                || s.starts_with("--size=")
                || s.starts_with("--jobs=")
                || s.starts_with("--out=")
                || s.starts_with("--claude=")
                || s.starts_with("--agent=")
                || s.starts_with("--version=")
                || s.starts_with("--color=")
                || s.starts_with("--tag=")
                || s.starts_with("--permission-mode=") => {}
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(())
}

pub(crate) fn run(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if let Err(e) = check_args(args) {
        eprintln!("xtask capture: {e}\n{USAGE}");
        return ExitCode::from(2);
    }
    let (agent, rest) = split_agent(args);
    let agent = agent.unwrap_or_else(|| "claude".to_string());
    // Each driver installs its CLI under target/capture when missing (npm, or
    // PyPI into a venv for Aider) and writes testdata/panes/<agent>/.
    let Some((script, script_args)) = driver(&agent, &rest) else {
        eprintln!(
            "xtask capture: unknown agent `{agent}` (claude, codex, gemini, opencode, aider)"
        );
        return ExitCode::from(2);
    };
    for (tool, arg) in [
        ("python3", "--version"),
        ("tmux", "-V"),
        ("npm", "--version"),
    ] {
        if !have(tool, arg) {
            eprintln!(
                "xtask capture: `{tool}` is not installed (needed to install and drive the real {agent} CLI)"
            );
            return ExitCode::from(2);
        }
    }
    let status = python(&script).args(&script_args).status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("xtask capture: {script} failed ({s})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("xtask capture: cannot run python3: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The capture driver of an agent (a script in xtask/capture/) and its arguments: `args` are the
/// driver flags without `--agent` (scenarios_agents.py drives two CLIs and takes `--agent` itself).
pub(crate) fn driver(agent: &str, args: &[String]) -> Option<(String, Vec<String>)> {
    match agent {
        "claude" => Some(("scenarios.py".to_string(), args.to_vec())),
        "opencode" | "aider" => Some((format!("scenarios_{agent}.py"), args.to_vec())),
        "codex" | "gemini" => {
            let mut with_agent = vec!["--agent".to_string(), agent.to_string()];
            with_agent.extend_from_slice(args);
            Some(("scenarios_agents.py".to_string(), with_agent))
        }
        _ => None,
    }
}

/// `python3 xtask/capture/<script>` run from the workspace root, writing no bytecode.
pub(crate) fn python(script: &str) -> Command {
    let root = workspace_root();
    let mut command = Command::new("python3");
    command
        .arg(root.join("xtask").join("capture").join(script))
        .current_dir(&root)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// The value of `--agent NAME` / `--agent=NAME`, and the other arguments.
fn split_agent(args: &[String]) -> (Option<String>, Vec<String>) {
    let (mut agent, mut rest) = (None, Vec::new());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--agent" {
            agent = it.next().cloned();
        } else if let Some(v) = a.strip_prefix("--agent=") {
            agent = Some(v.to_string());
        } else {
            rest.push(a.clone());
        }
    }
    (agent, rest)
}

#[cfg(test)]
mod tests {
    use super::check_args;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn passes_known_flags_and_refuses_others() {
        assert!(check_args(&v(&["--scenario", "perm-bash", "--size", "80x24"])).is_ok());
        assert!(check_args(&v(&["--list"])).is_ok());
        assert!(check_args(&v(&["--jobs=3"])).is_ok());
        assert!(check_args(&v(&["--version", "2.1.332", "--color=256", "--tag", "v2"])).is_ok());
        assert!(check_args(&v(&["--agent", "gemini", "--no-background-color"])).is_ok());
        assert!(check_args(&v(&["--version"])).is_err());
        assert!(check_args(&v(&["--scenario"])).is_err());
        assert!(check_args(&v(&["--bogus"])).is_err());
    }
}
