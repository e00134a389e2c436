"""Harness for the agent CLIs that speak OpenAI Chat Completions (OpenCode, Aider).

Like harness.py (Claude Code), on tmuxrun.py: one PRIVATE tmux server per run, a throwaway temp
dir holding HOME (with XDG dirs inside it) and a throwaway git project, the mock of
mock_openai_chat.py on 127.0.0.1 as both the model API and the HTTP(S) proxy, clean-up by pid.
The CLI itself is given by its scenario module: `command(session)` returns argv,
`env_extra(session)` its env and `seed(session)` its files in HOME / the project.
"""

from __future__ import annotations

import os

from mock_openai_chat import Mock, has_tools
from tmuxrun import TmuxSession

API_KEY = "sk-dummy-bmbcap-0000000000000000"


class AgentSession(TmuxSession):
    """A CLI in a private tmux server. `command(session)` returns argv; `env_extra(session)` and
    `seed(session)` (files in HOME / the project) are per CLI."""

    def __init__(self, command, size=(120, 40), steps=None, name="cap", env_extra=None, seed=None,
                 pre_files=None, main_if=has_tools, keep=False, git=True):
        self.argv = command
        self.env_extra = env_extra
        self.seed = seed
        self.main_if = main_if
        super().__init__(size=size, steps=steps, name=name, pre_files=pre_files, git=git, keep=keep)

    def make_mock(self, steps):
        return Mock(steps=steps, log_path=self.log_path, main_if=self.main_if)

    def seed_home(self):
        if self.seed:
            self.seed(self)

    def command(self):
        return self.argv(self)

    def extra_env(self, port):
        proxy = f"http://127.0.0.1:{port}"
        e = {
            "COLORTERM": "truecolor",
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "ALL_PROXY": proxy,
        }
        if self.env_extra:
            e.update(self.env_extra(self))
        return e
