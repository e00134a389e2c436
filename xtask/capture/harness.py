"""Harness: run the real Claude Code in a private tmux server against the mock.

Everything lives in a throwaway temp dir (HOME, project, logs); the tmux server
is private (`tmux -L bmbcap-<unique> -f /dev/null`) and is killed, with its
socket removed, when the session closes. Nothing is ended by name: only the
pids this harness started (the tmux server's pane processes) are signalled.
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

from mock_anthropic import Mock

API_KEY = "sk-ant-dummy"


def has_input_box(screen):
    """The live input box: a line starting with the prompt marker and a NO-BREAK SPACE (dialog cursors use a
    plain space), and no `esc to interrupt` anywhere on screen."""
    return "esc to interrupt" not in screen and any(l.startswith("\u276f\u00a0") for l in screen.splitlines())


def tmux_base(sock):
    return ["tmux", "-L", sock]


class Session:
    def __init__(self, claude_bin, size=(120, 40), steps=None, args=(), settings=None,
                 bypass=False, keep=False, name="cap", workdir_name="proj", pre_files=None,
                 env_extra=None, onboarded=True, trusted=True, key_approved=True, bypass_accepted=True):
        self.claude_bin = os.path.abspath(claude_bin)
        self.w, self.h = size
        self.tmp = tempfile.mkdtemp(prefix="bmbcap_")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, workdir_name)
        os.makedirs(self.home)
        os.makedirs(self.proj)
        self.sock = f"bmbcap-{name}-{uuid.uuid4().hex[:8]}"
        self.log_path = os.path.join(self.tmp, "mock.log")
        self.mock = Mock(steps=steps, log_path=self.log_path)
        self.mock.subst["__PROJ__"] = self.proj
        self.args = list(args)
        self.settings = settings or {}
        self.bypass = bypass
        self.keep = keep
        self.pre_files = pre_files or {}
        self.env_extra = env_extra or {}
        self.started = False
        self.archive_log = None  # where to keep the mock's request log after the temp dir is gone
        self.onboarded = onboarded
        self.trusted = trusted
        self.key_approved = key_approved
        self.bypass_accepted = bypass_accepted

    # -- setup ---------------------------------------------------------------
    def _seed_home(self):
        claude_json = {
            "numStartups": 5,
            "installMethod": "npm",
            "autoUpdates": False,
            "theme": "dark",
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": "2.1.197",
            "hasSeenTasksHint": True,
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
            "bypassPermissionsModeAccepted": True,
            "projects": {
                self.proj: {
                    "allowedTools": [],
                    "hasTrustDialogAccepted": True,
                    "hasCompletedProjectOnboarding": True,
                    "projectOnboardingSeenCount": 5,
                    "hasClaudeMdExternalIncludesApproved": False,
                    "hasClaudeMdExternalIncludesWarningShown": False,
                }
            },
        }
        if not self.onboarded:
            for k in ("hasCompletedOnboarding", "lastOnboardingVersion", "theme"):
                claude_json.pop(k, None)
            claude_json["numStartups"] = 0
        if not self.trusted:
            claude_json["projects"][self.proj]["hasTrustDialogAccepted"] = False
        if not self.key_approved:
            claude_json["customApiKeyResponses"] = {"approved": [], "rejected": []}
        if not self.bypass_accepted:
            claude_json.pop("bypassPermissionsModeAccepted", None)
        with open(os.path.join(self.home, ".claude.json"), "w") as f:
            json.dump(claude_json, f, indent=2)
        os.makedirs(os.path.join(self.home, ".claude"), exist_ok=True)
        settings = {"skipDangerousModePermissionPrompt": True} if self.bypass_accepted else {}
        settings.update(self.settings)
        with open(os.path.join(self.home, ".claude", "settings.json"), "w") as f:
            json.dump(settings, f, indent=2)

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
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=self.proj, env=env, check=True)
        subprocess.run(["git", "add", "-A"], cwd=self.proj, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=self.proj, env=env, check=True)

    def env(self):
        port = self.mock.port
        e = {
            "HOME": self.home,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "SHELL": "/bin/bash",
            "USER": os.environ.get("USER", "root"),
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "HTTP_PROXY": f"http://127.0.0.1:{port}",
            "HTTPS_PROXY": f"http://127.0.0.1:{port}",
            "http_proxy": f"http://127.0.0.1:{port}",
            "https_proxy": f"http://127.0.0.1:{port}",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "TMPDIR": self.tmp,
        }
        if self.bypass:
            e["IS_SANDBOX"] = "1"
        e.update(self.env_extra)
        return e

    def start(self):
        if self.started:
            return
        self._seed_home()
        self._seed_project()
        self.mock.start()
        env = self.env()
        cmd = [self.claude_bin] + self.args
        if self.bypass:
            cmd.append("--dangerously-skip-permissions")
        # env(1) gives the pane exactly our environment, nothing inherited from tmux's.
        shell_cmd = ["env", "-i"] + [f"{k}={v}" for k, v in env.items()] + cmd
        subprocess.run(tmux_base(self.sock) + ["-f", "/dev/null", "new-session", "-d", "-s", "cap",
                                               "-x", str(self.w), "-y", str(self.h), "-c", self.proj] + shell_cmd,
                       check=True)
        subprocess.run(tmux_base(self.sock) + ["set-option", "-g", "history-limit", "10000"], check=False)
        subprocess.run(tmux_base(self.sock) + ["set-option", "-g", "remain-on-exit", "on"], check=False)
        self.started = True

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
                return True
            time.sleep(0.2)
        return False

    def send_text(self, text):
        self.tmux("send-keys", "-t", "cap", "-l", text)

    def send_keys(self, *keys):
        self.tmux("send-keys", "-t", "cap", *keys)

    def submit(self, text):
        self.send_text(text)
        time.sleep(0.4)
        self.send_keys("Enter")

    def wait_ready(self, timeout=40):
        """Wait for the idle input box (the ❯ prompt with its footer)."""
        return self.wait_text(has_input_box, timeout)

    def pane_pid(self):
        r = self.tmux("display-message", "-p", "-t", "cap", "#{pane_pid}", check=False)
        try:
            return int(r.stdout.strip())
        except ValueError:
            return None

    def save(self, outdir, meta):
        os.makedirs(outdir, exist_ok=True)
        raw = subprocess.run(tmux_base(self.sock) + ["capture-pane", "-p", "-t", "cap"], capture_output=True, check=True).stdout
        ansi = subprocess.run(tmux_base(self.sock) + ["capture-pane", "-p", "-e", "-t", "cap"], capture_output=True, check=True).stdout
        sb = subprocess.run(tmux_base(self.sock) + ["capture-pane", "-p", "-S", "-", "-t", "cap"], capture_output=True, check=True).stdout
        for name, data in (("plain.txt", raw), ("ansi.txt", ansi), ("scrollback.txt", sb)):
            with open(os.path.join(outdir, name), "wb") as f:
                f.write(data)
        with open(os.path.join(outdir, "meta"), "w") as f:
            for k, v in meta:
                f.write(f"{k}: {v}\n")
        return raw.decode("utf-8", "replace")

    def close(self):
        pid = self.pane_pid() if self.started else None
        if self.started:
            self.tmux("kill-server", check=False)
        if pid:
            # the pane's own process (claude) got SIGHUP from kill-server; give it time to write its
            # last files, then make sure it is gone (by its pid only), so the temp dir can be removed
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        break
                end = time.time() + 5
                while time.time() < end and os.path.exists(f"/proc/{pid}"):
                    time.sleep(0.1)
                if not os.path.exists(f"/proc/{pid}"):
                    break
        self.mock.shutdown()
        sockdir = f"/tmp/tmux-{os.getuid()}"
        try:
            os.unlink(os.path.join(sockdir, self.sock))
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
