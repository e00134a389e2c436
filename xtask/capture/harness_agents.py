"""Harness for the Codex CLI and the Gemini CLI: the same discipline as harness.py (Claude Code).

One PRIVATE tmux server per run (`tmux -L bmbcap-<agent>-<name>-<hex> -f /dev/null`), the pane
running `env -i …` with a throwaway HOME and project in a mkdtemp dir, TMPDIR outside that HOME,
dummy keys, HTTP(S)_PROXY pointed at the mock (which refuses and logs any proxied request).
At the end: kill the private server, then end the pane's process tree BY PID (the pids recorded
while the session ran, descendants of the pane's pid), remove the socket and the temp dir.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from mock_agents import GeminiMock, OpenAIMock

OPENAI_KEY = "sk-dummy-capture-key"
GEMINI_KEY = "dummy-gemini-capture-key"


def tmux_base(sock):
    return ["tmux", "-L", sock]


def descendants(pid):
    """Every live descendant of pid (from /proc), deepest last."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


class AgentSession:
    agent = "?"

    def __init__(self, bin_path, size=(120, 40), steps=None, args=(), keep=False, name="cap", env_extra=None,
                 pre_files=None):
        self.bin = os.path.abspath(bin_path)
        self.w, self.h = size
        self.tmp = tempfile.mkdtemp(prefix=f"bmbcap_{self.agent}_")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        self.tmpdir = os.path.join(self.tmp, "tmp")
        for d in (self.home, self.proj, self.tmpdir):
            os.makedirs(d)
        self.sock = f"bmbcap-{self.agent}-{name}-{uuid.uuid4().hex[:8]}"
        self.log_path = os.path.join(self.tmp, "mock.log")
        self.mock = self.make_mock(steps)
        self.mock.subst["__PROJ__"] = self.proj
        self.args = list(args)
        self.keep = keep
        self.env_extra = env_extra or {}
        self.pre_files = pre_files or {}
        self.started = False
        self.archive_log = None
        self.pids = set()

    def make_mock(self, steps):
        raise NotImplementedError

    def seed_home(self):
        raise NotImplementedError

    def agent_env(self, port):
        raise NotImplementedError

    def seed_project(self):
        env = dict(os.environ, HOME=self.home, GIT_AUTHOR_NAME="cap", GIT_AUTHOR_EMAIL="cap@localhost",
                   GIT_COMMITTER_NAME="cap", GIT_COMMITTER_EMAIL="cap@localhost")
        files = {
            "README.md": "# demo\n\nA tiny throwaway project for screen captures.\n",
            "app.py": "def greet(name):\n    return 'Hello, ' + name\n\n\nif __name__ == '__main__':\n    print(greet('world'))\n",
        }
        files.update(self.pre_files)
        for rel, content in files.items():
            p = os.path.join(self.proj, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(content)
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=self.proj, env=env, check=True)
        subprocess.run(["git", "add", "-A"], cwd=self.proj, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=self.proj, env=env, check=True)

    def env(self):
        port = self.mock.port
        proxy = f"http://127.0.0.1:{port}"
        e = {
            "HOME": self.home,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "COLORTERM": "truecolor",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "SHELL": "/bin/bash",
            "USER": os.environ.get("USER", "root"),
            "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy,
            "http_proxy": proxy, "https_proxy": proxy, "all_proxy": proxy,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "TMPDIR": self.tmpdir,
        }
        e.update(self.agent_env(port))
        e.update(self.env_extra)
        return e

    def start(self):
        if self.started:
            return
        self.mock.start()
        self.seed_home()
        self.seed_project()
        cmd = ["env", "-i"] + [f"{k}={v}" for k, v in self.env().items()] + [self.bin] + self.args
        subprocess.run(tmux_base(self.sock) + ["-f", "/dev/null", "new-session", "-d", "-s", "cap",
                                               "-x", str(self.w), "-y", str(self.h), "-c", self.proj] + cmd,
                       check=True)
        self.tmux("set-option", "-g", "history-limit", "10000", check=False)
        self.tmux("set-option", "-g", "remain-on-exit", "on", check=False)
        self.started = True
        self.note_pids()

    # -- interaction ---------------------------------------------------------
    def tmux(self, *a, check=True):
        return subprocess.run(tmux_base(self.sock) + list(a), check=check, capture_output=True, text=True)

    def capture(self, ansi=False, scrollback=False):
        a = ["capture-pane", "-p", "-t", "cap"]
        if ansi:
            a.append("-e")
        if scrollback:
            a += ["-S", "-"]
        return subprocess.run(tmux_base(self.sock) + a, capture_output=True, check=True).stdout.decode("utf-8", "replace")

    def screen(self):
        self.note_pids()
        return self.capture()

    def wait_text(self, needle, timeout=60, gone=False):
        end = time.time() + timeout
        while time.time() < end:
            s = self.screen()
            present = needle(s) if callable(needle) else needle in s
            if present != gone:
                return True
            time.sleep(0.2)
        return False

    def send_text(self, text):
        self.tmux("send-keys", "-t", "cap", "-l", text)

    def send_keys(self, *keys):
        self.tmux("send-keys", "-t", "cap", *keys)

    def submit(self, text):
        self.send_text(text)
        time.sleep(0.6)
        self.send_keys("Enter")

    def pane_pid(self):
        r = self.tmux("display-message", "-p", "-t", "cap", "#{pane_pid}", check=False)
        try:
            return int(r.stdout.strip())
        except ValueError:
            return None

    def note_pids(self):
        """Remember the pane's process tree, so it can be ended by pid even after kill-server
        re-parents what survives (Gemini CLI's children outlive the session)."""
        pid = self.pane_pid() if self.started else None
        if pid:
            self.pids.add(pid)
            self.pids.update(descendants(pid))

    def save(self, outdir, meta):
        os.makedirs(outdir, exist_ok=True)
        datas = {}
        for name, extra in (("plain.txt", []), ("ansi.txt", ["-e"]), ("scrollback.txt", ["-S", "-"])):
            datas[name] = subprocess.run(tmux_base(self.sock) + ["capture-pane", "-p", "-t", "cap"] + extra,
                                         capture_output=True, check=True).stdout
        for name, data in datas.items():
            with open(os.path.join(outdir, name), "wb") as f:
                f.write(data)
        with open(os.path.join(outdir, "meta"), "w") as f:
            for k, v in meta:
                f.write(f"{k}: {v}\n")
        return datas["plain.txt"].decode("utf-8", "replace")

    def close(self):
        if self.started:
            self.note_pids()
            self.tmux("kill-server", check=False)
        pids = sorted(self.pids)
        # only our own pids, and only while they still look like ours (a reused pid is left alone)
        live = [p for p in pids if self._ours(p)]
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                for p in live:
                    try:
                        os.kill(p, sig)
                    except ProcessLookupError:
                        pass
            end = time.time() + 3
            while time.time() < end:
                live = [p for p in live if self._ours(p)]
                if not live:
                    break
                time.sleep(0.1)
            if not live:
                break
        self.mock.shutdown()
        try:
            os.unlink(os.path.join(f"/tmp/tmux-{os.getuid()}", self.sock))
        except FileNotFoundError:
            pass
        if self.archive_log and os.path.exists(self.log_path):
            os.makedirs(os.path.dirname(self.archive_log), exist_ok=True)
            shutil.copyfile(self.log_path, self.archive_log)
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if os.path.exists(self.tmp):
                time.sleep(0.5)
                shutil.rmtree(self.tmp, ignore_errors=True)

    def _ours(self, pid):
        """The process exists (not a zombie) and its environment names our throwaway HOME."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
            with open(f"/proc/{pid}/environ", "rb") as f:
                return f"HOME={self.home}".encode() in f.read().split(b"\0")
        except (OSError, IndexError):
            return False

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, etype, exc, tb):
        if etype is not None and self.started:
            try:
                scr = "\n".join(l for l in self.screen().splitlines() if l.strip())
                print(f"--- last screen of {self.sock} ({self.w}x{self.h}) ---\n{scr}\n---", flush=True)
            except Exception:
                pass
        self.close()


class CodexSession(AgentSession):
    agent = "codex"

    def __init__(self, *a, approval="on-request", sandbox="read-only", trusted=True, **kw):
        self.approval = approval
        self.sandbox = sandbox
        self.trusted = trusted
        super().__init__(*a, **kw)

    def make_mock(self, steps):
        return OpenAIMock(steps=steps, log_path=self.log_path)

    @property
    def codex_home(self):
        return os.path.join(self.home, ".codex")

    def seed_home(self):
        os.makedirs(self.codex_home, exist_ok=True)
        port = self.mock.port
        lines = [
            'model = "gpt-5-codex"',
            'model_provider = "mock"',
            f'approval_policy = "{self.approval}"',
            f'sandbox_mode = "{self.sandbox}"',
            'check_for_update_on_startup = false',
            '',
            '[model_providers.mock]',
            'name = "mock"',
            f'base_url = "http://127.0.0.1:{port}/v1"',
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
            'request_max_retries = 0',
            'stream_max_retries = 0',
            '',
            '[analytics]',
            'enabled = false',
            '',
            '[feedback]',
            'enabled = false',
            '',
            '[otel]',
            'exporter = "none"',
            '',
            '[notice]',
            'hide_full_access_warning = true',
            'hide_rate_limit_model_nudge = true',
            '',
        ]
        if self.trusted:
            lines += [f'[projects."{self.proj}"]', 'trust_level = "trusted"', '']
        with open(os.path.join(self.codex_home, "config.toml"), "w") as f:
            f.write("\n".join(lines))

    def agent_env(self, port):
        return {
            "CODEX_HOME": self.codex_home,
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        }


class GeminiSession(AgentSession):
    agent = "gemini"

    def __init__(self, *a, approval="default", trusted=True, settings=None, **kw):
        self.approval = approval
        self.trusted = trusted
        self.settings = settings or {}
        super().__init__(*a, **kw)
        if approval == "yolo":  # YOLO cannot be a settings default, only a flag
            self.args.append("--approval-mode=yolo")

    def make_mock(self, steps):
        return GeminiMock(steps=steps, log_path=self.log_path)

    def seed_home(self):
        gdir = os.path.join(self.home, ".gemini")
        os.makedirs(gdir, exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": not self.trusted}},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                        "defaultApprovalMode": "default" if self.approval == "yolo" else self.approval},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "ide": {"enabled": False, "hasSeenNudge": True},
            "ui": {"theme": "Default"},
        }
        for k, v in self.settings.items():
            settings.setdefault(k, {}).update(v)
        with open(os.path.join(gdir, "settings.json"), "w") as f:
            json.dump(settings, f, indent=2)

    def agent_env(self, port):
        return {
            "GEMINI_API_KEY": GEMINI_KEY,
            "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
            "GEMINI_TELEMETRY_ENABLED": "false",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
