"""Unit tests of the capture harness's own logic (Python 3 stdlib only), run by scripts/test:

    python3 -m unittest discover -s xtask/capture -p 'test_*.py'

What they hold: the mocks parse each API's requests as the real CLIs send them (which message is the
newest, whether it carries a tool result, the user's text), answer a main-loop request with the first
queued step whose `when` matches, refuse every proxied request, read chunked bodies, word their
usage-limit answers as the CLIs read them; and the drivers' command line selects scenarios and sizes
as its `--help` says. The mocks are started for real on 127.0.0.1 and spoken to over HTTP.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import socket
import sys
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import capctx  # noqa: E402
import mock_agents  # noqa: E402
import mock_anthropic  # noqa: E402
import mock_openai_chat  # noqa: E402


def post(port, path, body, headers=None, chunked=False):
    """POST `body` (a dict) to the mock; (status, headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    if chunked:
        conn.putrequest("POST", path)
        for k, v in dict(hdrs, **{"Transfer-Encoding": "chunked"}).items():
            conn.putheader(k, v)
        conn.endheaders()
        for i in range(0, len(data), 7):  # several chunks, so the reader must join them
            piece = data[i:i + 7]
            conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        conn.send(b"0\r\n\r\n")
    else:
        conn.request("POST", path, body=data, headers=hdrs)
    resp = conn.getresponse()
    out = (resp.status, dict(resp.getheaders()), resp.read())
    conn.close()
    return out


def user(text):
    return {"role": "user", "content": text}


def tool_result(tid="toolu_1"):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": "ok"}]}


class AnthropicParsing(unittest.TestCase):
    def test_the_newest_message_decides_the_kind(self):
        kind = mock_anthropic.last_message_kind
        self.assertEqual(kind({"messages": []}), "none")
        self.assertEqual(kind({"messages": [user("hi")]}), "user_text")
        self.assertEqual(kind({"messages": [user("hi"), tool_result()]}), "tool_result")
        self.assertEqual(kind({"messages": [user("hi"), {"role": "assistant", "content": "x"}]}), "assistant")
        # 2.1.x sends a trailing role "system": it is skipped, the user's tool result still counts
        self.assertEqual(kind({"messages": [tool_result(), {"role": "system", "content": "s"}]}), "tool_result")

    def test_the_users_text_is_the_newest_user_message_with_text(self):
        text = mock_anthropic.last_user_text
        body = {"messages": [user("first"), {"role": "assistant", "content": "a"},
                             {"role": "user", "content": [{"type": "text", "text": "two"},
                                                          {"type": "text", "text": "lines"}]}]}
        self.assertEqual(text(body), "two\nlines")
        # a tool result carries no text: the user's earlier words are the text
        self.assertEqual(text({"messages": [user("asked"), tool_result()]}), "asked")
        self.assertEqual(text({}), "")

    def test_a_usage_limit_answer_names_its_claim_and_reset(self):
        h = mock_anthropic.ratelimit_headers({"claim": "five_hour", "reset_in": 60}, now=1000.0)
        p = "anthropic-ratelimit-unified-"
        self.assertEqual(h[p + "status"], "rejected")
        self.assertEqual(h[p + "reset"], "1060")
        self.assertEqual(h[p + "representative-claim"], "five_hour")
        self.assertEqual(h[p + "5h-reset"], "1060")
        weekly = mock_anthropic.ratelimit_headers({"claim": "seven_day", "reset_at": 5000}, now=1000.0)
        self.assertEqual(weekly[p + "7d-reset"], "5000")
        self.assertNotIn(p + "5h-reset", weekly)
        # a claim with no window of its own gets no window headers, and extra headers override
        odd = mock_anthropic.ratelimit_headers({"claim": "overage", "headers": {p + "status": "allowed"}})
        self.assertEqual(odd[p + "status"], "allowed")
        self.assertFalse(any(k.startswith(p + "5h") or k.startswith(p + "7d") for k in odd))


class OtherApisParsing(unittest.TestCase):
    def test_responses_api_kind_and_text(self):
        kind = mock_agents.responses_last_kind
        self.assertEqual(kind({"input": []}), "none")
        self.assertEqual(kind({"input": [{"type": "message", "role": "user", "content": "x"}]}), "user_text")
        self.assertEqual(kind({"input": [{"role": "user", "content": "x"},
                                         {"type": "function_call_output", "output": "ok"}]}), "tool_result")
        self.assertEqual(kind({"input": [{"type": "custom_tool_call_output"}]}), "tool_result")
        # a developer message is skipped: the user's message before it decides
        self.assertEqual(kind({"input": [{"role": "user", "content": "x"}, {"role": "developer"}]}), "user_text")
        self.assertEqual(mock_agents.responses_user_text(
            {"input": [{"role": "user", "content": [{"type": "input_text", "text": "run it"}]}]}), "run it")

    def test_gemini_kind_and_text(self):
        kind = mock_agents.gemini_last_kind
        self.assertEqual(kind({}), "none")
        self.assertEqual(kind({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}), "user_text")
        self.assertEqual(kind({"contents": [{"role": "user", "parts": [{"functionResponse": {}}]}]}),
                         "tool_result")
        self.assertEqual(kind({"contents": [{"role": "model", "parts": [{"text": "a"}]}]}), "assistant")
        self.assertEqual(mock_agents.gemini_user_text(
            {"contents": [{"role": "user", "parts": [{"text": "a"}, {"text": "b"}]},
                          {"role": "user", "parts": [{"functionResponse": {}}]}]}), "a\nb")

    def test_chat_completions_kind_and_tools(self):
        kind = mock_openai_chat.last_message_kind
        self.assertEqual(kind({"messages": [{"role": "user", "content": "x"}]}), "user_text")
        self.assertEqual(kind({"messages": [{"role": "user", "content": "x"},
                                            {"role": "tool", "content": "ok"}]}), "tool_result")
        self.assertTrue(mock_openai_chat.has_tools({"tools": [{"type": "function"}]}))
        self.assertFalse(mock_openai_chat.has_tools({"tools": []}))

    def test_codex_usage_limit_body_and_headers(self):
        body, headers = mock_agents.usage_limit_reply({"resets_in": 120, "drop": ["eligible_promo"]}, now=100.0)
        err = body["error"]
        self.assertEqual(err["type"], "usage_limit_reached")
        self.assertEqual(err["resets_at"], 220)
        self.assertEqual(err["resets_in_seconds"], 120)
        self.assertNotIn("eligible_promo", err)
        self.assertEqual(headers["x-codex-primary-used-percent"], "100")
        self.assertEqual(headers["x-codex-primary-reset-at"], "220")
        _, weekly = mock_agents.usage_limit_reply({"resets_in": 120, "window": "secondary"}, now=100.0)
        self.assertEqual(weekly["x-codex-secondary-used-percent"], "100")
        self.assertEqual(weekly["x-codex-secondary-reset-at"], "220")


class MockServer(unittest.TestCase):
    """The Anthropic mock, started for real: step selection, side requests, proxy refusal."""

    def setUp(self):
        self.mock = mock_anthropic.Mock(steps=[
            {"when": "tool_result", "blocks": [{"text": "after the tool"}]},
            {"when": "user_text", "blocks": [{"text": "to the user"}]},
        ])
        self.port = self.mock.start()
        self.addCleanup(self.mock.shutdown)

    def text_of(self, raw):
        return "".join(c.get("text", "") for c in json.loads(raw)["content"])

    def main(self, messages, chunked=False):
        return post(self.port, "/v1/messages", {"model": "m", "tools": [{"name": "Bash"}], "messages": messages},
                    chunked=chunked)

    def test_a_main_request_takes_the_first_step_its_kind_matches(self):
        status, _, raw = self.main([user("go")])
        self.assertEqual(status, 200)
        self.assertEqual(self.text_of(raw), "to the user")
        status, _, raw = self.main([user("go"), tool_result()])
        self.assertEqual(self.text_of(raw), "after the tool")
        # the queue is empty now: "Done."
        self.assertEqual(self.text_of(self.main([user("again")])[2]), "Done.")
        self.assertEqual(self.mock.main_requests, 3)

    def test_a_request_without_tools_is_a_side_request_and_leaves_the_queue(self):
        status, _, raw = post(self.port, "/v1/messages", {"model": "m", "messages": [user("title?")]})
        self.assertEqual(status, 200)
        self.assertEqual(self.text_of(raw), "Capture session")
        self.assertEqual(self.mock.main_requests, 0)
        self.assertEqual(len(self.mock.steps), 2)

    def test_a_chunked_body_is_read_whole(self):
        status, _, raw = self.main([user("chunked " * 20)], chunked=True)
        self.assertEqual(status, 200)
        self.assertEqual(self.text_of(raw), "to the user")
        logged = [e for e in self.mock.events if e.get("ev") == "messages"]
        self.assertEqual(logged[-1]["user_text"], ("chunked " * 20)[:200])

    def test_an_error_step_answers_its_status_and_retry_header(self):
        self.mock.push({"error": 529})
        self.mock.steps.insert(0, self.mock.steps.pop())  # first in the queue
        status, headers, raw = self.main([user("x")])
        self.assertEqual(status, 529)
        self.assertEqual(headers.get("x-should-retry"), "true")
        self.assertEqual(json.loads(raw)["error"]["type"], "overloaded_error")

    def test_every_proxied_request_is_refused_and_logged(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n")
            self.assertIn(b" 403 ", s.recv(200))
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", "http://example.com/")
        self.assertEqual(conn.getresponse().status, 403)
        conn.close()
        status, _, _ = post(self.port, "https://example.com/v1/messages", {"messages": []})
        self.assertEqual(status, 403)
        self.assertEqual(self.mock.seen("proxy_refused"), 3)
        self.assertEqual(self.mock.main_requests, 0)


def spec_at(sep):
    """Splits a registry spec at the last `sep`, the way a reader of the spec would."""
    def split(spec):
        i = spec.rindex(sep)
        return spec[:i], spec[i + len(sep):]
    return split


class ScenarioSelection(unittest.TestCase):
    """capctx.run: which (scenario, size) jobs a command line makes, and what it refuses."""

    def setUp(self):
        self.ran = []

        def record(c):
            self.ran.append((c.scenario, c.size))

        def fail(c):
            raise RuntimeError("scripted failure")

        self.table = {"alpha": (record, ("m", "s")), "beta": (record, ("m",)), "broken": (fail, ("m",))}
        self.cli = capctx.Cli("claude", new_session=None)

    def run_cli(self, *argv):
        a = capctx.parser("test").parse_args(list(argv) + ["--out", self.tmp(), "--jobs", "1"])
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = capctx.run(a, self.table, self.cli, lambda: ("/bin/true", "9.9"))
        return code, out.getvalue(), err.getvalue()

    def tmp(self):
        import tempfile
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        return d.name

    def test_named_scenarios_run_at_their_own_sizes(self):
        code, out, _ = self.run_cli("--scenario", "alpha,beta")
        self.assertEqual(code, 0)
        self.assertEqual(sorted(self.ran), [("alpha", (80, 24)), ("alpha", (120, 40)), ("beta", (120, 40))])
        self.assertIn("3/3 scenario runs succeeded", out)

    def test_a_size_without_names_runs_only_the_scenarios_that_list_it(self):
        code, _, _ = self.run_cli("--size", "80x24")
        self.assertEqual(code, 0)
        self.assertEqual(self.ran, [("alpha", (80, 24))])

    def test_a_named_scenario_runs_at_any_size_asked(self):
        self.run_cli("--scenario", "beta", "--size", "60x15")
        self.assertEqual(self.ran, [("beta", (60, 15))])

    def test_bad_names_sizes_and_tags_are_refused_before_anything_runs(self):
        code, _, err = self.run_cli("--scenario", "alpha,nope")
        self.assertEqual((code, self.ran), (2, []))
        self.assertIn("unknown scenario(s): nope", err)
        for size in ("80", "5x5", "80xabc", "9999x24"):
            code, _, err = self.run_cli("--scenario", "alpha", "--size", size)
            self.assertEqual(code, 2, size)
            self.assertIn("--size must be WxH", err)
        code, _, err = self.run_cli("--tag", "../x")
        self.assertEqual(code, 2)
        self.assertIn("--tag must be", err)
        self.assertEqual(self.ran, [])

    def test_a_failing_scenario_is_reported_and_the_others_still_run(self):
        code, out, err = self.run_cli("--scenario", "broken,beta")
        self.assertEqual(code, 1)
        self.assertIn("FAIL broken 120x40 RuntimeError: scripted failure", out)
        self.assertIn("1/2 scenario runs succeeded", out)
        self.assertIn("Traceback", err)
        self.assertEqual(self.ran, [("beta", (120, 40))])

    def test_list_prints_every_scenario_with_its_sizes(self):
        code, out, _ = self.run_cli("--list")
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines(), ["alpha 120x40 80x24", "beta 120x40", "broken 120x40"])

    def test_release_specs_split_into_package_and_version(self):
        # npm's scoped `@scope/name@version` and PyPI's `name==version`, split at the last separator
        for spec, at in [(capctx.RELEASES["claude"], spec_at("@")), (capctx.RELEASES["aider"], spec_at("=="))]:
            package, version = capctx.split_release(spec)
            self.assertEqual((package, version), at(spec))
        self.assertEqual(capctx.split_release("@scope/tool@1.2.3"), ("@scope/tool", "1.2.3"))
        # every pinned release is a named version, never a range or "latest"
        for agent, version in capctx.PINNED.items():
            self.assertRegex(version, r"^\d+\.\d+\.\d+$", agent)


if __name__ == "__main__":
    unittest.main()
