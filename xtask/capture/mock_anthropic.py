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
  {"error": 429, "ratelimit": {...}}     a plan's usage limit: HTTP 429 with the `anthropic-ratelimit-
                                         unified-*` headers of `ratelimit_headers` (see there)
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
import re
import sys
import time

from mockbase import MockBase, rid as _rid, serve_standalone

MODEL_FALLBACK = "claude-sonnet-4-5"


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


def ratelimit_headers(rl: dict, now: float | None = None) -> dict:
    """The `anthropic-ratelimit-unified-*` headers of a usage-limit answer, as Claude Code 2.1.332 reads
    them (its bundle's header parser): `-status` (`allowed` | `allowed_warning` | `rejected`), `-reset`
    (the epoch second the limit resets), `-representative-claim` (which limit: `five_hour` for the
    5-hour session limit, `seven_day` for the weekly one, also `seven_day_opus`, `seven_day_sonnet`,
    `overage`), `-fallback` (`available`), and per window `-5h-*` / `-7d-*`, `-overage-*`.

    rl: {"claim": "five_hour", "reset_in": seconds from now | "reset_at": epoch seconds,
         "status": "rejected" (default), "headers": {name: value, ...} (extra or overriding headers)}.
    The reset is computed when the answer is sent, so a scenario can put it a minute ahead."""
    now = time.time() if now is None else now
    reset = int(rl["reset_at"]) if "reset_at" in rl else int(now + float(rl.get("reset_in", 3600)))
    claim = rl.get("claim", "five_hour")
    p = "anthropic-ratelimit-unified-"
    h = {
        p + "status": rl.get("status", "rejected"),
        p + "reset": str(reset),
        p + "representative-claim": claim,
    }
    window = {"five_hour": "5h", "seven_day": "7d"}.get(claim)
    if window:
        h[p + window + "-status"] = rl.get("status", "rejected")
        h[p + window + "-reset"] = str(reset)
        h[p + window + "-utilization"] = "1.0"
    h.update(rl.get("headers") or {})
    return h


class Mock(MockBase):
    api = "anthropic-messages"

    def __init__(self, steps=None, log_path=None, side_text="Capture session"):
        super().__init__(steps=steps, log_path=log_path)
        self.side_text = side_text
        self.plan_file = None  # set from the system prompt in plan mode (see substitute)

    def reply_headers(self):
        return {"request-id": _rid("req_")}

    def substitute(self, step, raw: bytes = b""):
        """Replace placeholders in a step: __PLAN_FILE__ (the plan-mode plan file named in the system
        prompt of this request) and every key of self.subst (e.g. __PROJ__ -> the project dir)."""
        m = re.search(rb"(/[^\s\"']+/\.claude/plans/[^\s\"']+\.md)", raw)
        if m:
            self.plan_file = m.group(1).decode()
        if self.plan_file:
            step = json.loads(json.dumps(step).replace("__PLAN_FILE__", self.plan_file))
        return super().substitute(step, raw)

    def handle_post(self, h, path_q, raw):
        path = path_q.split("?")[0]
        try:
            body = json.loads(raw or b"{}")
        except Exception:
            body = {}
        if path.endswith("/v1/messages/count_tokens"):
            self.log({"ev": "request", "method": "POST", "path": path_q, "kind": "count_tokens"})
            return h.json_reply(200, {"input_tokens": 1234})
        if not path.endswith("/v1/messages"):
            self.log({"ev": "request", "method": "POST", "path": path_q, "len": len(raw)})
            return h.json_reply(200, {})
        tools = body.get("tools") or []
        kind = last_message_kind(body)
        is_main = len(tools) > 0
        msgs = body.get("messages") or []
        last_content = (msgs or [{}])[-1].get("content")
        entry = {
            "ev": "messages",
            "path": path_q,
            "model": body.get("model"),
            "stream": bool(body.get("stream")),
            "tools": len(tools),
            "main": is_main,
            "last": kind,
            "nmsg": len(msgs),
            "roles": [m.get("role") for m in msgs][-3:],
            "last_types": [c.get("type") for c in (last_content or []) if isinstance(c, dict)]
                          if isinstance(last_content, list) else "str",
            "max_tokens": body.get("max_tokens"),
            "thinking": body.get("thinking"),
            "user_text": last_user_text(body)[:200],
        }
        if is_main and self.main_requests == 0:
            entry["tool_names"] = [t.get("name") for t in tools]
        self.log(entry)
        self.dump(raw)
        model = body.get("model") or MODEL_FALLBACK
        step = self.pick_step(is_main, kind, raw, self.side_text)
        if "error" in step:
            code = int(step["error"])
            etype = {529: "overloaded_error", 500: "api_error", 429: "rate_limit_error"}.get(code, "api_error")
            msg = {529: "Overloaded", 500: "Internal server error", 429: "Rate limited"}.get(code, "error")
            headers = {"x-should-retry": "true"} if step.get("retry", True) else {"x-should-retry": "false"}
            if "ratelimit" in step:
                headers.update(ratelimit_headers(step["ratelimit"]))
                msg = step.get("message", "This request would exceed your account's rate limit. Please try again later.")
            self.log({"ev": "error_sent", "code": code, **({"headers": headers} if "ratelimit" in step else {})})
            return h.json_reply(code, {"type": "error", "error": {"type": etype, "message": msg}}, headers)
        if "hold" in step:
            self.hold(step)
            # after the hold, fall through to its blocks, if any
            if "blocks" not in step:
                step = dict(step, blocks=[{"text": "OK."}])
        if body.get("stream"):
            self.stream(h, step, model)
        else:
            self.plain(h, step, model)

    # -- replies --------------------------------------------------------------
    @staticmethod
    def content(step):
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

    @staticmethod
    def stop_reason(step):
        if step.get("stop_reason"):
            return step["stop_reason"]
        return "tool_use" if any("tool" in b for b in step.get("blocks", [])) else "end_turn"

    def plain(self, h, step, model):
        msg = {"id": _rid("msg_"), "type": "message", "role": "assistant", "model": model,
               "content": self.content(step), "stop_reason": self.stop_reason(step),
               "stop_sequence": None, "usage": {"input_tokens": 120, "output_tokens": 30}}
        h.json_reply(200, msg)

    def stream(self, h, step, model):
        h.sse_start()
        main = not step.get("side")

        def send(ev, data):
            h.sse(data, event=ev)

        dd = float(step.get("delta_delay", 0.0))
        try:
            send("message_start", {"type": "message_start", "message": {
                "id": _rid("msg_"), "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 1}}})
            if step.get("first_delay"):
                if main:
                    self.log({"ev": "first_delay_start"})
                # keep the connection alive with pings while "thinking"
                self.keep_alive(float(step["first_delay"]), lambda: send("ping", {"type": "ping"}))
            out_tokens = 1
            for idx, b in enumerate(step.get("blocks", [])):
                if "text" in b:
                    send("content_block_start", {"type": "content_block_start", "index": idx,
                                                 "content_block": {"type": "text", "text": ""}})
                    if main:
                        self.log({"ev": "text_start", "index": idx})
                    txt = b["text"]
                    n = int(b.get("chunk", 16))
                    for i in range(0, len(txt), n):
                        send("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                     "delta": {"type": "text_delta", "text": txt[i:i + n]}})
                        out_tokens += 4
                        if dd:
                            self.pause(dd)
                elif "thinking" in b:
                    send("content_block_start", {"type": "content_block_start", "index": idx,
                                                 "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
                    if main:
                        self.log({"ev": "thinking_start", "index": idx})
                    txt = b["thinking"]
                    n = int(b.get("chunk", 16))
                    for i in range(0, len(txt), n):
                        send("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                     "delta": {"type": "thinking_delta", "thinking": txt[i:i + n]}})
                        out_tokens += 4
                        if dd:
                            self.pause(dd)
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
                            self.pause(dd)
                    if main:
                        self.log({"ev": "tool_sent", "tool": b["tool"]})
                send("content_block_stop", {"type": "content_block_stop", "index": idx})
            send("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": self.stop_reason(step), "stop_sequence": None},
                                   "usage": {"output_tokens": out_tokens}})
            send("message_stop", {"type": "message_stop"})
            if main:
                self.log({"ev": "reply_done"})
        except (BrokenPipeError, ConnectionResetError):
            self.log({"ev": "client_closed"})


if __name__ == "__main__":
    serve_standalone(Mock(log_path="/dev/stdout"), sys.argv)
