#!/usr/bin/env python3
"""A scripted mock of the OpenAI Chat Completions API, on 127.0.0.1 only.

Python 3 standard library only. Used by scenarios_opencode.py and
scenarios_aider.py to drive the real OpenCode and Aider CLIs offline, so they
render their real screens.

What it answers:
  POST /v1/chat/completions   streamed (SSE `chat.completion.chunk`s, then
                              `data: [DONE]`) or plain JSON replies, with text
                              and `tool_calls`
  GET  /v1/models             a one-model list
  anything else               200 {} (and it is logged)
  CONNECT host:port / absolute URLs (when used as HTTP(S)_PROXY): refused
                              with 403 and logged, so a stray outbound call
                              can never leave the machine.

Which requests are the "main loop" is up to the scenario: `main_if` is a
function of the request body (default: the request carries `tools`, as
OpenCode's agent loop does; Aider never sends tools, so its scenarios treat
every request as main). Main requests are answered from a queue of Steps;
the others (OpenCode's title generation, ...) get a short canned text. Every
request is logged as a JSON line to `log_path`.

A Step is a dict:
  {"error": 500}                           HTTP error with an OpenAI-style body
  {"hold": 600}                            accept, then send nothing for N seconds
  {"blocks": [...], "first_delay": s, "delta_delay": s}
     block: {"text": "...", "chunk": 12}
            {"reasoning": "...", "chunk": 12}      (delta.reasoning_content)
            {"tool": "bash", "input": {...}, "id": "call_..."}
A step may also carry "when": "tool_result" | "user_text" | "any" (default
any): the first queued step whose `when` matches the request is used. If the
queue is empty, the reply is a short text "Done.".
"""

from __future__ import annotations

import json
import random
import string
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_FALLBACK = "gpt-4o"


def _rid(prefix: str) -> str:
    return prefix + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(24))


def last_message_kind(body: dict) -> str:
    """'tool_result' if the newest message is a tool result (role `tool`), 'user_text' for a user
    message, else the role of the newest message."""
    msgs = [m for m in (body.get("messages") or []) if m.get("role") != "system"]
    if not msgs:
        return "none"
    role = msgs[-1].get("role")
    if role == "tool":
        return "tool_result"
    if role == "user":
        return "user_text"
    return str(role)


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return ""


def last_user_text(body: dict) -> str:
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            return _text_of(m.get("content"))
    return ""


def has_tools(body: dict) -> bool:
    return len(body.get("tools") or []) > 0


class Mock:
    def __init__(self, steps=None, log_path=None, side_text="Capture session", main_if=has_tools):
        self.steps = list(steps or [])
        self.lock = threading.Lock()
        self.log_path = log_path
        self.side_text = side_text
        self.main_if = main_if
        self.events = []
        self.stop = threading.Event()
        self.main_requests = 0
        self.server = None
        self.port = None
        self.dump_dir = None  # when set, every chat/completions body is saved there (debugging)
        self.dumped = 0
        self.subst = {}

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
                    pass

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

    def substitute(self, step):
        js = json.dumps(step)
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

            def log_message(self, fmt, *args):
                pass

            def _read_body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
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
                path = self.path.split("?")[0]
                mock.log({"ev": "request", "method": self.command, "path": self.path, "len": len(body)})
                if path.endswith("/models") and self.command == "GET":
                    return self._json(200, {"object": "list", "data": [
                        {"id": MODEL_FALLBACK, "object": "model", "created": 1700000000, "owned_by": "mock"}]})
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
                if not path.endswith("/chat/completions"):
                    mock.log({"ev": "request", "method": "POST", "path": self.path, "len": len(raw)})
                    return self._json(200, {})
                tools = body.get("tools") or []
                kind = last_message_kind(body)
                is_main = bool(mock.main_if(body))
                entry = {
                    "ev": "chat",
                    "path": self.path,
                    "model": body.get("model"),
                    "stream": bool(body.get("stream")),
                    "tools": len(tools),
                    "main": is_main,
                    "last": kind,
                    "nmsg": len(body.get("messages") or []),
                    "roles": [m.get("role") for m in (body.get("messages") or [])][-3:],
                    "user_text": last_user_text(body)[:200],
                }
                if is_main and mock.main_requests == 0 and tools:
                    entry["tool_names"] = [(t.get("function") or {}).get("name") for t in tools]
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
                    step = mock.substitute(step)
                else:
                    step = {"blocks": [{"text": mock.side_text}], "side": True}
                mock.log({"ev": "step", "main": is_main, "step": {k: v for k, v in step.items() if k != "blocks"}})
                if "error" in step:
                    code = int(step["error"])
                    mock.log({"ev": "error_sent", "code": code})
                    etype = {429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}.get(code, "server_error")
                    return self._json(code, {"error": {"message": f"mock error {code}", "type": etype,
                                                       "param": None, "code": None}})
                if "hold" in step:
                    mock.log({"ev": "hold_start"})
                    end = time.time() + float(step["hold"])
                    while time.time() < end and not mock.stop.is_set():
                        time.sleep(0.1)
                    mock.log({"ev": "hold_end"})
                    if "blocks" not in step:
                        step = dict(step, blocks=[{"text": "OK."}])
                if body.get("stream"):
                    self._stream(step, model, body)
                else:
                    self._plain(step, model)

            # -- replies --------------------------------------------------
            @staticmethod
            def _finish(step):
                return "tool_calls" if any("tool" in b for b in step.get("blocks", [])) else "stop"

            def _plain(self, step, model):
                text = "".join(b.get("text", "") for b in step.get("blocks", []))
                calls = [{"id": b.get("id") or _rid("call_"), "type": "function",
                          "function": {"name": b["tool"], "arguments": json.dumps(b.get("input", {}))}}
                         for b in step.get("blocks", []) if "tool" in b]
                msg = {"role": "assistant", "content": text or None}
                if calls:
                    msg["tool_calls"] = calls
                self._json(200, {"id": _rid("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
                                 "model": model, "choices": [{"index": 0, "message": msg,
                                                              "finish_reason": self._finish(step)}],
                                 "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}})
                if not step.get("side"):
                    mock.log({"ev": "reply_done"})

            def _stream(self, step, model, body):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                main = not step.get("side")
                cid = _rid("chatcmpl-")
                created = int(time.time())

                def chunk(delta, finish=None, usage=None):
                    data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    if usage is not None:
                        data["usage"] = usage
                    self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

                def pause(s):
                    end = time.time() + s
                    while time.time() < end and not mock.stop.is_set():
                        time.sleep(min(0.05, max(0.0, end - time.time())))

                dd = float(step.get("delta_delay", 0.0))
                try:
                    chunk({"role": "assistant", "content": ""})
                    if step.get("first_delay"):
                        if main:
                            mock.log({"ev": "first_delay_start"})
                        end = time.time() + float(step["first_delay"])
                        while time.time() < end and not mock.stop.is_set():
                            pause(min(2.0, end - time.time()))
                            self.wfile.write(b": keep-alive\n\n")
                            self.wfile.flush()
                    out_tokens = 1
                    tool_index = 0
                    for b in step.get("blocks", []):
                        if "text" in b or "reasoning" in b:
                            field = "content" if "text" in b else "reasoning_content"
                            if main:
                                mock.log({"ev": "text_start" if "text" in b else "reasoning_start"})
                            txt = b.get("text", b.get("reasoning", ""))
                            n = int(b.get("chunk", 16))
                            for i in range(0, len(txt), n):
                                chunk({field: txt[i:i + n]})
                                out_tokens += 4
                                if dd:
                                    pause(dd)
                        elif "tool" in b:
                            tid = b.get("id") or _rid("call_")
                            chunk({"tool_calls": [{"index": tool_index, "id": tid, "type": "function",
                                                   "function": {"name": b["tool"], "arguments": ""}}]})
                            js = json.dumps(b.get("input", {}))
                            n = int(b.get("chunk", 64))
                            for i in range(0, len(js), n):
                                chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": js[i:i + n]}}]})
                                if dd:
                                    pause(dd)
                            tool_index += 1
                            if main:
                                mock.log({"ev": "tool_sent", "tool": b["tool"]})
                    usage = {"prompt_tokens": 1200, "completion_tokens": out_tokens, "total_tokens": 1200 + out_tokens}
                    chunk({}, finish=self._finish(step))
                    if (body.get("stream_options") or {}).get("include_usage"):
                        data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                "choices": [], "usage": usage}
                        self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
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
    """Standalone: python3 mock_openai_chat.py [PORT] -- serves 'Done.' replies and logs to stdout."""
    port = int(argv[1]) if len(argv) > 1 else 0
    m = Mock(log_path="/dev/stdout", main_if=lambda body: True)
    p = m.start(port)
    print(f"mock listening on 127.0.0.1:{p}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        m.shutdown()


if __name__ == "__main__":
    main(sys.argv)
