"""The terminal face of a run: a :class:`~aoff._display._api.Display` over a Rich console.

On an interactive terminal it keeps one Rich ``Live`` panel at the bottom of the screen
and redirects ``print()`` and stderr above it, as the seed logger did. Anywhere else (CI
logs, ``nohup``, redirected stdout, ``TERM=dumb``) a redrawn panel would be a stream of
cursor codes, so it writes one plain line at most every ``plain_interval`` seconds and the
summary panel at the end.

The pump calls these methods from a worker thread with the time as an argument; the
dashboard never reads a clock and never sleeps, so its throttling is testable with plain
numbers. Its one hard promise is :meth:`Dashboard.close`: whatever happened before (a
render that raised, Ctrl+C), the terminal gets its cursor back and stdout its original
stream.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

from rich.console import Console, RenderableType
from rich.file_proxy import FileProxy
from rich.live import Live
from rich.text import Text

from .._core._view import RunView
from ._banner import with_banner
from ._cells import Pause, no_pause
from ._chart import PanelMemory
from ._render import Glyphs, dashboard_panel, glyphs_for, plain_line, summary_panel
from ._streams import ForwardingStream

__all__ = ["Dashboard", "use_live"]


class _OwnConsole(Console):
    """The dashboard's own console: a reader that closed our stdout (``| head``) is a
    ``BrokenPipeError`` for the display's guard, which switches the dashboard off
    quietly, not Rich's ``SystemExit(1)``, which ended the display's thread and made the
    run's end wait for it. Later writes go to ``/dev/null``, as with Rich."""

    def on_broken_pipe(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, self.file.fileno())
        os.close(devnull)
        raise BrokenPipeError


def use_live(console: Console) -> bool:
    """Whether ``console`` can host a redrawn ``Live`` panel.

    Only a real terminal that is not ``TERM=dumb``/``unknown`` can; everything else gets
    plain lines (Rich's own ``NO_COLOR`` handling still applies to both).
    """
    return bool(console.is_terminal) and not console.is_dumb_terminal


#: seconds a program's write to stdout/stderr waits for a frame being drawn; then the
#: terminal counts as taking no output and the write goes straight to its stream (as
#: long as ``_guard.STALL``: a frame that slow is a stuck one there too, never load)
WRITE_WAIT = 2.0
#: seconds a frame may spend taking turns for the GIL with the training loop (thread
#: mode): each turn can wait a switch interval, and a frame slower than ``_guard.STALL``
#: would count as stuck; past this the rest is drawn in one piece
FRAME_TURNS = 0.5

#: pacing, passed in by the pump: the pause for one frame that may take turns for
#: ``seconds`` at most (what it does past that: nothing)
Pacing = Callable[[float], Pause]


def unpaced(_: float) -> Pause:
    """No pacing (the default): frames are drawn in one piece."""
    return no_pause


class _LockedProxy(FileProxy):
    """Rich's redirect of ``sys.stdout``/``sys.stderr`` under ``Live``, holding the
    dashboard's lock while it prints.

    Rich draws a printed line and then the whole panel again, placing the cursor from the
    height of the last frame. Without the lock, a frame drawn by the pump's thread in the
    middle of that leaves copies of the panel on the screen or erases lines printed
    above it whenever the panel's height changes.

    A terminal that takes no output (a pipe nobody reads, Ctrl+S) holds the display's
    thread in the middle of a frame, with the lock. The program's own writes then wait at
    most ``WRITE_WAIT`` seconds once, and go straight to their stream from then on
    (:meth:`Dashboard.bypass`): they never wait for ever on a frame.
    """

    def __init__(self, console: Console, file: IO[str], dashboard: Dashboard) -> None:
        super().__init__(console, file)
        self._aoff_dash = dashboard

    def _aoff_acquire(self) -> bool:
        dash = self._aoff_dash
        return dash._lock.acquire(timeout=0 if dash.blocked else WRITE_WAIT)

    def write(self, text: str) -> int:
        if not self._aoff_acquire():
            # a partial line Rich kept for this stream comes first
            kept: list[str] | None = getattr(self, "_FileProxy__buffer", None)
            head = "".join(kept) if kept else ""
            if kept:
                kept.clear()
            return self._aoff_dash.bypass(self.rich_proxied_file, head + text) - len(head)
        try:
            return super().write(text)
        finally:
            self._aoff_dash._lock.release()

    def flush(self) -> None:
        if not self._aoff_acquire():
            self.rich_proxied_file.flush()
            return
        try:
            super().flush()
        finally:
            self._aoff_dash._lock.release()


class Dashboard:
    """Shows a run: a live panel on terminals, throttled plain lines elsewhere.

    ``live`` forces the mode (``None``: decide with :func:`use_live`). Exceptions raised
    while building or drawing a frame propagate to the caller (the pump reports them);
    the dashboard stays usable and :meth:`close` still restores the terminal.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        plain_interval: float = 5.0,
        live: bool | None = None,
        pacing: Pacing = unpaced,
    ) -> None:
        self.console = console if console is not None else _OwnConsole()
        self._pacing = pacing
        self._pause: Pause = no_pause  # the frame being drawn's (see _frame)
        self.plain_interval = plain_interval
        self.live_mode = use_live(self.console) if live is None else live
        self.glyphs: Glyphs = glyphs_for(self.console)
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._saved_streams: tuple[Any, Any] | None = None
        self._last_plain_time: float | None = None
        self._last_plain_line: str | None = None
        self._closed = False
        #: a program's write found the display stuck on the terminal (see _LockedProxy):
        #: frames are dropped from then on, and printed text bypasses the panel
        self.blocked = False
        #: kept between frames: steady column widths, the chart's loss history
        self.memory = PanelMemory()

    # -- Display protocol --------------------------------------------------------------
    def open(self, state: RunView, now: float) -> None:
        """Enter ``Live`` (terminal) or print the first plain line (elsewhere)."""
        with self._lock:
            self._closed = False
            if self.live_mode:
                with self._frame():
                    self._start_live(state, now)
            else:
                self._plain(state, now, force=True)

    def update(self, state: RunView, now: float) -> None:
        """Redraw the panel, or print a plain line if ``plain_interval`` has passed."""
        with self._lock:
            if self._closed:
                return
            if self.blocked:  # the terminal took no output: drawing more would hold it
                return
            if not self.live_mode:
                self._plain(state, now, force=False)
                return
            # drawn in pieces where the GIL is shared (_pump/_turns), for a bounded time
            with self._frame():
                renderable = self._panel(state, now)
                if self._live is None:
                    self._start_live(state, now, renderable)
                else:
                    self._live.update(renderable, refresh=True)

    def say(self, markup: str) -> None:
        """Print one line of markup; under ``Live`` it appears above the panel."""
        with self._lock:  # never in the middle of a frame (see _LockedProxy)
            self.console.print(markup)

    def echo(self, text: str) -> None:
        """Print lines another process wrote (the agent's forwarded ``print()``) as they
        are: no markup, no highlighting; under ``Live`` above the panel."""
        with self._lock:
            self.console.print(
                Text.from_ansi(text), markup=False, highlight=False, emoji=False, soft_wrap=True
            )

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        """Stop ``Live`` and restore the terminal (always; idempotent), then print the
        summary panel when ``summary`` (once).

        If the final frame cannot be drawn, the terminal is restored and the summary
        printed first; the error is raised afterwards.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live, self._live = self._live, None
            error: Exception | None = None
            if live is not None:
                try:
                    with self._frame():
                        self._stop_live(live, state, now)
                except Exception as exc:  # streams and cursor are restored by now
                    error = exc
            elif not summary and not self.live_mode:
                # a run that ends without a summary still logs where it stopped
                line = plain_line(state, now)
                if line != self._last_plain_line:
                    self._emit_plain(line, now)
            if summary:
                self.console.print()
                self.console.print(summary_panel(state, now, self.glyphs))
            if error is not None:
                raise error

    def bypass(self, stream: IO[str], text: str) -> int:
        """Write a program's ``text`` straight to ``stream``: the display was stuck on the
        terminal for ``WRITE_WAIT`` seconds. The first time says so, once, on the same
        stream; frames are dropped from then on."""
        if not self.blocked:
            self.blocked = True
            stream.write(
                f"aoff: the terminal took no output for {WRITE_WAIT:g}s: the dashboard's "
                "frames are dropped from now on, and printed text goes straight to the "
                "stream (training and files are not held up)\n"
            )
        n = stream.write(text)
        stream.flush()
        return n

    # -- internals ---------------------------------------------------------------------
    def _panel(self, state: RunView, now: float) -> RenderableType:
        panel = dashboard_panel(state, now, self.glyphs, self.memory, self._turn)
        return with_banner(state, panel)

    @contextlib.contextmanager
    def _frame(self) -> Iterator[None]:
        """Within: the pauses of one frame (``pacing``), for ``FRAME_TURNS`` at most."""
        self._pause = self._pacing(FRAME_TURNS)
        try:
            yield
        finally:
            self._pause = no_pause

    def _turn(self) -> None:
        """The panel's pause: the current frame's (a panel is drawn again at close)."""
        self._pause()

    def _start_live(
        self, state: RunView, now: float, renderable: RenderableType | None = None
    ) -> None:
        if renderable is None:
            renderable = self._panel(state, now)
        if self._live is not None:
            self._live.update(renderable, refresh=True)
            return
        live = Live(
            renderable,
            console=self.console,
            auto_refresh=False,
            transient=False,
            redirect_stdout=False,  # redirected below, under self._lock
            redirect_stderr=False,
        )
        # Live.start(refresh=True) stops itself again if the first frame raises
        live.start(refresh=True)
        self._live = live
        self._redirect_streams()

    def _redirect_streams(self) -> None:
        """``print()`` and stderr go above the panel, as with Rich's own redirect."""
        if not self.console.is_terminal or self._saved_streams is not None:
            return
        out, err = sys.stdout, sys.stderr
        self._saved_streams = (out, err)
        # a ForwardingStream (aoff's own, see _streams) already sends the text above the
        # panel, without ever blocking the writer
        if not isinstance(out, FileProxy | ForwardingStream):
            sys.stdout = _LockedProxy(self.console, out, self)
        if not isinstance(err, FileProxy | ForwardingStream):
            sys.stderr = _LockedProxy(self.console, err, self)

    def _restore_streams(self) -> None:
        saved, self._saved_streams = self._saved_streams, None
        if saved is None:
            return
        for name, original in zip(("stdout", "stderr"), saved, strict=True):
            current = getattr(sys, name)
            # only our own proxy is undone: a stream someone replaced since (aoff's
            # forwarding, already put back by its owner) is left as it is
            if isinstance(current, _LockedProxy):
                with contextlib.suppress(Exception):
                    current.flush()  # a last line printed without its newline
                setattr(sys, name, original)

    def _stop_live(self, live: Live, state: RunView, now: float) -> None:
        """Draw the final frame if possible, then stop ``live`` no matter what."""
        try:
            # if the final frame cannot be built, keep the last one: stopping matters more
            with contextlib.suppress(Exception):
                live.update(self._panel(state, now), refresh=False)
            live.stop()  # re-renders the last frame
        finally:
            self._restore_streams()
            if self.console.is_terminal:
                self.console.show_cursor(True)

    def _plain(self, state: RunView, now: float, *, force: bool) -> None:
        last = self._last_plain_time
        # a wall clock that stepped back restarts the interval instead of silencing lines
        if not force and last is not None and 0 <= now - last < self.plain_interval:
            return
        self._emit_plain(plain_line(state, now), now)

    def _emit_plain(self, line: str, now: float) -> None:
        # out(): no markup, no wrapping, no highlighting: one log line per call
        self.console.out(line, highlight=False)
        self._last_plain_time = now
        self._last_plain_line = line
