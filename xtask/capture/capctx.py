"""The scenario plumbing every capture driver shares (scenarios.py, scenarios_agents.py,
scenarios_opencode.py, scenarios_aider.py via openai_runner.py).

- `Cli`: what differs per agent CLI in the plumbing (its `agent:` name, how a session is made);
- `Ctx`: one scenario at one size; `session()` makes its sessions, `cap()` saves a case as
  <out>/<case>[-WxH]/{plain.txt,ansi.txt,scrollback.txt,meta}. The expected state in `meta` is
  decided by the scenario, never by a classifier;
- `parser()` / `run()`: the command line (--scenario, --size, --out, --jobs, --list) and the
  parallel runs;
- step builders (`text`, `tool`), `must`, `wait_settled`, `simple_scenario`, `npm_install`, `cli_version`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import fcntl
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SIZES = {"xs": (60, 15), "s": (80, 24), "m": (120, 40), "l": (200, 50)}

# The release of each CLI that `cargo xtask capture` and the live tests run unless `--version` names
# another, as the registry spec that installs it: always a named release, since on Node 20 an
# unpinned `npm install` resolves to the newest release whose `engines` allow Node 20 (for Claude
# Code 2.1.197), not to the current one (2.1.332, Node >= 22).
RELEASES = {
    "claude": "@anthropic-ai/claude-code@2.1.332",
    "codex": "@openai/codex@0.171.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "opencode": "opencode-ai@1.18.33",
    "aider": "aider-chat==0.86.2",
}


def split_release(spec):
    """(package, version) of `name@version`, `@scope/name@version` or `name==version`."""
    if "==" in spec:
        return tuple(spec.split("==", 1))
    name, _, version = spec.rpartition("@")
    return name, version


PACKAGES = {agent: split_release(spec)[0] for agent, spec in RELEASES.items()}
PINNED = {agent: split_release(spec)[1] for agent, spec in RELEASES.items()}

# The terminal colour classes a user's pane can have. `256` is a tmux pane started by nobody in
# particular: TERM=xterm-256color (tmux's own) and no COLORTERM, because the variable is inherited
# from whoever started the tmux server. Some CLIs (Gemini) draw their input box differently per class.
COLORS = {
    "truecolor": {"COLORTERM": "truecolor"},
    "256": {},
    "no-color": {"NO_COLOR": "1"},
}
COLOR_VARS = ("COLORTERM", "NO_COLOR", "FORCE_COLOR")


def color_env(color):
    """The environment of a colour class; the variables it does not set are set to None (removed)."""
    env = {k: None for k in COLOR_VARS}
    env.update(COLORS[color])
    return env


def install_prefix(agent, version):
    """Where one release of one CLI is installed: target/capture/<agent>/<version>/ (gitignored)."""
    return os.path.join(ROOT, "target", "capture", agent, version)

LOREM = (
    "Here is how the monitor decides what a pane means. First it normalises the capture: ANSI escapes, "
    "carriage returns and no-break spaces are stripped so that every rule sees plain text. Then it cuts the "
    "input box structurally, at the last rule line and the prompt marker, because whatever a person typed "
    "there is never a signal. Only then does it read the live chrome at the tail: the spinner row and the "
    "status bar. A question is matched by its structure, never by a bare word, and a stop is split into "
    "stalled and blocked by the work probe. "
)


def must(ok, what):
    if not ok:
        raise RuntimeError(f"timed out waiting for: {what}")


def text(t, chunk=16):
    return {"text": t, "chunk": chunk}


def tool(name, **inp):
    return {"tool": name, "input": inp}


def wait_settled(s, ready, timeout=60, settle=1.0, still=None):
    """ready(screen) holds, and after `settle` seconds still(screen) (default: ready) holds too."""
    still = still or ready
    end = time.time() + timeout
    while time.time() < end:
        if ready(s.screen()):
            time.sleep(settle)
            if still(s.screen()):
                return True
        time.sleep(0.3)
    return False


def simple_scenario(c, start, steps, prompt, needle, what, case, expect, scenario, shape=None, work=None,
                    settle=1.5, timeout=40, session=None):
    """The scenario most captures are: one session scripted with `steps` (plus the `session` keywords),
    start(s, prompt) (the agent's own start-and-submit), wait up to `timeout` s for `needle` on screen
    (a string or a predicate on the screen; `what` names it when it times out), let the screen settle
    for `settle` s, then capture one case."""
    with c.session(steps=steps, **(session or {})) as s:
        start(s, prompt)
        must(s.wait_text(needle, timeout), what)
        time.sleep(settle)
        c.cap(s, case, expect, scenario, shape=shape, work=work)


def npm_install(prefix, package, bin_path, version):
    """bin_path, after `npm install package@version` into prefix when it is missing (installs are cached).
    The version is always named: an unpinned install means whatever the registry and the Node version
    make of `latest` that day.

    Several drivers can start at once (two tests, parallel scenarios): a lock
    beside the prefix lets one install while the others wait, so no run starts
    a CLI that another npm is still rewriting."""
    os.makedirs(prefix, exist_ok=True)
    with open(os.path.join(prefix, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(bin_path):
            print(f"installing {package}@{version} into {prefix} ...", file=sys.stderr, flush=True)
            subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, f"{package}@{version}"],
                           check=True, stdout=sys.stderr)
    return bin_path


def cli_version(bin_path, pick="first", timeout=60):
    """The CLI's `--version`: its first word, its last word, or (pick="semver") the first x.y.z in it."""
    out = subprocess.run([bin_path, "--version"], capture_output=True, text=True, timeout=timeout).stdout.strip()
    if pick == "semver":
        m = re.search(r"\d+\.\d+\.\d+\S*", out)
        return m.group(0) if m else (out or "unknown")
    if not out:
        return "unknown"
    return out.split()[0] if pick == "first" else out.split()[-1]


class Cli:
    """What the plumbing needs to know of one agent CLI.

    agent: the `agent:` of its captures; new_session(ctx, **kw): a session (harness object);
    agent_flag: its command line says `--agent <agent>` (and its request logs are prefixed with it);
    sock_name(scenario): the default session name; label: before the case name in progress lines."""

    def __init__(self, agent, new_session, agent_flag=True, sock_name=None, label=""):
        self.agent = agent
        self.new_session = new_session
        self.agent_flag = agent_flag
        self.sock_name = sock_name or (lambda scenario: scenario[:12])
        self.label = label


class Ctx:
    def __init__(self, cli, scenario, size, out_dir, binary, version, color=None, tag=None, extra_args="",
                 meta_extra=()):
        self.cli_spec = cli
        # The colour class the run asked for (None: the driver's own default) and a tag that names a
        # second rendering of the same scenario (`-<tag>` after the case name).
        self.color = color
        self.tag = tag
        # What `captured:` must repeat to regenerate the case (--version, --color, --tag, driver flags).
        self.extra_args = extra_args
        # (key, value) meta lines a driver flag adds to every case (e.g. a setting that changes the rendering).
        self.meta_extra = list(meta_extra)
        self.agent = cli.agent
        self.scenario = scenario
        self.size = SIZES[size] if size in SIZES else size
        self.out_dir = out_dir
        self.bin = binary
        self.version = version
        self.saved = []

    def session(self, **kw):
        kw.setdefault("size", self.size)
        kw.setdefault("name", self.cli_spec.sock_name(self.scenario))
        s = self.cli_spec.new_session(self, **kw)
        if self.color:
            s.color_env = color_env(self.color)
        w, h = self.size
        log = f"{self.agent}-{self.scenario}" if self.cli_spec.agent_flag else self.scenario
        s.archive_log = os.path.join(ROOT, "target", "capture", "logs", f"{log}-{w}x{h}.jsonl")
        return s

    def case_name(self, case):
        if self.tag:
            case = f"{case}-{self.tag}"
        if self.size == SIZES["m"]:
            return case
        w, h = self.size
        return f"{case}-{w}x{h}"

    def cap(self, s, case, expect, scenario, shape=None, work=None, echo=(), source="real", typing=None):
        name = self.case_name(case)
        # only plain.txt, ansi.txt, scrollback.txt and meta are (re)written; other files in the case
        # directory (e.g. the classifier's explain.txt snapshot) are left alone
        out = os.path.join(self.out_dir, name)
        w, h = self.size
        agent_arg = f" --agent {self.agent}" if self.cli_spec.agent_flag else ""
        size_arg = "" if self.size == SIZES["m"] else f" --size {w}x{h}"
        meta = [
            ("expect", expect),
            ("agent", self.agent),
            ("version", self.version),
            ("size", f"{w}x{h}"),
            ("source", source),
            ("captured", f"cargo xtask capture{agent_arg}{self.extra_args} --scenario {self.scenario}{size_arg}; "
                         f"capture-pane -p / -p -e / -p -S -; {datetime.date.today().isoformat()}"),
            ("scenario", scenario),
        ]
        if self.color:
            meta.append(("terminal", f"{self.color} ({describe_color(self.color)})"))
        meta += self.meta_extra
        if work is not None:
            meta.append(("work", str(work)))
        if shape:
            meta.append(("shape", shape))
        for e in echo:
            meta.append(("echo", e))
        if typing:
            meta.append(("typing", typing))
        s.save(out, meta)
        self.saved.append(name)
        print(f"  captured {self.cli_spec.label}{name} ({expect}{', ' + shape if shape else ''})", flush=True)


def describe_color(color):
    env = COLORS[color]
    shown = ", ".join(f"{k}={v}" for k, v in env.items()) or "no COLORTERM"
    return f"TERM=xterm-256color, {shown}"


def run_one(cli, fn, name, size, out_dir, binary, version, **ctx):
    c = Ctx(cli, name, size, out_dir, binary, version, **ctx)
    w, h = c.size
    t0 = time.time()
    try:
        fn(c)
        return (name, f"{w}x{h}", True, c.saved, f"{time.time() - t0:.0f}s")
    except Exception as e:  # report and go on with the other scenarios
        return (name, f"{w}x{h}", False, c.saved, f"{e.__class__.__name__}: {e}\n{traceback.format_exc()}")


def parser(description, jobs=4, out_default=None,
           size_help="WxH: run the named scenarios at this size (without --scenario: the scenarios that list it)"):
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", action="append", help="scenario name(s), comma-separated; default: all")
    ap.add_argument("--size", help=size_help)
    ap.add_argument("--out", default=out_default)
    ap.add_argument("--jobs", type=int, default=jobs)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--version", help="the CLI release to install and run (default: the pinned one, see PINNED)")
    ap.add_argument("--color", choices=sorted(COLORS),
                    help="the terminal's colour class: truecolor (COLORTERM=truecolor), 256 (no COLORTERM), "
                         "no-color (NO_COLOR=1); default: the driver's own")
    ap.add_argument("--tag", help="append -TAG to every case name (a second rendering beside the first)")
    return ap


def version_of(a, agent):
    """The release a run installs: `--version`, else the pinned one."""
    return a.version or PINNED[agent]


def replay_args(a, agent, driver_flags=""):
    """The flags `captured:` repeats so the case can be regenerated exactly."""
    out = f" --version {version_of(a, agent)}"
    if a.color:
        out += f" --color {a.color}"
    if a.tag:
        out += f" --tag {a.tag}"
    return out + driver_flags


def run(a, table, cli, prepare, out_default=None, size_examples="80x24 or 120x40", label="", driver_flags="",
        meta_extra=()):
    """`--list`, or: check the names and --size, prepare() -> (binary, version), then run every
    (scenario, size) job in parallel. table: {name: (function, size keys)}. driver_flags: what
    `captured:` repeats of the driver's own flags (a string, or a function called after prepare()); meta_extra: (key, value) lines they add to each
    meta. Returns the exit code."""
    if a.tag and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", a.tag):
        print(f"--tag must be letters, digits, '.', '_' or '-' (got {a.tag!r})", file=sys.stderr)
        return 2
    if a.list:
        for n, (_, sizes) in table.items():
            print(n, " ".join("%dx%d" % SIZES[k] for k in sizes))
        return 0
    names = [x for s in (a.scenario or []) for x in s.split(",") if x] or list(table)
    bad = [n for n in names if n not in table]
    if bad:
        print(f"unknown {label}scenario(s): {', '.join(bad)} (see --list)", file=sys.stderr)
        return 2
    size = None
    if a.size:
        try:
            w, h = (int(x) for x in a.size.lower().split("x"))
            if not (20 <= w <= 500 and 10 <= h <= 200):
                raise ValueError
        except ValueError:
            print(f"--size must be WxH, e.g. {size_examples} (got {a.size!r})", file=sys.stderr)
            return 2
        size = (w, h)
    out = a.out or out_default
    binary, version = prepare()
    print(f"{cli.agent} {version}", flush=True)
    jobs = []
    for n in names:
        sizes = [SIZES[k] for k in table[n][1]]
        if size is None:
            jobs += [(n, k) for k in table[n][1]]
        elif a.scenario or size in sizes:
            # an explicitly named scenario runs at any requested size; otherwise only at its own sizes
            jobs.append((n, size))
    os.makedirs(out, exist_ok=True)
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        # driver_flags may be a function: the driver settles some flags in prepare().
        flags = driver_flags() if callable(driver_flags) else driver_flags
        ctx = {"color": a.color, "tag": a.tag, "extra_args": replay_args(a, cli.agent, flags),
               "meta_extra": meta_extra}
        futs = [ex.submit(run_one, cli, table[n][0], n, k, out, binary, version, **ctx) for n, k in jobs]
        for f in concurrent.futures.as_completed(futs):
            name, sz, ok, saved, info = f.result()
            # a FAIL line ends with the exception's first line (the traceback goes to stderr)
            print(f"{'ok  ' if ok else 'FAIL'} {label}{name} {sz} {info if ok else info.splitlines()[0]}", flush=True)
            if not ok:
                failed += 1
                print(info, file=sys.stderr, flush=True)
    print(f"{len(jobs) - failed}/{len(jobs)} {label}scenario runs succeeded", flush=True)
    return 1 if failed else 0
