#!/usr/bin/env python3
"""Scenario driver for the Codex CLI and the Gemini CLI (Claude Code is scenarios.py).

    python3 xtask/capture/scenarios_agents.py --agent codex|gemini [--scenario NAME[,NAME...]]
                                              [--size WxH] [--jobs N] [--out DIR] [--list]

(`cargo xtask capture --agent codex|gemini` runs exactly this.) Each scenario starts the real CLI
(installed by npm into target/capture/<agent>/ when missing) in a private tmux server against the
scripted mock in mock_agents.py, drives it into one situation, and captures the pane three ways
(plain, -e, -S -) plus a `meta` file. The expected state in `meta` is decided here, by what the
scenario made the CLI do, never by a classifier.
"""

from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import capctx  # noqa: E402
from capctx import LOREM, ROOT, Cli, cli_version, must, npm_install, text, tool, wait_settled  # noqa: E402
from harness_agents import CodexSession, GeminiSession  # noqa: E402

AGENTS = {
    "codex": {"package": "@openai/codex", "bin": "codex", "session": CodexSession},
    "gemini": {"package": "@google/gemini-cli", "bin": "gemini", "session": GeminiSession},
}

BOTH = ("m", "s")


def prefix(agent):
    return os.path.join(ROOT, "target", "capture", agent)


def bin_path(agent):
    return os.path.join(prefix(agent), "node_modules", ".bin", AGENTS[agent]["bin"])


def ensure_installed(agent):
    return npm_install(prefix(agent), AGENTS[agent]["package"], bin_path(agent))


def cli_spec(agent):
    return Cli(agent, lambda c, **kw: AGENTS[agent]["session"](c.bin, **kw), label=f"{agent}/")


# ---------------------------------------------------------------------------
# Codex CLI
#
# Working: a status row `• Working (3s • esc to interrupt)` above the composer. Idle: the composer
# `› Ask Codex to do anything` and the footer `? for shortcuts`.

CODEX_BUSY = "esc to interrupt"


def codex_idle(scr):
    return CODEX_BUSY not in scr and "? for shortcuts" in scr


def codex_wait_idle(s, timeout=60):
    return wait_settled(s, codex_idle, timeout)


def submit_until_sent(s, prompt, tries=4):
    """Type the prompt and press Enter; while starting up (or under load) the CLI can drop an Enter,
    so press it again until the mock has seen the request."""
    before = s.mock.seen("messages")
    s.submit(prompt)
    for _ in range(tries):
        if s.mock.wait_for("messages", before + 1, 5):
            return
        s.send_keys("Enter")
    must(False, "the prompt to be submitted")


def codex_start(s, prompt):
    s.start()
    must(s.wait_text(codex_idle, 60), "codex composer at startup")
    time.sleep(2.0)
    submit_until_sent(s, prompt)


def cx_welcome(c):
    with c.session() as s:
        must(s.wait_text(codex_idle, 60), "composer")
        time.sleep(2)
        c.cap(s, "idle-welcome", "STALLED", "fresh start: the banner and an empty composer, no turn yet")


def cx_text_answer(c):
    steps = [{"blocks": [text("The project has two files: README.md describes it and app.py defines greet(name), "
                              "which returns a greeting. Running app.py prints 'Hello, world'.")]}]
    with c.session(steps=steps) as s:
        codex_start(s, "what does this project do")
        must(s.mock.wait_for("reply_done"), "reply")
        must(codex_wait_idle(s), "idle after answer")
        c.cap(s, "idle-after-text-answer", "STALLED",
              "a plain text answer landed; the turn ended and the composer is empty")


def cx_tool_turn(c):
    steps = [{"blocks": [text("Listing the files."), tool("exec_command", cmd="ls -1")]},
             {"when": "tool_result", "blocks": [text("There are two files, README.md and app.py. Nothing else to do.")]}]
    with c.session(steps=steps, sandbox="danger-full-access") as s:
        codex_start(s, "list the files")
        must(s.mock.wait_for("reply_done", 2), "both replies")
        must(codex_wait_idle(s), "idle after the tool turn")
        c.cap(s, "idle-after-tool-turn", "BLOCKED", "a turn that ran `ls -1` and answered; idle, no work left",
              work=0)


def cx_first_token(c):
    steps = [{"first_delay": 60, "blocks": [text("Late answer.")]}]
    with c.session(steps=steps) as s:
        codex_start(s, "summarise the repository layout")
        must(s.mock.wait_for("first_delay_start"), "request")
        must(s.wait_text(CODEX_BUSY, 20), "working row")
        time.sleep(6)
        c.cap(s, "working-before-first-token", "WORKING",
              "request sent, the mock holds the first token for 60 s; the `• Working (…esc to interrupt)` row")


def cx_slow_stream(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps) as s:
        codex_start(s, "explain how the monitor classifies a pane")
        must(s.mock.wait_for("text_start"), "stream start")
        time.sleep(8)
        must(s.mock.seen("reply_done") == 0, "still streaming")
        c.cap(s, "working-streaming-text", "WORKING", "a long answer streaming slowly from the mock")


def cx_exec_running(c):
    steps = [{"blocks": [text("Running the slow check."), tool("exec_command", cmd="sleep 45", yield_time_ms=30000)]},
             {"when": "tool_result", "blocks": [text("Finished.")]}]
    with c.session(steps=steps, sandbox="danger-full-access") as s:
        codex_start(s, "run the slow check")
        must(s.mock.wait_for("tool_sent"), "tool call")
        must(s.wait_text(CODEX_BUSY, 20), "working row")
        time.sleep(6)
        must(s.mock.main_requests == 1, "command still running")
        c.cap(s, "working-exec-running", "WORKING", "an exec_command `sleep 45` running (no approval needed)")


def cx_exec_approval(c):
    steps = [{"blocks": [text("I will run the tests outside the sandbox."),
                         tool("exec_command", cmd="python3 -m pytest -q", sandbox_permissions="require_escalated",
                              justification="Run the test suite outside the sandbox?")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    with c.session(steps=steps) as s:
        codex_start(s, "run the tests")
        must(s.wait_text("Press enter to confirm", 30), "approval dialog")
        time.sleep(1.5)
        c.cap(s, "question-exec-approval", "QUESTION",
              "exec_command asks for escalated permissions: `Would you like to run the following command?`",
              shape="codex-exec-approval")


PATCH = """*** Begin Patch
*** Update File: app.py
@@
 def greet(name):
-    return 'Hello, ' + name
+    return f'Hello, {name}!'
*** End Patch
"""


def cx_patch_approval(c):
    steps = [{"blocks": [text("I will make the greeting an f-string."),
                         tool("exec_command", cmd="apply_patch <<'EOF'\n" + PATCH + "EOF\n")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    with c.session(steps=steps) as s:
        codex_start(s, "use an f-string in greet")
        must(s.wait_text("Press enter to confirm", 30), "patch approval dialog")
        time.sleep(1.5)
        c.cap(s, "question-patch-approval", "QUESTION",
              "apply_patch on app.py waits for approval: `Would you like to make the following edits?` with a diff",
              shape="codex-patch-approval")


def cx_trust(c):
    with c.session(trusted=False) as s:
        must(s.wait_text("trust", 60), "trust prompt")
        time.sleep(1.5)
        c.cap(s, "question-startup-trust-directory", "QUESTION",
              "first start in an untrusted project: the trust-this-directory prompt",
              shape="codex-trust-directory")


CODEX_SCENARIOS = {
    "welcome": (cx_welcome, BOTH),
    "text-answer": (cx_text_answer, BOTH),
    "tool-turn": (cx_tool_turn, BOTH),
    "first-token": (cx_first_token, BOTH),
    "slow-stream": (cx_slow_stream, BOTH),
    "exec-running": (cx_exec_running, BOTH),
    "exec-approval": (cx_exec_approval, BOTH),
    "patch-approval": (cx_patch_approval, BOTH),
    "trust": (cx_trust, BOTH),
}


# ---------------------------------------------------------------------------
# Gemini CLI
#
# Working: a spinner row ending in `(esc to cancel, 3s)`. Idle: the input box
# ` >   Type your message or @path/to/file` with no `esc to cancel` anywhere.

GEMINI_BUSY = "esc to cancel"


def gemini_idle(scr):
    return GEMINI_BUSY not in scr and "Type your message" in scr


def gemini_wait_idle(s, timeout=60):
    return wait_settled(s, gemini_idle, timeout)


def gemini_start(s, prompt):
    s.start()
    must(s.wait_text(gemini_idle, 60), "gemini input box at startup")
    time.sleep(1.5)
    submit_until_sent(s, prompt)


def gm_welcome(c):
    with c.session() as s:
        must(s.wait_text(gemini_idle, 60), "input box")
        time.sleep(2)
        c.cap(s, "idle-welcome", "STALLED", "fresh start: the banner, tips and an empty input box, no turn yet")


def gm_text_answer(c):
    steps = [{"blocks": [text("The project has two files: README.md describes it and app.py defines greet(name), "
                              "which returns a greeting. Running app.py prints 'Hello, world'.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "what does this project do?")
        must(s.mock.wait_for("reply_done"), "reply")
        must(gemini_wait_idle(s), "idle after answer")
        c.cap(s, "idle-after-text-answer", "STALLED",
              "a plain text answer landed; the turn ended and the input box is empty")


def gm_tool_turn(c):
    steps = [{"blocks": [tool("list_directory", dir_path=".")]},
             {"when": "tool_result", "blocks": [text("There are two files, README.md and app.py. Nothing else to do.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "list the files")
        must(s.mock.wait_for("reply_done", 2), "both replies")
        must(gemini_wait_idle(s), "idle after the tool turn")
        c.cap(s, "idle-after-tool-turn", "BLOCKED", "a turn that listed the directory and answered; idle, no work left",
              work=0)


def gm_first_token(c):
    steps = [{"first_delay": 60, "blocks": [text("Late answer.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "summarise the repository layout")
        must(s.mock.wait_for("first_delay_start"), "request")
        must(s.wait_text(GEMINI_BUSY, 20), "spinner row")
        time.sleep(6)
        c.cap(s, "working-before-first-token", "WORKING",
              "request sent, the mock holds the first token for 60 s; the spinner row `(esc to cancel, Ns)`")


def gm_slow_stream(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "explain how the monitor classifies a pane")
        must(s.mock.wait_for("text_start"), "stream start")
        time.sleep(8)
        must(s.mock.seen("reply_done") == 0, "still streaming")
        c.cap(s, "working-streaming-text", "WORKING", "a long answer streaming slowly from the mock")


def gm_shell_running(c):
    steps = [{"blocks": [tool("run_shell_command", command="sleep 45", description="Run the slow check")]},
             {"when": "tool_result", "blocks": [text("Finished.")]}]
    with c.session(steps=steps, approval="yolo") as s:
        gemini_start(s, "run the slow check")
        must(s.mock.wait_for("tool_sent"), "tool call")
        must(s.wait_text("sleep 45", 20), "command shown")
        time.sleep(6)
        must(s.mock.main_requests == 1, "command still running")
        c.cap(s, "working-shell-running", "WORKING", "run_shell_command `sleep 45` running (YOLO mode, no approval)")


def gm_shell_confirm(c):
    steps = [{"blocks": [tool("run_shell_command", command="python3 -m pytest -q", description="Run the test suite")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "run the tests")
        must(s.wait_text("Allow execution", 30), "shell confirmation")
        time.sleep(1.5)
        c.cap(s, "question-shell-confirm", "QUESTION",
              "run_shell_command `python3 -m pytest -q` waits for confirmation: `Allow execution of [Shell]?`",
              shape="gemini-shell-confirm")


def gm_edit_confirm(c):
    steps = [{"blocks": [tool("replace", file_path="__PROJ__/app.py", instruction="Use an f-string in greet",
                              old_string="    return 'Hello, ' + name", new_string="    return f'Hello, {name}!'")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "use an f-string in greet")
        must(s.wait_text("Apply this change", 30), "edit confirmation")
        time.sleep(1.5)
        c.cap(s, "question-edit-confirm", "QUESTION",
              "replace on app.py waits for confirmation: a diff and `Apply this change?`",
              shape="gemini-edit-confirm")


def gm_ask_user(c):
    q = {"questions": [{"question": "Should the monitor page on QUESTION immediately or after one confirming poll?",
                        "header": "Paging", "type": "choice", "multiSelect": False,
                        "options": [{"label": "Immediately", "description": "Escalate on the first poll"},
                                    {"label": "After 2 polls", "description": "Wait for a second identical capture"}]}]}
    steps = [{"blocks": [tool("ask_user", **q)]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "wire the alert funnel")
        must(s.wait_text("Should the monitor page", 30), "ask_user dialog")
        time.sleep(1.5)
        c.cap(s, "question-ask-user", "QUESTION", "the ask_user tool shows a single-choice question",
              shape="gemini-ask-user")


def gm_trust(c):
    with c.session(trusted=False) as s:
        must(s.wait_text("trust", 60), "trust prompt")
        time.sleep(1.5)
        c.cap(s, "question-startup-trust-folder", "QUESTION",
              "first start with folder trust enabled: the trust-this-folder dialog",
              shape="gemini-trust-folder")


GEMINI_SCENARIOS = {
    "welcome": (gm_welcome, BOTH),
    "text-answer": (gm_text_answer, BOTH),
    "tool-turn": (gm_tool_turn, BOTH),
    "first-token": (gm_first_token, BOTH),
    "slow-stream": (gm_slow_stream, BOTH),
    "shell-running": (gm_shell_running, BOTH),
    "shell-confirm": (gm_shell_confirm, BOTH),
    "edit-confirm": (gm_edit_confirm, BOTH),
    "ask-user": (gm_ask_user, BOTH),
    "trust": (gm_trust, BOTH),
}

SCENARIOS = {"codex": CODEX_SCENARIOS, "gemini": GEMINI_SCENARIOS}


def main(argv=None):
    ap = capctx.parser(__doc__, jobs=4,
                       size_help="WxH: run the named scenarios at this size; default: each scenario's own sizes")
    ap.add_argument("--agent", required=True, choices=sorted(AGENTS))
    a = ap.parse_args(argv)

    def prepare():
        binary = ensure_installed(a.agent)
        return binary, cli_version(binary, "semver")

    return capctx.run(a, SCENARIOS[a.agent], cli_spec(a.agent), prepare,
                      out_default=os.path.join(ROOT, "testdata", "panes", a.agent), label=f"{a.agent} ")


if __name__ == "__main__":
    sys.exit(main())
