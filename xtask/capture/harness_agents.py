"""Harness for the Codex CLI and the Gemini CLI: the same discipline as harness.py (Claude Code).

The private tmux server, throwaway HOME/project/TMPDIR, capture and clean-up by pid are
tmuxrun.py's; this module holds what each CLI needs of its own: its env, its config files in
HOME (Codex's config.toml with a provider on the mock, Gemini's settings.json) and its mock.
"""

from __future__ import annotations

import json
import os

from mock_agents import GeminiMock, OpenAIMock
from tmuxrun import TmuxSession

OPENAI_KEY = "sk-dummy-capture-key"
GEMINI_KEY = "dummy-gemini-capture-key"


class AgentSession(TmuxSession):
    agent = "?"
    submit_delay = 0.6
    close_grace = 3

    def __init__(self, bin_path, size=(120, 40), steps=None, args=(), keep=False, name="cap", env_extra=None,
                 pre_files=None):
        self.bin = os.path.abspath(bin_path)
        self.args = list(args)
        self.env_extra = env_extra or {}
        super().__init__(size=size, steps=steps, name=name, sock_name=f"{self.agent}-{name}",
                         tmp_prefix=f"bmbcap_{self.agent}_", pre_files=pre_files, keep=keep)

    def agent_env(self, port):
        raise NotImplementedError

    def command(self):
        return [self.bin] + self.args

    def extra_env(self, port):
        proxy = f"http://127.0.0.1:{port}"
        e = {"COLORTERM": "truecolor", "ALL_PROXY": proxy, "all_proxy": proxy}
        e.update(self.agent_env(port))
        e.update(self.env_extra)
        return e


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
