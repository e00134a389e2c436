#!/usr/bin/env python3
"""Scripted mocks of the OpenAI Responses API (Codex CLI) and of the Gemini API
(Gemini CLI), on 127.0.0.1 only. Python 3 standard library only.

Both are also the CLI's HTTP(S) proxy: a `CONNECT host:port` or an absolute-URL
request is refused (403) and logged, so a stray outbound call never leaves the
machine.

OpenAI (Codex CLI, `wire_api = "responses"`):
  POST .../responses          SSE: response.created, response.output_item.added,
                              response.output_text.delta, response.output_item.done
                              (message / function_call / custom_tool_call items),
                              response.completed (or response.failed / an HTTP error)
  GET  .../models             {"data": [], "models": []}
  anything else               200 {} (logged)

Gemini (Gemini CLI, `GOOGLE_GEMINI_BASE_URL`):
  POST .../models/M:streamGenerateContent?alt=sse
                              SSE `data: {GenerateContentResponse}` chunks: text parts,
                              functionCall parts, finishReason STOP, usageMetadata
  POST .../models/M:generateContent   plain JSON (side requests: routing, next speaker, ...)
  POST .../models/M:countTokens       {"totalTokens": N}
  anything else               200 {} (logged)

A scenario queues Steps for the main loop (requests that carry tools):
  {"error": 500}                       HTTP error
  {"hold": 600}                        accept, then send nothing for N seconds
  {"blocks": [...], "first_delay": s, "delta_delay": s}
     block: {"text": "...", "chunk": 12}
            {"tool": "shell", "input": {...}}            a function call
            {"custom": "apply_patch", "input": "..."}    a free-form (custom) tool call (OpenAI only)
A step may carry "when": "tool_result" | "user_text" | "any" (default any).
An empty queue answers with the text "Done.".
"""

from __future__ import annotations

import json
import random
import string
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _rid(prefix: str) -> str:
    return prefix + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(24))


class MockBase:
    """Events, the step queue, logging and the proxy refusal shared by both APIs."""

    api = "base"

    def __init__(self, steps=None, log_path=None):
        self.steps = list(steps or [])
        self.side_steps = []
        self.lock = threading.Lock()
        self.log_path = log_path
        self.events = []
        self.stop = threading.Event()
        self.main_requests = 0
        self.server = None
        self.port = None
        self.subst = {}
        self.dump_dir = None
        self.dumped = 0

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

    def next_step(self, kind: str):
        with self.lock:
            for i, st in enumerate(self.steps):
                w = st.get("when", "any")
                if w == "any" or w == kind:
                    return self.steps.pop(i)
        return None

    def substitute(self, step):
        js = json.dumps(step)
        for k, v in self.subst.items():
            js = js.replace(k, v)
        return json.loads(js)

    def pause(self, s):
        end = time.time() + s
        while time.time() < end and not self.stop.is_set():
            time.sleep(min(0.05, max(0.0, end - time.time())))

    def dump(self, raw: bytes):
        if not self.dump_dir:
            return
        with self.lock:
            self.dumped += 1
            n = self.dumped
        with open(f"{self.dump_dir}/req-{n:03d}.json", "wb") as f:
            f.write(raw)

    # subclasses: handle_post(handler, path, raw) -> None
    def handle_post(self, h, path, raw):
        h.json_reply(200, {})

    def handle_get(self, h, path):
        h.json_reply(200, {})

    def start(self, port: int = 0):
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def read_body(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    return self.rfile.read(n)
                if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return b""

            def json_reply(self, code, obj, headers=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def sse_start(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

            def sse(self, data, event=None):
                head = f"event: {event}\n" if event else ""
                self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            def refuse(self):
                mock.log({"ev": "proxy_refused", "method": self.command, "path": self.path})
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

            def do_CONNECT(self):
                self.refuse()

            def _other(self):
                if self.path.startswith(("http://", "https://")):
                    self.read_body()
                    return self.refuse()
                if self.command == "GET":
                    mock.log({"ev": "request", "method": "GET", "path": self.path})
                    return mock.handle_get(self, self.path.split("?")[0])
                body = self.read_body()
                mock.log({"ev": "request", "method": self.command, "path": self.path, "len": len(body)})
                self.json_reply(200, {})

            do_GET = _other
            do_HEAD = _other
            do_PUT = _other
            do_DELETE = _other
            do_PATCH = _other

            def do_POST(self):
                if self.path.startswith(("http://", "https://")):
                    self.read_body()
                    return self.refuse()
                raw = self.read_body()
                try:
                    mock.handle_post(self, self.path, raw)
                except (BrokenPipeError, ConnectionResetError):
                    mock.log({"ev": "client_closed"})

        srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        srv.daemon_threads = True
        self.server = srv
        self.port = srv.server_address[1]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return self.port

    def shutdown(self):
        self.stop.set()
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def run_step_prelude(self, h, step):
        """Errors and holds, common to both APIs. Returns True when the reply was already sent."""
        if "error" in step:
            code = int(step["error"])
            self.log({"ev": "error_sent", "code": code})
            h.json_reply(code, {"error": {"code": code, "message": step.get("message", "Internal error"),
                                          "status": "INTERNAL" if code == 500 else "UNAVAILABLE",
                                          "type": "server_error"}})
            return True
        if "hold" in step:
            self.log({"ev": "hold_start"})
            self.pause(float(step["hold"]))
            self.log({"ev": "hold_end"})
        return False


# ---------------------------------------------------------------------------
# OpenAI Responses API (Codex CLI)


def responses_last_kind(body: dict) -> str:
    items = [i for i in (body.get("input") or []) if isinstance(i, dict)]
    for it in reversed(items):
        t = it.get("type")
        if t in ("function_call_output", "custom_tool_call_output"):
            return "tool_result"
        if t == "message" or "role" in it:
            if it.get("role") == "user":
                return "user_text"
            if it.get("role") == "assistant":
                return "assistant"
            continue
    return "none"


def responses_user_text(body: dict) -> str:
    for it in reversed([i for i in (body.get("input") or []) if isinstance(i, dict)]):
        if it.get("role") == "user":
            c = it.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
    return ""


class OpenAIMock(MockBase):
    api = "openai-responses"

    def handle_get(self, h, path):
        if path.endswith("/models"):
            return h.json_reply(200, {"object": "list", "data": [], "models": []})
        h.json_reply(200, {})

    def handle_post(self, h, path, raw):
        p = path.split("?")[0]
        if not p.endswith("/responses"):
            self.log({"ev": "request", "method": "POST", "path": path, "len": len(raw)})
            return h.json_reply(200, {})
        try:
            body = json.loads(raw or b"{}")
        except Exception:
            body = {}
        self.dump(raw)
        tools = body.get("tools") or []
        kind = responses_last_kind(body)
        is_main = len(tools) > 0
        entry = {"ev": "messages", "path": path, "model": body.get("model"), "stream": bool(body.get("stream")),
                 "tools": len(tools), "main": is_main, "last": kind, "ninput": len(body.get("input") or []),
                 "user_text": responses_user_text(body)[:200]}
        if is_main and self.main_requests == 0:
            entry["tool_names"] = [t.get("name") or t.get("type") for t in tools]
        self.log(entry)
        if is_main:
            with self.lock:
                self.main_requests += 1
            step = self.next_step(kind) or {"blocks": [{"text": "Done."}]}
            step = self.substitute(step)
        else:
            with self.lock:
                side = self.side_steps.pop(0) if self.side_steps else None
            step = dict(side or {"blocks": [{"text": "Capture session"}]}, side=True)
        self.log({"ev": "step", "main": is_main, "step": {k: v for k, v in step.items() if k != "blocks"}})
        if self.run_step_prelude(h, step):
            return
        self.stream(h, step, body.get("model") or "gpt-5-codex", not step.get("side"))

    def stream(self, h, step, model, main):
        rid = _rid("resp_")
        h.sse_start()
        seq = [0]

        def send(obj):
            obj["sequence_number"] = seq[0]
            seq[0] += 1
            h.sse(obj, event=obj["type"])

        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "in_progress", "output": []}
        send({"type": "response.created", "response": base})
        send({"type": "response.in_progress", "response": base})
        if step.get("first_delay"):
            if main:
                self.log({"ev": "first_delay_start"})
            self.pause(float(step["first_delay"]))
        dd = float(step.get("delta_delay", 0.0))
        for idx, b in enumerate(step.get("blocks", [])):
            if "text" in b:
                iid = _rid("msg_")
                send({"type": "response.output_item.added", "output_index": idx,
                      "item": {"id": iid, "type": "message", "role": "assistant", "status": "in_progress",
                               "content": []}})
                send({"type": "response.content_part.added", "item_id": iid, "output_index": idx,
                      "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
                if main:
                    self.log({"ev": "text_start", "index": idx})
                txt, n = b["text"], int(b.get("chunk", 16))
                for i in range(0, len(txt), n):
                    send({"type": "response.output_text.delta", "item_id": iid, "output_index": idx,
                          "content_index": 0, "delta": txt[i:i + n]})
                    if dd:
                        self.pause(dd)
                send({"type": "response.output_text.done", "item_id": iid, "output_index": idx,
                      "content_index": 0, "text": txt})
                send({"type": "response.output_item.done", "output_index": idx,
                      "item": {"id": iid, "type": "message", "role": "assistant", "status": "completed",
                               "content": [{"type": "output_text", "text": txt, "annotations": []}]}})
            elif "tool" in b:
                iid, cid = _rid("fc_"), _rid("call_")
                args = b.get("input", {})
                args = args if isinstance(args, str) else json.dumps(args)
                item = {"id": iid, "type": "function_call", "status": "completed", "name": b["tool"],
                        "call_id": cid, "arguments": args}
                send({"type": "response.output_item.added", "output_index": idx,
                      "item": dict(item, status="in_progress", arguments="")})
                send({"type": "response.function_call_arguments.delta", "item_id": iid, "output_index": idx,
                      "delta": args})
                send({"type": "response.function_call_arguments.done", "item_id": iid, "output_index": idx,
                      "arguments": args})
                send({"type": "response.output_item.done", "output_index": idx, "item": item})
                if main:
                    self.log({"ev": "tool_sent", "tool": b["tool"]})
            elif "custom" in b:
                iid, cid = _rid("ctc_"), _rid("call_")
                item = {"id": iid, "type": "custom_tool_call", "status": "completed", "name": b["custom"],
                        "call_id": cid, "input": b.get("input", "")}
                send({"type": "response.output_item.added", "output_index": idx,
                      "item": dict(item, status="in_progress", input="")})
                send({"type": "response.output_item.done", "output_index": idx, "item": item})
                if main:
                    self.log({"ev": "tool_sent", "tool": b["custom"]})
        done = dict(base, status="completed",
                    usage={"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 0},
                           "output_tokens": 60, "output_tokens_details": {"reasoning_tokens": 0},
                           "total_tokens": 1260})
        send({"type": "response.completed", "response": done})
        if main:
            self.log({"ev": "reply_done"})


# ---------------------------------------------------------------------------
# Gemini API (Gemini CLI)


def gemini_last_kind(body: dict) -> str:
    contents = [c for c in (body.get("contents") or []) if isinstance(c, dict)]
    if not contents:
        return "none"
    last = contents[-1]
    if last.get("role") != "user":
        return "assistant"
    parts = last.get("parts") or []
    if any(isinstance(p, dict) and "functionResponse" in p for p in parts):
        return "tool_result"
    return "user_text"


def gemini_user_text(body: dict) -> str:
    for c in reversed([c for c in (body.get("contents") or []) if isinstance(c, dict)]):
        if c.get("role") == "user":
            t = "\n".join(p.get("text", "") for p in (c.get("parts") or []) if isinstance(p, dict))
            if t:
                return t
    return ""


class GeminiMock(MockBase):
    api = "gemini"

    def handle_get(self, h, path):
        h.json_reply(200, {"models": []})

    def handle_post(self, h, path, raw):
        p = path.split("?")[0]
        try:
            body = json.loads(raw or b"{}")
        except Exception:
            body = {}
        if p.endswith(":countTokens"):
            self.log({"ev": "request", "method": "POST", "path": path, "kind": "countTokens"})
            return h.json_reply(200, {"totalTokens": 1234})
        streaming = p.endswith(":streamGenerateContent")
        if not (streaming or p.endswith(":generateContent")):
            self.log({"ev": "request", "method": "POST", "path": path, "len": len(raw)})
            return h.json_reply(200, {})
        self.dump(raw)
        tools = body.get("tools") or []
        kind = gemini_last_kind(body)
        cfg = body.get("generationConfig") or {}
        # The main loop streams with tools; routing, next-speaker and loop checks are plain JSON calls.
        is_main = streaming and len(tools) > 0
        entry = {"ev": "messages", "path": path, "stream": streaming, "tools": len(tools), "main": is_main,
                 "last": kind, "ncontents": len(body.get("contents") or []),
                 "json": cfg.get("responseMimeType"), "user_text": gemini_user_text(body)[:200]}
        if is_main and self.main_requests == 0:
            entry["tool_names"] = [f.get("name") for t in tools for f in (t.get("functionDeclarations") or [])]
        self.log(entry)
        if is_main:
            with self.lock:
                self.main_requests += 1
            step = self.next_step(kind) or {"blocks": [{"text": "Done."}]}
            step = self.substitute(step)
        else:
            step = {"side": True, "blocks": [{"text": self.side_text(body)}]}
        self.log({"ev": "step", "main": is_main, "step": {k: v for k, v in step.items() if k != "blocks"}})
        if self.run_step_prelude(h, step):
            return
        if streaming:
            self.stream(h, step, is_main)
        else:
            parts = self.parts(step)
            h.json_reply(200, {"candidates": [{"content": {"role": "model", "parts": parts},
                                               "finishReason": "STOP", "index": 0}],
                               "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10,
                                                 "totalTokenCount": 110}})

    @staticmethod
    def side_text(body):
        """A plausible answer to a side request: JSON when JSON was asked for."""
        cfg = body.get("generationConfig") or {}
        if cfg.get("responseMimeType") == "application/json":
            schema = json.dumps(cfg.get("responseJsonSchema") or cfg.get("responseSchema") or {})
            if "next_speaker" in schema:
                return json.dumps({"reasoning": "The model answered.", "next_speaker": "user"})
            if "model_choice" in schema:
                return json.dumps({"reasoning": "Simple task.", "model_choice": "flash"})
            return "{}"
        return "Capture session"

    @staticmethod
    def parts(step):
        out = []
        for b in step.get("blocks", []):
            if "text" in b:
                out.append({"text": b["text"]})
            elif "tool" in b:
                out.append({"functionCall": {"name": b["tool"], "args": b.get("input", {})}})
        return out

    def stream(self, h, step, main):
        h.sse_start()
        if step.get("first_delay"):
            if main:
                self.log({"ev": "first_delay_start"})
            self.pause(float(step["first_delay"]))
        dd = float(step.get("delta_delay", 0.0))
        usage = {"promptTokenCount": 1200, "candidatesTokenCount": 60, "totalTokenCount": 1260}

        def chunk(parts, finish=None):
            cand = {"content": {"role": "model", "parts": parts}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            h.sse({"candidates": [cand], "usageMetadata": usage, "modelVersion": "gemini-2.5-pro"})

        blocks = step.get("blocks", [])
        for idx, b in enumerate(blocks):
            last = idx == len(blocks) - 1
            if "text" in b:
                if main:
                    self.log({"ev": "text_start", "index": idx})
                txt, n = b["text"], int(b.get("chunk", 16))
                pieces = [txt[i:i + n] for i in range(0, len(txt), n)] or [""]
                for j, piece in enumerate(pieces):
                    chunk([{"text": piece}], "STOP" if last and j == len(pieces) - 1 else None)
                    if dd:
                        self.pause(dd)
            elif "tool" in b:
                chunk([{"functionCall": {"name": b["tool"], "args": b.get("input", {})}}], "STOP" if last else None)
                if main:
                    self.log({"ev": "tool_sent", "tool": b["tool"]})
        if main:
            self.log({"ev": "reply_done"})
