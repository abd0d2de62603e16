"""``AsyncRunGroup``: a run group for async code (asyncio or trio).

Why a twin and not the sync class in an event loop: a group's ``flush()`` and
``finish()`` wait (for every run's files, for the agent's reports), and a wait on the
event loop's thread stops every other task. Here the calls that record stay plain,
non-waiting calls (one queued item each, the group's own hot path), and the calls that
wait are awaitables that run the group's wait in a worker thread (``anyio.to_thread``,
not abandoned when cancelled: a cancelled ``finish()`` still drains every run), so the
loop runs on meanwhile. Everything else is the :class:`~aoff.RunGroup` inside.
"""

from __future__ import annotations

import os
import types
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import anyio.to_thread

from .._core._report import FinishReport
from .._core._rules import Alert
from ._group import RunGroup

__all__ = ["AsyncRunGroup"]


class AsyncRunGroup:
    """:class:`~aoff.RunGroup` for async code: ``async with``, ``await flush()``,
    ``await finish()``; ``log_step``, ``log_status`` and ``log_collector`` are the
    group's own (they never wait). Takes :class:`~aoff.RunGroup`'s arguments."""

    def __init__(
        self, runs: int | Sequence[int], log_dir: str | os.PathLike[str], **options: Any
    ) -> None:
        #: the :class:`~aoff.RunGroup` this twin waits for
        self.group = RunGroup(runs, log_dir, **options)

    def log_step(
        self,
        step: Any,
        metrics: Mapping[str, Any] | None = None,
        reward: Any = None,
        *,
        axes: Mapping[str, Any] | None = None,
    ) -> None:
        """One step of every run (:meth:`aoff.RunGroup.log_step`); returns at once."""
        self.group.log_step(step, metrics, reward, axes=axes)

    def log_status(self, status: str) -> None:
        """Every run's status text."""
        self.group.log_status(status)

    def log_collector(
        self, total_steps: Any, buffer_size: Any = 0, *, axes: Mapping[str, Any] | None = None
    ) -> None:
        """Each run's total env steps, replay-buffer size and ``axes=``
        (:meth:`aoff.RunGroup.log_collector`)."""
        self.group.log_collector(total_steps, buffer_size, axes=axes)

    @property
    def runs(self) -> int:
        """How many runs."""
        return self.group.runs

    @property
    def seeds(self) -> tuple[int, ...]:
        """Each run's random seed, in the runs' order."""
        return self.group.seeds

    @property
    def run_dirs(self) -> tuple[str, ...]:
        """Each run's folder, in the runs' order."""
        return self.group.run_dirs

    @property
    def alerts(self) -> tuple[tuple[Alert, ...], ...]:
        """Per run, what its rules saw so far, oldest first."""
        return self.group.alerts

    @property
    def should_stop(self) -> tuple[bool, ...]:
        """Per run: True once a rule made with ``stop=True`` fired in that run."""
        return self.group.should_stop

    @property
    def all_stopped(self) -> bool:
        """True once every run's ``should_stop`` is."""
        return self.group.all_stopped

    async def flush(self) -> None:
        """Wait until every run wrote and flushed everything logged so far."""
        await anyio.to_thread.run_sync(self.group.flush)

    async def finish(self) -> tuple[FinishReport, ...]:
        """Drain every run, close their backends; one report per run (idempotent)."""
        return await anyio.to_thread.run_sync(self.group.finish)

    async def aclose(self) -> tuple[FinishReport, ...]:
        """The same as :meth:`finish`."""
        return await self.finish()

    async def __aenter__(self) -> AsyncRunGroup:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        stop = partial(self.group._stop, interrupted=exc_type is not None)
        await anyio.to_thread.run_sync(stop)
