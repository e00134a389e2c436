"""A live Claude Code session for an end-to-end test to watch.

    python3 xtask/capture/live.py permission|stream|exited|killed|idle

Starts the real Claude Code CLI (installing the pinned release into target/capture/claude/<version>/ when missing)
in a private tmux server against the loopback mock, drives it into the named
situation, then prints ONE JSON line on stdout,
    {"socket": "<tmux -L name>", "session": "cap", "claude_pid": N, "prompts": "<file>"}
and holds the situation until its stdin closes. Then it ends the session (its
tmux server, the agent by pid, the mock, the temp dir) and exits 0. Any
failure is one line on stderr and exit 1, after the same clean-up.

Every situation runs in manual permission mode (`--permission-mode manual`): since 2.1.283 Claude
Code starts in auto mode, whose safety check cannot reach its server through the mock, so a tool
call would meet auto mode's own dialog instead of the ordinary permission dialog.

- permission: a Bash tool call waiting in its permission dialog.
- stream: a many-line reply streaming slowly with the spinner row gone (the
  footer's `esc to interrupt` is then the only live sign on screen).
- exited: Claude Code started from an interactive bash, as a user starts it,
  answered one prompt and was left with `/exit`: bash is back in the
  foreground, under the agent's last frame.
- killed: the same, but the agent was killed with SIGKILL (a crash) at its
  idle prompt, so its box and footer are still drawn above bash's prompt.
- idle: Claude Code answered one prompt with a short text reply and sits idle at its empty box
  (every later prompt is answered `Done.`).

`prompts` is a file of JSON lines, one per main-loop request the model received whose newest
message is the user's text: {"texts": [...]}, that message's text blocks in full and in order
(Claude Code adds its own `<system-reminder>` blocks next to the typed words), so a test can tell
exactly which words reached the model and that nothing was glued to them. Its first line is the
situation's own prompt.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from scenarios import (  # noqa: E402
    CLAUDE_BIN, ESC_TO_INTERRUPT, RULES, SPINNER_ROW, ensure_claude, must, start_and_prompt, text, tool,
    wait_idle,
)
from harness import Session  # noqa: E402
from mock_anthropic import Mock, last_message_kind  # noqa: E402
from tmuxrun import descendants  # noqa: E402

MODE = ["--permission-mode", "manual"]


class PromptLog(Mock):
    """The mock, also writing each user prompt the model receives to `prompts_path` in full."""

    prompts_path = None

    def handle_post(self, h, path_q, raw):
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if (path_q.split("?")[0].endswith("/v1/messages") and body.get("tools")
                and last_message_kind(body) == "user_text" and self.prompts_path):
            msgs = [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant")]
            content = msgs[-1].get("content")
            texts = [content] if isinstance(content, str) else [
                c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
            with self.lock, open(self.prompts_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"texts": texts}) + "\n")
        return super().handle_post(h, path_q, raw)


class LiveSession(Session):
    """A session whose mock keeps the prompts log next to its own log."""

    def make_mock(self, steps):
        mock = PromptLog(steps=steps, log_path=self.log_path)
        mock.prompts_path = os.path.join(os.path.dirname(self.log_path), "prompts.jsonl")
        return mock


def permission():
    steps = [{"blocks": [text("I'll run the test suite."),
                         tool("Bash", command="python3 -m pytest -q tests/", description="Run the test suite")]}]
    session = Session(CLAUDE_BIN, steps=steps, args=MODE, name="live")

    def drive(s):
        start_and_prompt(s, "run the tests")
        must(s.wait_text("Do you want to proceed?", 60), "the bash permission dialog")
    return session, drive


def stream():
    # Slow enough that the reply keeps streaming for minutes while the test polls.
    steps = [{"delta_delay": 0.4, "blocks": [text(RULES, chunk=12)]}]
    session = Session(CLAUDE_BIN, steps=steps, args=MODE, name="live")

    def drive(s):
        start_and_prompt(s, "list the monitor rules")
        must(s.mock.wait_for("text_start"), "the stream to start")
        must(s.wait_text(lambda scr: scr.count("The monitor reads") >= 8, 90), "eight lines streamed")
        scr = s.screen()
        must(ESC_TO_INTERRUPT in scr and not SPINNER_ROW.search(scr), "streaming with no spinner row")
    return session, drive


class ShellSession(Session):
    """Claude Code typed at an interactive bash in the pane, so that when it ends the shell is in front."""

    def command(self):
        return ["bash", "--norc", "--noprofile", "-i"]

    def start(self):
        super().start()
        must(self.wait_text("bash-", 20), "the shell's prompt")
        self.send_text(" ".join(shlex.quote(word) for word in Session.command(self)))
        self.send_keys("Enter")

    def agent_pid(self):
        """The claude process under the pane's bash (its cmdline names the claude binary)."""
        for pid in descendants(self.pane_pid()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"claude" in f.read():
                        return pid
            except OSError:
                continue
        return None


def back_to_the_shell(s, pid):
    """The agent's process is gone and bash prints its prompt again."""
    def gone():
        return not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    end = time.time() + 30
    while time.time() < end and not gone():
        time.sleep(0.2)
    must(gone(), f"claude (pid {pid}) to end")

    def shell_in_front():
        r = s.tmux("display-message", "-p", "-t", "cap", "#{pane_current_command}", check=False)
        return r.stdout.strip() == "bash"
    end = time.time() + 20
    while time.time() < end and not shell_in_front():
        time.sleep(0.2)
    must(shell_in_front(), "bash back in the pane's foreground")


def agent_then(ending):
    def situation():
        session = ShellSession(CLAUDE_BIN, steps=[{"blocks": [text("Done: the tests pass.")]}], name="live")

        def drive(s):
            must(s.wait_ready(60), "the idle input box")
            s.submit("run the tests")
            must(s.wait_text("the tests pass", 60), "the answer")
            must(s.wait_ready(30), "idle after the answer")
            pid = s.agent_pid()
            must(pid, "the claude process under bash")
            if ending == "exit":
                s.submit("/exit")
            else:
                os.kill(pid, signal.SIGKILL)
            back_to_the_shell(s, pid)
        return session, drive
    return situation


def idle():
    session = LiveSession(CLAUDE_BIN, steps=[{"blocks": [text("The parser reads one token at a time.")]}],
                          args=MODE, name="live")

    def drive(s):
        start_and_prompt(s, "what does the parser do?")
        must(s.wait_text("one token at a time", 60), "the answer")
        must(wait_idle(s, 30), "idle at the empty box after the answer")
    return session, drive


SITUATIONS = {"permission": permission, "stream": stream, "exited": agent_then("exit"),
              "killed": agent_then("kill"), "idle": idle}


def main(argv):
    if len(argv) != 2 or argv[1] not in SITUATIONS:
        print(f"usage: live.py {'|'.join(SITUATIONS)}", file=sys.stderr)
        return 2
    ensure_claude()
    session, drive = SITUATIONS[argv[1]]()
    try:
        with session as s:
            drive(s)
            prompts = getattr(s.mock, "prompts_path", None)
            print(json.dumps({"socket": s.sock, "session": "cap", "claude_pid": s.pane_pid(), "prompts": prompts}),
                  flush=True)
            sys.stdin.read()
    except Exception as err:  # one line, then the context manager has cleaned up
        print(f"live.py {argv[1]}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
