#!/usr/bin/env python3
"""Scenario driver: regenerate the real OpenCode captures in testdata/panes/opencode/.

    python3 xtask/capture/scenarios_opencode.py [--scenario NAME[,NAME...]] [--size WxH] [--jobs N] [--list]

(`cargo xtask capture --agent opencode` runs exactly this.) Each scenario starts
the real `opencode` TUI (npm package opencode-ai, installed into
target/capture/opencode/<version>/ when missing) in a private tmux server against the
scripted Chat Completions mock in mock_openai_chat.py, configured as an
OpenAI-compatible provider (`@ai-sdk/openai-compatible` with `baseURL` on
127.0.0.1) in a throwaway `$XDG_CONFIG_HOME/opencode/opencode.json`, and
captures the pane three ways plus a `meta` file.
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import openai_runner  # noqa: E402
from harness_openai import API_KEY, AgentSession  # noqa: E402
import capctx  # noqa: E402
from capctx import ROOT, cli_version, must, npm_install, simple_scenario, text, tool, wait_settled  # noqa: E402

AGENT = "opencode"
NPM_PACKAGE = capctx.PACKAGES["opencode"]
ALL = ("m", "s")

BUSY = "esc interrupt"
PERMISSION = "Permission required"


def ensure(version):
    prefix = capctx.install_prefix(AGENT, version)
    return npm_install(prefix, NPM_PACKAGE, os.path.join(prefix, "node_modules", ".bin", "opencode"), version)


def version(bin_path):
    return cli_version(bin_path, "last")


def _seed(permission, extra):
    def seed(s):
        d = os.path.join(s.home, ".config", "opencode")
        os.makedirs(d, exist_ok=True)
        cfg = {
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": f"http://127.0.0.1:{s.mock.port}/v1", "apiKey": API_KEY},
                "models": {"gpt-4o": {"name": "GPT-4o (mock)", "tool_call": True}},
            }},
            "model": "mock/gpt-4o",
            "small_model": "mock/gpt-4o",
            "autoupdate": False,
            "share": "disabled",
            "permission": permission,
        }
        cfg.update(extra)
        with open(os.path.join(d, "opencode.json"), "w") as f:
            json.dump(cfg, f, indent=2)
    return seed


def _env(question_tool):
    def env(s):
        e = {k: "1" for k in ("OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH",
                              "OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_LSP_DOWNLOAD",
                              "OPENCODE_DISABLE_SHARE", "OPENCODE_DISABLE_CLAUDE_CODE")}
        if question_tool:
            e["OPENCODE_ENABLE_QUESTION_TOOL"] = "1"
        return e
    return env


def session(ctx, permission=None, config=None, question_tool=True, **kw):
    permission = permission or {"bash": "ask", "edit": "ask"}
    return AgentSession(lambda s: [ctx.bin], seed=_seed(permission, config or {}), env_extra=_env(question_tool), **kw)


def idle(scr):
    """The input box is live (its bottom edge `╹▀▀…` is on screen), no turn renders, no dialog."""
    return "╹▀▀▀▀" in scr and BUSY not in scr and PERMISSION not in scr


def wait_idle(s, timeout=60):
    return wait_settled(s, idle, timeout, settle=1.5)


def start_and_prompt(s, prompt):
    s.start()
    must(s.wait_text(idle, 60), "idle input box at startup")
    time.sleep(1.0)
    s.submit(prompt)


LOREM = (
    "Here is how the monitor decides what a pane means. First it normalises the capture: ANSI escapes, "
    "carriage returns and no-break spaces are stripped so that every rule sees plain text. Then it finds the "
    "input box by its structure, because whatever a person typed there is never a signal. Only then does it "
    "read the live chrome at the tail: the activity row and the status bar. A question is matched by its "
    "structure, never by a bare word, and a stop is split into stalled and blocked by the work probe. "
)


# ---------------------------------------------------------------------------
# Scenarios


def sc_welcome(c):
    with c.session() as s:
        must(s.wait_text(idle, 60), "welcome screen")
        time.sleep(2)
        c.cap(s, "idle-welcome", "STALLED", "fresh start: the logo and an empty input box, no turn yet")


def sc_text_answer(c):
    steps = [{"blocks": [text("The project has two files: README.md describes it and app.py defines greet(name), "
                              "which returns a greeting. Running app.py prints 'Hello, world'.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "what does this project do?")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_idle(s), "idle after answer")
        c.cap(s, "idle-after-text-answer", "STALLED", "a plain text answer landed; the turn ended, the input box is empty")


def sc_first_token(c):
    steps = [{"first_delay": 40, "blocks": [text("Late answer.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "summarise the repository layout")
        must(s.mock.wait_for("first_delay_start"), "request")
        must(s.wait_text(BUSY, 20), "busy footer")
        time.sleep(6)
        c.cap(s, "working-before-first-token", "WORKING",
              "request sent, the mock holds the first token for 40 s; progress bar and `esc interrupt` in the footer")


def sc_stream(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "explain how the monitor classifies a pane")
        must(s.mock.wait_for("text_start"), "stream start")
        time.sleep(8)
        must(BUSY in s.screen(), "still streaming")
        c.cap(s, "working-streaming-text", "WORKING", "a long answer streams slowly (6 characters every 0.25 s)")


def sc_bash_running(c):
    steps = [
        {"blocks": [text("Running the slow check."), tool("bash", command="sleep 30", description="Wait 30 seconds")]},
        {"when": "tool_result", "blocks": [text("The check finished.")]},
    ]
    with c.session(steps=steps, permission={"bash": "allow", "edit": "ask"}) as s:
        start_and_prompt(s, "run the slow check")
        must(s.mock.wait_for("tool_sent"), "tool call")
        must(s.wait_text("sleep 30", 20), "command on screen")
        time.sleep(6)
        must(BUSY in s.screen(), "still running")
        c.cap(s, "working-bash-running", "WORKING", "an allowed bash tool call `sleep 30` is running")


def sc_perm_bash(c):
    steps = [{"blocks": [text("I'll run the tests."),
                         tool("bash", command="python3 -m pytest -q", description="Run the test suite")]}]
    simple_scenario(c, start_and_prompt, steps, "run the tests", PERMISSION, "permission dialog",
                    "question-permission-bash", "QUESTION", "bash tool call `python3 -m pytest -q` waits for permission",
                    shape="opencode-permission-bash", timeout=30)


def sc_perm_edit(c):
    steps = [{"blocks": [text("I'll make the greeting friendlier."),
                         tool("edit", filePath="__PROJ__/app.py", oldString="return 'Hello, ' + name",
                              newString="return 'Hello there, ' + name + '!'")]}]
    simple_scenario(c, start_and_prompt, steps, "make the greeting friendlier", PERMISSION, "permission dialog",
                    "question-permission-edit", "QUESTION", "edit tool call on app.py waits for permission (diff shown)",
                    shape="opencode-permission-edit", timeout=30)


def sc_ask(c):
    q = {"questions": [{"question": "Where should the monitor store its state?", "header": "Storage",
                        "options": [{"label": "SQLite", "description": "One file, transactional"},
                                    {"label": "JSON files", "description": "Plain files, easy to inspect"},
                                    {"label": "In memory", "description": "Nothing survives a restart"}]}]}
    steps = [{"blocks": [text("One decision first."), tool("question", **q)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "set up state storage")
        must(s.mock.wait_for("tool_sent"), "question tool call")
        must(s.wait_text("SQLite", 30), "question on screen")
        time.sleep(1.5)
        c.cap(s, "question-ask", "QUESTION", "question tool (OPENCODE_ENABLE_QUESTION_TOOL=1): one question, three options",
              shape="opencode-question")


def sc_ask_multi(c):
    q = {"questions": [{"question": "Which channels should alerts go to?", "header": "Channels", "multiple": True,
                        "options": [{"label": "stdout", "description": "Print to the terminal"},
                                    {"label": "desktop", "description": "A desktop notification"},
                                    {"label": "webhook", "description": "POST to a URL"}]}]}
    steps = [{"blocks": [tool("question", **q)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "configure alerts")
        must(s.mock.wait_for("tool_sent"), "question tool call")
        must(s.wait_text("webhook", 30), "question on screen")
        time.sleep(1.5)
        c.cap(s, "question-ask-multi", "QUESTION", "question tool with `multiple: true`: checkboxes",
              shape="opencode-question-multi")


def sc_tool_turn(c):
    steps = [
        {"blocks": [text("Checking the files."), tool("bash", command="ls", description="List files")]},
        {"when": "tool_result", "blocks": [text("There are two files: README.md and app.py. Nothing else to do.")]},
    ]
    with c.session(steps=steps, permission={"bash": "allow", "edit": "ask"}) as s:
        start_and_prompt(s, "list the files")
        must(s.mock.wait_for("reply_done", 2), "second reply")
        must(wait_idle(s), "idle after the tool turn")
        c.cap(s, "idle-after-tool-turn", "BLOCKED", "a turn that ran `ls` (allowed) and answered; idle, no work left",
              work=0)


def sc_rejected(c):
    steps = [{"blocks": [text("I'll delete the build dir."),
                         tool("bash", command="rm -rf build", description="Remove the build directory")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "clean the build")
        must(s.wait_text(PERMISSION, 30), "permission dialog")
        time.sleep(1.0)
        s.send_keys("Escape")
        must(wait_idle(s, 30), "idle after rejecting")
        c.cap(s, "idle-after-rejected-permission", "STALLED", "a bash permission dialog dismissed with Esc; idle",
              work=1)


SCENARIOS = {
    "welcome": (sc_welcome, ALL),
    "text-answer": (sc_text_answer, ALL),
    "first-token": (sc_first_token, ALL),
    "stream": (sc_stream, ALL),
    "bash-running": (sc_bash_running, ALL),
    "perm-bash": (sc_perm_bash, ALL),
    "perm-edit": (sc_perm_edit, ALL),
    "ask": (sc_ask, ALL),
    "ask-multi": (sc_ask_multi, ALL),
    "tool-turn": (sc_tool_turn, ALL),
    "rejected": (sc_rejected, ("m",)),
}


if __name__ == "__main__":
    sys.exit(openai_runner.main(sys.modules[__name__]))
