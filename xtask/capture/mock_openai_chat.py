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
import sys
import time

from mockbase import MockBase, rid as _rid, serve_standalone

MODEL_FALLBACK = "gpt-4o"


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


class Mock(MockBase):
    api = "openai-chat"

    def __init__(self, steps=None, log_path=None, side_text="Capture session", main_if=has_tools):
        super().__init__(steps=steps, log_path=log_path)
        self.side_text = side_text
        self.main_if = main_if

    def handle_other(self, h, body):
        path = h.path.split("?")[0]
        self.log({"ev": "request", "method": h.command, "path": h.path, "len": len(body)})
        if path.endswith("/models") and h.command == "GET":
            return h.json_reply(200, {"object": "list", "data": [
                {"id": MODEL_FALLBACK, "object": "model", "created": 1700000000, "owned_by": "mock"}]})
        h.json_reply(200, {})

    def handle_post(self, h, path_q, raw):
        path = path_q.split("?")[0]
        try:
            body = json.loads(raw or b"{}")
        except Exception:
            body = {}
        if not path.endswith("/chat/completions"):
            self.log({"ev": "request", "method": "POST", "path": path_q, "len": len(raw)})
            return h.json_reply(200, {})
        tools = body.get("tools") or []
        kind = last_message_kind(body)
        is_main = bool(self.main_if(body))
        entry = {
            "ev": "chat",
            "path": path_q,
            "model": body.get("model"),
            "stream": bool(body.get("stream")),
            "tools": len(tools),
            "main": is_main,
            "last": kind,
            "nmsg": len(body.get("messages") or []),
            "roles": [m.get("role") for m in (body.get("messages") or [])][-3:],
            "user_text": last_user_text(body)[:200],
        }
        if is_main and self.main_requests == 0 and tools:
            entry["tool_names"] = [(t.get("function") or {}).get("name") for t in tools]
        self.log(entry)
        self.dump(raw)
        model = body.get("model") or MODEL_FALLBACK
        step = self.pick_step(is_main, kind, raw, self.side_text)
        if "error" in step:
            code = int(step["error"])
            self.log({"ev": "error_sent", "code": code})
            etype = {429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}.get(code, "server_error")
            return h.json_reply(code, {"error": {"message": f"mock error {code}", "type": etype,
                                                 "param": None, "code": None}})
        if "hold" in step:
            self.hold(step)
            if "blocks" not in step:
                step = dict(step, blocks=[{"text": "OK."}])
        if body.get("stream"):
            self.stream(h, step, model, body)
        else:
            self.plain(h, step, model)

    # -- replies --------------------------------------------------------------
    @staticmethod
    def finish(step):
        return "tool_calls" if any("tool" in b for b in step.get("blocks", [])) else "stop"

    def plain(self, h, step, model):
        text = "".join(b.get("text", "") for b in step.get("blocks", []))
        calls = [{"id": b.get("id") or _rid("call_"), "type": "function",
                  "function": {"name": b["tool"], "arguments": json.dumps(b.get("input", {}))}}
                 for b in step.get("blocks", []) if "tool" in b]
        msg = {"role": "assistant", "content": text or None}
        if calls:
            msg["tool_calls"] = calls
        h.json_reply(200, {"id": _rid("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
                           "model": model, "choices": [{"index": 0, "message": msg,
                                                        "finish_reason": self.finish(step)}],
                           "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}})
        if not step.get("side"):
            self.log({"ev": "reply_done"})

    def stream(self, h, step, model, body):
        h.sse_start()
        main = not step.get("side")
        cid = _rid("chatcmpl-")
        created = int(time.time())

        def chunk(delta, finish=None, usage=None):
            data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if usage is not None:
                data["usage"] = usage
            h.sse(data)

        def ping():
            h.wfile.write(b": keep-alive\n\n")
            h.wfile.flush()

        dd = float(step.get("delta_delay", 0.0))
        try:
            chunk({"role": "assistant", "content": ""})
            if step.get("first_delay"):
                if main:
                    self.log({"ev": "first_delay_start"})
                self.keep_alive(float(step["first_delay"]), ping)
            out_tokens = 1
            tool_index = 0
            for b in step.get("blocks", []):
                if "text" in b or "reasoning" in b:
                    field = "content" if "text" in b else "reasoning_content"
                    if main:
                        self.log({"ev": "text_start" if "text" in b else "reasoning_start"})
                    txt = b.get("text", b.get("reasoning", ""))
                    n = int(b.get("chunk", 16))
                    for i in range(0, len(txt), n):
                        chunk({field: txt[i:i + n]})
                        out_tokens += 4
                        if dd:
                            self.pause(dd)
                elif "tool" in b:
                    tid = b.get("id") or _rid("call_")
                    chunk({"tool_calls": [{"index": tool_index, "id": tid, "type": "function",
                                           "function": {"name": b["tool"], "arguments": ""}}]})
                    js = json.dumps(b.get("input", {}))
                    n = int(b.get("chunk", 64))
                    for i in range(0, len(js), n):
                        chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": js[i:i + n]}}]})
                        if dd:
                            self.pause(dd)
                    tool_index += 1
                    if main:
                        self.log({"ev": "tool_sent", "tool": b["tool"]})
            usage = {"prompt_tokens": 1200, "completion_tokens": out_tokens, "total_tokens": 1200 + out_tokens}
            chunk({}, finish=self.finish(step))
            if (body.get("stream_options") or {}).get("include_usage"):
                data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                        "choices": [], "usage": usage}
                h.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            h.wfile.write(b"data: [DONE]\n\n")
            h.wfile.flush()
            if main:
                self.log({"ev": "reply_done"})
        except (BrokenPipeError, ConnectionResetError):
            self.log({"ev": "client_closed"})


if __name__ == "__main__":
    serve_standalone(Mock(log_path="/dev/stdout", main_if=lambda body: True), sys.argv)
