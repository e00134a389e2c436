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
  {"error": 429, "usage_limit": {...}} a ChatGPT plan's usage limit (OpenAI only): the ChatGPT backend's
                                       `usage_limit_reached` body and `x-codex-*` headers (see
                                       `usage_limit_reply`)
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
import time

from mockbase import MockBase, rid as _rid


class AgentsMock(MockBase):
    """GETs go to handle_get; errors and holds are answered alike for both APIs."""

    def handle_get(self, h, path):
        h.json_reply(200, {})

    def handle_other(self, h, body):
        if h.command == "GET":
            self.log({"ev": "request", "method": "GET", "path": h.path})
            return self.handle_get(h, h.path.split("?")[0])
        super().handle_other(h, body)

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
            self.hold(step)
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


def usage_limit_reply(ul: dict, now: float | None = None):
    """(body, headers) of the ChatGPT backend's usage-limit answer to Codex (HTTP 429), as users have
    posted it: `{"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
    "plan_type": "plus", "resets_at": <epoch s>, "eligible_promo": null, "resets_in_seconds": <s>}}`
    with `x-codex-primary-*` / `x-codex-secondary-*` headers. Codex 0.171.0 words its error from
    `plan_type` (free, go, plus, pro, team, business, enterprise, edu, ...) and `resets_at`: `… or try
    again at 2:51 PM.` on the same day, a date (`%b %-d, %Y %-I:%M %p`) on another.

    ul: {"plan_type": "plus", "resets_in": seconds from now, "drop": [body keys to leave out],
         "error": {extra or overriding body fields}, "headers": {extra headers}}. Computed when sent."""
    now = time.time() if now is None else now
    secs = int(ul.get("resets_in", 7200))
    reset = int(now) + secs
    err = {"type": "usage_limit_reached", "message": "The usage limit has been reached",
           "plan_type": ul.get("plan_type", "plus"), "resets_at": reset, "eligible_promo": None,
           "resets_in_seconds": secs}
    err.update(ul.get("error") or {})
    for k in ul.get("drop") or ():
        err.pop(k, None)
    primary = ul.get("window", "primary")  # the 5-hour (primary, 300 min) or the weekly (secondary) window
    headers = {
        "x-codex-active-limit": "codex",
        "x-codex-plan-type": err.get("plan_type") or "plus",
        "x-codex-primary-used-percent": "100" if primary == "primary" else "40",
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-after-seconds": str(secs if primary == "primary" else 3600),
        "x-codex-primary-reset-at": str(reset if primary == "primary" else int(now) + 3600),
        "x-codex-secondary-used-percent": "100" if primary != "primary" else "80",
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-after-seconds": str(secs if primary != "primary" else 316705),
        "x-codex-secondary-reset-at": str(reset if primary != "primary" else int(now) + 316705),
        "x-codex-credits-has-credits": "False",
        "x-codex-credits-balance": "0",
        "x-codex-credits-unlimited": "False",
    }
    headers.update(ul.get("headers") or {})
    return {"error": err}, headers


class OpenAIMock(AgentsMock):
    api = "openai-responses"

    def run_step_prelude(self, h, step):
        if "usage_limit" in step:
            body, headers = usage_limit_reply(step["usage_limit"])
            self.log({"ev": "error_sent", "code": int(step.get("error", 429)), "body": body})
            h.json_reply(int(step.get("error", 429)), body, headers)
            return True
        return super().run_step_prelude(h, step)

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
        step = self.pick_step(is_main, kind, raw)
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


class GeminiMock(AgentsMock):
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
        step = self.pick_step(is_main, kind, raw, self.side_text(body))
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
