"""Harness for the agent CLIs that speak OpenAI Chat Completions (OpenCode, Aider).

Like harness.py (Claude Code): one PRIVATE tmux server per run
(`tmux -L bmbcap-<name>-<hex> -f /dev/null`), a throwaway temp dir holding
HOME and a throwaway git project, the pane running `env -i ... <cli>` with
exactly the environment given here, and the mock of mock_openai_chat.py on
127.0.0.1 as both the model API and the HTTP(S) proxy (a stray outbound call
is refused with 403 and logged). At the end the harness kills its own server
and then, by pid only, whatever it started that is still alive: the pane's
process and its descendants, as recorded while the pane ran.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from mock_openai_chat import Mock, has_tools

API_KEY = "sk-dummy-bmbcap-0000000000000000"


def tmux_base(sock):
    return ["tmux", "-L", sock]


def _children(pid):
    """Direct children of pid, from /proc (no ps parsing)."""
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    out += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def descendants(pid):
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in _children(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


class AgentSession:
    """A CLI in a private tmux server. `command(session)` returns argv; `env_extra(session)` and
    `seed(session)` (files in HOME / the project) are per CLI."""

    def __init__(self, command, size=(120, 40), steps=None, name="cap", env_extra=None, seed=None,
                 pre_files=None, main_if=has_tools, keep=False, git=True):
        self.command = command
        self.w, self.h = size
        self.tmp = tempfile.mkdtemp(prefix="bmbcap_")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(self.home)
        os.makedirs(self.proj)
        self.sock = f"bmbcap-{name}-{uuid.uuid4().hex[:8]}"
        self.log_path = os.path.join(self.tmp, "mock.log")
        self.mock = Mock(steps=steps, log_path=self.log_path, main_if=main_if)
        self.mock.subst["__PROJ__"] = self.proj
        self.env_extra = env_extra
        self.seed = seed
        self.pre_files = pre_files or {}
        self.keep = keep
        self.git = git
        self.started = False
        self.archive_log = None
        self.pids = set()  # every pid seen under the pane, ended by pid at close

    def _seed_project(self):
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
        if self.git:
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
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "http_proxy": proxy,
            "https_proxy": proxy,
            "ALL_PROXY": proxy,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "TMPDIR": os.path.join(self.tmp, "tmp"),
        }
        os.makedirs(e["TMPDIR"], exist_ok=True)
        if self.env_extra:
            e.update(self.env_extra(self))
        return e

    def start(self):
        if self.started:
            return
        self._seed_project()
        self.mock.start()
        if self.seed:
            self.seed(self)
        cmd = self.command(self)
        shell_cmd = ["env", "-i"] + [f"{k}={v}" for k, v in self.env().items()] + cmd
        subprocess.run(tmux_base(self.sock) + ["-f", "/dev/null", "new-session", "-d", "-s", "cap",
                                               "-x", str(self.w), "-y", str(self.h), "-c", self.proj] + shell_cmd,
                       check=True)
        subprocess.run(tmux_base(self.sock) + ["set-option", "-g", "history-limit", "10000"], check=False)
        subprocess.run(tmux_base(self.sock) + ["set-option", "-g", "remain-on-exit", "on"], check=False)
        self.started = True
        self._note_pids()

    def _note_pids(self):
        pid = self.pane_pid()
        if pid:
            self.pids.add(pid)
            self.pids.update(descendants(pid))

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
        return self.capture()

    def wait_text(self, needle, timeout=60, gone=False):
        end = time.time() + timeout
        while time.time() < end:
            s = self.screen()
            present = (needle(s) if callable(needle) else needle in s)
            if present != gone:
                self._note_pids()
                return True
            time.sleep(0.2)
        self._note_pids()
        return False

    def send_text(self, text):
        self.tmux("send-keys", "-t", "cap", "-l", text)

    def send_keys(self, *keys):
        self.tmux("send-keys", "-t", "cap", *keys)

    def submit(self, text):
        self.send_text(text)
        time.sleep(0.5)
        self.send_keys("Enter")

    def pane_pid(self):
        r = self.tmux("display-message", "-p", "-t", "cap", "#{pane_pid}", check=False)
        try:
            return int(r.stdout.strip())
        except ValueError:
            return None

    def save(self, outdir, meta):
        self._note_pids()
        os.makedirs(outdir, exist_ok=True)
        base = tmux_base(self.sock)
        raw = subprocess.run(base + ["capture-pane", "-p", "-t", "cap"], capture_output=True, check=True).stdout
        ansi = subprocess.run(base + ["capture-pane", "-p", "-e", "-t", "cap"], capture_output=True, check=True).stdout
        sb = subprocess.run(base + ["capture-pane", "-p", "-S", "-", "-t", "cap"], capture_output=True, check=True).stdout
        for name, data in (("plain.txt", raw), ("ansi.txt", ansi), ("scrollback.txt", sb)):
            with open(os.path.join(outdir, name), "wb") as f:
                f.write(data)
        with open(os.path.join(outdir, "meta"), "w") as f:
            for k, v in meta:
                f.write(f"{k}: {v}\n")
        return raw.decode("utf-8", "replace")

    def close(self):
        if self.started:
            self._note_pids()
            self.tmux("kill-server", check=False)
        # everything we saw under the pane got SIGHUP from kill-server; give it a moment, then end
        # the survivors by pid (never by name)
        alive = lambda p: os.path.exists(f"/proc/{p}") and not _is_zombie(p)  # noqa: E731
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            left = [p for p in self.pids if alive(p)]
            if not left:
                break
            if sig is not None:
                for p in left:
                    try:
                        os.kill(p, sig)
                    except ProcessLookupError:
                        pass
            end = time.time() + 4
            while time.time() < end and any(alive(p) for p in left):
                time.sleep(0.1)
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


def _is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
