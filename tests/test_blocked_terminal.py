"""A terminal that stops taking output (Ctrl+S, a full pipe) holds nothing back.

The child runs on a pseudo-terminal whose master side the test never reads, so the
kernel's buffer fills within a few frames and every write to the terminal blocks. The
run must still deliver every step to JSONL and TensorBoard, and ``finish()`` must return
within its timeout; the child records both in its progress file (not on the terminal).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aoff.testing import WaitTimeout, wait_until

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

        def finished() -> bool:
            done = progress.exists() and "finished" in progress.read_text().split()
            assert done or proc.poll() is None, "the child died before finish() returned"
            return done

        wait_until(
            finished,
            timeout=30,
            interval=0.1,
            what="finish() to return although the terminal takes no output",
        )
        took = time.monotonic() - t0
    finally:
        os.set_blocking(master, False)

        def drained() -> bool:
            try:  # now let the terminal take output: the child prints and exits
                os.read(master, 1 << 16)
            except BlockingIOError:
                pass
            except OSError:
                return True  # the child closed its end
            return proc.poll() is not None

        with contextlib.suppress(WaitTimeout):
            wait_until(drained, timeout=20, interval=0.02, what="the child to exit")
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


USER_CONSOLE_CHILD = """
import fcntl, sys, time
from pathlib import Path
from rich.console import Console
from aoff import OffPolicyLogger

out = Path(sys.argv[1])
progress = out / "progress.txt"
fcntl.fcntl(1, 1031, 4096)  # F_SETPIPE_SZ: stdout's pipe is full after a frame or two
log = OffPolicyLogger(
    log_dir=str(out),
    backends=("jsonl",),
    console=Console(force_terminal=True, width=100),  # the user's own: a terminal
    refresh_per_second=20,
    handle_sigterm=False,
    system_interval=0,
)
log.start()
i = 0
t0 = time.monotonic()
while time.monotonic() - t0 < 4:  # frames fill the pipe and the display thread sticks
    i += 1
    log.log_step(i, {"loss": float(i)})
    time.sleep(0.01)  # a training step takes time (a pace, not a wait)
sys.stderr.write("USER LINE one\\n")
print("USER LINE two", file=sys.stderr)
with progress.open("a") as f:
    f.write("wrote\\n")
report = log.finish()
with progress.open("a") as f:
    f.write(f"finished {i} {report.steps}\\n")
"""


def _wait_for(path: Path, word: str, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether ``word`` shows up in ``path`` within ``timeout`` (or by the child's exit)."""

    def seen() -> bool:
        return path.exists() and word in path.read_text()

    with contextlib.suppress(WaitTimeout):
        wait_until(lambda: seen() or proc.poll() is not None, timeout=timeout, interval=0.05)
    return seen()


@pytest.mark.slow
def test_a_user_console_nobody_reads_never_blocks_the_users_own_writes(tmp_path: Path) -> None:
    """A user ``Console(force_terminal=True)`` on a stdout pipe nobody reads: the display
    thread sticks in a frame, holding the dashboard's lock. The program's own writes to
    stderr (redirected above the panel) must go through: a bounded wait, then straight
    to stderr, with one line saying the dashboard's frames are dropped."""
    script = tmp_path / "child.py"
    script.write_text(USER_CONSOLE_CHILD)
    run = tmp_path / "run"
    run.mkdir()
    progress = run / "progress.txt"
    err_path = tmp_path / "stderr.txt"
    env = dict(os.environ, COLUMNS="100", LINES="40", TERM="xterm-256color")
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(run)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,  # never read until the end
            stderr=err,
            env=env,
            start_new_session=True,
        )
    try:
        wrote = _wait_for(progress, "wrote", proc, 60)
        finished = wrote and _wait_for(progress, "finished", proc, 60)
        stderr_then = err_path.read_text()
    finally:
        try:  # now let stdout go: the display thread gets out of its frame, the child exits
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    assert wrote, f"the user's stderr write blocked on the stuck dashboard:\n{stderr_then}"
    assert finished, f"finish() did not return:\n{stderr_then}"
    # both lines reached stderr while stdout was still full, and the bypass said so once
    assert "USER LINE one\nUSER LINE two\n" in stderr_then, stderr_then
    assert stderr_then.count("the dashboard's frames are dropped from now on") == 1, stderr_then
    n, steps = progress.read_text().split("finished")[1].split()
    assert int(n) == int(steps)
    rows = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, int(n) + 1))
    assert proc.returncode == 0, err_path.read_text()
