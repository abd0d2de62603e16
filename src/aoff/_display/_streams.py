"""``print()``, stderr and ``logging`` of the training process, drawn above the panel.

While a live panel is drawn on the terminal, a line written straight to the terminal
would tear it. So, as Rich's redirect does, ``sys.stdout``/``sys.stderr`` are replaced by
proxies that queue the text; the pump (in this process, or in the agent after the
shipper sent it) prints whole lines above the panel through the guarded display.
``logging`` handlers that hold the original streams are pointed at the proxies too, and
put back afterwards. Writes never block, not even when the terminal takes no output:
the text waits in the queue, and the guarded display keeps at most ``MAX_LINES`` lines
while the terminal is stuck (the rest are counted and reported at the end of the run).
"""

from __future__ import annotations

import io
import logging
import sys
from collections import deque
from typing import Any, TextIO


class LineJoiner:
    """Turns written chunks into whole lines, per stream (``print`` writes the text and
    the newline separately)."""

    def __init__(self) -> None:
        self._partial: dict[str, str] = {}

    def feed(self, stream: str, text: str) -> list[str]:
        *lines, self._partial[stream] = (self._partial.get(stream, "") + text).split("\n")
        return lines

    def rest(self) -> list[str]:
        """Unterminated text at the end of the run."""
        out = [t for t in self._partial.values() if t]
        self._partial.clear()
        return out


class ForwardingStream(io.TextIOBase):
    """A text stream whose writes go to the agent (``isatty`` etc. are the original's)."""

    def __init__(self, name: str, original: TextIO, queue: deque[tuple[str, str]]) -> None:
        super().__init__()
        self._name = name
        self._original = original
        self._queue = queue

    def write(self, text: str) -> int:
        if text:
            self._queue.append((self._name, text))  # never blocks
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self._original.isatty()

    @property
    def rich_proxied_file(self) -> TextIO:
        """Rich consoles (the dashboard's own included) write to the real stream, as
        with Rich's own redirect: only plain writes are forwarded."""
        return self._original

    def fileno(self) -> int:
        return self._original.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._original.encoding

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


class Forwarding:
    """Installs the proxies; :meth:`restore` puts every original stream back (idempotent)."""

    def __init__(self, queue: deque[tuple[str, str]]) -> None:
        self._saved = (sys.stdout, sys.stderr)
        out = ForwardingStream("stdout", sys.stdout, queue)
        err = ForwardingStream("stderr", sys.stderr, queue)
        self._handlers: list[tuple[logging.StreamHandler[Any], Any]] = []
        for handler in _stream_handlers():
            if handler.stream is self._saved[0]:
                self._handlers.append((handler, handler.stream))
                handler.setStream(out)
            elif handler.stream is self._saved[1]:
                self._handlers.append((handler, handler.stream))
                handler.setStream(err)
        self._proxies = (out, err)
        sys.stdout, sys.stderr = out, err
        self.active = True

    def restore(self) -> None:
        if not self.active:
            return
        self.active = False
        if sys.stdout is self._proxies[0]:
            sys.stdout = self._saved[0]
        if sys.stderr is self._proxies[1]:
            sys.stderr = self._saved[1]
        for handler, stream in self._handlers:
            if handler.stream in self._proxies:
                handler.setStream(stream)


def _stream_handlers() -> list[logging.StreamHandler[Any]]:
    loggers: list[Any] = [logging.getLogger()]
    loggers += [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    out: list[logging.StreamHandler[Any]] = []
    for lg in loggers:
        for h in lg.handlers:
            if type(h) is logging.StreamHandler:
                out.append(h)
    return out


def should_forward(options_log_backend: str, has_display: bool) -> bool:
    """Forward only where the agent draws a live panel: a terminal that is not dumb."""
    if options_log_backend == "no_print" or has_display:
        return False
    try:
        from rich.console import Console

        console = Console()
        return bool(console.is_terminal) and not console.is_dumb_terminal
    except Exception:
        return False
