"""The scenario runner shared by scenarios_opencode.py and scenarios_aider.py.

Each of those modules gives: AGENT (the `agent:` of its captures), ensure()
(installs the CLI under target/capture when missing, returns its argv
prefix), version(), a `session(ctx, **kw)` factory, and SCENARIOS
{name: (function, size keys)}. This module runs them in parallel and writes
testdata/panes/<agent>/<case>/{plain.txt,ansi.txt,scrollback.txt,meta}; the
expected state in `meta` is decided by the scenario, never by a classifier.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SIZES = {"s": (80, 24), "m": (120, 40), "l": (200, 50)}


class Ctx:
    def __init__(self, module, scenario, size_key, out_dir, cli, version):
        self.module = module
        self.scenario = scenario
        self.size = SIZES[size_key] if size_key in SIZES else size_key
        self.out_dir = out_dir
        self.cli = cli
        self.version = version
        self.saved = []

    def session(self, **kw):
        kw.setdefault("size", self.size)
        kw.setdefault("name", f"{self.module.AGENT[:4]}-{self.scenario[:10]}")
        s = self.module.session(self, **kw)
        w, h = self.size
        s.archive_log = os.path.join(ROOT, "target", "capture", "logs",
                                     f"{self.module.AGENT}-{self.scenario}-{w}x{h}.jsonl")
        return s

    def case_name(self, case):
        if self.size == SIZES["m"]:
            return case
        w, h = self.size
        return f"{case}-{w}x{h}"

    def cap(self, s, case, expect, scenario, shape=None, work=None):
        name = self.case_name(case)
        out = os.path.join(self.out_dir, name)
        w, h = self.size
        size_arg = "" if self.size == SIZES["m"] else f" --size {w}x{h}"
        meta = [
            ("expect", expect),
            ("agent", self.module.AGENT),
            ("version", self.version),
            ("size", f"{w}x{h}"),
            ("source", "real"),
            ("captured", f"cargo xtask capture --agent {self.module.AGENT} --scenario {self.scenario}{size_arg}; "
                         f"capture-pane -p / -p -e / -p -S -; {datetime.date.today().isoformat()}"),
            ("scenario", scenario),
        ]
        if work is not None:
            meta.append(("work", str(work)))
        if shape:
            meta.append(("shape", shape))
        s.save(out, meta)
        self.saved.append(name)
        print(f"  captured {name} ({expect}{', ' + shape if shape else ''})", flush=True)


def must(ok, what):
    if not ok:
        raise RuntimeError(f"timed out waiting for: {what}")


def run_one(module, name, size_key, out_dir, cli, version):
    fn, _ = module.SCENARIOS[name]
    c = Ctx(module, name, size_key, out_dir, cli, version)
    w, h = c.size
    t0 = time.time()
    try:
        fn(c)
        return (name, f"{w}x{h}", True, c.saved, f"{time.time() - t0:.0f}s")
    except Exception as e:  # report and go on with the other scenarios
        return (name, f"{w}x{h}", False, c.saved, f"{e.__class__.__name__}: {e}\n{traceback.format_exc()}")


def main(module, argv=None):
    ap = argparse.ArgumentParser(description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", action="append", help="scenario name(s), comma-separated; default: all")
    ap.add_argument("--size", help="WxH: run the named scenarios at this size (without --scenario: the scenarios that list it)")
    ap.add_argument("--out", default=os.path.join(ROOT, "testdata", "panes", module.AGENT))
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    if a.list:
        for n, (_, sizes) in module.SCENARIOS.items():
            print(n, " ".join("%dx%d" % SIZES[k] for k in sizes))
        return 0
    names = []
    for s in a.scenario or []:
        names += [x for x in s.split(",") if x]
    names = names or list(module.SCENARIOS)
    bad = [n for n in names if n not in module.SCENARIOS]
    if bad:
        print(f"unknown scenario(s): {', '.join(bad)} (see --list)", file=sys.stderr)
        return 2
    size = None
    if a.size:
        try:
            w, h = (int(x) for x in a.size.lower().split("x"))
            if not (20 <= w <= 500 and 10 <= h <= 200):
                raise ValueError
        except ValueError:
            print(f"--size must be WxH, e.g. 80x24 or 120x40 (got {a.size!r})", file=sys.stderr)
            return 2
        size = (w, h)
    cli = module.ensure()
    version = module.version(cli)
    print(f"{module.AGENT} {version}", flush=True)
    jobs = []
    for n in names:
        sizes = [SIZES[k] for k in module.SCENARIOS[n][1]]
        if size is None:
            jobs += [(n, k) for k in module.SCENARIOS[n][1]]
        elif a.scenario or size in sizes:
            jobs.append((n, size))
    os.makedirs(a.out, exist_ok=True)
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = [ex.submit(run_one, module, n, k, a.out, cli, version) for n, k in jobs]
        for f in concurrent.futures.as_completed(futs):
            name, sz, ok, saved, info = f.result()
            print(f"{'ok  ' if ok else 'FAIL'} {name} {sz} {info if ok else ''}", flush=True)
            if not ok:
                failed += 1
                print(info, file=sys.stderr, flush=True)
    print(f"{len(jobs) - failed}/{len(jobs)} scenario runs succeeded", flush=True)
    return 1 if failed else 0
