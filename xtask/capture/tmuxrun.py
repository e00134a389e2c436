"""One agent CLI in a private tmux server against a loopback mock: what every harness shares.

Everything lives in a throwaway temp dir (HOME, project, TMPDIR, the mock's log); the tmux server
is private (`tmux -L bmbcap-<...>-<hex> -f /dev/null`) and its pane runs `env -i ... <cli>` with
exactly the environment given here: dummy keys, HTTP(S)_PROXY pointed at the mock (which refuses
and logs any proxied request). At the end: kill the private server, then end what it started BY
PID (the pane's pid and its descendants, recorded while the pane ran, and only while they still
carry our throwaway HOME, so a reused pid is left alone), remove the socket and the temp dir.
Nothing is ever ended by name.

A subclass gives `make_mock(steps)`, `seed_home()`, `command()` and `extra_env(port)`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

DEMO_FILES = {
    "README.md": "# demo\n\nA tiny throwaway project for screen captures.\n",
    "app.py": "def greet(name):\n    return 'Hello, ' + name\n\n\nif __name__ == '__main__':\n    print(greet('world'))\n",
}


def tmux_base(sock):
    return ["tmux", "-L", sock]


def descendants(pid):
    """Every live descendant of pid (from /proc/*/stat, no ps parsing)."""
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


class TmuxSession:
    submit_delay = 0.5  # seconds between typing a prompt and pressing Enter
    close_grace = 4  # seconds each process gets after SIGHUP (kill-server), then SIGTERM, then SIGKILL

    def __init__(self, size=(120, 40), steps=None, name="cap", sock_name=None, tmp_prefix="bmbcap_",
                 workdir_name="proj", tmpdir_in_root=False, pre_files=None, git=True, keep=False):
        self.w, self.h = size
        self.tmp = tempfile.mkdtemp(prefix=tmp_prefix)
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, workdir_name)
        self.tmpdir = self.tmp if tmpdir_in_root else os.path.join(self.tmp, "tmp")
        for d in {self.home, self.proj, self.tmpdir}:
            os.makedirs(d, exist_ok=True)
        self.sock = f"bmbcap-{sock_name or name}-{uuid.uuid4().hex[:8]}"
        self.log_path = os.path.join(self.tmp, "mock.log")
        self.mock = self.make_mock(steps)
        self.mock.subst["__PROJ__"] = self.proj
        self.pre_files = pre_files or {}
        self.git = git
        self.keep = keep
        self.started = False
        self.archive_log = None  # where to keep the mock's request log after the temp dir is gone
        self.pids = set()  # the pane's pid and every descendant seen, ended by pid at close
        self.color_env = {}  # a terminal colour class (capctx.color_env): set last, None removes a variable

    # -- per CLI -------------------------------------------------------------
    def make_mock(self, steps):
        raise NotImplementedError

    def seed_home(self):
        """Config files in HOME (called after the mock listens and the project exists)."""

    def command(self):
        raise NotImplementedError

    def extra_env(self, port):
        return {}

    # -- setup ---------------------------------------------------------------
    def seed_project(self):
        env = dict(os.environ, HOME=self.home, GIT_AUTHOR_NAME="cap", GIT_AUTHOR_EMAIL="cap@localhost",
                   GIT_COMMITTER_NAME="cap", GIT_COMMITTER_EMAIL="cap@localhost")
        files = dict(DEMO_FILES)
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
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "SHELL": "/bin/bash",
            "USER": os.environ.get("USER", "root"),
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "http_proxy": proxy,
            "https_proxy": proxy,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "TMPDIR": self.tmpdir,
        }
        e.update(self.extra_env(port))
        for k, v in self.color_env.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        return e

    def start(self):
        if self.started:
            return
        self.mock.start()
        self.seed_project()
        self.seed_home()
        # env(1) gives the pane exactly our environment, nothing inherited from tmux's.
        cmd = ["env", "-i"] + [f"{k}={v}" for k, v in self.env().items()] + self.command()
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

    def capture_bytes(self, ansi=False, scrollback=False):
        a = ["capture-pane", "-p", "-t", "cap"]
        if ansi:
            a.append("-e")
        if scrollback:
            a += ["-S", "-"]
        return subprocess.run(tmux_base(self.sock) + a, capture_output=True, check=True).stdout

    def capture(self, ansi=False, scrollback=False):
        return self.capture_bytes(ansi, scrollback).decode("utf-8", "replace")

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
        time.sleep(self.submit_delay)
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
        """The pane three ways (plain.txt, ansi.txt: -e, scrollback.txt: -S -) and `meta` (key: value
        lines); other files in outdir are left alone. Returns the plain screen."""
        self.note_pids()
        os.makedirs(outdir, exist_ok=True)
        raw = self.capture_bytes()
        ansi = self.capture_bytes(ansi=True)
        sb = self.capture_bytes(scrollback=True)
        for name, data in (("plain.txt", raw), ("ansi.txt", ansi), ("scrollback.txt", sb)):
            with open(os.path.join(outdir, name), "wb") as f:
                f.write(data)
        with open(os.path.join(outdir, "meta"), "w") as f:
            for k, v in meta:
                f.write(f"{k}: {v}\n")
        return raw.decode("utf-8", "replace")

    # -- clean-up ------------------------------------------------------------
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

    def close(self):
        if self.started:
            self.note_pids()
            self.tmux("kill-server", check=False)
        # everything under the pane got SIGHUP from kill-server; give it time to write its last
        # files, then end the survivors by pid (never by name)
        live = [p for p in sorted(self.pids) if self._ours(p)]
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                for p in live:
                    try:
                        os.kill(p, sig)
                    except ProcessLookupError:
                        pass
            end = time.time() + self.close_grace
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
            if os.path.exists(self.tmp):  # a late writer recreated something; once more
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
