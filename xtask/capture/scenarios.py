#!/usr/bin/env python3
"""Scenario driver: regenerate the real Claude Code golden corpus.

    python3 xtask/capture/scenarios.py [--scenario NAME[,NAME...]] [--size WxH] [--jobs N]
                                       [--out testdata/panes/claude] [--list]
                                       [--version V] [--permission-mode MODE] [--tag TAG] [--color C]

(`cargo xtask capture` runs exactly this.) Each scenario starts the real
`claude` CLI (installed into target/capture/claude/<version>/ by npm when missing) in a private
tmux server against the scripted mock API in mock_anthropic.py, drives it into
a situation, and captures the pane three ways (plain, -e, -S -) plus a `meta`
file. The expected state in `meta` is decided here, by what the scenario made
Claude Code do, never by a classifier.

--permission-mode MODE starts every session with `claude --permission-mode MODE` (the release's
own choices, from its --help: 2.1.332 has acceptEdits, auto, bypassPermissions, manual, dontAsk,
plan; 2.1.197 has `default` where 2.1.332 has `manual`), except in the scenarios that choose a mode
of their own (plan, acceptEdits, bypass, the auto-check ones). Without it, a release that has
`manual` runs in manual mode: the scenarios were written for a mode that asks before each tool,
and 2.1.283+ starts in auto mode, where they would wait for dialogs that never come (so
`cargo xtask drift` replays them as written). Each case's meta records the mode its session ran in.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import capctx  # noqa: E402
from capctx import (LOREM, ROOT, Cli, cli_version, must, npm_install, simple_scenario, text, tool,  # noqa: E402,F401
                    wait_settled)
from harness import Session, has_input_box  # noqa: E402

NPM_PACKAGE = capctx.PACKAGES["claude"]


def claude_bin(version=capctx.PINNED["claude"]):
    return os.path.join(capctx.install_prefix("claude", version), "node_modules", ".bin", "claude")


CLAUDE_BIN = claude_bin()

ALL = ("m", "s", "l")

ESC_TO_INTERRUPT = "esc to interrupt"


def ensure_claude(version=capctx.PINNED["claude"]):
    """The claude binary of that release, installed into target/capture/claude/<version>/ when missing."""
    return npm_install(capctx.install_prefix("claude", version), NPM_PACKAGE, claude_bin(version), version)


def claude_version(bin_path):
    return cli_version(bin_path, "first")


# The run's --permission-mode (None: the release's default); set once by main() before any job starts.
PERMISSION_MODE = None


def new_session(c, **kw):
    """A session of this run: its own mode when the scenario chose one (plan, acceptEdits, bypass),
    else the run's --permission-mode."""
    args = list(kw.pop("args", ()))
    if PERMISSION_MODE and "--permission-mode" not in args and not kw.get("bypass"):
        args = ["--permission-mode", PERMISSION_MODE] + args
    return Session(c.bin, args=args, **kw)


CLI = Cli("claude", new_session, agent_flag=False)


def permission_modes(bin_path):
    """The `--permission-mode` choices this release lists in its --help."""
    out = subprocess.run([bin_path, "--help"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"--permission-mode\b.*?\(choices:\s*([^)]*)\)", out, re.S)
    return re.findall(r'"([^"]+)"', m.group(1)) if m else []


def working(s):
    return lambda scr: ESC_TO_INTERRUPT in scr


def wait_idle(s, timeout=60):
    """The turn is over: the footer no longer says esc to interrupt and the prompt box is back."""
    return wait_settled(s, has_input_box, timeout, still=lambda scr: ESC_TO_INTERRUPT not in scr)


def start_and_prompt(s, prompt):
    s.start()
    must(s.wait_ready(60), "idle prompt at startup")
    time.sleep(0.5)
    s.submit(prompt)


# ---------------------------------------------------------------------------
# Scenarios. Each takes a Ctx; the dict below gives its sizes.


def sc_welcome(c):
    with c.session() as s:
        must(s.wait_ready(60), "welcome screen")
        time.sleep(2)
        c.cap(s, "idle-welcome", "STALLED", "fresh start: the welcome banner and an empty prompt box, no turn yet")


def sc_text_answer(c):
    steps = [{"blocks": [text("The project has two files: README.md describes it and app.py defines greet(name), "
                              "which returns a greeting. Running app.py prints 'Hello, world'.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "what does this project do?")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle after answer")
        c.cap(s, "idle-after-text-answer", "STALLED",
              "a plain text answer landed; the turn ended and the prompt box is empty")


def sc_first_token(c):
    steps = [{"first_delay": 40, "blocks": [text("Late answer.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "summarise the repository layout")
        must(s.mock.wait_for("first_delay_start"), "request")
        must(s.wait_text(working(s), 20), "working footer")
        time.sleep(8)
        c.cap(s, "working-before-first-token", "WORKING",
              "request sent, the mock API holds the first token for 40 s; spinner row and esc to interrupt")


def sc_slow_stream(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "explain how the monitor classifies a pane")
        must(s.mock.wait_for("text_start"), "stream start")
        time.sleep(9)
        must(ESC_TO_INTERRUPT in s.screen(), "still streaming")
        c.cap(s, "working-streaming-text", "WORKING",
              "a long text answer is streaming slowly (6 chars every 0.25 s); captured mid-stream")


RULES = "".join(f"{i + 1}. The monitor reads the live chrome at the tail of the pane, never the scrollback.\n"
                for i in range(80))
SPINNER_ROW = re.compile(r"^[\u00b7\u2722\u2733\u2736\u273b\u273d*] \S+\u2026", re.M)


def sc_stream_no_spinner(c):
    steps = [{"delta_delay": 0.15, "blocks": [text(RULES, chunk=20)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "list the monitor rules")
        must(s.mock.wait_for("text_start"), "stream start")
        must(s.wait_text(lambda scr: scr.count("The monitor reads") >= 8, 40), "eight lines streamed")
        scr = s.screen()
        must(ESC_TO_INTERRUPT in scr and not SPINNER_ROW.search(scr), "streaming with no spinner row")
        c.cap(s, "working-streaming-no-spinner", "WORKING",
              "a many-line answer is streaming; the spinner row has vanished and only the footer's esc to interrupt is left")


def sc_stream_no_spinner_typed(c):
    steps = [{"delta_delay": 0.15, "blocks": [text(RULES, chunk=20)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "list the monitor rules")
        must(s.mock.wait_for("text_start"), "stream start")
        must(s.wait_text(lambda scr: scr.count("The monitor reads") >= 4, 40), "four lines streamed")
        s.send_text("after this, add a golden for every rule")
        must(s.wait_text(lambda scr: scr.count("The monitor reads") >= 10, 40), "ten lines streamed")
        scr = s.screen()
        must("after this, add a golden" in scr and not SPINNER_ROW.search(scr), "typed input, no spinner row")
        c.cap(s, "working-streaming-no-spinner-typed-input", "WORKING",
              "a many-line answer is streaming (spinner row gone) while the user has typed an unsent message, which "
              "blanks the footer: neither spinner nor esc to interrupt is on screen although the turn is running")


def sc_thinking(c):
    steps = [{"delta_delay": 0.3, "blocks": [{"thinking": "Let me think about the layout of this project. " * 20, "chunk": 5},
                                             text("Thought it through.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "think hard about the best module layout")
        must(s.mock.wait_for("thinking_start"), "thinking start")
        time.sleep(7)
        must(ESC_TO_INTERRUPT in s.screen(), "still thinking")
        c.cap(s, "working-thinking", "WORKING", "the model streams a long thinking block slowly; captured mid-thought")


# 2.1.332 refuses `sleep N && …` in the foreground (`Blocked: sleep 30 followed by: echo checked. To wait
# for a condition, use Monitor …`), so the long command is a slow check script, as a test suite would be.
SLOW_CHECK = {"slow_check.py": "import time\n\ntime.sleep(30)\nprint('checked')\n"}


def sc_bash_running(c):
    steps = [{"blocks": [text("I'll run the slow check."),
                         tool("Bash", command="python3 slow_check.py", description="Run the slow check")]},
             {"when": "tool_result", "blocks": [text("The check passed.")]}]
    settings = {"permissions": {"allow": ["Bash(python3 slow_check.py)"]}}
    with c.session(steps=steps, settings=settings, pre_files=SLOW_CHECK) as s:
        start_and_prompt(s, "run the slow check")
        must(s.mock.wait_for("tool_sent"), "tool call")
        must(s.wait_text("slow_check.py", 20), "bash shown")
        time.sleep(6)
        must(ESC_TO_INTERRUPT in s.screen(), "still running")
        c.cap(s, "working-bash-sleep", "WORKING",
              "a pre-approved Bash tool call (`python3 slow_check.py`, which sleeps 30 s) is running")


def retry_notice(scr):
    """2.1.197: `✻ API error · Retrying in 1s · attempt 1/10`; 2.1.332: `✻ 500 Internal server error ·
    retrying in 1s · attempt 5/10`."""
    return "Retrying in" in scr or "retrying in" in scr


def sc_api_retry(c):
    steps = [{"error": 529}] * 2 + [{"first_delay": 30, "blocks": [text("Recovered after retries.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "list the files")
        must(s.mock.wait_for("error_sent", 1, 60), "first 529")
        must(s.wait_text(retry_notice, 15), "retry notice")
        time.sleep(0.3)
        c.cap(s, "working-api-retry-529", "WORKING",
              "the mock API answered HTTP 529 overloaded; Claude Code shows its retry notice and will retry")


def sc_api_529_gave_up(c):
    steps = [{"error": 529}] * 20
    with c.session(steps=steps) as s:
        start_and_prompt(s, "list the files")
        must(s.mock.wait_for("error_sent", 3, 60), "529s")
        must(wait_idle(s, 90), "gave up")
        time.sleep(1)
        c.cap(s, "idle-after-repeated-529", "STALLED",
              "every request got HTTP 529; after three Claude Code gave up with `Repeated 529 Overloaded errors`; idle prompt",
              work=2)


def sc_api_retry_500(c):
    steps = [{"error": 500}] * 6 + [{"blocks": [text("Recovered after retries.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "list the files")
        must(s.mock.wait_for("error_sent", 2, 90), "two 500s")
        must(s.wait_text(retry_notice, 15), "retry notice")
        time.sleep(0.3)
        c.cap(s, "working-api-retry-500", "WORKING",
              "the mock API answers HTTP 500 api_error; Claude Code is retrying with backoff")


def sc_api_gave_up(c):
    steps = [{"error": 529}] * 20
    with c.session(steps=steps, env_extra={"CLAUDE_CODE_MAX_RETRIES": "1"}) as s:
        start_and_prompt(s, "list the files")
        must(s.mock.wait_for("error_sent", 2, 60), "errors")
        must(wait_idle(s, 90), "gave up")
        time.sleep(1)
        c.cap(s, "idle-after-api-error", "STALLED",
              "every request got HTTP 529 and Claude Code gave up (CLAUDE_CODE_MAX_RETRIES=1); the error is shown and the prompt is idle")


# Usage limits (a Claude subscription's plan limits). Logged in with a dummy OAuth token
# (CLAUDE_CODE_OAUTH_TOKEN, harness `oauth=True`), Claude Code reads the limit from the 429's
# `anthropic-ratelimit-unified-*` headers (mock_anthropic.ratelimit_headers) and draws its own limit
# screens; with an API key the same answer is only `API Error: Request rejected (429) · <message>`.
# TZ names a zone, so the transcript's reset reads as users report it (`resets 1am (Asia/Tbilisi)`).
LIMIT_TZ = {"TZ": "Asia/Tbilisi"}


def limit_429(claim, reset_in):
    """The main loop's answer: HTTP 429, the plan's `claim` limit rejected, resetting in `reset_in` s
    (x-should-retry: false, so the SDK does not retry it)."""
    return {"error": 429, "retry": False, "ratelimit": {"claim": claim, "reset_in": reset_in}}


def sc_usage_limit_5h(c):
    steps = [limit_429("five_hour", 3 * 3600)]
    with c.session(steps=steps, oauth=True, env_extra=LIMIT_TZ) as s:
        start_and_prompt(s, "add a test for greet()")
        must(s.mock.wait_for("error_sent", 1, 60), "the 429")
        must(s.wait_text("Continuing automatically at", 30), "the limit footer")
        time.sleep(1.5)
        c.cap(s, "usage-limit-5-hour", "STALLED",
              "logged in with an OAuth token (a subscription), the first request got HTTP 429 with the 5-hour "
              "limit rejected (resets in 3 h): `You've hit your 5-hour limit` in the transcript and, under the box, "
              "`Continuing automatically at … · Esc to cancel`; Claude Code waits for the reset itself")


def sc_usage_limit_cancelled(c):
    steps = [limit_429("five_hour", 3 * 3600)]
    with c.session(steps=steps, oauth=True, env_extra=LIMIT_TZ) as s:
        start_and_prompt(s, "add a test for greet()")
        must(s.wait_text("Continuing automatically at", 60), "the limit footer")
        time.sleep(1)
        s.send_keys("Escape")
        must(s.wait_text("Continuing automatically at", 20, gone=True), "the footer gone after Esc")
        time.sleep(1.5)
        c.cap(s, "usage-limit-5-hour-cancelled", "STALLED",
              "the 5-hour limit screen (OAuth login, HTTP 429), then Esc: `Automatic continue cancelled · "
              "/rate-limit-options to wait again`; the limit lines stay in the transcript and nothing will resume")


def sc_usage_limit_resumed(c):
    steps = [limit_429("five_hour", 60),
             {"blocks": [text("Added test_greet.py with a test for greet('world') and the empty name.")]}]
    with c.session(steps=steps, oauth=True, env_extra=LIMIT_TZ) as s:
        start_and_prompt(s, "add a test for greet()")
        must(s.wait_text("Continuing automatically at", 60), "the limit footer")
        # Claude Code checks every 30 s whether the reset has passed, then re-sends the turn itself
        must(s.mock.wait_for("reply_done", 1, 180), "the automatic continue after the reset")
        must(wait_idle(s, 60), "idle after the resumed turn")
        time.sleep(1.5)
        c.cap(s, "usage-limit-5-hour-resumed", "STALLED",
              "the 5-hour limit hit (OAuth login, HTTP 429, reset one minute ahead); at the reset Claude Code "
              "continued by itself (`Usage limit reset · Continuing automatically`), the answer landed and the "
              "turn ended: the limit lines are still in the transcript, the footer is the idle one")


def sc_usage_limit_api_key(c):
    steps = [limit_429("five_hour", 3 * 3600)]
    with c.session(steps=steps, env_extra=LIMIT_TZ) as s:
        start_and_prompt(s, "add a test for greet()")
        must(s.mock.wait_for("error_sent", 1, 60), "the 429")
        must(wait_idle(s, 60), "idle after the error")
        must("Request rejected (429)" in s.screen(), "the 429 error line")
        time.sleep(1)
        c.cap(s, "usage-limit-api-key", "STALLED",
              "the 429 of the 5-hour limit (same headers as usage-limit-5-hour) with an API key instead of an OAuth "
              "login: only `API Error: Request rejected (429) · <message>`, no limit screen; the prompt is idle")


def sc_usage_limit_weekly(c):
    steps = [limit_429("seven_day", 3 * 86400)]
    with c.session(steps=steps, oauth=True, env_extra=LIMIT_TZ) as s:
        start_and_prompt(s, "add a test for greet()")
        must(s.mock.wait_for("error_sent", 1, 60), "the 429")
        must(s.wait_text("What do you want to do?", 30), "the limit dialog")
        time.sleep(1.5)
        c.cap(s, "usage-limit-weekly-dialog", "QUESTION",
              "logged in with an OAuth token, the first request got HTTP 429 with the weekly limit rejected (resets "
              "in 3 days): `You've hit your weekly limit` and, where the box was, the dialog `What do you want to "
              "do?` (stop and wait / wait here, then continue automatically / upgrade)", shape="usage-limit-options")


def sc_typed_while_working(c):
    steps = [{"first_delay": 60, "blocks": [text("Late.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "refactor app.py")
        must(s.wait_text(working(s), 20), "working")
        time.sleep(2)
        s.send_text("when you are done, also add a test for greet() and make sure it covers the empty-name case, "
                    "then update the README with a usage section and run the whole suite once more before committing")
        time.sleep(2)
        c.cap(s, "working-with-typed-input", "WORKING",
              "a turn is in progress (first token held back) while a long unsent message sits in the input box")


def sc_queued_message(c):
    steps = [{"first_delay": 60, "blocks": [text("Late.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "refactor app.py")
        must(s.wait_text(working(s), 20), "working")
        time.sleep(2)
        s.submit("also add a test for greet()")
        time.sleep(2)
        c.cap(s, "working-with-queued-message", "WORKING",
              "a turn is in progress and a second message was submitted, so it is queued above the input box")


UNNUMBERED_CURSOR = re.compile(r"^\s*\u276f (?:Yes|No)\b", re.M)


def permission_shape(screen, shape):
    """`shape`, or `<shape>-unnumbered` when the dialog's options carry no numbers (2.1.332 draws
    `❯ No` / `Yes` where its safety check cannot run: in auto mode and in plan mode)."""
    return f"{shape}-unnumbered" if UNNUMBERED_CURSOR.search(screen) else shape


def sc_perm_bash(c):
    steps = [{"blocks": [text("I'll run the test suite."),
                         tool("Bash", command="python3 -m pytest -q tests/", description="Run the test suite")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "run the tests")
        must(s.wait_text("Do you want to proceed?", 40), "bash permission dialog")
        time.sleep(1)
        c.cap(s, "question-permission-bash", "QUESTION",
              "Bash tool call `python3 -m pytest -q tests/` waiting for permission",
              shape=permission_shape(s.screen(), "permission-bash"))


def sc_perm_write(c):
    steps = [{"blocks": [text("I'll add a config file."),
                         tool("Write", file_path="__PROJ__/config.toml",
                              content="[monitor]\ninterval = 60\nnudge_budget = 5\nwork_probe = \"make -s count-work\"\n")]}]
    with c.session(steps=steps) as s:
        s.mock.steps[0]["blocks"][1]["input"]["file_path"] = os.path.join(s.proj, "config.toml")
        start_and_prompt(s, "add a config file")
        must(s.wait_text("Do you want to create", 40), "create-file dialog")
        time.sleep(1)
        c.cap(s, "question-permission-create-file", "QUESTION",
              "Write tool call creating config.toml waiting for permission", shape="permission-create-file")


def sc_perm_edit(c):
    steps = [{"blocks": [text("I'll make the greeting configurable."),
                         tool("Read", file_path="__PROJ__/app.py")]},
             {"when": "tool_result", "blocks": [
                 tool("Edit", file_path="__PROJ__/app.py", old_string="def greet(name):\n    return 'Hello, ' + name",
                      new_string="def greet(name, greeting='Hello'):\n    return f'{greeting}, {name}'")]}]
    with c.session(steps=steps) as s:
        for st in s.mock.steps:
            for b in st["blocks"]:
                if "tool" in b:
                    b["input"]["file_path"] = os.path.join(s.proj, "app.py")
        start_and_prompt(s, "make the greeting configurable")
        must(s.wait_text("Do you want to make this edit", 40), "edit dialog")
        time.sleep(1)
        c.cap(s, "question-permission-edit-file", "QUESTION",
              "Edit tool call on app.py (diff shown) waiting for permission", shape="permission-edit-file")


def sc_perm_webfetch(c):
    steps = [{"blocks": [text("Let me read the docs."),
                         tool("WebFetch", url="https://example.com/docs/monitor", prompt="Summarise the monitor docs")]}]
    simple_scenario(c, start_and_prompt, steps, "read the monitor docs online", "Do you want", "webfetch dialog",
                    "question-permission-webfetch", "QUESTION",
                    "WebFetch tool call waiting for permission to fetch a URL", shape="permission-webfetch", settle=1)


READ_OUTSIDE_AUTO = "Allow this read outside the working directories?"


def sc_perm_read_outside(c):
    steps = [{"blocks": [text("I'll check the host name file."), tool("Read", file_path="/etc/hostname")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "what is in /etc/hostname?")
        must(s.wait_text(lambda scr: "Do you want" in scr or READ_OUTSIDE_AUTO in scr, 40), "read dialog")
        time.sleep(1)
        # 2.1.332 in auto mode asks its own question, over four numbered options and no `Do you want`
        shape = "permission-read-outside-auto" if READ_OUTSIDE_AUTO in s.screen() else "permission-read"
        c.cap(s, "question-permission-read-outside", "QUESTION",
              "Read tool call on a file outside the project waiting for permission", shape=shape)


ASK_SINGLE = {"questions": [{
    "question": "Which storage backend should the monitor use for its ledger?",
    "header": "Storage",
    "multiSelect": False,
    "options": [
        {"label": "JSON lines", "description": "Append-only file per target, easy to inspect"},
        {"label": "SQLite", "description": "One database file, transactional"},
        {"label": "In memory", "description": "Nothing persisted across restarts"},
    ]}]}

ASK_MULTI = {"questions": [{
    "question": "Which alert channels do you want to enable?",
    "header": "Channels",
    "multiSelect": True,
    "options": [
        {"label": "stdout", "description": "One line per poll on standard output"},
        {"label": "Alert command", "description": "Pipe each escalation to --alert-cmd"},
        {"label": "Findings file", "description": "Append JSON findings to a file"},
    ]}]}

ASK_TABS = {"questions": [
    {"question": "Which storage backend should the monitor use?", "header": "Storage", "multiSelect": False,
     "options": [{"label": "JSON lines", "description": "Append-only file"},
                 {"label": "SQLite", "description": "One database file"}]},
    {"question": "How often should it poll?", "header": "Interval", "multiSelect": False,
     "options": [{"label": "30 seconds", "description": "Snappier, more tmux calls"},
                 {"label": "60 seconds", "description": "The default"},
                 {"label": "5 minutes", "description": "Cheapest"}]},
    {"question": "Which alert channels do you want?", "header": "Alerts", "multiSelect": True,
     "options": [{"label": "stdout", "description": "Poll lines"},
                 {"label": "Alert command", "description": "--alert-cmd"}]},
]}


def sc_ask_single(c):
    steps = [{"blocks": [text("I need one decision first."), tool("AskUserQuestion", **ASK_SINGLE)]}]
    simple_scenario(c, start_and_prompt, steps, "set up the ledger", "Which storage backend", "ask dialog",
                    "question-ask-single", "QUESTION",
                    "AskUserQuestion with one single-select question and three options", shape="ask-user-question-single")


def sc_ask_multi(c):
    steps = [{"blocks": [text("Pick the channels."), tool("AskUserQuestion", **ASK_MULTI)]}]
    simple_scenario(c, start_and_prompt, steps, "set up alerts", "Which alert channels", "ask dialog",
                    "question-ask-multi", "QUESTION",
                    "AskUserQuestion with one multi-select question", shape="ask-user-question-multi")


def sc_ask_tabs(c):
    steps = [{"blocks": [text("A few decisions first."), tool("AskUserQuestion", **ASK_TABS)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "configure the monitor")
        must(s.wait_text("Which storage backend", 40), "ask dialog")
        time.sleep(1.5)
        c.cap(s, "question-ask-tabs", "QUESTION",
              "AskUserQuestion with three questions (tab bar across the top), first tab active",
              shape="ask-user-question-tabs")
        s.send_keys("Enter")
        time.sleep(1.0)
        s.send_keys("Down")
        time.sleep(0.3)
        s.send_keys("Enter")
        time.sleep(1.0)
        c.cap(s, "question-ask-tabs-last-multi", "QUESTION",
              "the same three-question AskUserQuestion after answering two tabs; the multi-select third tab is active",
              shape="ask-user-question-multi")
        s.send_keys("Enter")
        time.sleep(0.5)
        s.send_keys("Right")
        time.sleep(1.0)
        # 2.1.197 asks `Ready to submit your answers?` above the options; 2.1.332 has no question line there
        shape = "ask-user-question-submit" if "Ready to submit your answers?" in s.screen() else "ask-user-question-review"
        c.cap(s, "question-ask-tabs-submit", "QUESTION",
              "the same AskUserQuestion on its final review/submit tab", shape=shape)


PLAN = ("# Plan: structural input-box cut\n\n1. Find the last rule line above the status bar.\n"
        "2. Treat everything between it and the previous rule as typed input.\n"
        "3. Read the spinner row and footer only below that cut.\n4. Add goldens for each shape.\n")


def sc_plan_exit(c):
    steps = [{"blocks": [text("I'll write the plan."), tool("Write", file_path="__PLAN_FILE__", content=PLAN)]},
             {"when": "tool_result", "blocks": [text("The plan is ready."), tool("ExitPlanMode")]}]
    simple_scenario(c, start_and_prompt, steps, "plan the input-box cut",
                    lambda scr: "Exit plan mode?" in scr or "Would you like to proceed" in scr or "Ready to code?" in scr,
                    "plan dialog", "question-plan-approval", "QUESTION",
                    "plan mode: the plan was written to the plan file, then ExitPlanMode asks to approve it",
                    shape="plan-approval", session={"args": ["--permission-mode", "plan"]})


def sc_plan_exit_bare(c):
    steps = [{"blocks": [text("Here is my plan."), tool("ExitPlanMode")]}]
    simple_scenario(c, start_and_prompt, steps, "plan the input-box cut", "Exit plan mode?", "plan dialog",
                    "question-exit-plan-mode-no-plan", "QUESTION",
                    "plan mode: ExitPlanMode called with no plan file written; the bare `Exit plan mode?` dialog",
                    shape="plan-exit-bare", session={"args": ["--permission-mode", "plan"]})


def sc_background_agents(c):
    steps = [{"blocks": [text("Starting two background agents."),
                         tool("Agent", description="Survey the tests", prompt="Survey the tests.",
                              subagent_type="general-purpose", run_in_background=True),
                         tool("Agent", description="Survey the docs", prompt="Survey the docs.",
                              subagent_type="general-purpose", run_in_background=True)]},
             {"when": "user_text", "hold": 600},
             {"when": "user_text", "hold": 600},
             {"when": "tool_result", "blocks": [text("Both surveys are running in the background; "
                                                     "I'll report when they finish.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "survey tests and docs with two background agents")
        must(s.mock.wait_for("reply_done", 2, 60), "main replies")
        must(wait_idle(s, 40), "main turn over")
        time.sleep(2)
        c.cap(s, "working-background-agents", "WORKING",
              "main turn ended but two background Agent sub-agents are still running (their requests held by the mock): "
              "background work is not a stop")


def sc_tip(c):
    steps = [{"blocks": [text("First step done.")]},
             {"when": "user_text", "first_delay": 60, "blocks": [text("Late.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "do the first step")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        s.submit("now the second step")
        must(s.wait_text(working(s), 20), "working")
        must(s.wait_text("Tip:", 25), "a Tip line under the spinner")
        time.sleep(1)
        c.cap(s, "working-with-tip", "WORKING",
              "second turn in progress (first token held back); a `⎿  Tip:` line sits between the spinner row and the box")


def sc_interrupted(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "explain how the monitor classifies a pane")
        must(s.mock.wait_for("text_start"), "stream start")
        time.sleep(5)
        s.send_keys("Escape")
        must(wait_idle(s, 30), "idle after interrupt")
        time.sleep(1)
        c.cap(s, "idle-after-interrupt", "STALLED",
              "a streaming answer was interrupted with Escape; the prompt is idle", work=4)


def sc_tool_turn(c):
    steps = [{"blocks": [text("Let me look at the code."), tool("Read", file_path="__PROJ__/app.py")]},
             {"when": "tool_result", "blocks": [
                 tool("Bash", command="python3 app.py", description="Run the app")]},
             {"when": "tool_result", "blocks": [text("app.py defines greet() and prints 'Hello, world' when run. Nothing left to do.")]}]
    settings = {"permissions": {"allow": ["Bash(python3 app.py)"]}}
    with c.session(steps=steps, settings=settings) as s:
        s.mock.steps[0]["blocks"][1]["input"]["file_path"] = os.path.join(s.proj, "app.py")
        start_and_prompt(s, "check what app.py prints")
        must(s.mock.wait_for("reply_done", 3, 60), "three replies")
        must(wait_idle(s), "idle")
        time.sleep(1)
        c.cap(s, "idle-after-tool-turn", "BLOCKED",
              "a turn that read a file and ran a command finished; nothing left to do (work: 0)", work=0)


def sc_tasks(c):
    t = [tool("TaskCreate", subject="Write the pane normaliser", description="Strip ANSI, CR, NBSP",
              activeForm="Writing the pane normaliser"),
         tool("TaskCreate", subject="Cut the input box", description="Structural cut at the rule lines",
              activeForm="Cutting the input box"),
         tool("TaskCreate", subject="Add golden captures", description="One per question shape",
              activeForm="Adding golden captures")]
    steps = [{"blocks": [text("I'll track this as tasks.")] + t},
             {"when": "tool_result", "blocks": [tool("TaskUpdate", taskId="1", status="completed"),
                                               tool("TaskUpdate", taskId="2", status="in_progress")]},
             {"when": "tool_result", "blocks": [text("The normaliser is done; the input-box cut is in progress. "
                                                     "I'll stop here for review.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "plan and start the classifier work")
        must(s.mock.wait_for("reply_done", 3, 60), "three replies")
        must(wait_idle(s), "idle")
        time.sleep(1.5)
        c.cap(s, "idle-with-task-list", "STALLED",
              "turn ended with a task list showing one completed, one in-progress and one pending task", work=2)


def sc_typed_hint_idle(c):
    steps = [{"blocks": [text("Done: the classifier now reads the live chrome only.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "finish the classifier")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        s.send_text("the dialog footer reads Enter to select · ↑/↓ to navigate · Esc to cancel")
        time.sleep(1.5)
        c.cap(s, "idle-input-holds-question-hint", "STALLED",
              "idle after an answer; the UNSENT input box holds text containing `Enter to select · ↑/↓ to navigate` "
              "(typed with send-keys -l, Enter never pressed)", work=3)


def sc_answered_question(c):
    steps = [{"blocks": [text("One decision first."), tool("AskUserQuestion", **ASK_SINGLE)]},
             {"when": "tool_result", "blocks": [text(
                 "Thanks, JSON lines it is. The ledger dialog is closed now, so there is nothing to navigate to "
                 "while it is open; the select prompt (Enter to select) is gone and the answer was recorded.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "set up the ledger")
        must(s.wait_text("Which storage backend", 40), "ask dialog")
        time.sleep(1.5)
        s.send_keys("Enter")
        time.sleep(1.0)
        # a single question may need an explicit submit
        scr = s.screen()
        if "Submit" in scr and ESC_TO_INTERRUPT not in scr:
            s.send_keys("Enter")
        must(s.mock.wait_for("reply_done", 2, 40), "reply after answer")
        must(wait_idle(s), "idle")
        time.sleep(1)
        c.cap(s, "idle-after-answered-question", "STALLED",
              "an AskUserQuestion was answered; the reply prose says 'there is nothing to navigate to' and the prompt is idle",
              work=5)


def sc_bypass_idle(c):
    steps = [{"blocks": [text("Running the check."), tool("Bash", command="python3 app.py", description="Run the app")]},
             {"when": "tool_result", "blocks": [text("It prints 'Hello, world'. The change is complete.")]}]
    with c.session(steps=steps, bypass=True) as s:
        start_and_prompt(s, "run the app and tell me what it prints")
        must(s.mock.wait_for("reply_done", 2, 60), "replies")
        must(wait_idle(s), "idle")
        time.sleep(1)
        c.cap(s, "idle-bypass-permissions", "BLOCKED",
              "bypass-permissions mode (--dangerously-skip-permissions, IS_SANDBOX=1) idle after a tool-using turn; work: 0",
              work=0)


def sc_bypass_working(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps, bypass=True) as s:
        start_and_prompt(s, "explain the classifier")
        must(s.mock.wait_for("text_start"), "stream")
        time.sleep(7)
        must(ESC_TO_INTERRUPT in s.screen(), "still streaming")
        c.cap(s, "working-bypass-streaming", "WORKING",
              "bypass-permissions mode while a long answer streams slowly")


def sc_background_shell(c):
    steps = [{"blocks": [text("Starting the watcher in the background."),
                         tool("Bash", command="sleep 300", description="Start a long background job",
                              run_in_background=True)]},
             {"when": "tool_result", "blocks": [text("The background job is running; I'll check on it later.")]}]
    settings = {"permissions": {"allow": ["Bash(sleep:*)", "Bash(sleep 300)"]}}
    with c.session(steps=steps, settings=settings) as s:
        start_and_prompt(s, "start the long job in the background")
        must(s.mock.wait_for("reply_done", 2, 60), "replies")
        must(wait_idle(s), "idle")
        time.sleep(2)
        c.cap(s, "working-background-shell", "WORKING",
              "turn ended but a Bash run_in_background shell (`sleep 300`) is still running: background work is not a stop")


def sc_subagent(c):
    steps = [{"blocks": [text("I'll delegate the survey."),
                         tool("Agent", description="Survey the repo", prompt="List every file and summarise it.",
                              subagent_type="general-purpose")]},
             {"when": "user_text", "first_delay": 60, "blocks": [text("Sub-agent survey done.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "survey the repository with a sub-agent")
        must(s.mock.wait_for("first_delay_start", 1, 60), "sub-agent request")
        time.sleep(6)
        c.cap(s, "working-subagent", "WORKING",
              "an Agent (Task) tool call is running a sub-agent whose request is held by the mock (2.1.332 moves it "
              "to the background at once and ends the main turn: `Waiting for 1 background agent to finish`)")


def sc_rejected(c):
    steps = [{"blocks": [text("I'll clean the build dir."), tool("Bash", command="rm -rf build/", description="Remove build dir")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "clean up")
        must(s.wait_text("Do you want to proceed?", 40), "dialog")
        time.sleep(1)
        s.send_keys("Escape")
        must(wait_idle(s, 30), "idle after reject")
        time.sleep(1)
        c.cap(s, "idle-after-rejected-permission", "STALLED",
              "a Bash permission dialog was dismissed with Escape; Claude Code waits for new instructions", work=1)


def sc_long_session(c):
    steps = []
    for i in range(6):
        steps.append({"when": "user_text", "blocks": [text(f"Step {i + 1}: " + LOREM[:300])]})
    with c.session(steps=steps) as s:
        start_and_prompt(s, "step 1")
        for i in range(6):
            must(s.mock.wait_for("reply_done", i + 1, 40), f"reply {i + 1}")
            must(wait_idle(s), "idle")
            if i < 5:
                s.submit(f"continue with step {i + 2}")
        time.sleep(1)
        c.cap(s, "idle-long-scrollback", "STALLED",
              "six question/answer turns; long scrollback, idle prompt at the bottom", work=7)


def sc_accept_edits_idle(c):
    steps = [{"blocks": [text("Understood. I'll wait for the next instruction.")]}]
    with c.session(steps=steps, args=["--permission-mode", "acceptEdits"]) as s:
        start_and_prompt(s, "hold on")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        time.sleep(1)
        c.cap(s, "idle-accept-edits-mode", "BLOCKED", "accept-edits permission mode, idle after a short answer; work: 0", work=0)


def sc_plan_mode_idle(c):
    steps = [{"blocks": [text("In plan mode I will only read and plan. What should I plan?")]}]
    with c.session(steps=steps, args=["--permission-mode", "plan"]) as s:
        start_and_prompt(s, "hello")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        time.sleep(1)
        c.cap(s, "idle-plan-mode", "STALLED", "plan permission mode, idle after a short answer")


def sc_model_picker(c):
    with c.session() as s:
        must(s.wait_ready(60), "welcome")
        time.sleep(1)
        s.submit("/model")
        must(s.wait_text(lambda scr: "Enter to" in scr or "Select model" in scr, 20), "model picker")
        time.sleep(1)
        c.cap(s, "question-model-picker", "QUESTION",
              "the /model selection dialog is open, waiting for a choice", shape="select-model")


def sc_nudge_echo(c):
    nudge = "continue with the next step of the plan; if nothing is left, say DONE"
    steps = [{"blocks": [text("Implemented the first step.")]},
             {"when": "user_text", "first_delay": 60, "blocks": [text("Continuing.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "implement step one")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        s.send_text(nudge)
        time.sleep(0.4)
        s.send_keys("Enter")
        must(s.wait_text(working(s), 20), "working again")
        time.sleep(4)
        c.cap(s, "working-after-nudge", "WORKING",
              "the monitor's nudge was submitted (echoed in the pane as a prompt) and the new turn is working",
              echo=[nudge])


def sc_compacting(c):
    steps = [{"when": "user_text", "blocks": [text(f"Answer {i + 1}: " + LOREM[:240])]} for i in range(3)]
    steps.append({"hold": 60, "blocks": [text("<summary>The user asked three questions about the monitor.</summary>")]})
    with c.session(steps=steps) as s:
        start_and_prompt(s, "question 1")
        for i in range(3):
            must(s.mock.wait_for("reply_done", i + 1, 40), f"reply {i + 1}")
            must(wait_idle(s), "idle")
            if i < 2:
                s.submit(f"question {i + 2}")
        s.submit("/compact")
        must(s.mock.wait_for("hold_start", 1, 30), "compaction request")
        must(s.wait_text("Compacting conversation", 20), "compacting spinner")
        time.sleep(3)
        c.cap(s, "working-compacting", "WORKING",
              "/compact is running: the summarisation request is held by the mock; `Compacting conversation…` with a progress bar")


def _startup_dialog(c, case, needle, scenario, shape, **kw):
    with c.session(**kw) as s:
        must(s.wait_text(needle, 40), needle)
        time.sleep(1.5)
        c.cap(s, case, "QUESTION", scenario, shape=shape)


def sc_trust_folder(c):
    _startup_dialog(c, "question-startup-trust-folder", "Yes, I trust this folder",
                    "first start in an untrusted folder: the trust-this-folder dialog", "startup-trust-folder",
                    trusted=False)


def sc_api_key_confirm(c):
    _startup_dialog(c, "question-startup-custom-api-key", "Do you want to use this API key?",
                    "first start with ANTHROPIC_API_KEY set and not yet approved: the custom API key dialog",
                    "startup-api-key", key_approved=False)


def sc_onboarding_theme(c):
    _startup_dialog(c, "question-startup-theme-picker", "Choose the text style",
                    "first start before onboarding: the theme picker", "startup-theme", onboarded=False)


def sc_bypass_warning(c):
    _startup_dialog(c, "question-startup-bypass-warning", "Yes, I accept",
                    "--dangerously-skip-permissions before it was ever accepted: the Bypass Permissions warning dialog",
                    "startup-bypass-warning", bypass=True, bypass_accepted=False)


ASK_PREVIEW = {"questions": [{
    "question": "Which status line layout should the monitor print?",
    "header": "Layout",
    "multiSelect": False,
    "options": [
        {"label": "Compact", "description": "One line per poll",
         "preview": "MONITOR · host:dev · STALLED · work=7 · nudges 1/5 · 17:42:03"},
        {"label": "Verbose", "description": "Two lines per poll",
         "preview": "MONITOR · host:dev · STALLED\n  work=7 progress=41 nudges 1/5\n  nudged (1/5) at 17:42:03"},
    ]}]}


def sc_ask_preview(c):
    steps = [{"blocks": [text("Pick a layout."), tool("AskUserQuestion", **ASK_PREVIEW)]}]
    simple_scenario(c, start_and_prompt, steps, "choose the status line layout", "Which status line layout",
                    "ask dialog", "question-ask-preview", "QUESTION",
                    "AskUserQuestion whose options carry previews (side-by-side preview pane)",
                    shape="ask-user-question-preview")


def sc_ask_declined(c):
    steps = [{"blocks": [text("One decision first."), tool("AskUserQuestion", **ASK_SINGLE)]},
             {"when": "tool_result", "blocks": [text("Understood, I will wait until you decide on the storage backend.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "set up the ledger")
        must(s.wait_text("Which storage backend", 40), "ask dialog")
        time.sleep(1.0)
        s.send_keys("Escape")
        must(wait_idle(s, 30), "idle after declining")
        time.sleep(1)
        c.cap(s, "idle-after-declined-question", "STALLED",
              "an AskUserQuestion dialog was dismissed with Escape; the prompt is idle", work=2)


def sc_failing_tests(c):
    cmd = "python3 -c \"import sys; print('test_greet ... FAILED'); raise SystemExit('2 tests failed')\""
    tb = "python3 -c \"import json; json.loads('{broken')\""
    steps = [{"blocks": [text("Running the tests."), tool("Bash", command=cmd, description="Run the tests")]},
             {"when": "tool_result", "blocks": [tool("Bash", command=tb, description="Parse the fixture")]},
             {"when": "tool_result", "blocks": [text("Two tests fail and the fixture does not parse (a Traceback from "
                                                     "json). I need the fixture fixed before I can continue.")]}]
    settings = {"permissions": {"allow": ["Bash(python3:*)"]}}
    with c.session(steps=steps, settings=settings) as s:
        start_and_prompt(s, "run the tests")
        must(s.mock.wait_for("reply_done", 3, 60), "replies")
        must(wait_idle(s), "idle")
        time.sleep(1)
        c.cap(s, "idle-after-failing-commands", "STALLED",
              "a turn ran two commands that failed (exit code 1, a Python Traceback) and ended; idle prompt", work=3)


def sc_prose_hint(c):
    steps = [{"blocks": [text("The question dialog's hint line is exactly:\n\n"
                              "Enter to select · ↑/↓ to navigate · Esc to cancel\n\n"
                              "so the matcher requires both markers on one line; the dialog itself is not open now.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "what does the question hint line look like?")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        time.sleep(1)
        c.cap(s, "idle-prose-quotes-question-hint", "STALLED",
              "idle after an answer whose prose quotes the dialog hint line `Enter to select · ↑/↓ to navigate · Esc to "
              "cancel` on a line of its own; no dialog is open", work=1)


NUDGE_HINT = ("monitor nudge: keep going with the next step; if a dialog says Enter to select · ↑/↓ to navigate "
              "then stop and wait for the operator instead of answering it")


def sc_nudge_echo_hint(c):
    steps = [{"blocks": [text("Step one is implemented.")]},
             {"when": "user_text", "blocks": [text("Understood. There is no open dialog; the remaining steps need the "
                                                   "operator's sign-off, so I am stopping here.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "implement step one")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        s.send_text(NUDGE_HINT)
        time.sleep(0.4)
        s.send_keys("Enter")
        must(s.mock.wait_for("reply_done", 2, 30), "reply to the nudge")
        must(wait_idle(s), "idle again")
        time.sleep(1)
        c.cap(s, "idle-after-nudge-echoing-question-hint", "STALLED",
              "the monitor's nudge (which quotes `Enter to select · ↑/↓ to navigate`, hard-wrapped by the pane) was "
              "submitted and answered; idle again, no dialog open", work=2, echo=[NUDGE_HINT])


def sc_nudge_then_permission(c):
    nudge = "monitor nudge: continue with the next step of the plan"
    steps = [{"blocks": [text("Step one is implemented.")]},
             {"when": "user_text", "blocks": [text("Next I'll run the tests."),
                                              tool("Bash", command="python3 -m pytest -q", description="Run the tests")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "implement step one")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle")
        s.send_text(nudge)
        time.sleep(0.4)
        s.send_keys("Enter")
        must(s.wait_text("Do you want to proceed?", 30), "permission dialog")
        time.sleep(1)
        c.cap(s, "question-permission-after-nudge", "QUESTION",
              "after the monitor's nudge was submitted, the agent asks permission to run a Bash command",
              shape="permission-bash", echo=[nudge])


# -- auto mode (2.1.283+): screens only it draws ----------------------------
# Auto mode checks each tool call on Anthropic's server; behind the loopback mock (as behind a
# gateway) the check cannot get through, and Claude Code puts a dialog of its own where the box was.

AUTO = ["--permission-mode", "auto"]
AUTO_DIALOG = "Enter to stay in auto mode"
PYTEST = [{"blocks": [text("I'll run the test suite."),
                      tool("Bash", command="python3 -m pytest -q tests/", description="Run the test suite")]},
          {"when": "tool_result", "blocks": [text("The tests ran.")]}]


def _auto_check(s):
    start_and_prompt(s, "run the tests")
    must(s.wait_text(AUTO_DIALOG, 40), "auto mode's check-unavailable dialog")
    time.sleep(1.5)


def sc_auto_check_dialog(c):
    with c.session(steps=PYTEST, args=AUTO) as s:
        _auto_check(s)
        c.cap(s, "question-auto-mode-check-unavailable", "QUESTION",
              "auto mode: a Bash call needs the safety check, which cannot reach its server through the mock; "
              "the `Auto mode can't check actions in this session` dialog waits for Enter, shift+Tab or Esc",
              shape="auto-mode-check-unavailable")


def sc_auto_check_approve(c):
    with c.session(steps=PYTEST, args=AUTO) as s:
        _auto_check(s)
        s.send_keys("Enter")
        must(s.wait_text("Do you want to proceed?", 20), "the permission dialog after staying in auto mode")
        time.sleep(1.5)
        c.cap(s, "question-permission-bash-unnumbered", "QUESTION",
              "auto mode without its safety check: Enter chose to stay in auto mode, so the Bash call asks for "
              "approval in a dialog whose options are unnumbered (`❯ No` / `Yes`)", shape="permission-bash-unnumbered")


def sc_auto_check_declined(c):
    with c.session(steps=PYTEST, args=AUTO) as s:
        _auto_check(s)
        s.send_keys("Escape")
        must(wait_idle(s, 30), "idle after Esc on the auto-mode dialog")
        time.sleep(1)
        c.cap(s, "idle-after-auto-check-declined", "STALLED",
              "auto mode's check-unavailable dialog was dismissed with Esc: the Bash call did not run, the turn was "
              "interrupted, still in auto mode", work=1)


def sc_auto_check_left(c):
    with c.session(steps=PYTEST, args=AUTO) as s:
        _auto_check(s)
        s.send_keys("BTab")
        must(s.wait_text(lambda scr: has_input_box(scr) and "accept edits on" in scr, 30),
             "idle in accept edits mode")
        time.sleep(1.5)
        c.cap(s, "idle-after-leaving-auto-mode", "STALLED",
              "on auto mode's check-unavailable dialog shift+Tab left for accept edits mode: the turn stopped, "
              "the Bash call did not run", work=1)


# -- shapes nobody had captured: vim editor mode, a notice of Claude Code's own, a dialog taller than the pane

# `"editorMode": "vim"` in settings.json: the footer shows `-- INSERT --` / `-- NORMAL --` and never
# `esc to interrupt`, so a reply streaming with its spinner row gone shows no live chrome at all.
VIM = {"editorMode": "vim"}


def vim_mode(scr):
    return "-- INSERT --" in scr or "-- NORMAL --" in scr


def sc_vim_streaming(c):
    steps = [{"delta_delay": 0.15, "blocks": [text(RULES, chunk=20)]}]
    with c.session(steps=steps, settings=VIM) as s:
        start_and_prompt(s, "list the monitor rules")
        must(s.mock.wait_for("text_start"), "stream start")
        must(s.wait_text(lambda scr: scr.count("The monitor reads") >= 12, 40), "twelve lines streamed")
        scr = s.screen()
        must(vim_mode(scr) and ESC_TO_INTERRUPT not in scr and not SPINNER_ROW.search(scr),
             "vim mode, streaming with no spinner row and no esc to interrupt")
        c.cap(s, "working-vim-streaming-no-spinner", "WORKING",
              "vim editor mode: a many-line answer is streaming; the spinner row has vanished and the footer shows "
              "`-- INSERT --`, never esc to interrupt, so the last `●` reply with no turn-end line under it is the "
              "only sign of the turn")


def sc_vim_idle(c):
    steps = [{"blocks": [text("The project has two files: README.md describes it and app.py defines greet(name).")]}]
    with c.session(steps=steps, settings=VIM) as s:
        start_and_prompt(s, "what does this project do?")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_settled(s, lambda scr: has_input_box(scr) and vim_mode(scr) and " for " in scr), "idle, vim mode")
        c.cap(s, "idle-vim-after-text-answer", "STALLED",
              "vim editor mode: a text answer landed, the turn ended (`✻ … for 0s`), the box is empty over `-- INSERT --`")


def sc_vim_permission(c):
    steps = [{"blocks": [text("I'll run the test suite."),
                         tool("Bash", command="python3 -m pytest -q tests/", description="Run the test suite")]}]
    with c.session(steps=steps, settings=VIM) as s:
        start_and_prompt(s, "run the tests")
        must(s.wait_text("Do you want to proceed?", 40), "bash permission dialog")
        time.sleep(1)
        c.cap(s, "question-vim-permission-bash", "QUESTION",
              "vim editor mode: Bash tool call `python3 -m pytest -q tests/` waiting for permission",
              shape=permission_shape(s.screen(), "permission-bash"))


# /feedback is turned off by CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC; without it Claude Code tries
# api.anthropic.com, raw.githubusercontent.com and others, all refused by the mock-as-proxy (logged).
NOTICE_KEYS = "Enter to continue"


def sc_feedback_notice(c):
    steps = [{"blocks": [text("The project has two files: README.md describes it and app.py defines greet(name).")]}]
    env = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": None}
    with c.session(steps=steps, env_extra=env) as s:
        start_and_prompt(s, "what does this project do?")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle after answer")
        s.send_text("/feedback")
        time.sleep(1)
        s.send_keys("Enter")
        must(s.wait_text(NOTICE_KEYS, 20), "the feedback notice")
        time.sleep(1.5)
        c.cap(s, "question-notice-enter-to-continue", "QUESTION",
              "`/feedback` after a text answer: Claude Code's own notice (`Submit feedback / bug report`, an empty "
              "text field, `Enter to continue · Esc to cancel`) is drawn where the box was; the session file says "
              "waiting, dialog open", shape="notice-enter-to-continue")


def sc_auto_check_tall(c):
    """A dialog taller than the pane runs off its bottom, key line and all: nothing on screen asks, and
    no box is there. The pane alone is a stop that must never be typed into (`typing: unsafe`); that it
    is a question only Claude Code's session file says (`waiting`, `dialog open`), which the session
    monitor holds as a QUESTION for as long as no box is on screen (crates/watchdog/tests/session.rs)."""
    with c.session(steps=PYTEST, args=AUTO) as s:
        start_and_prompt(s, "run the tests")
        must(s.wait_text("Auto mode can't check actions", 40), "auto mode's check-unavailable dialog")
        time.sleep(2)
        must(AUTO_DIALOG not in s.screen() and not has_input_box(s.screen()), "the dialog cut off below the pane")
        c.cap(s, "question-dialog-taller-than-pane", "STALLED",
              "auto mode's check-unavailable dialog in a pane too small for it: its key line (`Enter to stay in auto "
              "mode · … · Esc to cancel`) is cut off below the pane and no box is on screen; the Bash call waits "
              "behind it and the session file says waiting, dialog open. The pane alone reads as a stop that is "
              "never typed into; the session monitor makes it a QUESTION from the session file",
              typing="unsafe")


# -- the seed's three named goldens ------------------------------------------

def sc_golden_question(c):
    q = {"questions": [{
        "question": "The classifier is done. Should the monitor page on QUESTION immediately or after one confirming poll?",
        "header": "Paging",
        "multiSelect": False,
        "options": [
            {"label": "Immediately", "description": "Escalate on the first poll that sees the dialog"},
            {"label": "After 2 polls", "description": "Wait for a second identical capture"},
        ]}]}
    steps = [{"blocks": [text("Before wiring the alert funnel I need a decision."), tool("AskUserQuestion", **q)]}]
    simple_scenario(c, start_and_prompt, steps, "wire the alert funnel", "Should the monitor page", "ask dialog",
                    "GOLDEN-question-real", "QUESTION",
                    "bypass-permissions session; a live AskUserQuestion dialog (single-select) waiting for the operator",
                    shape="ask-user-question-single", session={"bypass": True})


def sc_golden_stalled(c):
    steps = [{"blocks": [text("Designing /monitor on the stream substrate: two background agents survey the code."),
                         tool("Agent", description="Survey stream.rs", prompt="Survey stream.rs.",
                              subagent_type="general-purpose", run_in_background=True),
                         tool("Agent", description="Survey monitor.rs", prompt="Survey monitor.rs.",
                              subagent_type="general-purpose", run_in_background=True)]},
             {"when": "user_text", "first_delay": 3, "blocks": [text("stream.rs surveyed.")]},
             {"when": "user_text", "first_delay": 3, "blocks": [text("monitor.rs surveyed.")]},
             {"when": "tool_result", "blocks": [text("Both surveys are running in the background.")]},
             # 2.1.197 starts one turn per finished agent; 2.1.332 batches both notifications into one
             {"when": "user_text", "blocks": [text("Survey results in: /monitor classifies panes into the four states.")]},
             {"when": "user_text", "blocks": [text("Done: /monitor now classifies panes into QUESTION, STALLED, "
                                                   "BLOCKED and WORKING on the stream substrate. The answer is in.")]}]
    with c.session(steps=steps, bypass=True) as s:
        start_and_prompt(s, "design /monitor on the stream substrate")
        must(s.mock.wait_for("reply_done", 5, 60), "the replies to the prompt and to the agents' notifications")
        must(wait_idle(s), "idle")
        time.sleep(6)
        c.cap(s, "GOLDEN-stalled-real", "STALLED",
              "bypass-permissions session idle after the answer landed, empty prompt box; its two background agents "
              "had finished (listed under the footer). 2.1.197 prints `← for agents · ↓ to manage`, not the seed's `← 2 agents`")


def sc_bypass_answer(c):
    steps = [{"blocks": [text("Designing /monitor on the stream substrate."),
                         tool("Bash", command="ls", description="List files")]},
             {"when": "tool_result", "blocks": [text("Done: /monitor now classifies panes into QUESTION, STALLED, "
                                                     "BLOCKED and WORKING. The answer is in.")]}]
    with c.session(steps=steps, bypass=True) as s:
        start_and_prompt(s, "design /monitor on the stream substrate")
        must(s.mock.wait_for("reply_done", 2, 60), "replies")
        must(wait_idle(s), "idle")
        time.sleep(1.5)
        c.cap(s, "idle-bypass-after-answer", "STALLED",
              "bypass-permissions session idle after a short tool-using turn, empty prompt box, no agents")


SELF_ECHO = "q=$(grep -cE 'Enter to select.*to navigate' \"panes/$s.txt\")"


def sc_golden_self_echo(c):
    cmd = ("for s in lead worker; do " + SELF_ECHO + "; echo \"$s $q\"; done; sleep 45")
    steps = [{"blocks": [text("Counting the question markers in each captured pane:"),
                         tool("Bash", command=cmd, description="Count question markers per pane")]},
             {"when": "tool_result", "blocks": [text("Counted.")]}]
    prompt = "count question markers: " + SELF_ECHO
    with c.session(steps=steps, bypass=True) as s:
        os.makedirs(os.path.join(s.proj, "panes"), exist_ok=True)
        start_and_prompt(s, prompt)
        must(s.mock.wait_for("tool_sent"), "tool call")
        must(s.wait_text("grep -cE", 20), "command shown")
        time.sleep(5)
        must(ESC_TO_INTERRUPT in s.screen(), "still working")
        c.cap(s, "GOLDEN-self-echo-false-question", "WORKING",
              "bypass-permissions session genuinely working: a Bash call running `" + SELF_ECHO +
              "` (then sleep 45); the monitor-typed prompt with the same line is echoed above it",
              echo=[prompt])


def sc_usage_limit_weekly_choice(c, keys, needle, case, scenario):
    """The weekly-limit dialog, answered with `keys`, until `needle` is on screen."""
    steps = [limit_429("seven_day", 3 * 86400)]
    with c.session(steps=steps, oauth=True, env_extra=LIMIT_TZ) as s:
        start_and_prompt(s, "add a test for greet()")
        must(s.wait_text("What do you want to do?", 60), "the limit dialog")
        time.sleep(1)
        for k in keys:
            s.send_keys(k)
            time.sleep(0.7)
        must(s.wait_text("What do you want to do?", 20, gone=True), "the dialog answered")
        must(s.wait_text(needle, 20), needle)
        time.sleep(1.5)
        c.cap(s, case, "STALLED", scenario)


def sc_usage_limit_weekly_stopped(c):
    sc_usage_limit_weekly_choice(
        c, ["Enter"], has_input_box, "usage-limit-weekly-stopped",
        "the weekly-limit dialog (OAuth login, HTTP 429, reset in 3 days) answered `1. Stop and wait for limit to "
        "reset`: only `You've hit your weekly limit · resets …` is left above an idle box, no footer notice")


def sc_usage_limit_weekly_waiting(c):
    sc_usage_limit_weekly_choice(
        c, ["Down", "Enter"], "Continuing automatically at", "usage-limit-weekly-waiting",
        "the weekly-limit dialog (OAuth login, HTTP 429, reset in 3 days) answered `2. Wait here, then continue "
        "automatically`: `Claude Code will continue automatically at …` in the transcript and the limit footer "
        "`Continuing automatically at … · Esc to cancel` under the box")


# name -> (function, sizes)
SCENARIOS = {
    "welcome": (sc_welcome, ALL),
    "text-answer": (sc_text_answer, ALL),
    "first-token": (sc_first_token, ALL),
    "slow-stream": (sc_slow_stream, ALL),
    "thinking": (sc_thinking, ("m",)),
    "stream-no-spinner": (sc_stream_no_spinner, ALL),
    "stream-no-spinner-typed": (sc_stream_no_spinner_typed, ("m",)),
    "bash-running": (sc_bash_running, ("m", "s")),
    "api-retry": (sc_api_retry, ("m", "l")),
    "api-retry-500": (sc_api_retry_500, ("m",)),
    "api-529-gave-up": (sc_api_529_gave_up, ("m",)),
    "plan-exit-bare": (sc_plan_exit_bare, ("m",)),
    "background-agents": (sc_background_agents, ("m",)),
    "tip": (sc_tip, ("m", "s")),
    "api-gave-up": (sc_api_gave_up, ("m",)),
    "typed-while-working": (sc_typed_while_working, ("m", "s")),
    "queued-message": (sc_queued_message, ("m",)),
    "perm-bash": (sc_perm_bash, ALL),
    "perm-write": (sc_perm_write, ("m", "s")),
    "perm-edit": (sc_perm_edit, ALL),
    "perm-webfetch": (sc_perm_webfetch, ("m",)),
    "perm-read-outside": (sc_perm_read_outside, ("m",)),
    "ask-single": (sc_ask_single, ALL),
    "ask-multi": (sc_ask_multi, ("m", "s")),
    "ask-tabs": (sc_ask_tabs, ("m", "l")),
    "plan-exit": (sc_plan_exit, ("m", "s")),
    "interrupted": (sc_interrupted, ("m",)),
    "tool-turn": (sc_tool_turn, ("m", "l")),
    "tasks": (sc_tasks, ("m",)),
    "typed-hint-idle": (sc_typed_hint_idle, ("m", "s")),
    "answered-question": (sc_answered_question, ("m",)),
    "bypass-idle": (sc_bypass_idle, ("m",)),
    "bypass-working": (sc_bypass_working, ("m",)),
    "background-shell": (sc_background_shell, ("m",)),
    "subagent": (sc_subagent, ("m",)),
    "rejected": (sc_rejected, ("m",)),
    "long-session": (sc_long_session, ("m", "s")),
    "accept-edits-idle": (sc_accept_edits_idle, ("m",)),
    "plan-mode-idle": (sc_plan_mode_idle, ("m",)),
    "model-picker": (sc_model_picker, ("m",)),
    "compacting": (sc_compacting, ("m",)),
    "trust-folder": (sc_trust_folder, ("m", "s")),
    "api-key-confirm": (sc_api_key_confirm, ("m",)),
    "onboarding-theme": (sc_onboarding_theme, ("m",)),
    "bypass-warning": (sc_bypass_warning, ("m",)),
    "ask-preview": (sc_ask_preview, ("m", "l")),
    "ask-declined": (sc_ask_declined, ("m",)),
    "failing-tests": (sc_failing_tests, ("m",)),
    "prose-hint": (sc_prose_hint, ("m", "s")),
    "nudge-echo": (sc_nudge_echo, ("m",)),
    "nudge-echo-hint": (sc_nudge_echo_hint, ("m", "s")),
    "nudge-then-permission": (sc_nudge_then_permission, ("m",)),
    "golden-question": (sc_golden_question, ("m",)),
    "golden-stalled": (sc_golden_stalled, ("m",)),
    "bypass-answer": (sc_bypass_answer, ("m",)),
    "golden-self-echo": (sc_golden_self_echo, ("m",)),
    "auto-check-dialog": (sc_auto_check_dialog, ("m", "s")),
    "auto-check-approve": (sc_auto_check_approve, ("m", "s")),
    "auto-check-declined": (sc_auto_check_declined, ("m",)),
    "auto-check-left": (sc_auto_check_left, ("m",)),
    "vim-streaming": (sc_vim_streaming, ("m",)),
    "vim-idle": (sc_vim_idle, ("m",)),
    "vim-permission": (sc_vim_permission, ("m",)),
    "feedback-notice": (sc_feedback_notice, ("m",)),
    "auto-check-tall": (sc_auto_check_tall, ("xs",)),
    "usage-limit-5h": (sc_usage_limit_5h, ("m", "s")),
    "usage-limit-cancelled": (sc_usage_limit_cancelled, ("m",)),
    "usage-limit-resumed": (sc_usage_limit_resumed, ("m",)),
    "usage-limit-api-key": (sc_usage_limit_api_key, ("m",)),
    "usage-limit-weekly": (sc_usage_limit_weekly, ("m", "s")),
    "usage-limit-weekly-stopped": (sc_usage_limit_weekly_stopped, ("m",)),
    "usage-limit-weekly-waiting": (sc_usage_limit_weekly_waiting, ("m",)),
}


def main(argv=None):
    ap = capctx.parser(__doc__, jobs=4, out_default=os.path.join(ROOT, "testdata", "panes", "claude"),
                       size_help="WxH: run the named scenarios at this size (without --scenario: the scenarios "
                                 "that list it); default: each scenario's own sizes")
    ap.add_argument("--claude", help="path to a claude binary to run instead of installing --version")
    ap.add_argument("--permission-mode", metavar="MODE",
                    help="start claude with --permission-mode MODE (one of the release's own choices; "
                         "scenarios that choose their own mode keep it); default: manual where the release "
                         "has it (the scenarios were written for a mode that asks before each tool), else "
                         "the release's default")
    a = ap.parse_args(argv)
    global PERMISSION_MODE
    PERMISSION_MODE = a.permission_mode

    def prepare():
        global PERMISSION_MODE
        binary = a.claude or ensure_claude(capctx.version_of(a, "claude"))
        version = claude_version(binary)
        modes = permission_modes(binary)
        if not a.permission_mode and "manual" in modes:
            # 2.1.283+ starts in auto mode, where most tools never ask: the
            # permission scenarios would wait for a dialog that never comes.
            a.permission_mode = PERMISSION_MODE = "manual"
        if a.permission_mode:
            if a.permission_mode not in modes:
                print(f"--permission-mode {a.permission_mode}: Claude Code {version} has no such mode "
                      f"(its --permission-mode choices: {', '.join(modes) or 'none listed'})", file=sys.stderr)
                raise SystemExit(2)
        return binary, version

    def flags():
        return f" --permission-mode {a.permission_mode}" if a.permission_mode else ""
    return capctx.run(a, SCENARIOS, CLI, prepare, size_examples="80x24, 120x40 or 200x50", driver_flags=flags)


if __name__ == "__main__":
    sys.exit(main())
