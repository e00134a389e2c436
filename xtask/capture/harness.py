"""Harness: run the real Claude Code in a private tmux server against the mock.

The private server, throwaway HOME/project, capture and clean-up by pid are tmuxrun.py's; this
module holds what is Claude Code's own: its env (ANTHROPIC_*), ~/.claude.json and settings.json
(onboarding, trust, API-key approval, bypass acceptance) and its idle input box.
"""

from __future__ import annotations

import json
import os

from mock_anthropic import Mock
from tmuxrun import TmuxSession

API_KEY = "sk-ant-dummy"
# A dummy OAuth access token (a Claude subscription's login instead of an API key): with it Claude Code
# reads the plan's usage limits from the `anthropic-ratelimit-unified-*` response headers and draws its
# real limit screens (with an API key the same 429 is only `API Error: Request rejected (429)`).
OAUTH_TOKEN = "sk-ant-oat01-dummy"


def has_input_box(screen):
    """The live input box: a line starting with the prompt marker and a NO-BREAK SPACE (dialog cursors use a
    plain space), and no `esc to interrupt` anywhere on screen."""
    return "esc to interrupt" not in screen and any(l.startswith("\u276f\u00a0") for l in screen.splitlines())


class Session(TmuxSession):
    submit_delay = 0.4
    close_grace = 5

    def __init__(self, claude_bin, size=(120, 40), steps=None, args=(), settings=None,
                 bypass=False, keep=False, name="cap", workdir_name="proj", pre_files=None,
                 env_extra=None, onboarded=True, trusted=True, key_approved=True, bypass_accepted=True,
                 oauth=False):
        self.claude_bin = os.path.abspath(claude_bin)
        self.args = list(args)
        self.settings = settings or {}
        self.bypass = bypass
        self.env_extra = env_extra or {}
        self.onboarded = onboarded
        self.trusted = trusted
        self.key_approved = key_approved
        self.bypass_accepted = bypass_accepted
        # logged in with CLAUDE_CODE_OAUTH_TOKEN (a subscription) instead of ANTHROPIC_API_KEY
        self.oauth = oauth
        super().__init__(size=size, steps=steps, name=name, workdir_name=workdir_name, tmpdir_in_root=True,
                         pre_files=pre_files, keep=keep)

    def make_mock(self, steps):
        return Mock(steps=steps, log_path=self.log_path)

    # -- setup ---------------------------------------------------------------
    def seed_home(self):
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

    def command(self):
        return [self.claude_bin] + self.args + (["--dangerously-skip-permissions"] if self.bypass else [])

    def extra_env(self, port):
        e = {
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        if self.oauth:
            e["CLAUDE_CODE_OAUTH_TOKEN"] = OAUTH_TOKEN
        else:
            e["ANTHROPIC_API_KEY"] = API_KEY
        if self.bypass:
            e["IS_SANDBOX"] = "1"
        e.update(self.env_extra)
        # env_extra may take a variable away (None): a scenario that needs what it turns off.
        return {k: v for k, v in e.items() if v is not None}

    def permission_mode(self):
        """The mode this session was started in: `--permission-mode`'s value, `bypass` for
        --dangerously-skip-permissions, None when neither was given (the release's default)."""
        if self.bypass:
            return "bypassPermissions (--dangerously-skip-permissions)"
        if "--permission-mode" in self.args[:-1]:
            return self.args[self.args.index("--permission-mode") + 1]
        return None

    def save(self, outdir, meta):
        """As TmuxSession.save, and the meta says which permission mode the session ran in."""
        mode = self.permission_mode()
        if mode:
            meta = list(meta) + [("permission-mode", mode)]
        return super().save(outdir, meta)

    def wait_ready(self, timeout=40):
        """Wait for the idle input box (the ❯ prompt with its footer)."""
        return self.wait_text(has_input_box, timeout)

