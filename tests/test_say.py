"""``_core/_say.py``: aoff's own lines on stderr, never holding the caller for long."""

from __future__ import annotations

import subprocess
import sys

#: a process whose stderr takes 0.3 s a write from aoff's writer thread, that says one line
#: without waiting for it and exits at once (``wait=False``: as a notice is said);
#: ``extra`` runs before the exit
_CHILD = """
import sys, threading, time

class Slow:
    def __init__(self, inner):
        self.inner = inner
    def write(self, text):
        if threading.current_thread().name == "aoff-stderr":
            time.sleep(0.3)
        return self.inner.write(text)
    def flush(self):
        self.inner.flush()

sys.stderr = Slow(sys.stderr)
from aoff._core._say import say_to_stderr
say_to_stderr("aoff: the last line", wait=False)
{extra}
"""


def run_child(extra: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD.format(extra=extra)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_line_said_just_before_the_interpreter_exits_is_written() -> None:
    got = run_child()
    assert got.returncode == 0, got.stderr
    assert got.stderr.splitlines() == ["aoff: the last line"]


def test_a_line_said_before_an_uncaught_keyboard_interrupt_is_written() -> None:
    """As a second Ctrl+C ends ``finish()``: the traceback, and the line (said first,
    written once the traceback is out, before the interpreter goes)."""
    got = run_child("raise KeyboardInterrupt")
    assert got.returncode != 0
    lines = got.stderr.splitlines()
    assert "aoff: the last line" in lines and "KeyboardInterrupt" in lines, got.stderr


def test_a_stuck_stderr_holds_the_exit_for_at_most_the_wait() -> None:
    """A line stuck in ``print`` for over ``WAIT`` s: the exit waits no more for it."""
    import time

    child = _CHILD.replace("time.sleep(0.3)", "time.sleep(30)")
    t0 = time.monotonic()
    got = subprocess.run(
        [sys.executable, "-c", child.format(extra="")], capture_output=True, text=True, timeout=60
    )
    assert got.returncode == 0, got.stderr
    assert time.monotonic() - t0 < 15  # the 30 s write was not waited for
