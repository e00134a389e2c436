#!/usr/bin/env python3
"""Scenario driver for the Codex CLI and the Gemini CLI (Claude Code is scenarios.py).

    python3 xtask/capture/scenarios_agents.py --agent codex|gemini [--scenario NAME[,NAME...]]
                                              [--size WxH] [--jobs N] [--out DIR] [--list]
                                              [--version V] [--color truecolor|256|no-color] [--tag TAG]
                                              [--no-background-color (gemini)]

(`cargo xtask capture --agent codex|gemini` runs exactly this.) Each scenario starts the real CLI
(installed by npm into target/capture/<agent>/<version>/ when missing) in a private tmux server against the
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
from capctx import (LOREM, ROOT, Cli, cli_version, must, npm_install, simple_scenario, text, tool,  # noqa: E402
                    wait_settled)
from harness_agents import CodexSession, GeminiSession  # noqa: E402

AGENTS = {
    "codex": {"package": capctx.PACKAGES["codex"], "bin": "codex", "session": CodexSession},
    "gemini": {"package": capctx.PACKAGES["gemini"], "bin": "gemini", "session": GeminiSession},
}

BOTH = ("m", "s")


def bin_path(agent, version):
    return os.path.join(capctx.install_prefix(agent, version), "node_modules", ".bin", AGENTS[agent]["bin"])


def ensure_installed(agent, version):
    return npm_install(capctx.install_prefix(agent, version), AGENTS[agent]["package"], bin_path(agent, version),
                       version)


def merge_settings(base, extra):
    """base with extra's sections merged in, one level deep (a settings.json section per key)."""
    out = {k: dict(v) for k, v in (base or {}).items()}
    for k, v in extra.items():
        out.setdefault(k, {}).update(v)
    return out


def cli_spec(agent, settings=None):
    """settings: Gemini settings.json sections every session of the run gets (a driver flag's)."""
    def new_session(c, **kw):
        if settings:
            kw["settings"] = merge_settings(kw.get("settings"), settings)
        return AGENTS[agent]["session"](c.bin, **kw)
    return Cli(agent, new_session, label=f"{agent}/")


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
    simple_scenario(c, codex_start, steps, "run the tests", "Press enter to confirm", "approval dialog",
                    "question-exec-approval", "QUESTION",
                    "exec_command asks for escalated permissions: `Would you like to run the following command?`",
                    shape="codex-exec-approval", timeout=30)


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
    simple_scenario(c, codex_start, steps, "use an f-string in greet", "Press enter to confirm",
                    "patch approval dialog", "question-patch-approval", "QUESTION",
                    "apply_patch on app.py waits for approval: `Would you like to make the following edits?` with a diff",
                    shape="codex-patch-approval", timeout=30)


def cx_trust(c):
    with c.session(trusted=False) as s:
        must(s.wait_text("trust", 60), "trust prompt")
        time.sleep(1.5)
        c.cap(s, "question-startup-trust-directory", "QUESTION",
              "first start in an untrusted project: the trust-this-directory prompt",
              shape="codex-trust-directory")


def codex_plan_mode(s):
    """`/plan` (the slash command "switch to Plan mode"; shift+tab cycles to it as well): the footer then
    says `Plan mode (shift+tab to cycle)` and the main-loop requests offer `request_user_input`."""
    s.send_text("/plan")
    must(s.wait_text("switch to Plan mode", 10), "/plan in the command popup")
    time.sleep(0.5)
    s.send_keys("Enter")
    must(s.wait_text("Plan mode (shift+tab", 15), "Plan mode footer")
    time.sleep(1.0)


def codex_start_plan(s, prompt):
    s.start()
    must(s.wait_text(codex_idle, 60), "codex composer at startup")
    time.sleep(2.0)
    codex_plan_mode(s)
    submit_until_sent(s, prompt)


RUI_STORAGE = {"id": "storage", "header": "Storage", "question": "Where should the monitor keep its state?",
               "options": [{"label": "SQLite (Recommended)", "description": "One file, transactional"},
                           {"label": "JSON files", "description": "Plain files per pane"}]}
RUI_INTERVAL = {"id": "interval", "header": "Interval", "question": "How often should it poll each pane?",
                "options": [{"label": "Every 2 s (Recommended)", "description": "Fast enough for prompts"},
                            {"label": "Every 10 s", "description": "Cheaper on large fleets"}]}
RUI_ALERTS = {"id": "alerts", "header": "Alerts", "question": "Where should QUESTION alerts go?",
              "options": [{"label": "Desktop (Recommended)", "description": "A notification per pane"},
                          {"label": "Webhook", "description": "POST to a URL"}]}


def cx_plan_idle(c):
    with c.session() as s:
        must(s.wait_text(codex_idle, 60), "composer")
        time.sleep(2)
        codex_plan_mode(s)
        time.sleep(1)
        c.cap(s, "idle-plan-mode", "STALLED",
              "`/plan` switched an idle session to Plan mode; no turn yet, the composer is empty")


def cx_request_user_input(c):
    steps = [{"blocks": [tool("request_user_input", questions=[RUI_STORAGE])]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    simple_scenario(c, codex_start_plan, steps, "plan the state storage", "enter to submit answer",
                    "request_user_input question", "question-request-user-input", "QUESTION",
                    "Plan mode: the model calls request_user_input with one question and two options",
                    shape="codex-request-user-input", timeout=30)


def cx_request_user_input_multi(c):
    steps = [{"blocks": [tool("request_user_input", questions=[RUI_STORAGE, RUI_INTERVAL, RUI_ALERTS])]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    simple_scenario(c, codex_start_plan, steps, "plan the monitor settings", "Question 1/3",
                    "request_user_input, three questions", "question-request-user-input-multi", "QUESTION",
                    "Plan mode: request_user_input with three questions; the first is shown (`Question 1/3`)",
                    shape="codex-request-user-input-multi", timeout=30)


CODEX_PLAN = ("Here is the plan.\n\n<proposed_plan>\n# Store monitor state in SQLite\n\n"
              "1. Add a `state` table keyed by pane id.\n2. Write each verdict in one transaction.\n"
              "3. Read the last verdict at start.\n</proposed_plan>\n")


def cx_plan_implement(c):
    steps = [{"blocks": [text(CODEX_PLAN)]}]
    simple_scenario(c, codex_start_plan, steps, "plan the state storage", "Implement this plan?",
                    "implement-this-plan prompt", "question-plan-implement", "QUESTION",
                    "Plan mode: the reply carries a <proposed_plan>; Codex asks `Implement this plan?`",
                    shape="codex-plan-implement", timeout=30)


def cx_interrupted(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps) as s:
        codex_start(s, "explain how the monitor classifies a pane")
        must(s.mock.wait_for("text_start"), "stream start")
        time.sleep(4)
        must(s.mock.seen("reply_done") == 0, "still streaming")
        s.send_keys("Escape")
        must(s.wait_text("Conversation interrupted", 15), "the interrupted turn-end line")
        must(codex_wait_idle(s), "idle after the interrupt")
        time.sleep(1.5)
        c.cap(s, "idle-after-interrupt", "STALLED",
              "Escape while a long reply streamed: the turn ends with `■ Conversation interrupted …`; idle")


def cx_background_terminal(c):
    """A turn that ends while the command it started keeps running: `exec_command` returns after
    `yield_time_ms` with the process still alive (a session id), the model answers, the turn ends
    (`Worked for …`), and `1 background terminal running · /ps to view · /stop to close` stays on
    screen. Codex starts no turn when that terminal exits (openai/codex#33712): only a nudge wakes it."""
    steps = [{"blocks": [text("Starting the slow check in the background."),
                         tool("exec_command", cmd="sleep 900", yield_time_ms=1500)]},
             {"when": "tool_result", "blocks": [text("The slow check is running in the background; "
                                                     "I will look at its result when it finishes.")]}]
    with c.session(steps=steps, sandbox="danger-full-access") as s:
        codex_start(s, "start the slow check")
        must(s.mock.wait_for("reply_done", 2, 40), "both replies")
        must(codex_wait_idle(s), "idle after the turn")
        must(s.wait_text("Worked for", 10), "the turn-end line")
        must(s.wait_text("background terminal running", 10), "the background-terminal line")
        time.sleep(3)
        must(CODEX_BUSY not in s.screen() and "background terminal running" in s.screen(),
             "still idle with the terminal running")
        must(s.mock.main_requests == 2, "no turn started since")
        c.cap(s, "idle-background-terminal", "STALLED",
              "the turn ended (`Worked for …`) while its `sleep 900` keeps running as a background terminal; "
              "Codex starts no turn when it exits, so this is a stop")


# Usage limits: the ChatGPT backend answers HTTP 429 with a `usage_limit_reached` body
# (mock_agents.usage_limit_reply). Codex 0.171.0 words the error from `plan_type` and `resets_at` only:
# `… or try again at 2:51 PM.` the same day, `… at Dec 4th, 2026 5:45 PM.` another day, `… try again
# later.` without `resets_at`; `resets_in_seconds` (older releases' `try again in 2 days 17 hours …`)
# is no longer read. TZ names a zone so the clock is a user's, not UTC.
LIMIT_TZ = {"TZ": "Asia/Tbilisi"}


def codex_usage_limit(c, case, scenario, **ul):
    steps = [{"error": 429, "usage_limit": ul}]
    with c.session(steps=steps, env_extra=LIMIT_TZ) as s:
        codex_start(s, "add a test for greet()")
        must(s.mock.wait_for("error_sent", 1, 60), "the 429")
        must(s.wait_text("hit your usage limit", 30), "the usage-limit error")
        must(codex_wait_idle(s), "idle after the error")
        time.sleep(1)
        c.cap(s, case, "STALLED", scenario)


def cx_usage_limit_at(c):
    codex_usage_limit(c, "usage-limit-try-again-at",
                      "the request got HTTP 429 `usage_limit_reached` (plan_type plus, the 5-hour window, resets_at "
                      "in 2 h): `■ You’ve hit your usage limit. Upgrade to Pro (…) or try again at <time>.`; idle",
                      plan_type="plus", resets_in=7200)


def cx_usage_limit_at_date(c):
    codex_usage_limit(c, "usage-limit-try-again-at-date",
                      "the request got HTTP 429 `usage_limit_reached` (plan_type plus, the weekly window, resets_at "
                      "in 3 days): `… or try again at <Mon Dth, YYYY h:mm AM>.`; idle",
                      plan_type="plus", resets_in=3 * 86400 - 3000, window="secondary")


def cx_usage_limit_later(c):
    codex_usage_limit(c, "usage-limit-try-again-later",
                      "the request got HTTP 429 `usage_limit_reached` with `resets_in_seconds` but no `resets_at`: "
                      "0.171.0 no longer reads the former (no `try again in …`), so `… or try again later.`; idle",
                      plan_type="plus", resets_in=2 * 86400 + 17 * 3600 + 14 * 60, drop=["resets_at"],
                      window="secondary")


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
    "plan-idle": (cx_plan_idle, BOTH),
    "request-user-input": (cx_request_user_input, BOTH),
    "request-user-input-multi": (cx_request_user_input_multi, BOTH),
    "plan-implement": (cx_plan_implement, BOTH),
    "interrupted": (cx_interrupted, BOTH),
    "background-terminal": (cx_background_terminal, BOTH),
    "usage-limit-at": (cx_usage_limit_at, BOTH),
    "usage-limit-at-date": (cx_usage_limit_at_date, ("m",)),
    "usage-limit-later": (cx_usage_limit_later, ("m",)),
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
    simple_scenario(c, gemini_start, steps, "run the tests", "Allow execution", "shell confirmation",
                    "question-shell-confirm", "QUESTION",
                    "run_shell_command `python3 -m pytest -q` waits for confirmation: `Allow execution of [Shell]?`",
                    shape="gemini-shell-confirm", timeout=30)


def gm_edit_confirm(c):
    steps = [{"blocks": [tool("replace", file_path="__PROJ__/app.py", instruction="Use an f-string in greet",
                              old_string="    return 'Hello, ' + name", new_string="    return f'Hello, {name}!'")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    simple_scenario(c, gemini_start, steps, "use an f-string in greet", "Apply this change", "edit confirmation",
                    "question-edit-confirm", "QUESTION",
                    "replace on app.py waits for confirmation: a diff and `Apply this change?`",
                    shape="gemini-edit-confirm", timeout=30)


def gm_ask_user(c):
    q = {"questions": [{"question": "Should the monitor page on QUESTION immediately or after one confirming poll?",
                        "header": "Paging", "type": "choice", "multiSelect": False,
                        "options": [{"label": "Immediately", "description": "Escalate on the first poll"},
                                    {"label": "After 2 polls", "description": "Wait for a second identical capture"}]}]}
    steps = [{"blocks": [tool("ask_user", **q)]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    simple_scenario(c, gemini_start, steps, "wire the alert funnel", "Should the monitor page", "ask_user dialog",
                    "question-ask-user", "QUESTION", "the ask_user tool shows a single-choice question",
                    shape="gemini-ask-user", timeout=30)


def gm_trust(c):
    with c.session(trusted=False) as s:
        must(s.wait_text("trust", 60), "trust prompt")
        time.sleep(1.5)
        c.cap(s, "question-startup-trust-folder", "QUESTION",
              "first start with folder trust enabled: the trust-this-folder dialog",
              shape="gemini-trust-folder")


def gm_web_fetch(c):
    steps = [{"blocks": [tool("web_fetch", prompt="Summarise https://example.com/docs/monitor.html")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "read the monitor docs")
        must(s.wait_text("URLs to fetch", 30), "web_fetch confirmation")
        time.sleep(1.5)
        must(s.mock.main_requests == 1, "nothing fetched yet")
        c.cap(s, "question-web-fetch-confirm", "QUESTION",
              "web_fetch of an https URL waits for confirmation: `URLs to fetch:` and `Do you want to proceed?`",
              shape="gemini-web-fetch-confirm")


def gm_enter_plan(c):
    steps = [{"blocks": [tool("enter_plan_mode", reason="Design the storage first")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    simple_scenario(c, gemini_start, steps, "design the storage", "Enter Plan Mode", "enter_plan_mode confirmation",
                    "question-enter-plan-mode", "QUESTION",
                    "the model calls enter_plan_mode; Gemini asks to switch to read-only planning (`Do you want to proceed?`)",
                    shape="gemini-enter-plan-mode", timeout=30)


# Plan mode: `general.defaultApprovalMode = "plan"` (a settings default, unlike YOLO), plans kept in the
# project (`general.plan.directory`, which must stay inside it) so the plan file can be seeded.
GEMINI_PLAN_SETTINGS = {"general": {"plan": {"directory": ".gemini/plans"}}}
GEMINI_PLAN_FILE = ("# Store monitor state in SQLite\n\n1. Add a `state` table keyed by pane id.\n"
                    "2. Write each verdict in one transaction.\n3. Read the last verdict at start.\n")


def gm_plan_idle(c):
    with c.session(approval="plan", settings=GEMINI_PLAN_SETTINGS) as s:
        must(s.wait_text(gemini_idle, 60), "input box")
        time.sleep(2)
        c.cap(s, "idle-plan-mode", "STALLED", "fresh start in Plan mode (`defaultApprovalMode: plan`), no turn yet")


def gm_plan_approval(c):
    steps = [{"blocks": [tool("exit_plan_mode", plan_filename="storage.md")]},
             {"when": "tool_result", "blocks": [text("Done.")]}]
    with c.session(steps=steps, approval="plan", settings=GEMINI_PLAN_SETTINGS,
                   pre_files={".gemini/plans/storage.md": GEMINI_PLAN_FILE}) as s:
        gemini_start(s, "plan the state storage")
        must(s.mock.wait_for("tool_sent"), "exit_plan_mode call")
        must(s.wait_text("SQLite", 30), "the plan shown for approval")
        time.sleep(2)
        c.cap(s, "question-plan-approval", "QUESTION",
              "Plan mode: the model calls exit_plan_mode with a plan file; Gemini asks to approve the plan",
              shape="gemini-plan-approval")


def gm_api_retry(c):
    steps = [{"error": 503, "message": "The model is overloaded. Please try again later."}] * 3 + [
        {"blocks": [text("Late answer after the retries.")]}]
    with c.session(steps=steps) as s:
        gemini_start(s, "summarise the repository")
        must(s.mock.wait_for("error_sent", 2, 40), "two 503s")
        time.sleep(2)
        must(s.mock.seen("reply_done") == 0 and GEMINI_BUSY in s.screen(), "still retrying")
        c.cap(s, "working-api-retry-503", "WORKING",
              "the mock answered HTTP 503 twice; Gemini retries with backoff (default settings)")


# Giving up: `general.maxAttempts: 3` (the default 10 takes minutes of backoff) and `ui.errorVerbosity: full`;
# every request gets 429. With the default verbosity (`low`) 0.61.0 never asked: it went on retrying
# silently past maxAttempts (19 requests in 45 s), the spinner row unchanged.
GEMINI_FEW_ATTEMPTS = {"general": {"maxAttempts": 3}, "ui": {"errorVerbosity": "full"}}


def gm_api_high_demand(c):
    steps = [{"error": 429, "message": "Resource has been exhausted (e.g. check quota)."}] * 30
    simple_scenario(c, gemini_start, steps, "summarise the repository", "Keep trying",
                    "the high-demand prompt after the retries", "question-api-high-demand", "QUESTION",
                    "three HTTP 429s (maxAttempts 3): Gemini gives up retrying and asks `Keep trying` / `Stop`",
                    shape="gemini-high-demand", timeout=90, session={"settings": GEMINI_FEW_ATTEMPTS})


def gm_api_gave_up(c):
    steps = [{"error": 429, "message": "Resource has been exhausted (e.g. check quota)."}] * 30
    with c.session(steps=steps, settings=GEMINI_FEW_ATTEMPTS) as s:
        gemini_start(s, "summarise the repository")
        must(s.wait_text("Keep trying", 90), "the high-demand prompt after the retries")
        time.sleep(1.0)
        s.send_keys("Down")
        time.sleep(0.5)
        s.send_keys("Enter")
        must(s.wait_text("Keep trying", 15, gone=True), "the prompt answered with Stop")
        must(gemini_wait_idle(s), "idle after giving up")
        time.sleep(1.5)
        c.cap(s, "idle-after-api-error", "STALLED",
              "three HTTP 429s, the high-demand prompt answered `Stop`: the turn ended on the error; idle")


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
    "web-fetch": (gm_web_fetch, BOTH),
    "enter-plan": (gm_enter_plan, BOTH),
    "plan-idle": (gm_plan_idle, BOTH),
    "plan-approval": (gm_plan_approval, BOTH),
    "api-retry": (gm_api_retry, BOTH),
    "api-high-demand": (gm_api_high_demand, BOTH),
    "api-gave-up": (gm_api_gave_up, BOTH),
}

SCENARIOS = {"codex": CODEX_SCENARIOS, "gemini": GEMINI_SCENARIOS}


def main(argv=None):
    ap = capctx.parser(__doc__, jobs=4,
                       size_help="WxH: run the named scenarios at this size; default: each scenario's own sizes")
    ap.add_argument("--agent", required=True, choices=sorted(AGENTS))
    ap.add_argument("--no-background-color", action="store_true",
                    help="gemini: settings.json `ui.useBackgroundColor: false` (the input box drawn with "
                         "`────` rules whatever the colour class)")
    a = ap.parse_args(argv)
    settings, flags, meta = None, "", ()
    if a.no_background_color:
        if a.agent != "gemini":
            print("--no-background-color is a Gemini CLI setting (--agent gemini)", file=sys.stderr)
            return 2
        settings = {"ui": {"useBackgroundColor": False}}
        flags = " --no-background-color"
        meta = (("settings", "ui.useBackgroundColor=false"),)

    def prepare():
        binary = ensure_installed(a.agent, capctx.version_of(a, a.agent))
        return binary, cli_version(binary, "semver")

    return capctx.run(a, SCENARIOS[a.agent], cli_spec(a.agent, settings), prepare,
                      out_default=os.path.join(ROOT, "testdata", "panes", a.agent), label=f"{a.agent} ",
                      driver_flags=flags, meta_extra=meta)


if __name__ == "__main__":
    sys.exit(main())
