//! `cargo xtask drift [--agent A]... [--version V] [--scenario NAME[,NAME...]] [--jobs N] [--keep DIR]`
//!
//! Has a new release of an agent CLI broken its profile? For each CLI (default: all five) this asks
//! the CLI's registry for its newest release (`npm view <package> version`, which reports the
//! `latest` dist-tag whatever Node's `engines` allow; `pip index versions` for Aider), replays the
//! capture scenarios with the pinned release (`PINNED` in xtask/capture/capctx.py) and with the
//! newest one (once when they are the same) into a temporary directory, classifies every capture
//! exactly as `cargo xtask golden` does (golden.rs), and prints per CLI and release the confusion
//! matrix against the scenarios' expected states, the mismatches and the scenario runs that failed to
//! capture. The CLIs run against the loopback mocks; only the registries are asked over the network,
//! and when they cannot be, the pinned release alone is drifted.
//!
//! A developer chore: it spawns its tools directly, as capture.rs does.

#![expect(
    clippy::disallowed_methods,
    reason = "xtask runs the capture tools and CLIs itself, not through the product's probes"
)]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use crate::{capture, golden};

const USAGE: &str = "usage: cargo xtask drift [--agent claude|codex|gemini|opencode|aider]... [--version V]
                         [--scenario NAME[,NAME...]]... [--jobs N] [--keep DIR]

Asks each CLI's registry for its newest release (npm view <package> version; pip index versions for
aider-chat), replays the capture scenarios (xtask/capture/) with the pinned release (PINNED in capctx.py)
and the newest one against the loopback mocks, classifies every capture as `cargo xtask golden` does, and
prints per CLI and release the confusion matrix against the scenarios' expected states, the mismatches and
the scenario runs that failed to capture. Default: all five CLIs, all their scenarios.

  --agent A        drift this CLI (repeatable, or comma-separated)
  --version V      drift release V instead of the registry's newest (with exactly one --agent)
  --scenario N,..  only these scenarios (with several agents: each runs the names it has)
  --jobs N         scenarios run in parallel (default: the driver's own)
  --keep DIR       keep the captures in DIR/<agent>/<version>/ (DIR must be empty or new)

Exit status: 0 when every capture matches, 1 on any mismatch or capture failure, 2 on a usage error.
When a registry cannot be asked, drift says so and drifts the pinned release only.";

/// Prints, per agent, `agent<TAB>registry<TAB>package<TAB>pinned` from the drivers' own tables, so
/// the pinned releases and the package names have one home: xtask/capture/.
const RELEASES_PY: &str = "
import sys
sys.path.insert(0, 'xtask/capture')
import capctx, scenarios, scenarios_agents, scenarios_opencode, scenarios_aider
packages = {
    'claude': ('npm', scenarios.NPM_PACKAGE),
    'codex': ('npm', scenarios_agents.AGENTS['codex']['package']),
    'gemini': ('npm', scenarios_agents.AGENTS['gemini']['package']),
    'opencode': ('npm', scenarios_opencode.NPM_PACKAGE),
    'aider': ('pypi', scenarios_aider.PIP_PACKAGE),
}
for agent, pinned in capctx.PINNED.items():
    print(agent, *packages[agent], pinned, sep='\\t')
";

/// The command line.
#[derive(Debug, Default, PartialEq)]
struct Args {
    agents: Vec<String>,
    version: Option<String>,
    scenarios: Vec<String>,
    jobs: Option<u32>,
    keep: Option<PathBuf>,
    help: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        if matches!(flag, "-h" | "--help") {
            parsed.help = true;
            continue;
        }
        if !matches!(
            flag,
            "--agent" | "--version" | "--scenario" | "--jobs" | "--keep"
        ) {
            return Err(format!("unknown argument `{arg}`"));
        }
        let value = match inline.or_else(|| it.next().cloned()) {
            Some(value) if !value.is_empty() => value,
            _ => return Err(format!("`{flag}` needs a value")),
        };
        match flag {
            "--agent" => {
                for agent in value.split(',').filter(|a| !a.is_empty()) {
                    if capture::driver(agent, &[]).is_none() {
                        return Err(format!(
                            "unknown agent `{agent}` (claude, codex, gemini, opencode, aider)"
                        ));
                    }
                    if !parsed.agents.iter().any(|a| a == agent) {
                        parsed.agents.push(agent.to_string());
                    }
                }
            }
            "--version" => {
                if !is_release(&value) {
                    return Err(format!("`--version {value}` is not a release number"));
                }
                parsed.version = Some(value);
            }
            "--scenario" => parsed.scenarios.extend(
                value
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            ),
            "--jobs" => match value.parse::<u32>() {
                Ok(n) if n > 0 => parsed.jobs = Some(n),
                _ => return Err(format!("`--jobs {value}` is not a positive number")),
            },
            _ => parsed.keep = Some(PathBuf::from(value)),
        }
    }
    if parsed.version.is_some() && parsed.agents.len() != 1 {
        return Err("`--version` names one CLI's release: give exactly one `--agent`".to_string());
    }
    Ok(parsed)
}

/// A release number a registry may answer and a path may hold: `2.1.332`, `0.86.2`, `1.0.0-rc.1`,
/// `0.87.0rc1`; a leading number, dots between non-empty parts, no `/`, no spaces.
fn is_release(text: &str) -> bool {
    let Some(first) = text.split('.').next() else {
        return false;
    };
    text.len() <= 64
        && text.contains('.')
        && !first.is_empty()
        && first.bytes().all(|b| b.is_ascii_digit())
        && text.split('.').all(|part| !part.is_empty())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Registry {
    Npm,
    Pypi,
}

/// One agent CLI as the capture drivers know it.
#[derive(Debug, Clone, PartialEq)]
struct Cli {
    agent: String,
    registry: Registry,
    package: String,
    pinned: String,
}

fn parse_clis(text: &str) -> Result<Vec<Cli>, String> {
    let mut clis = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [agent, registry, package, pinned] = fields[..] else {
            return Err(format!(
                "the drivers' release table has a line `{line}`, not agent, registry, package, pinned"
            ));
        };
        let registry = match registry {
            "npm" => Registry::Npm,
            "pypi" => Registry::Pypi,
            other => return Err(format!("unknown registry `{other}` for {agent}")),
        };
        if !is_release(pinned) {
            return Err(format!(
                "the pinned release of {agent} `{pinned}` is not a release number"
            ));
        }
        clis.push(Cli {
            agent: agent.to_string(),
            registry,
            package: package.to_string(),
            pinned: pinned.to_string(),
        });
    }
    if clis.is_empty() {
        return Err("the drivers' release table is empty".to_string());
    }
    Ok(clis)
}

/// The CLIs, their packages and pinned releases, read from the capture drivers (capctx.PINNED).
fn load_clis() -> Result<Vec<Cli>, String> {
    let output = Command::new("python3")
        .args(["-c", RELEASES_PY])
        .current_dir(capture::workspace_root())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("cannot run python3: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "cannot read the pinned releases from xtask/capture/capctx.py ({}): {}",
            output.status,
            error_line(&String::from_utf8_lossy(&output.stderr))
        ));
    }
    parse_clis(&String::from_utf8_lossy(&output.stdout))
}

/// How the CLI's registry is asked for its newest release. npm answers the `latest` dist-tag,
/// whatever this Node's `engines` allow; pip is told to ignore `Requires-Python` for the same reason.
/// Both give up after one retry rather than waiting minutes when there is no network.
fn registry_command(cli: &Cli) -> Command {
    match cli.registry {
        Registry::Npm => {
            let mut command = Command::new("npm");
            command.args([
                "view",
                &cli.package,
                "version",
                "--fetch-retries=1",
                "--fetch-timeout=30000",
            ]);
            command
        }
        Registry::Pypi => {
            let mut command = Command::new("python3");
            command.args([
                "-m",
                "pip",
                "index",
                "versions",
                &cli.package,
                "--ignore-requires-python",
                "--disable-pip-version-check",
                "--retries",
                "1",
                "--timeout",
                "15",
            ]);
            command
        }
    }
}

fn registry_name(registry: Registry) -> &'static str {
    match registry {
        Registry::Npm => "the npm registry",
        Registry::Pypi => "PyPI",
    }
}

/// The newest release, or why the registry could not say.
fn ask_newest(cli: &Cli, mut command: Command) -> Result<String, String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("cannot run the registry client: {err}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let client = match cli.registry {
            Registry::Npm => "npm view",
            Registry::Pypi => "pip index versions",
        };
        return Err(format!(
            "{client} failed ({}): {}",
            output.status,
            error_line(&String::from_utf8_lossy(&output.stderr))
        ));
    }
    match cli.registry {
        Registry::Npm => parse_npm_view(&stdout),
        Registry::Pypi => parse_pip_index(&stdout, &cli.package),
    }
}

/// Words of a stderr line that says the network failed (npm's error codes, pip's and urllib3's wording).
const NETWORK_WORDS: [&str; 8] = [
    "ECONNREFUSED",
    "ENOTFOUND",
    "EAI_AGAIN",
    "ETIMEDOUT",
    "ENETUNREACH",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "timed out",
];

/// The line of a tool's stderr that says what went wrong: one naming a network failure, else the
/// first error line, else the last line; at most 200 characters.
fn error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let is_error = |l: &&&str| {
        let lower = l.to_ascii_lowercase();
        lower.starts_with("error")
            || lower.starts_with("npm error")
            || lower.starts_with("npm err!")
    };
    let line = lines
        .iter()
        .find(|l| NETWORK_WORDS.iter().any(|w| l.contains(w)))
        .or_else(|| lines.iter().find(is_error))
        .or(lines.last())
        .map_or("no message", |l| l);
    line.chars().take(200).collect()
}

/// `npm view <package> version` prints one bare version.
fn parse_npm_view(stdout: &str) -> Result<String, String> {
    let lines: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines[..] {
        [] => Err("npm view printed no version".to_string()),
        [one] if is_release(one) => Ok(one.to_string()),
        [one] => Err(format!("npm view printed `{one}`, not a release number")),
        _ => Err(format!(
            "npm view printed {} lines, not one version (first: `{}`)",
            lines.len(),
            lines[0]
        )),
    }
}

/// `pip index versions <package>` prints `<package> (<newest>)`, then `Available versions: <newest>, …`.
fn parse_pip_index(stdout: &str, package: &str) -> Result<String, String> {
    let mut lines = stdout.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else {
        return Err("pip index printed nothing".to_string());
    };
    let Some((name, rest)) = first.split_once(" (") else {
        return Err(format!(
            "pip index's first line `{first}` is not `{package} (VERSION)`"
        ));
    };
    let Some(version) = rest.strip_suffix(')') else {
        return Err(format!(
            "pip index's first line `{first}` is not `{package} (VERSION)`"
        ));
    };
    if pep503(name) != pep503(package) {
        return Err(format!("pip index answered for `{name}`, not `{package}`"));
    }
    if !is_release(version) {
        return Err(format!(
            "pip index's newest `{version}` is not a release number"
        ));
    }
    if let Some(listed) = lines.find_map(|l| l.strip_prefix("Available versions:")) {
        let newest_listed = listed.split(',').next().unwrap_or_default().trim();
        if newest_listed != version {
            return Err(format!(
                "pip index names {version} as the newest but lists `{newest_listed}` first"
            ));
        }
    }
    Ok(version.to_string())
}

/// A PyPI project name as PEP 503 compares them: lowercase, runs of `-`, `_`, `.` as one `-`.
fn pep503(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The releases to drift, each with what it is (`pinned`, `newest`, `--version`): the pinned one, then
/// the other when it differs. `other` is `--version`, else the registry's answer (an error: pinned only).
fn plan(
    pinned: &str,
    explicit: Option<&str>,
    newest: &Result<String, String>,
) -> Vec<(String, String)> {
    let (other, role) = match (explicit, newest) {
        (Some(version), _) => (version, "--version"),
        (None, Ok(version)) => (version.as_str(), "newest"),
        (None, Err(_)) => return vec![(pinned.to_string(), "pinned".to_string())],
    };
    if other == pinned {
        vec![(pinned.to_string(), format!("pinned = {role}"))]
    } else {
        vec![
            (pinned.to_string(), "pinned".to_string()),
            (other.to_string(), role.to_string()),
        ]
    }
}

/// The scenario names each driver has (`--list`: one scenario per line, its name first).
fn list_scenarios(agent: &str) -> Result<Vec<String>, String> {
    let (script, args) = capture::driver(agent, &["--list".to_string()])
        .ok_or_else(|| format!("unknown agent `{agent}`"))?;
    let output = capture::python(&script)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("cannot run python3: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "{script} --list failed ({}): {}",
            output.status,
            error_line(&String::from_utf8_lossy(&output.stderr))
        ));
    }
    Ok(parse_list(&String::from_utf8_lossy(&output.stdout)))
}

fn parse_list(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Per agent, the wanted scenarios it has (empty: it has none of them). A name no agent has is an error.
fn pick_scenarios(
    wanted: &[String],
    lists: &[(String, Vec<String>)],
) -> Result<Vec<(String, Vec<String>)>, String> {
    let unknown: Vec<&str> = wanted
        .iter()
        .filter(|w| !lists.iter().any(|(_, names)| names.contains(w)))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let agents: Vec<&str> = lists.iter().map(|(a, _)| a.as_str()).collect();
        return Err(format!(
            "unknown scenario(s) {} (not a scenario of {}; see cargo xtask capture --agent A --list)",
            unknown.join(", "),
            agents.join(", ")
        ));
    }
    Ok(lists
        .iter()
        .map(|(agent, names)| {
            let mine = wanted
                .iter()
                .filter(|w| names.contains(w))
                .cloned()
                .collect();
            (agent.clone(), mine)
        })
        .collect())
}

/// What one driver run left besides its captures.
#[derive(Debug, Default, PartialEq)]
struct CaptureRun {
    /// The scenario runs the driver reported as failed (`FAIL <name> <size>`).
    failed: Vec<String>,
    /// Why the driver stopped before reporting its scenarios (an install that failed, a crash).
    error: Option<String>,
}

/// A scenario run the driver reports as failed: `FAIL <label><name> <WxH> …`.
fn failed_run(line: &str) -> Option<String> {
    line.strip_prefix("FAIL ")
        .map(|rest| rest.trim().to_string())
}

/// Runs the agent's capture driver for one release into `out`, echoing its progress to stderr.
fn capture(
    agent: &str,
    version: &str,
    out: &Path,
    scenarios: &[String],
    jobs: Option<u32>,
    offline: bool,
) -> CaptureRun {
    let mut flags = vec![
        "--version".to_string(),
        version.to_string(),
        "--out".to_string(),
        out.display().to_string(),
    ];
    if !scenarios.is_empty() {
        flags.extend(["--scenario".to_string(), scenarios.join(",")]);
    }
    if let Some(jobs) = jobs {
        flags.extend(["--jobs".to_string(), jobs.to_string()]);
    }
    let Some((script, args)) = capture::driver(agent, &flags) else {
        return CaptureRun {
            error: Some(format!("no capture driver for `{agent}`")),
            ..CaptureRun::default()
        };
    };
    let mut command = capture::python(&script);
    command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    if offline {
        // The registry did not answer: an install can still come from npm's cache.
        command.env("npm_config_prefer_offline", "true");
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return CaptureRun {
                error: Some(format!("cannot run python3 {script}: {err}")),
                ..CaptureRun::default()
            };
        }
    };
    let mut run = CaptureRun::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            eprintln!("  {line}");
            run.failed.extend(failed_run(&line));
        }
    }
    match child.wait() {
        Ok(status) if !status.success() && run.failed.is_empty() => {
            run.error = Some(format!("{script} --version {version} failed ({status})"));
        }
        Ok(_) => {}
        Err(err) => run.error = Some(format!("cannot wait for {script}: {err}")),
    }
    run
}

/// One CLI release's drift: its replayed captures and what failed to capture.
#[derive(Debug)]
struct Drift {
    agent: String,
    version: String,
    role: String,
    report: golden::Report,
    /// Failed scenario runs, a driver that stopped, cases that could not be loaded.
    capture_failures: Vec<String>,
    /// Cases whose `version:` is not the release asked for.
    other_versions: Vec<String>,
}

impl Drift {
    /// Classifies every capture in `dir` (a driver's `--out`) as `cargo xtask golden` does.
    fn replay(agent: &str, version: &str, role: &str, dir: &Path, run: CaptureRun) -> Drift {
        let (cases, load_errors) = golden::load_cases_in(dir);
        let mut other_versions: Vec<String> = cases
            .iter()
            .filter(|case| case.version != version)
            .map(|case| case.version.clone())
            .collect();
        other_versions.sort();
        other_versions.dedup();
        let report = golden::replay_cases(Ok(cases), golden::Snapshots::Skip);
        let mut capture_failures: Vec<String> = run
            .failed
            .into_iter()
            .map(|f| format!("scenario run {f}"))
            .collect();
        capture_failures.extend(run.error);
        capture_failures.extend(load_errors);
        Drift {
            agent: agent.to_string(),
            version: version.to_string(),
            role: role.to_string(),
            report,
            capture_failures,
            other_versions,
        }
    }

    fn mismatches(&self) -> usize {
        self.report.cases - self.report.matching_cases
    }

    fn is_clean(&self) -> bool {
        self.mismatches() == 0 && self.capture_failures.is_empty()
    }

    fn render(&self) -> String {
        let mut out = format!("== {} {} ({})\n", self.agent, self.version, self.role);
        out.push_str(&golden::render_matrices(&self.report));
        out.push_str(&golden::render_failures(&self.report));
        for failure in &self.capture_failures {
            let _ = writeln!(out, "CAPTURE FAILED {failure}");
        }
        if !self.other_versions.is_empty() {
            let _ = writeln!(
                out,
                "note: captures say `version: {}`, not {}",
                self.other_versions.join(", "),
                self.version
            );
        }
        let _ = writeln!(
            out,
            "drift: {} {}: {}/{} cases match, {} mismatches, {} capture failures",
            self.agent,
            self.version,
            self.report.matching_cases,
            self.report.cases,
            self.mismatches(),
            self.capture_failures.len()
        );
        out
    }
}

pub(crate) fn run(args: &[String]) -> ExitCode {
    let args = match parse_args(args) {
        Ok(args) if args.help => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(args) => args,
        Err(err) => {
            eprintln!("xtask drift: {err}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    for (tool, arg) in [
        ("python3", "--version"),
        ("tmux", "-V"),
        ("npm", "--version"),
    ] {
        if !capture::have(tool, arg) {
            eprintln!(
                "xtask drift: `{tool}` is not installed (needed to install and drive the CLIs)"
            );
            return ExitCode::from(2);
        }
    }
    if let Some(keep) = &args.keep
        && std::fs::read_dir(keep).is_ok_and(|mut entries| entries.next().is_some())
    {
        eprintln!(
            "xtask drift: `--keep {}` is not empty (drift writes <agent>/<version>/ there)",
            keep.display()
        );
        return ExitCode::from(2);
    }
    let clis = match load_clis() {
        Ok(clis) => clis,
        Err(err) => {
            eprintln!("xtask drift: {err}");
            return ExitCode::FAILURE;
        }
    };
    let selected: Vec<Cli> = if args.agents.is_empty() {
        clis
    } else {
        let mut selected = Vec::new();
        for agent in &args.agents {
            match clis.iter().find(|cli| &cli.agent == agent) {
                Some(cli) => selected.push(cli.clone()),
                None => {
                    eprintln!("xtask drift: capctx.PINNED names no release of `{agent}`");
                    return ExitCode::FAILURE;
                }
            }
        }
        selected
    };
    let picked = if args.scenarios.is_empty() {
        selected
            .iter()
            .map(|cli| (cli.agent.clone(), Vec::new()))
            .collect()
    } else {
        let mut lists = Vec::new();
        for cli in &selected {
            match list_scenarios(&cli.agent) {
                Ok(names) => lists.push((cli.agent.clone(), names)),
                Err(err) => {
                    eprintln!("xtask drift: {err}");
                    return ExitCode::FAILURE;
                }
            }
        }
        match pick_scenarios(&args.scenarios, &lists) {
            Ok(picked) => picked,
            Err(err) => {
                eprintln!("xtask drift: {err}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    };
    // The captures live here until the end (a TempDir removes itself when dropped).
    let temp;
    let out_root = match &args.keep {
        Some(keep) => keep.clone(),
        None => match tempfile::Builder::new().prefix("bmb-drift-").tempdir() {
            Ok(dir) => {
                temp = dir;
                temp.path().to_path_buf()
            }
            Err(err) => {
                eprintln!("xtask drift: cannot make a temporary directory: {err}");
                return ExitCode::FAILURE;
            }
        },
    };
    let mut drifts = Vec::new();
    for (cli, (_, scenarios)) in selected.iter().zip(&picked) {
        if !args.scenarios.is_empty() && scenarios.is_empty() {
            println!(
                "drift: {}: none of the named scenarios is one of its own; skipped",
                cli.agent
            );
            continue;
        }
        let newest = if args.version.is_some() {
            Err("not asked".to_string())
        } else {
            ask_newest(cli, registry_command(cli))
        };
        let offline = args.version.is_none() && newest.is_err();
        match &newest {
            Ok(version) if args.version.is_none() => println!(
                "drift: {}: {} says the newest {} is {version}; pinned: {}",
                cli.agent,
                registry_name(cli.registry),
                cli.package,
                cli.pinned
            ),
            Err(err) if offline => println!(
                "drift: {}: no newest release of {} from {} ({err}); drifting the pinned {} only",
                cli.agent,
                cli.package,
                registry_name(cli.registry),
                cli.pinned
            ),
            _ => {}
        }
        for (version, role) in plan(&cli.pinned, args.version.as_deref(), &newest) {
            let dir = out_root.join(&cli.agent).join(&version);
            let run = match std::fs::create_dir_all(&dir) {
                Ok(()) => capture(&cli.agent, &version, &dir, scenarios, args.jobs, offline),
                Err(err) => CaptureRun {
                    error: Some(format!("cannot make {}: {err}", dir.display())),
                    ..CaptureRun::default()
                },
            };
            let drift = Drift::replay(&cli.agent, &version, &role, &dir, run);
            print!("{}", drift.render());
            let _ = std::io::stdout().flush();
            drifts.push(drift);
        }
    }
    let drifted: Vec<String> = drifts
        .iter()
        .filter(|d| !d.is_clean())
        .map(|d| format!("{} {}", d.agent, d.version))
        .collect();
    if drifted.is_empty() {
        println!("drift: {} releases, every capture matches", drifts.len());
    } else {
        println!(
            "drift: {} of {} releases drifted: {}",
            drifted.len(),
            drifts.len(),
            drifted.join(", ")
        );
    }
    if let Some(keep) = &args.keep {
        println!("drift: captures kept in {}", keep.display());
    }
    if drifted.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{
        Args, CaptureRun, Cli, Drift, Registry, ask_newest, error_line, failed_run, is_release,
        parse_args, parse_clis, parse_list, parse_npm_view, parse_pip_index, pick_scenarios, plan,
        registry_command,
    };

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn parses_the_command_line() {
        assert_eq!(parse_args(&[]), Ok(Args::default()));
        let args = parse_args(&v(&[
            "--agent",
            "claude",
            "--agent=codex,claude",
            "--scenario",
            "welcome,text-answer",
            "--scenario=perm-bash",
            "--jobs",
            "2",
            "--keep",
            "/tmp/k",
        ]))
        .unwrap();
        assert_eq!(args.agents, v(&["claude", "codex"]));
        assert_eq!(args.scenarios, v(&["welcome", "text-answer", "perm-bash"]));
        assert_eq!(args.jobs, Some(2));
        assert_eq!(args.keep, Some(PathBuf::from("/tmp/k")));
        assert_eq!(args.version, None);
        let one = parse_args(&v(&["--agent", "aider", "--version", "0.87.0"])).unwrap();
        assert_eq!(one.version.as_deref(), Some("0.87.0"));
        assert!(parse_args(&v(&["--help"])).unwrap().help);
    }

    #[test]
    fn refuses_bad_command_lines_naming_what_is_wrong() {
        let err = |a: &[&str]| parse_args(&v(a)).unwrap_err();
        assert_eq!(err(&["--bogus"]), "unknown argument `--bogus`");
        assert_eq!(err(&["--agent"]), "`--agent` needs a value");
        assert_eq!(err(&["--jobs="]), "`--jobs` needs a value");
        assert!(err(&["--agent", "cursor"]).starts_with("unknown agent `cursor`"));
        assert_eq!(err(&["--jobs", "0"]), "`--jobs 0` is not a positive number");
        assert_eq!(
            err(&["--jobs", "two"]),
            "`--jobs two` is not a positive number"
        );
        assert!(err(&["--version", "2.1.332"]).contains("exactly one `--agent`"));
        assert!(err(&["--agent", "claude,codex", "--version", "1.0.0"]).contains("exactly one"));
        assert_eq!(
            err(&["--agent", "claude", "--version", "../../etc"]),
            "`--version ../../etc` is not a release number"
        );
    }

    #[test]
    fn a_release_number_is_a_number_first_and_never_a_path() {
        for ok in [
            "2.1.332",
            "0.86.2",
            "1.0.0-rc.1",
            "0.87.0rc1",
            "1.2.3+build.5",
        ] {
            assert!(is_release(ok), "{ok}");
        }
        for bad in [
            "", "latest", "2", "v2.1.0", "2..1", "2.1.", ".2.1", "2.1/3", "2.1 3", "1.0.0\n",
        ] {
            assert!(!is_release(bad), "{bad:?}");
        }
    }

    #[test]
    fn reads_npm_view_and_names_what_is_odd() {
        assert_eq!(parse_npm_view("2.1.332\n"), Ok("2.1.332".to_string()));
        assert_eq!(
            parse_npm_view(""),
            Err("npm view printed no version".to_string())
        );
        assert_eq!(
            parse_npm_view("<html>502 Bad Gateway</html>\n"),
            Err(
                "npm view printed `<html>502 Bad Gateway</html>`, not a release number".to_string()
            )
        );
        assert!(
            parse_npm_view("{\n  \"error\": {}\n}\n")
                .unwrap_err()
                .contains("3 lines, not one version")
        );
        // `npm view pkg@range version` answers one line per match
        assert!(
            parse_npm_view("pkg@1.0.0 '1.0.0'\npkg@1.1.0 '1.1.0'\n")
                .unwrap_err()
                .starts_with("npm view printed 2 lines")
        );
    }

    #[test]
    fn reads_pip_index_and_names_what_is_odd() {
        let real = "some-tool (0.86.2)\nAvailable versions: 0.86.2, 0.86.1, 0.86.0\n";
        assert_eq!(parse_pip_index(real, "some-tool"), Ok("0.86.2".to_string()));
        assert_eq!(
            parse_pip_index("Some_Tool (0.86.2)\n", "some-tool"),
            Ok("0.86.2".to_string())
        );
        assert_eq!(
            parse_pip_index("", "some-tool"),
            Err("pip index printed nothing".to_string())
        );
        assert_eq!(
            parse_pip_index("some-tool 0.86.2\n", "some-tool"),
            Err(
                "pip index's first line `some-tool 0.86.2` is not `some-tool (VERSION)`"
                    .to_string()
            )
        );
        assert_eq!(
            parse_pip_index("some (0.1.0)\n", "some-tool"),
            Err("pip index answered for `some`, not `some-tool`".to_string())
        );
        assert_eq!(
            parse_pip_index("some-tool (unknown)\n", "some-tool"),
            Err("pip index's newest `unknown` is not a release number".to_string())
        );
        assert_eq!(
            parse_pip_index(
                "some-tool (0.86.2)\nAvailable versions: 0.90.0, 0.86.2\n",
                "some-tool"
            ),
            Err("pip index names 0.86.2 as the newest but lists `0.90.0` first".to_string())
        );
    }

    #[test]
    fn a_failing_registry_client_is_summed_up_by_its_network_line() {
        let npm = "npm error code ECONNREFUSED\nnpm error syscall connect\nnpm error at x\n";
        assert_eq!(error_line(npm), "npm error code ECONNREFUSED");
        let pip = "WARNING: pip index is currently an experimental command.\n\
                   WARNING: Retrying (...) after connection broken by 'NewConnectionError(...: Failed to establish a new connection: [Errno 111] Connection refused')'\n\
                   ERROR: No matching distribution found for aider-chat\n";
        assert!(error_line(pip).contains("Failed to establish a new connection"));
        assert_eq!(
            error_line("WARNING: x\nERROR: No matching distribution found for y\n"),
            "ERROR: No matching distribution found for y"
        );
        assert_eq!(error_line("just this\n"), "just this");
        assert_eq!(error_line(""), "no message");
        assert_eq!(error_line(&"x".repeat(500)).len(), 200);
    }

    #[test]
    fn an_unreachable_registry_is_an_answer_naming_why_not_a_release() {
        // loopback port 1 refuses at once: what no network looks like, without a network
        let npm = Cli {
            agent: "claude".to_string(),
            registry: Registry::Npm,
            package: "@example/agent-cli".to_string(),
            pinned: "2.1.332".to_string(),
        };
        let mut command = registry_command(&npm);
        command
            .env("npm_config_registry", "http://127.0.0.1:1/")
            .env("npm_config_fetch_retry_mintimeout", "100")
            .env("npm_config_fetch_retry_maxtimeout", "200");
        let err = ask_newest(&npm, command).unwrap_err();
        assert!(err.starts_with("npm view failed ("), "{err}");
        let pypi = Cli {
            agent: "aider".to_string(),
            registry: Registry::Pypi,
            package: "some-tool".to_string(),
            pinned: "0.86.2".to_string(),
        };
        let mut command = registry_command(&pypi);
        command.env("PIP_INDEX_URL", "http://127.0.0.1:1/simple");
        let err = ask_newest(&pypi, command).unwrap_err();
        assert!(err.starts_with("pip index versions failed ("), "{err}");
    }

    #[test]
    fn reads_the_drivers_release_table() {
        let clis = parse_clis(
            "claude\tnpm\t@example/agent-cli\t2.1.332\naider\tpypi\tsome-tool\t0.86.2\n",
        )
        .unwrap();
        assert_eq!(clis.len(), 2);
        assert_eq!(clis[0].package, "@example/agent-cli");
        assert_eq!(clis[1].registry, Registry::Pypi);
        assert_eq!(clis[1].pinned, "0.86.2");
        assert!(parse_clis("").unwrap_err().contains("empty"));
        assert!(
            parse_clis("claude npm pkg 1.0.0\n")
                .unwrap_err()
                .contains("not agent, registry, package, pinned")
        );
        assert!(
            parse_clis("x\tcargo\tp\t1.0.0\n")
                .unwrap_err()
                .contains("unknown registry `cargo`")
        );
        assert!(
            parse_clis("x\tnpm\tp\tlatest\n")
                .unwrap_err()
                .contains("`latest` is not a release number")
        );
    }

    #[test]
    fn the_drivers_release_table_names_the_five_clis_each_with_a_driver() {
        let clis = super::load_clis().unwrap();
        for agent in ["claude", "codex", "gemini", "opencode", "aider"] {
            assert!(clis.iter().any(|c| c.agent == agent), "{agent}: {clis:?}");
        }
        for cli in &clis {
            assert!(super::capture::driver(&cli.agent, &[]).is_some(), "{cli:?}");
        }
    }

    #[test]
    fn plans_the_pinned_release_then_the_other_once() {
        let newest = |v: &str| Ok(v.to_string());
        assert_eq!(
            plan("2.1.197", None, &newest("2.1.332")),
            [
                ("2.1.197".to_string(), "pinned".to_string()),
                ("2.1.332".to_string(), "newest".to_string())
            ]
        );
        assert_eq!(
            plan("2.1.332", None, &newest("2.1.332")),
            [("2.1.332".to_string(), "pinned = newest".to_string())]
        );
        assert_eq!(
            plan("2.1.332", None, &Err("offline".to_string())),
            [("2.1.332".to_string(), "pinned".to_string())]
        );
        assert_eq!(
            plan("2.1.332", Some("2.1.300"), &Err("not asked".to_string()))[1],
            ("2.1.300".to_string(), "--version".to_string())
        );
    }

    #[test]
    fn gives_each_driver_the_named_scenarios_it_has() {
        let lists = vec![
            (
                "claude".to_string(),
                parse_list("welcome 120x40 80x24\nperm-bash 120x40\n"),
            ),
            (
                "codex".to_string(),
                parse_list("welcome 120x40\nexec-approval 120x40\n"),
            ),
        ];
        let picked = pick_scenarios(&v(&["welcome", "exec-approval"]), &lists).unwrap();
        assert_eq!(picked[0], ("claude".to_string(), v(&["welcome"])));
        assert_eq!(
            picked[1],
            ("codex".to_string(), v(&["welcome", "exec-approval"]))
        );
        let err = pick_scenarios(&v(&["welcome", "nope"]), &lists).unwrap_err();
        assert!(
            err.starts_with("unknown scenario(s) nope (not a scenario of claude, codex"),
            "{err}"
        );
    }

    #[test]
    fn reads_the_failed_runs_from_the_drivers_progress() {
        assert_eq!(
            failed_run(
                "FAIL codex exec-approval 80x24 RuntimeError: timed out waiting for: dialog"
            ),
            Some(
                "codex exec-approval 80x24 RuntimeError: timed out waiting for: dialog".to_string()
            )
        );
        assert_eq!(failed_run("ok   welcome 120x40 3s"), None);
        assert_eq!(failed_run("  captured FAILED-thing (STALLED)"), None);
    }

    /// A case of the corpus copied into `dir`, its meta edited by `edit`.
    fn copy_case(name: &str, dir: &Path, edit: impl Fn(String) -> String) {
        let from = super::golden::testdata_root().join("claude").join(name);
        let to = dir.join(name);
        std::fs::create_dir_all(&to).unwrap();
        for file in ["plain.txt", "ansi.txt", "scrollback.txt"] {
            std::fs::copy(from.join(file), to.join(file)).unwrap();
        }
        let meta = std::fs::read_to_string(from.join("meta")).unwrap();
        std::fs::write(to.join("meta"), edit(meta)).unwrap();
    }

    fn as_captured(meta: String) -> String {
        meta.replace("version: 2.1.197", "version: 2.1.332")
    }

    #[test]
    fn reports_a_release_whose_captures_all_match() {
        let dir = tempfile::tempdir().unwrap();
        copy_case("idle-welcome", dir.path(), as_captured);
        copy_case("question-permission-bash", dir.path(), as_captured);
        let drift = Drift::replay(
            "claude",
            "2.1.332",
            "pinned = newest",
            dir.path(),
            CaptureRun::default(),
        );
        let out = drift.render();
        assert!(drift.is_clean(), "{out}");
        assert!(
            out.starts_with("== claude 2.1.332 (pinned = newest)\n"),
            "{out}"
        );
        assert!(
            out.contains("profile claude: expected (rows) vs classified (columns)"),
            "{out}"
        );
        assert!(!out.contains("MISMATCH") && !out.contains("note:"), "{out}");
        assert!(
            out.ends_with(
                "drift: claude 2.1.332: 2/2 cases match, 0 mismatches, 0 capture failures\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn reports_mismatches_with_rule_and_evidence_and_every_capture_failure() {
        let dir = tempfile::tempdir().unwrap();
        // still the corpus's release: the report notes it
        copy_case("idle-welcome", dir.path(), |meta| meta);
        // as if the new release had made the scenario's screen classify otherwise
        copy_case("question-permission-bash", dir.path(), |meta| {
            as_captured(meta).replace("expect: QUESTION", "expect: WORKING")
        });
        // a meta a broken driver could leave
        copy_case("idle-after-text-answer", dir.path(), |meta| {
            meta.replace("expect: STALLED", "expect: IDLE")
        });
        let run = CaptureRun {
            failed: vec![
                "perm-bash 80x24 RuntimeError: timed out waiting for: bash permission dialog"
                    .to_string(),
            ],
            error: None,
        };
        let drift = Drift::replay("claude", "2.1.332", "newest", dir.path(), run);
        let out = drift.render();
        assert!(!drift.is_clean());
        assert_eq!(drift.mismatches(), 1, "{out}");
        // the matrix: one row per expected state, the wrong cell counted once per capture file
        let working_row = out
            .lines()
            .find(|l| l.trim_start().starts_with("WORKING ") && l.ends_with(char::is_numeric))
            .unwrap();
        assert_eq!(
            working_row.split_whitespace().collect::<Vec<_>>(),
            ["WORKING", "0", "3", "0", "0"],
            "{out}"
        );
        assert!(
            out.contains(
                "MISMATCH question-permission-bash/plain.txt: expected WORKING, got QUESTION by rule "
            ),
            "{out}"
        );
        assert!(
            out.contains("Do you want to proceed?"),
            "the evidence line: {out}"
        );
        assert!(
            out.contains("CAPTURE FAILED scenario run perm-bash 80x24 RuntimeError: timed out waiting for: bash permission dialog"),
            "{out}"
        );
        assert!(
            out.contains("CAPTURE FAILED ") && out.contains("`expect: IDLE` is not a state"),
            "{out}"
        );
        assert!(
            out.contains("note: captures say `version: 2.1.197`, not 2.1.332"),
            "{out}"
        );
        assert!(
            out.ends_with(
                "drift: claude 2.1.332: 1/2 cases match, 1 mismatches, 2 capture failures\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn a_driver_that_captured_nothing_is_a_capture_failure() {
        let dir = tempfile::tempdir().unwrap();
        let run = CaptureRun {
            failed: Vec::new(),
            error: Some("scenarios.py --version 9.9.9 failed (exit status: 1)".to_string()),
        };
        let drift = Drift::replay(
            "claude",
            "9.9.9",
            "--version",
            &dir.path().join("absent"),
            run,
        );
        let out = drift.render();
        assert!(!drift.is_clean());
        assert!(
            out.contains("CAPTURE FAILED scenarios.py --version 9.9.9 failed"),
            "{out}"
        );
        assert!(
            out.ends_with(
                "drift: claude 9.9.9: 0/0 cases match, 0 mismatches, 2 capture failures\n"
            ),
            "{out}"
        );
    }
}
