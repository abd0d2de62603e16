"""The end-of-run report and every line aoff prints about a run's problems.

:class:`FinishReport` is what ``finish()``/``close()`` return. A run's report is made
from the pump's counts in one place, ``_pump/_tally.finish_report`` (the pump's final
report, or a partial one for a face that gave up waiting), wherever the pump runs. The
other reports are made where no pump's counts are at hand (``_faces``): an async face
never entered, a sync face whose drain a second Ctrl+C abandoned, a muted rank, a
forked child, and ``AgentSide`` when the agent stopped answering (from what it had
acknowledged; when it was lost, the fallback pump's report gets those added). The
lines printed on stderr at the end of a run are built here, from a report, so the
in-process pump, the agent and a face that gave up waiting all say the same thing
(printing them is ``_say.py``'s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._rules import Alert

__all__ = ["FinishReport", "end_of_run_lines", "media_lost_line"]


@dataclass
class FinishReport:
    """What ``finish()``/``close()`` return: what could not be delivered, and why.

    ``dropped_events`` counts events that never reached the fold (the overflow policy,
    device values that never arrived, events the agent received but could not fold; every
    call is an event, and so is the logger's own cost sample, one every 5 s);
    ``backend_written``/``backend_lost`` count step records per backend
    (``offered == written + lost``); ``backend_errors`` says why a backend stopped.
    ``partial`` is True when ``finish()`` gave up waiting for the pump: the counts are
    what was known at that moment.
    """

    dropped_events: int = 0
    invalid_values: int = 0
    steps: int = 0
    backend_written: dict[str, int] = field(default_factory=dict)
    backend_lost: dict[str, int] = field(default_factory=dict)
    backend_errors: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    partial: bool = False
    #: images and videos encoded and handed to the backends (``log_image``/``log_video``/
    #: ``log_figure``), and those refused at the call because ``media_budget`` was full
    media_written: int = 0
    media_refused: int = 0
    #: images and videos accepted at the call but not written, by reason: ``"stalled"``
    #: (the encoder finished none within ``finish_timeout`` at the end), ``"encoder
    #: error"``, ``"no media backend"``, ``"backend failed"`` (every backend that took
    #: them refused them or failed first), ``"agent lost"`` (taken by an agent that died
    #: before writing them, and not encoded again), ``"frames gone"``
    media_lost: dict[str, int] = field(default_factory=dict)
    #: what the run's rules saw (``rules=``, :mod:`aoff.rules`), in order
    alerts: tuple[Alert, ...] = ()
    #: per rule (its name), the evaluations that raised: that rule skipped those values,
    #: every other rule went on
    rule_errors: dict[str, int] = field(default_factory=dict)
    #: how many ``axes=`` values were below the axis's previous value (each written as
    #: given: a late point is still a point; the first of each axis was said at once)
    axes_back: int = 0
    #: per producer (``log.remote(name)``, ``aoff.ray``), its records whose step was below
    #: its previous record's: late or out of order, each written at its own step
    late_points: dict[str, int] = field(default_factory=dict)
    #: the run's own step records whose step was below its previous one's (an iteration
    #: logged out of order, a clock gone back): each written at its own step by every
    #: backend (W&B's own ``late_step`` row aside, see ``WandbBackend``)
    late_records: int = 0
    #: alerts whose ``webhook=``/``command=`` did not complete, by why: it failed, it was
    #: still waiting when the run's end stopped waiting for it (at most 5 s, within
    #: ``finish_timeout``), or a flood pushed it out of the queue
    alerts_undelivered: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when every accepted event reached every backend."""
        return (
            not self.dropped_events
            and not any(self.backend_lost.values())
            and not any(self.media_lost.values())
        )


FinishReport.__module__ = "aoff"


_MEDIA_WHY = {
    "stalled": "the encoder finished none within finish_timeout={timeout}; raise "
    "finish_timeout, or log fewer or smaller videos",
    "encoder error": "the encoder failed on them, as reported above",
    "no media backend": "no backend of this run writes them; add one that does to backends=",
    "backend failed": "every backend that took them refused them or failed, as reported above",
    "agent lost": "the agent was lost before writing them",
    "frames gone": "the training process ended before the agent read their frames",
}


def media_lost_line(lost: dict[str, int], finish_timeout: float | None = None) -> str | None:
    """One line naming every image/video not written, by reason, and what to change."""
    parts = [
        f"{n:,} because "
        + _MEDIA_WHY.get(why, why).format(
            timeout="?" if finish_timeout is None else f"{finish_timeout:g}s"
        )
        for why, n in lost.items()
        if n
    ]
    if not parts:
        return None
    total = sum(lost.values())
    return f"aoff: {total:,} images/videos were not written: " + "; ".join(parts)


def end_of_run_lines(
    report: FinishReport,
    *,
    overflow_dropped: int,
    capacity: int,
    overflow: str,
    finish_timeout: float | None = None,
) -> list[str]:
    """The lines printed after a run: drops, skipped values, and per-backend losses."""
    lines: list[str] = []
    if overflow_dropped:
        lines.append(
            f"aoff: {overflow_dropped:,} events were dropped because the buffer was full "
            f"(capacity {capacity:,}, overflow={overflow!r})"
        )
    if report.invalid_values:
        lines.append(
            f"aoff: {report.invalid_values:,} values were not logged (not real numbers, "
            "non-str keys or non-dicts; each kind was reported once above)"
        )
    if report.axes_back:
        lines.append(
            f"aoff: {report.axes_back:,} axis values went down (written as given; "
            "each axis was named once above)"
        )
    if report.late_records:
        lines.append(
            f"aoff: {report.late_records:,} of the run's own records came late or out of "
            "order (a step below the one before); each was written at its own step"
        )
    if report.late_points:
        each = ", ".join(f"{name} {n:,}" for name, n in report.late_points.items())
        lines.append(
            f"aoff: {sum(report.late_points.values()):,} producer records came late or out "
            f"of order ({each}); each was written at its own step"
        )
    if report.media_refused:
        lines.append(
            f"aoff: {report.media_refused:,} images/videos were refused at the call "
            "(more than media_budget bytes were waiting to be encoded)"
        )
    media = media_lost_line(report.media_lost, finish_timeout)
    if media is not None:
        lines.append(media)
    if report.alerts:
        lines.append(
            f"aoff: {len(report.alerts)} alert(s): "
            + "; ".join(a.message for a in report.alerts[:3])
            + ("; ..." if len(report.alerts) > 3 else "")
        )
    if report.rule_errors:
        lines.append(
            "aoff: rules that failed on some values (skipped them; the others went on): "
            + ", ".join(f"{name} {n:,}x" for name, n in report.rule_errors.items())
        )
    if report.alerts_undelivered:
        n = sum(report.alerts_undelivered.values())
        lines.append(
            f"aoff: {n:,} alert{'s' if n != 1 else ''} not delivered (webhook/command): "
            + "; ".join(f"{k:,} {why}" for why, k in report.alerts_undelivered.items())
        )
    for name, lost in report.backend_lost.items():
        if lost:
            why = report.backend_errors.get(name, "")
            lines.append(f"aoff: backend {name!r}: {lost:,} records not written ({why})")
    return lines


def gave_up_line(left: int, unconfirmed: int = 0) -> str:
    """``finish()`` stopped waiting for a pump that made no progress (``unconfirmed``:
    steps a silent agent received that it never confirmed written)."""
    agent = (
        f"; {unconfirmed:,} steps the agent received were not confirmed written"
        if unconfirmed
        else ""
    )
    return (
        "aoff: the background writer stopped making progress; finish() gave up "
        f"waiting ({left:,} events not processed{agent})"
    )


def force_quit_line(unwritten: dict[str, int]) -> str:
    """A second Ctrl+C stopped ``finish()`` from waiting: exactly what each backend lacks."""
    if not unwritten:
        return "aoff: stopped before the end of the drain (no backend was waiting for data)"
    parts = ", ".join(f"{n:,} to {name!r}" for name, n in unwritten.items())
    return f"aoff: stopped before the end of the drain; steps not written: {parts}"
