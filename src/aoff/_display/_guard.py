"""A display that can never hold the pump back: frames on their own thread, bounded.

A terminal can stop taking output (Ctrl+S, a full pipe, a stuck log collector). A
frame written to it then blocks, and if the pump waited for frames, the backends would
starve. So the pump hands every display call to :class:`GuardedDisplay`, which runs them
in order on one daemon thread and never waits for one:

* a new frame replaces a frame still waiting to be drawn (the newest state wins);
* while a call has been stuck for ``stall`` seconds, new frames are skipped; once the
  stuck call returns, the dashboard is switched off for the rest of the run, and one line
  says so (the terminal takes writes again by then) — except after ``open``, whose time
  is mostly one-off work, not the terminal;
* :meth:`GuardedDisplay.close` waits at most ``close_timeout``: ``finish()`` returns
  whatever the terminal does (the summary panel is then not printed, and a line on
  stderr says so).

Errors raised by the display are reported once and switch it off: a broken display costs
the run its dashboard, never the run itself. A ``BrokenPipeError`` (the output's reader
has gone, ``| head``) switches it off without a word: there is no one to tell.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

from .._core._view import RunView
from ._api import Display

#: seconds a display call may take before the dashboard counts as stuck
STALL = 2.0
#: lines (``say``/``echo``) kept while the display is busy; older ones are dropped
MAX_LINES = 1000


class GuardedDisplay:
    """Wraps a :class:`Display`; every method returns at once (``close`` is bounded)."""

    def __init__(
        self,
        inner: Display,
        *,
        say: Callable[[str], None],
        stall: float = STALL,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.say_problem = say
        self.stall = stall
        self.monotonic = monotonic
        self._cond = threading.Condition()
        self._calls: collections.deque[tuple[str, Callable[[], None]]] = collections.deque()
        self._busy_since: float | None = None
        self._thread: threading.Thread | None = None
        self.disabled = False
        self.failed = False
        self.skipped = 0
        self.lines_dropped = 0
        self._closed = threading.Event()

    # -- the Display protocol, non-blocking ---------------------------------------------
    def open(self, state: RunView, now: float) -> None:
        self._submit("open", lambda: self.inner.open(state, now))

    def update(self, state: RunView, now: float) -> None:
        if self.stuck():
            self.skipped += 1
            return
        self._submit("frame", lambda: self.inner.update(state, now), replace="frame")

    def say(self, markup: str) -> None:
        self._submit("line", lambda: self.inner.say(markup))

    def echo(self, text: str) -> None:
        """Text another process printed (the agent's forwarding), if the display has it."""
        echo = getattr(self.inner, "echo", None)
        if echo is not None:
            self._submit("line", lambda: echo(text))

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        self._submit("close", lambda: self._close_inner(state, now, summary), force=True)

    def _close_inner(self, state: RunView, now: float, summary: bool) -> None:
        try:
            self.inner.close(state, now, summary=summary)
        finally:
            self._closed.set()

    def closed(self) -> bool:
        """Whether :meth:`close` has run (the terminal is restored)."""
        return self._closed.is_set()

    # -- state ---------------------------------------------------------------------------
    def stuck(self) -> bool:
        since = self._busy_since
        return since is not None and self.monotonic() - since > self.stall

    def busy(self) -> bool:
        with self._cond:
            return self._busy_since is not None or bool(self._calls)

    # -- the thread ----------------------------------------------------------------------
    def _submit(
        self, kind: str, call: Callable[[], None], *, replace: str = "", force: bool = False
    ) -> None:
        with self._cond:
            if (self.disabled or self.failed) and not force:
                return
            if replace and self._calls and self._calls[-1][0] == replace:
                self._calls[-1] = (kind, call)
                self.skipped += 1
            elif kind == "line" and len(self._calls) >= MAX_LINES:
                self.lines_dropped += 1
                return
            else:
                self._calls.append((kind, call))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="aoff-display", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._calls:
                    self._cond.wait()
                kind, call = self._calls.popleft()
                if (self.disabled or self.failed) and kind != "close":
                    continue
                self._busy_since = self.monotonic()
            started = self._busy_since
            try:
                call()
            except BrokenPipeError:  # nobody reads the output any more: nothing to say
                self.failed = True
            except Exception as exc:
                self.failed = True
                self.say_problem(
                    f"aoff: dashboard disabled after error: {type(exc).__name__}: {exc}"
                )
            took = self.monotonic() - started
            with self._cond:
                self._busy_since = None
            # not for "open": the first call pays once for what every later frame reuses
            # (the display's modules imported, the terminal measured), which on a loaded
            # machine alone can pass the stall: judged by it, a dashboard that works would
            # be off for the whole run. A terminal that takes no output is judged at its
            # first frame instead (and frames are skipped while a call is stuck).
            if took > self.stall and kind not in ("close", "open") and not self.disabled:
                self.disabled = True
                self.say_problem(
                    f"aoff: the dashboard is off for the rest of the run: the terminal did "
                    f"not take its output for {took:.0f}s (training and files were not held up)"
                )
            if kind == "close":
                return


def wrap(display: Display, say: Callable[[str], None], **kw: Any) -> GuardedDisplay:
    return (
        display if isinstance(display, GuardedDisplay) else GuardedDisplay(display, say=say, **kw)
    )
