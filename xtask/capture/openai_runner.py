"""The scenario runner shared by scenarios_opencode.py and scenarios_aider.py.

Each of those modules gives: AGENT (the `agent:` of its captures), ensure()
(installs the CLI under target/capture when missing, returns its path),
version(), a `session(ctx, **kw)` factory, and SCENARIOS
{name: (function, size keys)}. capctx.py runs them in parallel and writes
testdata/panes/<agent>/<case>/{plain.txt,ansi.txt,scrollback.txt,meta}; the
expected state in `meta` is decided by the scenario, never by a classifier.
"""

from __future__ import annotations

import os

import capctx
from capctx import ROOT, Cli


def main(module, argv=None):
    ap = capctx.parser(module.__doc__, jobs=3, out_default=os.path.join(ROOT, "testdata", "panes", module.AGENT))
    a = ap.parse_args(argv)
    cli = Cli(module.AGENT, module.session, sock_name=lambda scenario: f"{module.AGENT[:4]}-{scenario[:10]}")

    def prepare():
        binary = module.ensure(capctx.version_of(a, module.AGENT))
        return binary, module.version(binary)

    return capctx.run(a, module.SCENARIOS, cli, prepare)
