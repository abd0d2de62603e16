"""A child forked from a process with a live logger never hangs and never loses in silence.

The ``fork`` start method (Linux's default up to Python 3.13, and what ``AsyncVectorEnv``
and torch ``DataLoader`` workers use) copies the logger into the child but none of its
threads. The child's calls are counted as dropped, one warning says so, and it exits at
once; the parent's run is untouched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CHILD = """
import multiprocessing as mp, sys, warnings
from aoff import AsyncOffPolicyLogger, OffPolicyLogger

def child(log, face):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for i in range(100):
            r = log.log_step(10_000 + i, {"x": 1.0})
            if face == "async":
                list(r.__await__())  # a done awaitable
    n = sum("forked from the one that made this logger" in str(w.message) for w in seen)
    print("CHILD warnings", n, flush=True)
    if face == "sync":
        report = log.finish()
        print("CHILD report", report.dropped_events, report.partial, flush=True)

def main():
    run, mode, face = sys.argv[1], sys.argv[2], sys.argv[3]
    kw = dict(log_dir=run, backends=("jsonl",), pump=mode, handle_sigterm=False)
    if face == "sync":
        log = OffPolicyLogger(**kw)
        go(log, face)
        log.finish()
    else:
        import anyio
        async def amain():
            async with AsyncOffPolicyLogger(**kw) as alog:
                go(alog, face)
        anyio.run(amain)

def go(log, face):
    for i in range(1, 51):
        log.log_step(i, {"x": 1.0})
    p = mp.get_context("fork").Process(target=child, args=(log, face))
    p.start()
    p.join(20)
    print("CHILD exit", p.exitcode, flush=True)
    for i in range(51, 101):
        log.log_step(i, {"x": 1.0})

main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("mode", ["process", "thread"])
def test_a_forked_child_exits_at_once_and_says_its_calls_were_not_recorded(
    tmp_path: Path, mode: str, face: str
) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(CHILD))
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run"), mode, face],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "CHILD exit 0" in out.stdout, out.stdout
    assert "CHILD warnings 1" in out.stdout, out.stdout
    if face == "sync":
        assert "CHILD report 100 True" in out.stdout, out.stdout
    rows = [json.loads(ln) for ln in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, 101))  # the parent's, only
