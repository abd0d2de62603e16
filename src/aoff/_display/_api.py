"""The contract between the pump and whatever shows the run to a person.

The pump owns refresh: it calls :meth:`Display.update` with a snapshot no more often
than ``refresh_per_second`` and only when the state changed. All methods may block
(terminal I/O), so the pump calls them from a worker thread, never from the event loop.
"""

from __future__ import annotations

from typing import Protocol

from .._core._view import RunView


class Display(Protocol):
    """What shows the run: the pump hands it a :class:`~aoff.RunView` of the run (a
    read-only snapshot, safe to keep) on open, on each frame and on close."""

    def open(self, state: RunView, now: float) -> None:
        """Start showing (e.g. enter Rich ``Live``). Called when the run's first event
        is seen (its first logging call, or ``start()``)."""

    def update(self, state: RunView, now: float) -> None:
        """Show one frame of ``state`` (a snapshot: safe to keep)."""

    def say(self, markup: str) -> None:
        """Print one line of Rich markup above the dashboard (thread-safe)."""

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        """Stop showing, restore the terminal; print the summary panel if ``summary``."""


class NullDisplay:
    """``log_backend="no_print"``: nothing on the terminal at all."""

    def open(self, state: RunView, now: float) -> None:
        pass

    def update(self, state: RunView, now: float) -> None:
        pass

    def say(self, markup: str) -> None:
        pass

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        pass
