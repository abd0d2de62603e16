"""Process exits: whatever ends the training script, what was logged is on disk.

Each test runs ``tests/exit_child.py`` (sync face, TensorBoard + JSONL, ``finish()``
never called) and ends it one way: falling off the end, an escaping exception, Ctrl+C
(SIGINT), SIGTERM, SIGKILL. For all but SIGKILL every ``log_step`` made before the end
must be in both files (read back with TensorBoard's own ``EventAccumulator``, every
scalar kept). SIGKILL cannot be caught: the files must still read back without error,
with no gap, and what was logged before the process went idle must be there.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from aoff._core._rules import ALERT_TAG
from aoff.testing import wait_until

from .conftest import loads_strict, tensorboard_accumulator

CHILD = Path(__file__).with_name("exit_child.py")
N = 300  # exit_child.N
TIMEOUT = 120  # generous: this is a slow, shared machine

pytestmark = pytest.mark.slow  # every test runs a child process (with its agent)


def start(mode: str, log_dir: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = log_dir / "stdout.txt", log_dir / "stderr.txt"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), mode, str(log_dir)],
            stdin=subprocess.DEVNULL,
            stdout=o,  # a file, not a pipe nobody reads
            stderr=e,
        )
    return proc, out, err


def wait_for_progress(proc: subprocess.Popen[bytes], log_dir: Path, at_least: int) -> None:
    path = log_dir / "progress.txt"

    def progressed() -> bool:
        assert proc.poll() is None, (log_dir / "stderr.txt").read_text()
        return path.exists() and len(path.read_text().split()) >= at_least

    wait_until(progressed, timeout=TIMEOUT, interval=0.02, what=f"{at_least} steps of the child")


def tensorboard_iterations(log_dir: Path) -> list[int]:
    files = [p for p in os.listdir(log_dir) if p.startswith("events.out.tfevents.")]
    assert len(files) == 1, files
    acc = tensorboard_accumulator(log_dir)  # raises on a corrupt file
    its = [int(e.value) for e in acc.Scalars("axis/iteration")]
    assert [e.step for e in acc.Scalars("axis/iteration")] == its
    nans = acc.Scalars("train/nan_metric")
    assert len(nans) == len(its) and all(math.isnan(e.value) for e in nans)
    return its


def jsonl_iterations(log_dir: Path, *, allow_partial_last: bool = False) -> list[int]:
    text = (log_dir / "metrics.jsonl").read_text(encoding="utf-8")
    lines = text.split("\n")
    tail = lines.pop()  # "" when the file ends with a newline
    if tail:
        assert allow_partial_last, f"a partial last line: {tail[-80:]!r}"
    rows = [loads_strict(line) for line in lines]
    # the NaN metric's alert (nonfinite(), once) is a text row of its own: JSONL takes texts
    alerts = [r for r in rows if ALERT_TAG in r]
    assert len(alerts) <= 1 and all("nan_metric" in r[ALERT_TAG] for r in alerts)
    rows = [r for r in rows if ALERT_TAG not in r]
    assert all(r["train/nan_metric"] == "nan" for r in rows)
    return [r["iteration"] for r in rows]


def assert_everything_written(log_dir: Path, logged: int) -> None:
    expected = list(range(1, logged + 1))
    assert tensorboard_iterations(log_dir) == expected
    assert jsonl_iterations(log_dir) == expected


def test_exit_without_finish_drains_through_the_exit_hook(tmp_path: Path) -> None:
    proc, _, err = start("return", tmp_path)
    assert proc.wait(TIMEOUT) == 0, err.read_text()
    assert "records not written" not in err.read_text()
    assert_everything_written(tmp_path, N)


def test_an_exception_escaping_the_training_loop_loses_nothing(tmp_path: Path) -> None:
    proc, _, err = start("raise", tmp_path)
    assert proc.wait(TIMEOUT) == 1
    stderr = err.read_text()
    assert "RuntimeError: training blew up" in stderr
    assert "records not written" not in stderr
    assert_everything_written(tmp_path, N)


def logged_before_the_signal(log_dir: Path) -> int:
    """``count.txt`` is written by the child's ``finally`` once the signal has landed."""
    count = int((log_dir / "count.txt").read_text())
    return count


@pytest.mark.parametrize(
    ("sig", "codes"),
    [
        # Python re-raises an uncaught KeyboardInterrupt as SIGINT, so it dies "by SIGINT"
        (signal.SIGINT, {-signal.SIGINT, 128 + signal.SIGINT}),
        # aoff turns SIGTERM into SystemExit(143) so finally blocks and the exit hook run
        (signal.SIGTERM, {128 + signal.SIGTERM}),
    ],
)
def test_a_signal_drains_and_flushes_everything_logged(
    tmp_path: Path, sig: signal.Signals, codes: set[int]
) -> None:
    proc, _, err = start("forever", tmp_path)
    try:
        wait_for_progress(proc, tmp_path, 500)
        proc.send_signal(sig)
        code = proc.wait(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = err.read_text()
    assert code in codes, stderr
    assert "records not written" not in stderr
    count = logged_before_the_signal(tmp_path)
    tb = tensorboard_iterations(tmp_path)
    # the signal may land after a log_step recorded its event but before the count
    assert len(tb) in (count, count + 1) and count >= 500
    assert tb == list(range(1, len(tb) + 1))
    assert jsonl_iterations(tmp_path) == tb


def test_sigkill_after_the_last_log_leaves_everything_readable_on_disk(tmp_path: Path) -> None:
    """Killed while idle: no finish, no exit hook; the pump had written it all already."""
    proc, _, _ = start("idle", tmp_path)
    try:
        wait_for_progress(proc, tmp_path, N)
        jl = tmp_path / "metrics.jsonl"
        wait_until(  # the pump writes within a tick; wait generously, then kill
            lambda: jl.exists() and len(jl.read_bytes().splitlines()) >= N,
            timeout=TIMEOUT,
            interval=0.05,
            what=f"{N} rows in metrics.jsonl",
        )
        helpers = psutil.Process(proc.pid).children()  # the agent (pump="process")
    finally:
        proc.kill()
        proc.wait()
    # the JSONL being complete does not mean TensorBoard's runner is done: the agent
    # writes what it has after the end of file, then exits
    _, alive = psutil.wait_procs(helpers, timeout=10)
    assert not alive, alive
    assert tensorboard_iterations(tmp_path) == list(range(1, N + 1))
    assert jsonl_iterations(tmp_path) == list(range(1, N + 1))


def test_sigkill_mid_stream_leaves_files_that_read_back_without_error(tmp_path: Path) -> None:
    proc, _, _ = start("forever", tmp_path)
    try:
        wait_for_progress(proc, tmp_path, 2_000)
        # mid-stream: the agent has written some (a round ships every 0.5 s or so)
        jsonl = tmp_path / "metrics.jsonl"
        wait_until(
            lambda: jsonl.exists() and jsonl.stat().st_size > 0,
            timeout=TIMEOUT,
            interval=0.02,
            what="a first row in metrics.jsonl",
        )
        helpers = psutil.Process(proc.pid).children()  # the agent (pump="process")
    finally:
        proc.kill()
        proc.wait()
    # the agent sees end of file, writes what it received and exits within seconds
    _, alive = psutil.wait_procs(helpers, timeout=10)
    assert not alive, alive
    tb = tensorboard_iterations(tmp_path)  # a truncated last record is tolerated
    jl = jsonl_iterations(tmp_path, allow_partial_last=True)
    for got in (tb, jl):
        assert got == list(range(1, len(got) + 1))  # a prefix: no gap, no garbage
