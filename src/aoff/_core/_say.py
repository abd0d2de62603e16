"""aoff's own lines: how a part says one (``say``).

Why one name: a part that prints an aoff line (a problem, a notice, the end-of-run totals)
takes a ``say`` (:data:`Say`) and calls it, whether the line then goes to stderr
(:data:`say_to_stderr`, the default), to the dashboard (``Display.say``, which draws it
above the panel) or to a test's list; :class:`SayOnce` says each distinct problem once.
"Report" is kept for the run's :class:`~aoff.FinishReport`.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["Say", "SayOnce", "say_to_stderr"]

#: says one line (plain text on stderr; Rich markup where a display draws it)
Say: TypeAlias = Callable[[str], None]


class _StderrWriter:
    """aoff's own lines go to stderr through one daemon thread, and a caller waits for
    its line at most ``WAIT`` seconds (none at all while an earlier line is stuck): a
    terminal or pipe that takes no output never holds ``finish()`` or the pump. At
    interpreter exit the lines still queued get the same ``WAIT`` (:meth:`_at_exit`): a
    daemon thread dies with the interpreter, and the last line said before an exit (a
    second Ctrl+C's "steps not written") must not die with it."""

    WAIT = 1.0

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._lines: collections.deque[str] = collections.deque(maxlen=1000)
        self._written = 0
        self._queued = 0
        self._busy_since: float | None = None
        self._thread: threading.Thread | None = None
        self._exit_registered = False

    def __call__(self, message: str, *, wait: bool = True) -> None:
        with self._cond:
            self._lines.append(message)
            self._queued += 1
            mine = self._queued
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="aoff-stderr", daemon=True)
                self._thread.start()
                if not self._exit_registered:
                    self._exit_registered = True
                    atexit.register(self._at_exit)
            self._cond.notify_all()
            if wait and not self._stuck():
                self._cond.wait_for(lambda: self._written >= mine, timeout=self.WAIT)

    def _stuck(self) -> bool:
        """An earlier line has been in ``print`` for over ``WAIT`` s (under the lock)."""
        return self._busy_since is not None and time.monotonic() - self._busy_since > self.WAIT

    def _at_exit(self) -> None:
        """Give the lines still queued ``WAIT`` s to go out (none if stderr is stuck)."""
        with self._cond:
            if not self._stuck():
                queued = self._queued
                self._cond.wait_for(lambda: self._written >= queued, timeout=self.WAIT)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._lines))
                line = self._lines.popleft()
                self._busy_since = time.monotonic()
            with contextlib.suppress(Exception):
                print(line, file=sys.stderr, flush=True)
            with self._cond:
                self._busy_since = None
                self._written += 1
                self._cond.notify_all()


say_to_stderr = _StderrWriter()
"""Say one line on stderr (the default ``say``), never waiting long (see above)."""


class SayOnce:
    """Says each distinct problem once (at most ``limit`` distinct lines a run)."""

    def __init__(self, write: Say, limit: int = 50) -> None:
        self.write = write
        self.seen: set[str] = set()
        self.limit = limit
        self.count = 0

    def __call__(self, message: str) -> None:
        self.count += 1
        if message in self.seen or len(self.seen) > self.limit:
            return
        self.seen.add(message)
        if len(self.seen) > self.limit:
            message = f"aoff: more than {self.limit} distinct problems; no more are shown"
        with contextlib.suppress(Exception):
            self.write(message)

    def always(self, message: str) -> None:
        """Say ``message`` whatever the limit (the end-of-run totals)."""
        with contextlib.suppress(Exception):
            self.write(message)
