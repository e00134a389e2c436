"""A live Codex CLI or Gemini CLI session for an end-to-end test to watch.

    python3 xtask/capture/live_agents.py codex|gemini idle

Starts the real pinned CLI (capctx.RELEASES; installed into target/capture/<agent>/<version>/ when
missing) in a private tmux server against its loopback mock (mock_agents.py), drives it into the
named situation, then prints ONE JSON line on stdout,
    {"socket": "<tmux -L name>", "session": "cap", "agent_pid": N, "prompts": "<file>"}
and holds the situation until its stdin closes. Then it ends the session (its tmux server, the
agent by pid, the mock, the temp dir: tmuxrun.TmuxSession.close) and exits 0. Any failure is one
line on stderr and exit 1, after the same clean-up.

- idle: the CLI answered one prompt with a short text reply and sits idle at its empty box, its
  own placeholder in it (Codex `Ask Codex to do anything`, Gemini `Type your message or
  @path/to/file`); every later prompt is answered `Done.`.

`prompts` is a file of JSON lines, one per main-loop request (one that offers tools) the model
received whose newest message is the user's text: {"texts": [...]}, that message's text parts in
full and in order, so a test can tell exactly which words reached the model and that nothing was
glued to them. Its first line is the situation's own prompt. (Codex sends its environment context
and instructions as user messages of their own before the first prompt; only the newest user
message is recorded.)
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import capctx  # noqa: E402
import scenarios_agents as A  # noqa: E402
from capctx import must, text  # noqa: E402
from harness_agents import CodexSession, GeminiSession  # noqa: E402
from mock_agents import GeminiMock, OpenAIMock, gemini_last_kind, responses_last_kind  # noqa: E402


def codex_prompt(body):
    """The texts of the newest user message of a main-loop Responses request, else None."""
    if not body.get("tools") or responses_last_kind(body) != "user_text":
        return None
    for item in reversed([i for i in body.get("input") or [] if isinstance(i, dict)]):
        if item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return [content]
            return [c.get("text", "") for c in content or [] if isinstance(c, dict)
                    and c.get("type") in ("input_text", "text")]
    return None


def gemini_prompt(path, body):
    """The texts of the newest user content of a main-loop streamGenerateContent request, else None."""
    if not path.split("?")[0].endswith(":streamGenerateContent") or not body.get("tools"):
        return None
    if gemini_last_kind(body) != "user_text":
        return None
    last = [c for c in body.get("contents") or [] if isinstance(c, dict)][-1]
    return [p.get("text", "") for p in last.get("parts") or [] if isinstance(p, dict) and "text" in p]


class PromptLog:
    """Mixin for a mock: also writes each user prompt the model receives to `prompts_path` in full."""

    prompts_path = None

    def prompt_texts(self, path, body):
        raise NotImplementedError

    def handle_post(self, h, path, raw):
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        texts = self.prompt_texts(path, body) if isinstance(body, dict) else None
        if texts is not None and self.prompts_path:
            with self.lock, open(self.prompts_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"texts": texts}) + "\n")
        return super().handle_post(h, path, raw)


class CodexPromptMock(PromptLog, OpenAIMock):
    def prompt_texts(self, path, body):
        return codex_prompt(body) if path.split("?")[0].endswith("/responses") else None


class GeminiPromptMock(PromptLog, GeminiMock):
    def prompt_texts(self, path, body):
        return gemini_prompt(path, body)


def logged(session_cls, mock_cls):
    class Live(session_cls):
        """A session whose mock keeps the prompts log next to its own log."""

        def make_mock(self, steps):
            mock = mock_cls(steps=steps, log_path=self.log_path)
            mock.prompts_path = os.path.join(os.path.dirname(self.log_path), "prompts.jsonl")
            return mock
    return Live


AGENTS = {
    "codex": (logged(CodexSession, CodexPromptMock), A.codex_start, A.codex_wait_idle, "Ask Codex to do anything"),
    "gemini": (logged(GeminiSession, GeminiPromptMock), A.gemini_start, A.gemini_wait_idle,
               "Type your message or @path/to/file"),
}


def idle(agent):
    cls, start, wait_idle, placeholder = AGENTS[agent]
    session = cls(A.ensure_installed(agent, capctx.PINNED[agent]),
                  steps=[{"blocks": [text("The parser reads one token at a time.")]}], name="live")

    def drive(s):
        start(s, "describe the parser")
        must(s.mock.wait_for("reply_done"), "the answer")
        must(s.wait_text("one token at a time", 60), "the answer on screen")
        must(wait_idle(s, 60), "idle at the empty box after the answer")
        must(s.wait_text(placeholder, 30), f"the placeholder `{placeholder}` in the box")
    return session, drive


SITUATIONS = {"idle": idle}


def main(argv):
    if len(argv) != 3 or argv[1] not in AGENTS or argv[2] not in SITUATIONS:
        print(f"usage: live_agents.py {'|'.join(AGENTS)} {'|'.join(SITUATIONS)}", file=sys.stderr)
        return 2
    agent, situation = argv[1], argv[2]
    try:
        session, drive = SITUATIONS[situation](agent)
    except Exception as err:  # the install failed: nothing was started yet
        print(f"live_agents.py {agent} {situation}: {err}", file=sys.stderr)
        return 1
    try:
        with session as s:
            drive(s)
            print(json.dumps({"socket": s.sock, "session": "cap", "agent_pid": s.pane_pid(),
                              "prompts": s.mock.prompts_path}), flush=True)
            sys.stdin.read()
            s.note_pids()
    except Exception as err:  # one line, then the context manager has cleaned up
        print(f"live_agents.py {agent} {situation}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
