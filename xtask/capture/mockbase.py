"""What every scripted model-API mock of the capture harness shares (Python 3 stdlib only).

The mocks (mock_anthropic.py, mock_agents.py, mock_openai_chat.py) differ only in their API's
wire format; this module holds the rest, once:

- a ThreadingHTTPServer on 127.0.0.1 that is also the CLI's HTTP(S) proxy: a `CONNECT host:port`
  or an absolute-URL request is refused (403) and logged, so a stray outbound call never leaves
  the machine;
- the event log (JSON lines to `log_path`, and `events` for the driver to wait on);
- the per-scenario queue of Steps for main-loop requests (`when`: tool_result | user_text | any),
  the side-request replies, `__PROJ__`-style placeholders, request dumps, holds and pauses.

A subclass implements `handle_post(h, path, raw)` (h: the request handler, with `json_reply`,
`sse_start`, `sse` and `wfile`) and may override `handle_other`, `reply_headers` and `substitute`.
"""

from __future__ import annotations

import json
import random
import string
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def rid(prefix: str) -> str:
    return prefix + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(24))


class MockBase:
    """Events, the step queue, logging, the HTTP server and the proxy refusal."""

    api = "base"

    def __init__(self, steps=None, log_path=None):
        self.steps = list(steps or [])
        self.side_steps = []  # replies for requests that are not the main loop, in order
        self.lock = threading.Lock()
        self.log_path = log_path
        self.events = []  # every logged entry, for the driver to wait on
        self.stop = threading.Event()
        self.main_requests = 0
        self.server = None
        self.port = None
        self.subst = {}  # placeholder -> value in main-loop steps (e.g. __PROJ__ -> the project dir)
        self.dump_dir = None  # when set, every API request body is saved there (debugging)
        self.dumped = 0

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

    def next_step(self, kind: str):
        with self.lock:
            for i, st in enumerate(self.steps):
                w = st.get("when", "any")
                if w == "any" or w == kind:
                    return self.steps.pop(i)
        return None

    def substitute(self, step, raw: bytes = b""):
        js = json.dumps(step)
        for k, v in self.subst.items():
            js = js.replace(k, v)
        return json.loads(js)

    def pick_step(self, is_main: bool, kind: str, raw: bytes, side_text: str = "Capture session"):
        """The step that answers this request (logged): main-loop requests take the first queued step
        whose `when` matches (else "Done."), side requests the next side step (else `side_text`)."""
        if is_main:
            with self.lock:
                self.main_requests += 1
            step = self.next_step(kind) or {"blocks": [{"text": "Done."}]}
            step = self.substitute(step, raw)
        else:
            with self.lock:
                side = self.side_steps.pop(0) if self.side_steps else None
            step = dict(side or {"blocks": [{"text": side_text}]}, side=True)
        self.log({"ev": "step", "main": is_main, "step": {k: v for k, v in step.items() if k != "blocks"}})
        return step

    def pause(self, s):
        end = time.time() + s
        while time.time() < end and not self.stop.is_set():
            time.sleep(min(0.05, max(0.0, end - time.time())))

    def hold(self, step):
        """{"hold": N}: accept, then send nothing for N seconds (or until shutdown)."""
        self.log({"ev": "hold_start"})
        self.pause(float(step["hold"]))
        self.log({"ev": "hold_end"})

    def keep_alive(self, seconds, ping):
        """Wait `seconds` with the stream open, calling ping() every 2 s so the client keeps it."""
        end = time.time() + seconds
        while time.time() < end and not self.stop.is_set():
            self.pause(min(2.0, end - time.time()))
            ping()

    def dump(self, raw: bytes):
        if not self.dump_dir:
            return
        with self.lock:
            self.dumped += 1
            n = self.dumped
        with open(f"{self.dump_dir}/req-{n:03d}.json", "wb") as f:
            f.write(raw)

    # -- per API -----------------------------------------------------------
    def reply_headers(self):
        """Extra headers on every reply (e.g. a request id)."""
        return {}

    def handle_post(self, h, path, raw):
        h.json_reply(200, {})

    def handle_other(self, h, body):
        """GET/HEAD/PUT/DELETE/PATCH addressed to the mock itself: logged, answered 200 {}."""
        self.log({"ev": "request", "method": h.command, "path": h.path, "len": len(body)})
        h.json_reply(200, {})

    # -- server ------------------------------------------------------------
    def start(self, port: int = 0):
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # silence stderr
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
                for k, v in dict(mock.reply_headers(), **(headers or {})).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def sse_start(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                for k, v in mock.reply_headers().items():
                    self.send_header(k, v)
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
                mock.handle_other(self, self.read_body())

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


def serve_standalone(mock, argv):
    """`python3 mock_<api>.py [PORT]`: serve 'Done.' replies, log to stdout, until Ctrl-C."""
    port = int(argv[1]) if len(argv) > 1 else 0
    p = mock.start(port)
    print(f"mock listening on 127.0.0.1:{p}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        mock.shutdown()
