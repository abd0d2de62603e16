"""The run summary file (``aoff-summary.json``) kept fresh while the run goes on.

Why a module of its own: ``aoff ls`` and ``aoff show`` read this small file instead of
the run's event files (see :mod:`aoff._runfolder.summary._writer`). Keeping it fresh is a timer,
a write in a worker thread that a hung disk cannot turn into a hung ``finish()``, and one
last write at the end. The pump feeds it records and calls it once a tick; nothing else
of the pump's is touched here.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from .._core._columns import Spans
from .._core._records import Record
from .._runfolder.summary._writer import SUMMARY_INTERVAL, RunSummary

__all__ = ["SummaryKeeper"]

#: the end of a run waits at most this long for the summary's last write
FINAL_WRITE_BOUND = 2.0


class SummaryKeeper:
    """Feeds a :class:`RunSummary` and rewrites its file every ``SUMMARY_INTERVAL`` s."""

    def __init__(
        self,
        summary: RunSummary,
        *,
        monotonic: Callable[[], float],
        say: Callable[[str], None],
        media_counts: Callable[[], tuple[int, int, dict[str, int]]] = lambda: (0, 0, {}),
        stopped_by: Callable[[], dict[str, Any] | None] = lambda: None,
        late_counts: Callable[[], tuple[int, dict[str, int]]] = lambda: (0, {}),
    ) -> None:
        self.summary = summary
        self._monotonic = monotonic
        self._say = say
        self._due: float | None = None
        self._busy = False
        #: ``(written, refused, lost by reason)`` media counts now (the pump's)
        self.media_counts = media_counts
        #: how a ``stop=True`` rule ended the run, if one did: ``{"iteration", "rule",
        #: "tag", "message"}`` (the pump's)
        self.stopped_by = stopped_by
        #: ``(the run's own late records, late records by producer)`` now (the pump's)
        self.late_counts = late_counts

    def _snapshot(self, state: str = "running") -> dict[str, Any]:
        s = self.summary
        s.media_written, s.media_refused, s.media_lost = self.media_counts()
        s.late_records, s.late_points = self.late_counts()
        return s.snapshot(state)

    def offer(self, records: Sequence[Record], spans: Spans | None = None) -> None:
        if records:
            self.summary.add(records, spans)

    def maybe_refresh(self, tg: anyio.abc.TaskGroup) -> None:
        """Start a rewrite in a worker thread when one is due and none is under way."""
        if self._busy:
            return
        now = self._monotonic()
        if self._due is None or self._due - now > SUMMARY_INTERVAL:  # a clock stepped back
            self._due = now + SUMMARY_INTERVAL
        if now < self._due or not self.summary.records:
            return
        self._due = now + SUMMARY_INTERVAL
        self._busy = True
        tg.start_soon(self._write, self._snapshot())

    async def _write(self, content: dict[str, Any]) -> None:
        try:
            # a disk that hangs must not hold finish(): final() gives up on it
            await anyio.to_thread.run_sync(self.summary.write, content, abandon_on_cancel=True)
        except Exception as exc:  # a full disk, a removed folder: said once, run goes on
            self._say(
                f"aoff: could not write {self.summary.path}: {type(exc).__name__}: {exc} "
                "(aoff ls/show read the event files instead)"
            )
        finally:
            self._busy = False

    async def final(self, *, interrupted: bool) -> None:
        """The last write, at the end of the run (at most ``FINAL_WRITE_BOUND`` s)."""
        if not self.summary.records:
            return
        state = "interrupted" if interrupted else "finished"
        stopped = None if interrupted else self.stopped_by()
        if stopped is not None:  # a rule ended it: "stopped", never "finished"
            state = "stopped"
            self.summary.stopped = stopped
        with anyio.move_on_after(FINAL_WRITE_BOUND):
            await self._write(self._snapshot(state))
            # the run indexes above the run (``aoff ls --where``) learn of it now
            from .._runfolder.reading._runindex import note_finished

            path = self.summary.path
            with contextlib.suppress(Exception):  # an index is a cache: the next look reads
                await anyio.to_thread.run_sync(
                    lambda: note_finished(os.path.dirname(os.path.abspath(path))),
                    abandon_on_cancel=True,
                )
