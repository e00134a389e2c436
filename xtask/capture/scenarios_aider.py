#!/usr/bin/env python3
"""Scenario driver: regenerate the real Aider captures in testdata/panes/aider/.

    python3 xtask/capture/scenarios_aider.py [--scenario NAME[,NAME...]] [--size WxH] [--jobs N] [--list]

(`cargo xtask capture --agent aider` runs exactly this.) Each scenario starts
the real `aider` (PyPI package aider-chat, installed into a venv at
target/capture/aider/<version>/ when missing) in a private tmux server against the
scripted Chat Completions mock in mock_openai_chat.py (`--model openai/gpt-4o`,
`OPENAI_API_BASE=http://127.0.0.1:<port>/v1`), and captures the pane three ways
plus a `meta` file. Aider sends no tools: every request is a main-loop request,
its edits are SEARCH/REPLACE blocks in the reply text, and it asks its yes/no
questions inline at its prompt.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import openai_runner  # noqa: E402
from harness_openai import API_KEY, AgentSession  # noqa: E402
import capctx  # noqa: E402
from capctx import ROOT, cli_version, must, simple_scenario, text, wait_settled  # noqa: E402

AGENT = "aider"
PIP_PACKAGE = capctx.PACKAGES["aider"]
ALL = ("m", "s")


def ensure(version):
    """aider of that release, pip-installed into a venv at target/capture/aider/<version>/ when missing."""
    venv = capctx.install_prefix(AGENT, version)
    binary = os.path.join(venv, "bin", "aider")
    if not os.path.exists(binary):
        print(f"installing {PIP_PACKAGE}=={version} into {venv} (a few minutes) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", f"{PIP_PACKAGE}=={version}"], check=True)
    return binary


def version(bin_path):
    return cli_version(bin_path, "last", timeout=120)


def _seed(s, binary):
    # git identity, so aider does not ask for one
    with open(os.path.join(s.home, ".gitconfig"), "w") as f:
        f.write("[user]\n\tname = cap\n\temail = cap@localhost\n")
    # aider fetches litellm's model price list at start unless its cache is fresh: seed the cache from
    # the copy litellm ships, so no outbound call is even attempted for it
    venv = os.path.dirname(os.path.dirname(binary))
    shipped = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "litellm",
                                     "model_prices_and_context_window_backup.json"))
    if shipped:
        cache = os.path.join(s.home, ".aider", "caches")
        os.makedirs(cache, exist_ok=True)
        shutil.copyfile(shipped[0], os.path.join(cache, "model_prices_and_context_window.json"))


def _env(s):
    return {
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_API_BASE": f"http://127.0.0.1:{s.mock.port}/v1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def session(ctx, gitignore_check=False, extra_args=(), **kw):
    def command(s):
        argv = [ctx.bin, "--model", "openai/gpt-4o", "--no-check-update", "--no-analytics",
                "--no-show-release-notes", "--no-auto-commits"]
        if not gitignore_check:
            argv.append("--no-gitignore")
        return argv + list(extra_args)
    return AgentSession(command, seed=lambda s: _seed(s, ctx.bin), env_extra=_env, main_if=lambda body: True, **kw)


def last_line(scr):
    lines = [l for l in scr.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def at_prompt(scr):
    """Aider waits for input: its `>` prompt is the last line on screen."""
    l = last_line(scr)
    return l == ">" or l.startswith("> ")


def asking(scr):
    return "[Yes]:" in last_line(scr) or "[No]:" in last_line(scr)


def wait_prompt(s, timeout=60):
    return wait_settled(s, at_prompt, timeout)


def start_and_prompt(s, prompt):
    s.start()
    must(wait_prompt(s, 90), "aider prompt at startup")
    time.sleep(0.5)
    s.submit(prompt)


LOREM = (
    "Here is how the monitor decides what a pane means. First it normalises the capture: ANSI escapes, "
    "carriage returns and no-break spaces are stripped so that every rule sees plain text. Then it finds the "
    "input line by its structure, because whatever a person typed there is never a signal. Only then does it "
    "read the live chrome at the tail. A question is matched by its structure, never by a bare word, and a "
    "stop is split into stalled and blocked by the work probe.\n\n"
)

NEW_FILE = ("I'll add a config file.\n\nconfig.toml\n```toml\n<<<<<<< SEARCH\n=======\n[monitor]\ninterval = 5\n"
            ">>>>>>> REPLACE\n```\n")
EDIT_APP = ("I'll make the greeting friendlier.\n\napp.py\n```python\n<<<<<<< SEARCH\n    return 'Hello, ' + name\n"
            "=======\n    return 'Hello there, ' + name + '!'\n>>>>>>> REPLACE\n```\n")


# ---------------------------------------------------------------------------
# Scenarios


def sc_welcome(c):
    with c.session() as s:
        must(wait_prompt(s, 90), "welcome prompt")
        time.sleep(1.5)
        c.cap(s, "idle-welcome", "STALLED", "fresh start: the banner and an empty `>` prompt, no turn yet")


def sc_gitignore(c):
    with c.session(gitignore_check=True) as s:
        must(s.wait_text(asking, 90), "gitignore question")
        time.sleep(1.5)
        c.cap(s, "question-startup-gitignore", "QUESTION",
              "start without --no-gitignore: `Add .aider* to .gitignore (recommended)? (Y)es/(N)o [Yes]:` inline",
              shape="aider-confirm-gitignore")


def sc_text_answer(c):
    steps = [{"blocks": [text("The project greets people by name: its one function builds a greeting from the name it is "
                              "given, and running the program prints a greeting for the whole world.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "what does this project do? answer in prose only")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_prompt(s), "prompt after answer")
        c.cap(s, "idle-after-text-answer", "STALLED", "a plain text answer landed; the `>` prompt is back, empty")


def sc_first_token(c):
    steps = [{"first_delay": 40, "blocks": [text("Late answer.")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "summarise the repository layout")
        must(s.mock.wait_for("first_delay_start"), "request")
        time.sleep(6)
        c.cap(s, "working-before-first-token", "WORKING", "request sent, the mock holds the first token for 40 s")


def sc_stream(c):
    steps = [{"delta_delay": 0.25, "blocks": [text(LOREM * 3, chunk=6)]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "explain how the monitor classifies a pane")
        must(s.mock.wait_for("text_start"), "stream start")
        time.sleep(8)
        must(not at_prompt(s.screen()), "still streaming")
        c.cap(s, "working-streaming-text", "WORKING", "a long answer streams slowly (6 characters every 0.25 s)")


def sc_create_file(c):
    simple_scenario(c, start_and_prompt, [{"blocks": [text(NEW_FILE)]}], "add a config file", asking,
                    "create-file question", "question-create-file", "QUESTION",
                    "an edit block for a new file: `Create new file? (Y)es/(N)o [Yes]:` inline",
                    shape="aider-confirm-create-file", timeout=30)


def sc_add_file(c):
    steps = [{"blocks": [text("To change the greeting I need to edit app.py. Please add it to the chat.")]}]
    simple_scenario(c, start_and_prompt, steps, "make the greeting friendlier", asking, "add-file question",
                    "question-add-file", "QUESTION", "the reply names app.py, which is not in the chat: "
                    "`Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:` inline", shape="aider-confirm-add-file",
                    timeout=30)


def sc_run_command(c):
    steps = [{"blocks": [text(EDIT_APP + "\nThen run it:\n\n```bash\npython3 app.py\n```\n")]}]
    simple_scenario(c, start_and_prompt, steps, "make the greeting friendlier and show me", asking,
                    "run-command question", "question-run-command", "QUESTION", "the reply suggests `python3 app.py`: "
                    "`Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:` inline", shape="aider-confirm-run-command",
                    timeout=30, session={"extra_args": ("app.py",)})


def sc_command_running(c):
    steps = [{"blocks": [text("Run the slow check:\n\n```bash\nsleep 30\n```\n")]}]
    with c.session(steps=steps) as s:
        start_and_prompt(s, "run the slow check")
        must(s.wait_text(asking, 30), "run-command question")
        time.sleep(1.0)
        s.send_text("y")
        time.sleep(0.3)
        s.send_keys("Enter")
        time.sleep(5)
        must(not at_prompt(s.screen()) and not asking(s.screen()), "command still running")
        c.cap(s, "working-command-running", "WORKING", "the suggested `sleep 30` was approved and is running")


def sc_edit_applied(c):
    with c.session(steps=[{"blocks": [text(EDIT_APP)]}], extra_args=("app.py",)) as s:
        start_and_prompt(s, "make the greeting friendlier")
        must(s.mock.wait_for("reply_done"), "reply")
        must(wait_prompt(s), "prompt after the edit")
        c.cap(s, "idle-after-edit", "BLOCKED", "an edit to app.py (in the chat) was applied; prompt back, no work left",
              work=0)


def sc_declined(c):
    with c.session(steps=[{"blocks": [text(NEW_FILE)]}]) as s:
        start_and_prompt(s, "add a config file")
        must(s.wait_text(asking, 30), "create-file question")
        time.sleep(1.0)
        s.send_text("n")
        time.sleep(0.3)
        s.send_keys("Enter")
        must(wait_prompt(s), "prompt after declining")
        c.cap(s, "idle-after-declined-question", "STALLED", "`Create new file?` answered n; prompt back", work=1)


SCENARIOS = {
    "welcome": (sc_welcome, ALL),
    "gitignore": (sc_gitignore, ALL),
    "text-answer": (sc_text_answer, ALL),
    "first-token": (sc_first_token, ALL),
    "stream": (sc_stream, ALL),
    "create-file": (sc_create_file, ALL),
    "add-file": (sc_add_file, ALL),
    "run-command": (sc_run_command, ALL),
    "command-running": (sc_command_running, ALL),
    "edit-applied": (sc_edit_applied, ALL),
    "declined": (sc_declined, ("m",)),
}


if __name__ == "__main__":
    sys.exit(openai_runner.main(sys.modules[__name__]))
