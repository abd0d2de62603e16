"""What a face does and says without its agent: a lost one, or a silent one.

Why a module of its own: :class:`~._side.AgentSide` drives the agent and waits. When the
agent is gone it starts the in-process fallback here; when that cannot start, or the
agent makes no progress, the report is built from what the agent last confirmed
(``Shipper``'s acked counts) and the lines say what was not written. The side only
decides which case it is in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._core._events import FINISH, Event
from .._core._report import FinishReport
from .._media._encoder import LOST_AGENT
from .._transport._shipper import Shipper

if TYPE_CHECKING:
    from .._pump._thread import PumpThread
    from .._pump._wiring import Core

__all__ = [
    "add_confirmed",
    "confirmed_report",
    "discard_unsent",
    "gone_line",
    "logged",
    "not_written_line",
    "start_fallback",
]


def start_fallback(
    make_core: Callable[[], Core],
    shipper: Shipper[FinishReport],
    log_dir: str,
    unread: list[Event] = [],  # noqa: B006 - read only
) -> PumpThread:
    """The lost agent's successor: a pump in this process, which folds first the media
    the agent was sent and never read (``unread``: their frames are still in this
    process's blocks, so they are encoded here), then what never reached the agent. It
    may fail (no new thread at interpreter shutdown)."""
    from .._pump._thread import PumpThread  # only now in this process

    core = make_core()
    core.pump.note_unresolved(shipper.tally.unresolved)
    if core.pump.drop_summary_file():  # it would hold this part of the run only:
        from .._runfolder.summary._writer import remove_stale  # ls/show read the files instead

        remove_stale(log_dir)
    return PumpThread(core, held=list(unread) + shipper.unsent_events())


def logged(events: list[Event]) -> int:
    """How many of ``events`` the caller logged (``finish()``'s own closing event is not)."""
    return len(events) - sum(1 for e in events if e[0] == FINISH)


def discard_unsent(shipper: Shipper[FinishReport]) -> int:
    """No fallback could start: what never reached the agent is discarded (frames give
    their shared memory back); how many events the caller had logged."""
    unsent = shipper.unsent_events()
    shipper.freed.discarded(unsent)
    return logged(unsent)


def gone_line(
    reason: str,
    exit_code: int | None,
    lost: int,
    failure: Exception | None,
    media_again: int = 0,
    media_lost: int = 0,
) -> str:
    """The one line of a lost agent: logging goes on in this process, or (``failure``:
    the fallback could not start) it cannot, and from now on nothing is written. Media:
    ``media_again`` it had not confirmed written, whose frames this process still holds
    (the fallback writes them), and ``media_lost`` it took with it."""
    gone = f"aoff: the agent process is gone ({reason}, exit code {exit_code})"
    unconfirmed = f"{lost:,} steps it had received were not confirmed written"
    if failure is None:
        media = ""
        if media_again:
            media = (
                f"; {media_again:,} images/videos it had not written are written by this "
                "process from their frames"
            )
        if media_lost:
            media += (
                f"{'; ' if not media else ', '}{media_lost:,} images/videos could not be: "
                "the agent had them as copies, or wrote them without confirming it"
            )
        return f"{gone}; logging goes on in this process. {unconfirmed}{media}."
    media = ""
    if media_again + media_lost:
        media = f", nor {media_again + media_lost:,} images/videos it had received"
    return (
        f"{gone} and logging cannot go on in this process ({type(failure).__name__}: "
        f"{failure}): {unconfirmed}{media}, and what is logged from now on is not written "
        "(finish() counts it)."
    )


def not_written_line(discarded: int) -> str:
    return f"aoff: {discarded:,} events logged after the agent was lost were not written"


def confirmed_report(
    shipper: Shipper[FinishReport], *, dropped: int, error: str, interrupted: bool
) -> FinishReport:
    """The report of a run whose agent will not send its own: what it confirmed written,
    what it received but did not confirm (lost), ``dropped`` events never folded."""
    written, _ = shipper.tally.acked_media
    lost_media = shipper.tally.agent_media_loss(0)
    return FinishReport(
        dropped_events=dropped,
        steps=shipper.tally.acked_steps,
        media_written=written,
        media_lost={LOST_AGENT: lost_media} if lost_media else {},
        backend_written=dict(shipper.tally.acked_written),
        backend_lost=shipper.tally.agent_loss(),
        backend_errors={name: error for name in shipper.tally.agent_loss()},
        interrupted=interrupted,
        partial=True,
    )


def add_confirmed(report: FinishReport, shipper: Shipper[FinishReport], again: int = 0) -> int:
    """Add what the lost agent had confirmed written, and lost, to the fallback's report
    (``again``: media it never read, which the fallback encoded from their frames); the
    images and videos it took with it (the fallback's end-of-run lines could not know)."""
    report.steps += shipper.tally.acked_steps
    report.media_written += shipper.tally.acked_media[0]
    lost_media = shipper.tally.agent_media_loss(again)
    if lost_media:
        report.media_lost[LOST_AGENT] = report.media_lost.get(LOST_AGENT, 0) + lost_media
    for name, written in shipper.tally.acked_written.items():
        report.backend_written[name] = report.backend_written.get(name, 0) + written
    for name, lost in shipper.tally.agent_loss().items():
        report.backend_lost[name] = report.backend_lost.get(name, 0) + lost
    return lost_media
