"""The loopback mock of the Messages API for a `claude -p` auditor (the audit team's end-to-end test).

    python3 xtask/capture/audit_mock.py STEPS_JSON DUMP_DIR

Installs the pinned Claude Code into target/capture/claude/<version>/ when missing (as live.py
does), then serves mock_anthropic.Mock on 127.0.0.1 with the Steps read from the file STEPS_JSON
(a JSON list, see mock_anthropic.py: e.g. a tool call answered `when` "user_text", then the
scripted audit reply `when` "tool_result"). Every request body is saved as DUMP_DIR/req-NNN.json
and every event logged to DUMP_DIR/log.jsonl, so the test can see what Claude Code sent (its
tools, the prompt it read on stdin, the tool results). It prints ONE JSON line on stdout,
    {"port": N, "claude": "/abs/path/to/claude", "version": "2.1.332"}
and serves until its stdin closes; then it shuts the mock down and exits 0. A failure is one
line on stderr and exit 1.

Unlike live.py it starts no agent: the test runs `bmb-monitor audit`, whose auditors are
`claude -p` processes pointed at this port (ANTHROPIC_BASE_URL, and HTTP(S)_PROXY so that a
stray outbound call is refused here and logged as `proxy_refused`).
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import capctx  # noqa: E402
from mock_anthropic import Mock  # noqa: E402
from scenarios import ensure_claude  # noqa: E402


def main(argv):
    if len(argv) != 3:
        print("usage: audit_mock.py STEPS_JSON DUMP_DIR", file=sys.stderr)
        return 2
    steps_path, dump_dir = argv[1], argv[2]
    try:
        with open(steps_path, encoding="utf-8") as f:
            steps = json.load(f)
        if not isinstance(steps, list):
            raise ValueError(f"{steps_path}: a JSON list of steps, not {type(steps).__name__}")
        os.makedirs(dump_dir, exist_ok=True)
        claude = os.path.abspath(ensure_claude())
    except Exception as err:
        print(f"audit_mock.py: {err}", file=sys.stderr)
        return 1
    mock = Mock(steps=steps, log_path=os.path.join(dump_dir, "log.jsonl"))
    mock.dump_dir = dump_dir
    port = mock.start()
    try:
        print(json.dumps({"port": port, "claude": claude, "version": capctx.PINNED["claude"]}), flush=True)
        sys.stdin.read()
    finally:
        mock.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
