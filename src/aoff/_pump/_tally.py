"""The pump's accounting read out: the run's :class:`FinishReport`, its progress marks,
the steps each backend has not written.

Why a module of its own: these are pure read-outs of the counts the pump's parts keep
(the buffer, the state, the runners), made in one place so the final report, a partial
one, the agent's acks and a forced quit's line all count the same way. Nothing here
changes a count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from .._core._events import Event
from .._core._report import FinishReport
from .._core._state import State
from .._media._encoder import STALLED
from ._intake import Intake
from ._progresswatch import unwritten_steps
from ._runner import BackendRunner

__all__ = ["Progress", "finish_report", "progress", "unwritten"]


class Progress(NamedTuple):
    """How far a pump got: counts that only grow (the faces wait as long as they move)."""

    drained: int  #: events taken from the buffer
    steps: int  #: ``log_step`` calls folded
    written: dict[str, int]  #: step records written, per backend
    settled: int  #: step records written or lost, all backends together
    #: images/videos every media backend was done with (written, or lost and counted
    #: there: their blocks are free); not written (``FinishReport.media_lost``' reasons)
    media: tuple[int, int] = (0, 0)


def progress(
    drained: int, state: State, runners: Sequence[BackendRunner], intake: Intake | None = None
) -> Progress:
    media = (0, 0)
    if intake is not None:
        media = (intake.media_written, sum(intake.media.lost.values()))
    return Progress(
        drained,
        state.steps_logged,
        {r.name: r.written for r in runners},
        sum(r.written + r.lost for r in runners),
        media,
    )


def finish_report(
    state: State,
    runners: Sequence[BackendRunner],
    dropped: int,
    intake: Intake,
    partial: bool,
    unfolded: int,
) -> FinishReport:
    """The run's report from the pump's counts: final, or ``partial`` (what is known now;
    the ``unfolded`` events, still buffered or held, count as dropped, and a backend's
    unconfirmed records as lost)."""
    res = FinishReport(
        dropped_events=dropped + (unfolded if partial else 0),
        invalid_values=state.invalid_values,
        steps=state.steps_logged,
        interrupted=state.interrupted or partial,
        partial=partial,
        media_written=intake.media_written,
        media_refused=state.media_refused,
        media_lost={why: n for why, n in intake.media.lost.items() if n},
        alerts=state.alerts,
        rule_errors=dict(state.rule_errors),
        axes_back=state.axes_back,
        late_points=dict(state.late_points),
        late_records=state.late_records,
        alerts_undelivered=dict(state.alerts_undelivered),
    )
    # still encoding, or not confirmed by every backend: not written as of now
    waiting = intake.media.pending_count() + intake.media_unconfirmed() if partial else 0
    if waiting:
        res.media_lost[STALLED] = res.media_lost.get(STALLED, 0) + waiting
    for r in runners:
        res.backend_written[r.name] = r.written
        unconfirmed = len(r.pending) + r.in_flight if partial else 0
        res.backend_lost[r.name] = r.lost + unconfirmed
        if r.error:
            res.backend_errors[r.name] = r.error
        elif partial and not r.done.is_set():
            res.backend_errors[r.name] = "did not finish"
    return res


def unwritten(runners: Sequence[BackendRunner], waiting: Iterable[Event]) -> dict[str, int]:
    """Per backend, steps not written as of now (``waiting``: events not folded yet)."""
    return unwritten_steps(
        {r.name: r.lost + len(r.pending) + r.in_flight for r in runners},
        waiting,
        failed={r.name for r in runners if not r.healthy},
    )
