"""What a person sees of the run, as the pump drives it: the display, printed text, viewers.

Why a part of its own: frames are throttled on ``monotonic`` (a wall clock that steps
back must not freeze the dashboard) and handed to the display's own thread (the pump
never waits for a terminal); the dashboard opens only once the backends said where they
log; what the training process printed goes above the panel in whole lines; ``aoff
attach`` viewers get snapshots at their own rate. At the end of the run the same part
shows the end: the last text, the viewers' end message, the display's close (bounded).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from .._core._state import State
from .._display._api import Display
from .._display._chart import PanelMemory
from .._display._guard import GuardedDisplay
from .._display._streams import LineJoiner
from ._runner import BackendRunner

if TYPE_CHECKING:
    from .._channel._server import LiveServer

__all__ = ["DISPLAY_CLOSE_TIMEOUT", "NOTICE_WAIT", "Screen"]

#: real seconds the dashboard waits, after start, for the backends' "logging to" lines
NOTICE_WAIT = 2.0
#: how long the end of a run waits for the dashboard's last frame and summary
DISPLAY_CLOSE_TIMEOUT = 3.0


class Screen:
    """The guarded display, the printed text and the viewers, fed from the pump's loop."""

    def __init__(
        self,
        display: Display,
        state: State,
        runners: Sequence[BackendRunner],
        *,
        say: Callable[[str], None],
        say_always: Callable[[str], None],
        refresh_per_second: float,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        # the pump never waits for the display: frames go to their own thread (_guard)
        self.display = GuardedDisplay(display, say=say)
        self.state = state
        self.runners = runners
        self._say_always = say_always
        self.clock = clock
        self.monotonic = monotonic
        self.min_frame_interval = 1.0 / refresh_per_second
        self.frames = 0
        self.last_frame: float | None = None
        self.dirty = False  # the state changed since the last frame
        self.display_open = False
        # what the training process printed (see _display/_streams): whole lines go above
        # the panel
        self.text: collections.deque[tuple[str, str]] = collections.deque()
        self._lines = LineJoiner()
        self._notice_deadline: float | None = None

    def touch(self) -> None:
        """The state changed: the next due frame draws it."""
        self.dirty = True

    def copy_backend_problems(self) -> None:
        """Copy each backend's trouble (failed, stalled) into the state the display shows."""
        for r in self.runners:
            if r.status == "failed" and r.error:
                self.state.backend_problems[r.name] = r.error
            elif r.stalled():
                self.state.backend_problems[r.name] = "stalled (write in progress)"
            else:
                self.state.backend_problems.pop(r.name, None)

    def echo_text(self, *, final: bool = False) -> None:
        lines: list[str] = []
        while self.text:
            stream, chunk = self.text.popleft()
            lines += self._lines.feed(stream, chunk)
        if final:
            lines += self._lines.rest()
        if lines:
            self.display.echo("\n".join(lines))

    def frame_due(self, now: float) -> bool:
        if not self.dirty or not self.display_open or self.display.failed:
            return False
        last = self.last_frame
        # an injected clock (``clock=``) may step back: a frame is then due at once, and
        # the interval restarts from there (it must never wait for the clock to catch up)
        return last is None or not 0 <= now - last < self.min_frame_interval

    def _notices_said(self) -> bool:
        """Whether every backend has opened (and said where it logs), or ``NOTICE_WAIT``
        real seconds went by since the run started.

        A backend opens concurrently with the run (a cold import of TensorBoard's protobuf
        module takes ~0.3 s): without this wait its "logging to" line could come after the
        first progress line, or after the last of a short run. The dashboard opens after it.
        """
        if not any(r.status == "opening" for r in self.runners):
            return True
        if self._notice_deadline is None:
            self._notice_deadline = time.monotonic() + NOTICE_WAIT
        return time.monotonic() >= self._notice_deadline

    def render(self, live: LiveServer | None) -> None:
        """Open the dashboard once the run started, draw a frame when one is due, and
        publish a snapshot to the viewers when one of them waits for it."""
        if (
            self.state.started
            and not self.display_open
            and not self.display.failed
            and self._notices_said()
        ):
            self.display_open = True
            self.display.open(self.state.snapshot(), self.clock())
        mono = self.monotonic()
        if self.frame_due(mono):
            self.copy_backend_problems()
            self.dirty = False
            self.last_frame = mono
            self.frames += 1
            self.display.update(self.state.snapshot(), self.clock())
        if live is not None and live.due(mono):  # only while a viewer is attached
            self.copy_backend_problems()
            snap = self.state.snapshot()
            inner = getattr(self.display, "inner", self.display)  # inside the guard
            memory = getattr(inner, "memory", None)  # a Dashboard's, if it is one
            if isinstance(memory, PanelMemory):  # viewers lay the panel out the same
                snap.panel_widths = memory.widths
            live.publish(snap, self.clock(), mono)

    async def close(self, live: LiveServer | None, *, summary: bool, lines: list[str]) -> None:
        """The end of the run as seen: the last printed text, the viewers' end message,
        the display's close (it restores the terminal even after a failed frame, and
        prints the summary even if start() was never called, as the seed did)."""
        self.echo_text(final=True)
        if live is not None:  # `aoff attach` viewers see the end as the terminal does
            live.end(self.state.snapshot(), self.clock(), summary=summary, lines=lines)
        self.display.close(self.state.snapshot(), self.clock(), summary=summary)
        await self._await_display_closed()
        if self.display.lines_dropped:
            self._say_always(
                f"aoff: {self.display.lines_dropped:,} printed lines were not shown: the "
                "terminal took no output while they came"
            )

    async def _await_display_closed(self) -> None:
        """Wait for the display's close (terminal restored, summary printed), at most
        ``DISPLAY_CLOSE_TIMEOUT``: a terminal that takes no output never holds finish."""
        deadline = time.monotonic() + DISPLAY_CLOSE_TIMEOUT
        while not self.display.closed() and time.monotonic() < deadline:  # noqa: ASYNC110
            await anyio.sleep(0.005)
        if not self.display.closed():
            self._say_always(
                f"aoff: the terminal did not take output for {DISPLAY_CLOSE_TIMEOUT:g}s; "
                "the summary panel was not printed (everything was written to the backends)"
            )
