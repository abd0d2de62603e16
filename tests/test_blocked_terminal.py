"""A terminal that stops taking output (Ctrl+S, a full pipe) holds nothing back.

The child runs on a pseudo-terminal whose master side the test never reads, so the
kernel's buffer fills within a few frames and every write to the terminal blocks. The
run must still deliver every step to JSONL and TensorBoard, and ``finish()`` must return
within its timeout; the child records both in its progress file (not on the terminal).
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

CHILD = Path(__file__).with_name("terminal_child.py")


@pytest.mark.slow
@pytest.mark.parametrize("pump", ["process", "thread"])
def test_a_terminal_that_takes_no_output_holds_nothing_back(tmp_path: Path, pump: str) -> None:
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="120", LINES="40", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            str(CHILD),
            "timed",
            str(tmp_path),
            "--seconds",
            "3",
            "--backends",
            "tb",
            "--refresh",
            "20",
            "--pump",
            pump,
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    progress = tmp_path / "progress.txt"
    t0 = time.monotonic()
    try:
        # 3 s of logging, then finish(): its waits are bounded (backends: finish_timeout
        # 10 s; the dashboard's last frame: a few seconds) whatever the terminal does
        while time.monotonic() - t0 < 30:
            if progress.exists() and "finished" in progress.read_text().split():
                break
            assert proc.poll() is None or "finished" in progress.read_text().split()
            time.sleep(0.1)
        else:
            pytest.fail("finish() did not return although the backends had everything")
        took = time.monotonic() - t0
    finally:
        os.set_blocking(master, False)
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            try:  # now let the terminal take output: the child prints and exits
                os.read(master, 1 << 16)
            except BlockingIOError:
                time.sleep(0.02)
            except OSError:
                break
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    logged = [int(x) for x in progress.read_text().split() if x != "finished"]
    assert len(logged) > 100 and took < 25
    rows = [json.loads(ln) for ln in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == logged
    acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step // 4096 for e in acc.Scalars("axis/env_steps_total")] == logged
