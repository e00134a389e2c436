#!/usr/bin/env python3
"""A scripted mock of the Anthropic Messages API, on 127.0.0.1 only.

Python 3 standard library only. Used by scenarios.py to drive the real
Claude Code CLI offline, so it renders its real screens.

What it answers:
  POST /v1/messages                 streamed (SSE) or plain JSON replies
  POST /v1/messages/count_tokens    {"input_tokens": N}
  HEAD / , GET / , anything else    200 {} (and it is logged)
  CONNECT host:port / absolute URLs (when used as HTTP(S)_PROXY): refused
                                    with 403 and logged, so a stray outbound
                                    call can never leave the machine.

Main-loop requests (those that carry `tools`) are answered from a per-scenario
queue of Steps; side requests (title generation, quota probes, summaries, ...)
get a short canned text reply. Every request is logged (path, model, whether it
had tools, the role/shape of the last message) to `log_path` as JSON lines.

A Step is a dict:
  {"error": 529}                         HTTP error (529 overloaded, 500 api_error, ...)
  {"hold": 600}                          accept, then send nothing for N seconds
  {"blocks": [...], "first_delay": s, "delta_delay": s, "stop_reason": "end_turn"}
     block: {"text": "...", "chunk": 12}
            {"thinking": "...", "chunk": 12}
            {"tool": "Bash", "input": {...}, "id": "toolu_..."}
A step may also carry "when": "tool_result" | "user_text" | "any" (default any):
the first queued step whose `when` matches the request is used.
If the queue is empty, the reply is a short text "Done." (end_turn).
"""

from __future__ import annotations

import json
import random
import re
import socket
import string
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_FALLBACK = "claude-sonnet-4-5"


def _rid(prefix: str) -> str:
    return prefix + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(24))


def last_message_kind(body: dict) -> str:
    """'tool_result' if the newest user/assistant message carries a tool_result, else 'user_text'
    (or 'assistant'). Messages with other roles (2.1.x sends a trailing role 'system') are skipped."""
    msgs = [m for m in (body.get("messages") or []) if m.get("role") in ("user", "assistant")]
    if not msgs:
        return "none"
    last = msgs[-1]
    if last.get("role") != "user":
        return "assistant"
    content = last.get("content")
    if isinstance(content, list):
        kinds = [c.get("type") for c in content if isinstance(c, dict)]
        if "tool_result" in kinds:
            return "tool_result"
    return "user_text"


def last_user_text(body: dict) -> str:
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            texts = [x.get("text", "") for x in c if isinstance(x, dict) and x.get("type") == "text"]
            if texts:
                return "\n".join(texts)
    return ""


class Mock:
    def __init__(self, steps=None, log_path=None, side_text="Capture session"):
        self.steps = list(steps or [])
        self.lock = threading.Lock()
        self.log_path = log_path
        self.side_text = side_text
        self.events = []  # (time, name, detail) for the driver to wait on
        self.stop = threading.Event()
        self.main_requests = 0
        self.server = None
        self.port = None
        self.dump_dir = None  # when set, every /v1/messages body is saved there (debugging)
        self.dumped = 0
        self.subst = {}
        self.side_steps = []  # replies for requests without tools (titles, summaries, compaction), in order
        self.plan_file = None  # set from the system prompt in plan mode (see plan_file_from)

    # -- bookkeeping -------------------------------------------------------
    def log(self, entry: dict):
        entry["t"] = round(time.time(), 3)
        with self.lock:
            self.events.append(entry)
            if self.log_path:
                try:
                    with open(self.log_path, "a", encoding="utf-8") as f:
                        f.write(json.dumps(entry) + "\n")
                except OSError:
                    pass  # the scenario's temp dir is already gone

    def push(self, *steps):
        with self.lock:
            self.steps.extend(steps)

    def seen(self, name: str) -> int:
        with self.lock:
            return sum(1 for e in self.events if e.get("ev") == name)

    def wait_for(self, name: str, count: int = 1, timeout: float = 60.0) -> bool:
        end = time.time() + timeout
        while time.time() < end:
            if self.seen(name) >= count:
                return True
            time.sleep(0.1)
        return False

    def substitute(self, step, raw: bytes):
        """Replace placeholders in a step: __PLAN_FILE__ (the plan-mode plan file named in the system
        prompt of this request) and every key of self.subst (e.g. __PROJ__ -> the project dir)."""
        m = re.search(rb"(/[^\s\"']+/\.claude/plans/[^\s\"']+\.md)", raw)
        if m:
            self.plan_file = m.group(1).decode()
        js = json.dumps(step)
        if self.plan_file:
            js = js.replace("__PLAN_FILE__", self.plan_file)
        for k, v in self.subst.items():
            js = js.replace(k, v)
        return json.loads(js)

    def next_step(self, kind: str):
        with self.lock:
            for i, st in enumerate(self.steps):
                w = st.get("when", "any")
                if w == "any" or w == kind:
                    return self.steps.pop(i)
        return None

    # -- server ------------------------------------------------------------
    def start(self, port: int = 0):
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # silence stderr
                pass

            def _read_body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _json(self, code, obj, extra_headers=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", _rid("req_"))
                for k, v in (extra_headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _proxy_refusal(self):
                mock.log({"ev": "proxy_refused", "method": self.command, "path": self.path})
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

            def do_CONNECT(self):
                self._proxy_refusal()

            def _generic(self):
                if self.path.startswith("http://") or self.path.startswith("https://"):
                    self._read_body()
                    return self._proxy_refusal()
                body = self._read_body()
                mock.log({"ev": "request", "method": self.command, "path": self.path, "len": len(body)})
                self._json(200, {})

            do_GET = _generic
            do_HEAD = _generic
            do_PUT = _generic
            do_DELETE = _generic
            do_PATCH = _generic

            def do_POST(self):
                if self.path.startswith("http://") or self.path.startswith("https://"):
                    self._read_body()
                    return self._proxy_refusal()
                raw = self._read_body()
                path = self.path.split("?")[0]
                try:
                    body = json.loads(raw or b"{}")
                except Exception:
                    body = {}
                if path.endswith("/v1/messages/count_tokens"):
                    mock.log({"ev": "request", "method": "POST", "path": self.path, "kind": "count_tokens"})
                    return self._json(200, {"input_tokens": 1234})
                if not path.endswith("/v1/messages"):
                    mock.log({"ev": "request", "method": "POST", "path": self.path, "len": len(raw)})
                    return self._json(200, {})
                tools = body.get("tools") or []
                kind = last_message_kind(body)
                is_main = len(tools) > 0
                entry = {
                    "ev": "messages",
                    "path": self.path,
                    "model": body.get("model"),
                    "stream": bool(body.get("stream")),
                    "tools": len(tools),
                    "main": is_main,
                    "last": kind,
                    "nmsg": len(body.get("messages") or []),
                    "roles": [m.get("role") for m in (body.get("messages") or [])][-3:],
                    "last_types": [c.get("type") for c in ((body.get("messages") or [{}])[-1].get("content") or [])
                                   if isinstance(c, dict)] if isinstance((body.get("messages") or [{}])[-1].get("content"), list) else "str",
                    "max_tokens": body.get("max_tokens"),
                    "thinking": body.get("thinking"),
                    "user_text": last_user_text(body)[:200],
                }
                if is_main and mock.main_requests == 0:
                    entry["tool_names"] = [t.get("name") for t in tools]
                mock.log(entry)
                if mock.dump_dir:
                    with mock.lock:
                        mock.dumped += 1
                        n = mock.dumped
                    with open(f"{mock.dump_dir}/req-{n:03d}.json", "wb") as f:
                        f.write(raw)
                model = body.get("model") or MODEL_FALLBACK
                if is_main:
                    with mock.lock:
                        mock.main_requests += 1
                    step = mock.next_step(kind) or {"blocks": [{"text": "Done."}]}
                else:
                    with mock.lock:
                        side = mock.side_steps.pop(0) if mock.side_steps else None
                    step = dict(side or {"blocks": [{"text": mock.side_text}]}, side=True)
                if is_main:
                    step = mock.substitute(step, raw)
                mock.log({"ev": "step", "main": is_main, "step": {k: v for k, v in step.items() if k != "blocks"}})
                if "error" in step:
                    code = int(step["error"])
                    etype = {529: "overloaded_error", 500: "api_error", 429: "rate_limit_error"}.get(code, "api_error")
                    msg = {529: "Overloaded", 500: "Internal server error", 429: "Rate limited"}.get(code, "error")
                    mock.log({"ev": "error_sent", "code": code})
                    return self._json(code, {"type": "error", "error": {"type": etype, "message": msg}},
                                      {"x-should-retry": "true"} if step.get("retry", True) else {"x-should-retry": "false"})
                if "hold" in step:
                    mock.log({"ev": "hold_start"})
                    end = time.time() + float(step["hold"])
                    while time.time() < end and not mock.stop.is_set():
                        time.sleep(0.1)
                    mock.log({"ev": "hold_end"})
                    # after the hold, fall through to its blocks, if any
                    if "blocks" not in step:
                        step = dict(step, blocks=[{"text": "OK."}])
                if body.get("stream"):
                    self._stream(step, model)
                else:
                    self._plain(step, model)

            # -- replies --------------------------------------------------
            def _content(self, step):
                out = []
                for b in step.get("blocks", []):
                    if "text" in b:
                        out.append({"type": "text", "text": b["text"]})
                    elif "thinking" in b:
                        out.append({"type": "thinking", "thinking": b["thinking"], "signature": "sig"})
                    elif "tool" in b:
                        out.append({"type": "tool_use", "id": b.get("id") or _rid("toolu_"),
                                    "name": b["tool"], "input": b.get("input", {})})
                return out

            def _stop_reason(self, step):
                if step.get("stop_reason"):
                    return step["stop_reason"]
                return "tool_use" if any("tool" in b for b in step.get("blocks", [])) else "end_turn"

            def _plain(self, step, model):
                msg = {"id": _rid("msg_"), "type": "message", "role": "assistant", "model": model,
                       "content": self._content(step), "stop_reason": self._stop_reason(step),
                       "stop_sequence": None, "usage": {"input_tokens": 120, "output_tokens": 30}}
                self._json(200, msg)

            def _stream(self, step, model):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.send_header("request-id", _rid("req_"))
                self.end_headers()
                self.close_connection = True
                main = not step.get("side")

                def send(ev, data):
                    self.wfile.write(f"event: {ev}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

                def pause(s):
                    end = time.time() + s
                    while time.time() < end and not mock.stop.is_set():
                        time.sleep(min(0.05, max(0.0, end - time.time())))

                dd = float(step.get("delta_delay", 0.0))
                try:
                    send("message_start", {"type": "message_start", "message": {
                        "id": _rid("msg_"), "type": "message", "role": "assistant", "model": model,
                        "content": [], "stop_reason": None, "stop_sequence": None,
                        "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 0,
                                  "cache_read_input_tokens": 0, "output_tokens": 1}}})
                    if step.get("first_delay"):
                        if main:
                            mock.log({"ev": "first_delay_start"})
                        # keep the connection alive with pings while "thinking"
                        end = time.time() + float(step["first_delay"])
                        while time.time() < end and not mock.stop.is_set():
                            pause(min(2.0, end - time.time()))
                            send("ping", {"type": "ping"})
                    out_tokens = 1
                    for idx, b in enumerate(step.get("blocks", [])):
                        if "text" in b:
                            send("content_block_start", {"type": "content_block_start", "index": idx,
                                                         "content_block": {"type": "text", "text": ""}})
                            if main:
                                mock.log({"ev": "text_start", "index": idx})
                            txt = b["text"]
                            n = int(b.get("chunk", 16))
                            for i in range(0, len(txt), n):
                                send("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                             "delta": {"type": "text_delta", "text": txt[i:i + n]}})
                                out_tokens += 4
                                if dd:
                                    pause(dd)
                        elif "thinking" in b:
                            send("content_block_start", {"type": "content_block_start", "index": idx,
                                                         "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
                            if main:
                                mock.log({"ev": "thinking_start", "index": idx})
                            txt = b["thinking"]
                            n = int(b.get("chunk", 16))
                            for i in range(0, len(txt), n):
                                send("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                             "delta": {"type": "thinking_delta", "thinking": txt[i:i + n]}})
                                out_tokens += 4
                                if dd:
                                    pause(dd)
                            send("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                         "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}})
                        elif "tool" in b:
                            tid = b.get("id") or _rid("toolu_")
                            send("content_block_start", {"type": "content_block_start", "index": idx,
                                                         "content_block": {"type": "tool_use", "id": tid,
                                                                           "name": b["tool"], "input": {}}})
                            js = json.dumps(b.get("input", {}))
                            n = int(b.get("chunk", 64))
                            for i in range(0, len(js), n):
                                send("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                             "delta": {"type": "input_json_delta", "partial_json": js[i:i + n]}})
                                if dd:
                                    pause(dd)
                            if main:
                                mock.log({"ev": "tool_sent", "tool": b["tool"]})
                        send("content_block_stop", {"type": "content_block_stop", "index": idx})
                    send("message_delta", {"type": "message_delta",
                                           "delta": {"stop_reason": self._stop_reason(step), "stop_sequence": None},
                                           "usage": {"output_tokens": out_tokens}})
                    send("message_stop", {"type": "message_stop"})
                    if main:
                        mock.log({"ev": "reply_done"})
                except (BrokenPipeError, ConnectionResetError):
                    mock.log({"ev": "client_closed"})

        srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        srv.daemon_threads = True
        self.server = srv
        self.port = srv.server_address[1]
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        return self.port

    def shutdown(self):
        self.stop.set()
        if self.server:
            self.server.shutdown()
            self.server.server_close()


def main(argv):
    """Standalone: python3 mock_anthropic.py [PORT] -- serves 'Done.' replies and logs to stdout."""
    port = int(argv[1]) if len(argv) > 1 else 0
    m = Mock(log_path="/dev/stdout")
    p = m.start(port)
    print(f"mock listening on 127.0.0.1:{p}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        m.shutdown()


if __name__ == "__main__":
    main(sys.argv)
