"""A child forked from a process with a live logger never hangs and logs into the run.

The ``fork`` start method (Linux's default up to Python 3.13, and what ``AsyncVectorEnv``
and torch ``DataLoader`` workers use) copies the logger into the child but none of its
threads. With a ``log_dir`` the child's calls go into the parent's run through a
``RemoteLogger`` named ``fork-<pid>`` (its TensorBoard file in ``log_dir/fork-<pid>/``);
without one they are counted as dropped and one warning says so. Either way the child
exits at once.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import read_tensorboard

CHILD = """
import multiprocessing as mp, os, sys, time, warnings
from aoff import AsyncOffPolicyLogger, OffPolicyLogger

def say(line):
    # one os.write a line: with PYTHONUNBUFFERED (set on this machine) print() writes the text and
    # its newline in two writes, and the agent's own lines ("JSONL logging to: ...") on
    # the same pipe can land between them (a CI run read "fork-to" as a child's pid)
    os.write(1, (line + "\\n").encode())

def child(log, face, closes):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for i in range(1, 101):
            r = log.log_step(i, {"x": float(i)})
            if face == "async":
                list(r.__await__())  # a done awaitable
    n = sum("forked from the one that made this logger" in str(w.message) for w in seen)
    say(f"CHILD warnings {n} pid {os.getpid()}")
    if face == "sync" and closes:
        report = log.finish()
        say(f"CHILD report {report.dropped_events} steps {report.steps} "
            f"complete {report.complete} partial {report.partial}")
    # otherwise: the child's exit closes its remote

def main():
    run, mode, face = sys.argv[1], sys.argv[2], sys.argv[3]
    kw = dict(pump=mode, handle_sigterm=False)
    if run != "-":
        kw.update(log_dir=run, backends=("jsonl",))
    else:
        kw.update(log_backend="no_print")
    if face == "sync":
        log = OffPolicyLogger(**kw)
        go(log, face)
        print(f"PARENT {log.finish()}", flush=True)
    else:
        import anyio
        async def amain():
            async with AsyncOffPolicyLogger(**kw) as alog:
                for i in range(1, 51):
                    await alog.log_step(i, {"y": 1.0})
                for closes in (True, False):
                    t, p = fork(alog, face, closes)
                    # never block the loop the pump runs on (thread mode)
                    await anyio.to_thread.run_sync(p.join, 30)
                    said(t, p)
                for i in range(51, 101):
                    await alog.log_step(i, {"y": 1.0})
        anyio.run(amain)

def fork(log, face, closes):
    t = time.monotonic()
    p = mp.get_context("fork").Process(target=child, args=(log, face, closes))
    p.start()
    return t, p

def said(t, p):
    say(f"CHILD exit {p.exitcode} after {round(time.monotonic() - t, 1)}")

def go(log, face):
    for i in range(1, 51):
        log.log_step(i, {"y": 1.0})
    for closes in (True, False):
        t, p = fork(log, face, closes)
        p.join(30)
        said(t, p)
    for i in range(51, 101):
        log.log_step(i, {"y": 1.0})

main()
"""


def _run(tmp_path: Path, run: str, mode: str, face: str) -> str:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(CHILD))
    out = subprocess.run(
        [sys.executable, str(script), run, mode, face],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("CHILD exit 0") == 2, out.stdout + out.stderr
    # the pump thread (thread mode) prints on the same stdout: a notice may share a line
    took = re.findall(r"CHILD exit 0 after ([0-9.]+)", out.stdout)
    assert len(took) == 2, out.stdout
    for seconds in took:
        assert float(seconds) < 10, out.stdout  # "within seconds": it never hangs
    return out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("mode", ["process", "thread"])
def test_a_forked_child_exits_at_once_and_its_steps_are_in_the_run(
    tmp_path: Path, mode: str, face: str
) -> None:
    run = tmp_path / "run"
    stdout = _run(tmp_path, str(run), mode, face)
    assert stdout.count("CHILD warnings 0") == 2, stdout
    if face == "sync":  # the child's finish() says what it delivered into the run
        assert "CHILD report 0 steps 100 complete True partial False" in stdout, stdout
    pids = re.findall(r"CHILD warnings \d+ pid (\d+)", stdout)
    rows = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines()]
    own = [r["iteration"] for r in rows if "producer" not in r]
    assert own == list(range(1, 101))  # the parent's own, in order
    for pid in pids:
        name = f"fork-{pid}"
        theirs = [r for r in rows if r.get("producer") == name]
        assert [r["iteration"] for r in theirs] == list(range(1, 101)), name
        assert [r["train/x"] for r in theirs] == [float(i) for i in range(1, 101)]
        # TensorBoard: the child's own run, log_dir/fork-<pid>/, read by TensorBoard
        tb = read_tensorboard(run / name)
        assert [s for s, _ in tb["train/x"]] == list(range(1, 101)), name


@pytest.mark.slow
@pytest.mark.parametrize("face", ["sync", "async"])
def test_without_a_log_dir_a_forked_child_warns_once_and_counts_its_calls(face: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        stdout = _run(Path(tmp), "-", "thread", face)
    assert stdout.count("CHILD warnings 1") == 2, stdout
    if face == "sync":
        assert "CHILD report 100" in stdout, stdout
