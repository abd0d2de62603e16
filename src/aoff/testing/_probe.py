"""``probe(log)``: a read-only view of a logger's insides, for tests.

Why: tests of aoff's behaviour need to see what no public call shows (where the pump
runs, how full the buffer is, what a backend's runner was offered, which problem lines
the pump reported) and, before this module, reached into private attributes for it
(``log._core.pump...``), so that every rename of a private part broke tests far from it.
This is the one documented place that reaches in: a rename is fixed here, once, and a
test that reads a probe says what it looks at in words.

Every property reads the logger *now* (a probe is a live view, not a snapshot), so
``wait_until(lambda: p.buffer_full)`` waits on the real thing. Nothing here changes the
logger; the fault-injection hooks are in ``_faults.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .._core._report import FinishReport
    from .._core._state import State

from ._parts import _face, _Parts, _side

__all__ = ["BackendProbe", "Probe", "PumpPlace", "probe"]

#: where a logger's pump runs: in the agent process, in this process (the sync face's
#: "aoff-pump" thread, the async face's task, or the fallback after the agent was lost),
#: or nowhere here (a muted rank, a forked child's copy, a closed logger's empty side)
PumpPlace = Literal["agent", "in-process", "none"]


class BackendProbe:
    """One backend's runner in the in-process pump, read live: what it was offered,
    wrote, lost, and what waits for it."""

    def __init__(self, runner: Any) -> None:
        self._runner = runner

    @property
    def name(self) -> str:
        """The backend's name (``"tensorboard"``, ``"jsonl"``, ...)."""
        return str(self._runner.name)

    @property
    def offered(self) -> int:
        """Records offered to the backend so far (step and media records)."""
        return int(self._runner.offered)

    @property
    def written(self) -> int:
        """Records the backend's ``write`` returned for."""
        return int(self._runner.written)

    @property
    def lost(self) -> int:
        """Records counted as lost for this backend (it failed, stalled or was abandoned)."""
        return int(self._runner.lost)

    @property
    def pending(self) -> int:
        """Records queued for the backend, not yet handed to ``write``."""
        return len(self._runner.pending)

    @property
    def max_pending(self) -> int:
        """The queue's bound: a stalled backend keeps only this many of its newest."""
        return int(self._runner.max_pending)

    @property
    def stall_timeout(self) -> float:
        """Seconds a ``write``/``flush`` may take before the backend counts as stalled."""
        return float(self._runner.stall_timeout)

    @property
    def stalled(self) -> bool:
        """Whether a call into the backend has been running for over ``stall_timeout``
        on the runner's clock (read without the runner's own check, which reports)."""
        r = self._runner
        since = r.busy_since
        return since is not None and r.monotonic() - since > r.stall_timeout

    @property
    def status(self) -> str:
        """``"opening"``, ``"ok"``, ``"failed"`` or ``"closed"``."""
        return str(self._runner.status)


class Probe:
    """A live, read-only view of one logger (see :func:`probe`).

    Properties about the in-process pump (``state``, ``backends``, ``problems``,
    ``system_metrics``, ``media_encoder_pending``) raise ``LookupError`` while the pump
    runs in the agent process: its parts are in another process there.
    """

    def __init__(self, log: object) -> None:
        self._face = _face(log)

    @property
    def phase(self) -> str:
        """Where the logger is in its life: ``"new"`` (an async logger not yet entered),
        ``"open"``, ``"stopping"`` (the first ``finish()``/``close()`` began the final
        drain), ``"closed"``, ``"abandoned"`` (a second Ctrl+C stopped waiting for the
        drain), ``"muted"`` (a rank that does not log), ``"forked"`` or
        ``"forked_dropped"`` (a forked child's copy)."""
        return str(self._face._phase.name.lower())

    # -- where the pump runs -----------------------------------------------------------------
    @property
    def pump_place(self) -> PumpPlace:
        """``"agent"``, ``"in-process"`` or ``"none"`` (see :data:`PumpPlace`)."""
        side = _side(self._face)
        if side is not None:
            return "in-process" if side.fallback is not None else "agent"
        return "in-process" if getattr(self._face, "_core", None) is not None else "none"

    @property
    def pump_thread(self) -> threading.Thread | None:
        """The "aoff-pump" thread that runs the sync face's in-process pump (thread
        mode, or the fallback after the agent was lost); None where there is none (the
        async face runs its pump as a task of its event loop)."""
        host = getattr(self._face, "_driver", None)
        side = _side(self._face)
        if side is not None:
            host = side.fallback
        thread = getattr(host, "thread", None) if host is not None else None
        return thread if isinstance(thread, threading.Thread) else None

    @property
    def agent_pid(self) -> int | None:
        """The agent process's pid (process mode; it stays set once the agent ended)."""
        side = _side(self._face)
        return None if side is None else int(side.proc.pid)

    @property
    def agent_running(self) -> bool:
        """Whether the agent process is alive now (False outside process mode)."""
        side = _side(self._face)
        return side is not None and side.proc.poll() is None

    @property
    def agent_returncode(self) -> int | None:
        """The agent's exit code once it ended and was reaped (None while it runs, and
        outside process mode)."""
        side = _side(self._face)
        return None if side is None else side.proc.returncode

    @property
    def agent_lost(self) -> str | None:
        """Why the agent was lost (then the pump runs here, folding what it did not
        get), or None while it serves the run (and outside process mode)."""
        side = _side(self._face)
        return None if side is None else side.gone

    @property
    def shipped_steps(self) -> int:
        """``log_step`` events sent to the agent so far (0 outside process mode)."""
        side = _side(self._face)
        return 0 if side is None else int(side.shipper.tally.shipped_steps)

    @property
    def shipped_media(self) -> int:
        """``log_image``/``log_video`` events whose frame the agent's socket took so far
        (0 outside process mode)."""
        side = _side(self._face)
        return 0 if side is None else int(side.shipper.tally.shipped_media)

    @property
    def agent_written(self) -> dict[str, int]:
        """Per backend, the steps the agent confirmed written (its last ``Ack``, sent at
        most every 0.25 s); empty outside process mode and before the first ``Ack``."""
        side = _side(self._face)
        return {} if side is None else dict(side.shipper.tally.acked_written)

    @property
    def agent_backlog_bytes(self) -> int:
        """Bytes the agent has received and not folded yet (pickled events), as of its
        last ``Ack``: at most every 0.25 s while it reads or folds, and at every flush.
        Its bound is 64 MiB at the default ``capacity``; beyond it a burst waits in this
        process (:attr:`link_pending_bytes`, :attr:`buffered`). 0 outside process mode."""
        side = _side(self._face)
        return 0 if side is None else side.shipper.tally.agent_backlog[0]

    @property
    def agent_backlog_peak_bytes(self) -> int:
        """The most :attr:`agent_backlog_bytes` has been in this run (as of the last
        ``Ack``; 0 outside process mode)."""
        side = _side(self._face)
        return 0 if side is None else side.shipper.tally.agent_backlog[1]

    @property
    def unsent_frames(self) -> tuple[Any, ...]:
        """The frames queued for the agent's socket that it has not taken yet, as the
        shipper keeps them (a frozen agent lets them pile up), then the slices a logging
        call pickled and not framed yet (``Slices``); empty outside process mode."""
        side = _side(self._face)
        return () if side is None else tuple(side.shipper.unsent_frames())

    @property
    def link_pending_bytes(self) -> int:
        """Bytes of events on their way to the agent that its socket has not taken yet:
        framed, or pickled as slices a shipping call has not framed yet (process mode; 0
        otherwise)."""
        side = _side(self._face)
        return 0 if side is None else int(side.shipper.waiting_bytes())

    @property
    def unsent_events(self) -> tuple[Any, ...]:
        """Events shipped to no agent yet, oldest first: those in the unsent frames, then
        those held for device values. Once the agent was lost, what its fallback was
        handed to fold first. Empty outside process mode."""
        side = _side(self._face)
        return () if side is None else tuple(side.shipper.unsent_events())

    # -- the buffer between the training loop and the pump ---------------------------------
    @property
    def buffered(self) -> int:
        """Events in the face's buffer now (logged, not yet drained by the pump or the
        shipper)."""
        return len(self._face._buffer)

    @property
    def buffer_full(self) -> bool:
        """Whether the face's buffer holds ``capacity`` events now."""
        return bool(self._face._buffer.full())

    @property
    def capacity(self) -> int:
        """The face's buffer bound, in events (the constructor's ``capacity``)."""
        return int(self._face._buffer.capacity)

    @property
    def buffer_dropped(self) -> int:
        """Events the buffer's overflow policy dropped so far."""
        return int(self._face._buffer.dropped)

    # -- the logging calls -----------------------------------------------------------------
    @property
    def captures_tensors(self) -> bool:
        """Whether logging calls capture PyTorch tensors (``torch`` was imported)."""
        return bool(getattr(self._face, "_capturing", False))

    @property
    def report(self) -> FinishReport | None:
        """The report of the run's stop, once it has one (None while it runs)."""
        report: FinishReport | None = self._face._report
        return report

    @property
    def media_in_flight(self) -> int:
        """Bytes of accepted ``log_image``/``log_video`` frames not yet freed by the
        encoder (what the ``media_budget`` counts)."""
        return int(self._face._media_budget.in_flight())

    @property
    def media_blocks(self) -> tuple[str, ...]:
        """The names of the shared-memory blocks of the face's media pool (process mode;
        empty otherwise). ``/dev/shm/<name>`` exists while the run holds the block."""
        pool = self._face._media_budget.pool
        return () if pool is None else tuple(b.shm.name for b in pool._blocks)

    @property
    def media_blocks_in_use(self) -> int:
        """Bytes of frames in the pool's blocks that the agent has not read yet."""
        pool = self._face._media_budget.pool
        return 0 if pool is None else int(pool.in_use_bytes())

    # -- the in-process pump ---------------------------------------------------------------
    def _parts(self) -> _Parts:
        return _Parts(self._face)

    @property
    def state(self) -> State:
        """The in-process pump's live ``State`` (what the dashboard draws). Read it; do
        not change it."""
        state: State = self._parts().state
        return state

    @property
    def backends(self) -> Mapping[str, BackendProbe]:
        """The in-process pump's backends by name, in the order they were given."""
        return {r.name: BackendProbe(r) for r in self._parts().runners}

    @property
    def problems(self) -> frozenset[str]:
        """The distinct problem lines the in-process pump reported (each is printed once;
        the end-of-run totals are not among them: see ``record_report_lines``)."""
        return frozenset(self._parts().say_once.seen)

    @property
    def system_metrics(self) -> bool:
        """Whether the in-process pump samples system metrics (``system_interval > 0``)."""
        return self._parts().sampler is not None

    @property
    def held_events(self) -> tuple[Any, ...]:
        """Events the in-process pump drained and holds back, in order: a lost agent's
        unsent events (folded first), or events whose device values have not landed."""
        return tuple(self._parts().held)

    @property
    def media_encoder_pending(self) -> int:
        """Images/videos handed to the in-process pump's encoder and not yet encoded."""
        return int(self._parts().encoder.pending_count())


def probe(log: object) -> Probe:
    """A live, read-only view of ``log``'s insides for tests: where its pump runs, its
    agent, its buffer, its report, its media, and (pump in this process) its state,
    backends and reported problems. ``log`` is an ``OffPolicyLogger``, an
    ``AsyncOffPolicyLogger`` or an ``aoff.tensorboard.SummaryWriter``."""
    return Probe(log)
