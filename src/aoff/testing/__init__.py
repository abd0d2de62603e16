"""Public test helpers: an in-memory backend, a manual clock, a recording display.

``wait_until``/``await_until`` wait for a condition instead of sleeping a fixed time
(a clear ``WaitTimeout`` naming what was awaited when it does not come).
``read_wandb_history`` reads an offline W&B run file back (``WANDB_MODE=offline``), so
the W&B side of a run can be checked without a server; ``wait_for_wandb_run`` waits
until W&B's service process has written the whole file. ``probe(log)`` is a read-only
view of a logger's insides (where its pump runs, its buffer, its backends),
``probe_remote(r)`` the same for a producer, and
``kill_agent``, ``hold_media_encoder``, ``drive_backend_clock``, ``put_event`` and the
other hooks make the faults aoff must survive: tests of aoff's behaviour reach its
internals only through these. Use them to test code that logs through aoff without
files, terminals or sleeping::

    mem = MemoryBackend()
    with OffPolicyLogger(log_backend="none", backends=[mem], display=RecordingDisplay()):
        ...
    assert mem.records[0].as_dict()["axis/iteration"] == 1.0
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .._backends._base import BackendContext
from .._core._records import StepRecord
from .._core._state import State
from ._faults import (
    BackendWatch,
    BufferWatch,
    aput_event,
    drive_backend_clock,
    finish_grace,
    hold_media_encoder,
    kill_agent,
    put_event,
    record_report_lines,
    remove_sigterm_handler,
    reset_once_a_process_notices,
    ship_inline_after,
    signal_while_draining,
    watch_backend,
    watch_buffer,
    without_tensor_capture,
)
from ._probe import BackendProbe, Probe, PumpPlace, probe
from ._remote_probe import RemoteProbe, probe_remote
from ._wait import WaitTimeout, await_until, wait_until
from ._wandb_offline import CorruptRunFile
from ._wandb_offline import iter_records as iter_wandb_records
from ._wandb_offline import read_config as read_wandb_config
from ._wandb_offline import read_history as read_wandb_history
from ._wandb_offline import read_run_id as read_wandb_run_id
from ._wandb_offline import wait_for_run as wait_for_wandb_run
from ._wandb_offline import wait_for_runs as wait_for_wandb_runs

__all__ = [
    "BackendProbe",
    "BackendWatch",
    "BufferWatch",
    "CorruptRunFile",
    "ManualClock",
    "MemoryBackend",
    "Probe",
    "PumpPlace",
    "RecordingDisplay",
    "RemoteProbe",
    "WaitTimeout",
    "aput_event",
    "await_until",
    "drive_backend_clock",
    "finish_grace",
    "hold_media_encoder",
    "iter_wandb_records",
    "kill_agent",
    "probe",
    "probe_remote",
    "put_event",
    "read_wandb_config",
    "read_wandb_history",
    "read_wandb_run_id",
    "record_report_lines",
    "remove_sigterm_handler",
    "reset_once_a_process_notices",
    "ship_inline_after",
    "signal_while_draining",
    "wait_for_wandb_run",
    "wait_for_wandb_runs",
    "wait_until",
    "watch_backend",
    "watch_buffer",
    "without_tensor_capture",
]


class MemoryBackend:
    """Keeps every record it is given, in order; counts flushes and closes."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.records: list[StepRecord] = []
        self.opened = 0
        self.flushes = 0
        self.closed = 0
        self.context: BackendContext | None = None

    async def open(self, ctx: BackendContext) -> None:
        self.opened += 1
        self.context = ctx

    async def write(self, records: Sequence[StepRecord]) -> None:
        self.records.extend(records)

    async def flush(self) -> None:
        self.flushes += 1

    async def close(self) -> None:
        self.closed += 1

    def scalars(self) -> list[tuple[int, str, float]]:
        """Every written scalar as ``(step, tag, value)``, in write order."""
        return [(r.step, t, v) for r in self.records for t, v in r.scalars]


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
        self.frames: list[tuple[float, State]] = []
        self.opened: list[float] = []
        self.lines: list[str] = []
        self.closed: list[tuple[float, State, bool]] = []

    def open(self, state: State, now: float) -> None:
        self.opened.append(now)

    def update(self, state: State, now: float) -> None:
        self.frames.append((now, state))

    def say(self, markup: str) -> None:
        self.lines.append(markup)

    def close(self, state: State, now: float, *, summary: bool) -> None:
        self.closed.append((now, state, summary))
