"""Public test helpers: what users of aoff need in their own tests.

``MemoryBackend`` keeps every record, ``ManualClock`` moves only when told to,
``RecordingDisplay`` keeps every frame instead of drawing. ``wait_until``/``await_until``
wait for a condition instead of sleeping a fixed time (a ``WaitTimeout`` naming what was
awaited when it does not come). ``read_wandb_history``/``read_wandb_config`` read an
offline W&B run file back (``WANDB_MODE=offline``), so the W&B side of a run can be
checked without a server; ``wait_for_wandb_run(s)`` waits until W&B's service process has
written the whole file. ``probe(log)`` is a live, read-only ``Probe`` of a logger's
insides (where its pump runs, its buffer, its backends). Use them to test code that logs
through aoff without files, terminals or sleeping::

    mem = MemoryBackend()
    with OffPolicyLogger(log_backend="none", backends=[mem], display=RecordingDisplay()):
        ...
    assert mem.records[0].as_dict()["axis/iteration"] == 1.0

The hooks that make the faults aoff must survive (kill the agent, hold the media encoder,
drive a backend's stall clock, ...) are aoff's own, for its tests: they live in the
private ``aoff.testing._faults`` (and ``_remote_probe``, ``_wandb_offline``), are not
exported here, and may change with any release.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .._backends._base import BackendContext
from .._core._records import Record, TextRecord
from .._core._view import RunView
from ._probe import Probe, probe
from ._wait import WaitTimeout, await_until, wait_until
from ._wandb_offline import read_config as read_wandb_config
from ._wandb_offline import read_history as read_wandb_history
from ._wandb_offline import wait_for_run as wait_for_wandb_run
from ._wandb_offline import wait_for_runs as wait_for_wandb_runs

__all__ = [
    "ManualClock",
    "MemoryBackend",
    "Probe",
    "RecordingDisplay",
    "WaitTimeout",
    "await_until",
    "probe",
    "read_wandb_config",
    "read_wandb_history",
    "wait_for_wandb_run",
    "wait_for_wandb_runs",
    "wait_until",
]


class MemoryBackend:
    """Keeps every record it is given, in order; counts flushes and closes."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.records: list[Record] = []
        self.opened = 0
        self.flushes = 0
        self.closed = 0
        self.context: BackendContext | None = None

    async def open(self, ctx: BackendContext) -> None:
        self.opened += 1
        self.context = ctx

    async def write(self, records: Sequence[Record]) -> None:
        self.records.extend(records)

    async def flush(self) -> None:
        self.flushes += 1

    async def close(self) -> None:
        self.closed += 1

    def scalars(self) -> list[tuple[int, str, float]]:
        """Every written scalar as ``(step, tag, value)``, in write order."""
        return [
            (r.step, t, v)
            for r in self.records
            if not isinstance(r, TextRecord)
            for t, v in r.scalars
        ]


class ManualClock:
    """A clock that moves only when told to; pass it as ``clock=`` to a logger."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move the clock ``seconds`` forward; returns the new time."""
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, now: float) -> None:
        """Set the clock to ``now`` (it may go back, as a wall clock can)."""
        self._now = now


class RecordingDisplay:
    """A display that keeps every frame (a state snapshot and its time) instead of drawing."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, RunView]] = []
        self.opened: list[float] = []
        self.lines: list[str] = []
        self.closed: list[tuple[float, RunView, bool]] = []

    def open(self, state: RunView, now: float) -> None:
        self.opened.append(now)

    def update(self, state: RunView, now: float) -> None:
        self.frames.append((now, state))

    def say(self, markup: str) -> None:
        self.lines.append(markup)

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        self.closed.append((now, state, summary))
