"""The shipper's state, grouped by what changes it: what was shipped and what the peer
confirmed (:class:`Tally`), the flush and stop asked of the peer and its answers
(:class:`Talk`), how a round is cut (:class:`Pace`).

Why objects of their own: the shipper's rounds (``_shipper.py``) change all three, but
each is read apart: a lost agent's losses and the finish report read the tally
(``_faces/_lost.py``, ``_faces/_side.py``), a face's flush and stop the talk, the event
loop's driver the pace. Each is one reason to change, and its fields sit together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .._core._report import FinishReport
from ._messages import ProducerReport

__all__ = ["Pace", "R", "Talk", "Tally"]

#: the peer's report: a FinishReport from the agent, a ProducerReport from a run that took
#: a producer's events
R = TypeVar("R", FinishReport, ProducerReport)


@dataclass
class Tally:
    """What left for the peer, and what it said it did with it (its last ``Ack``)."""

    #: the run's backends by name: an agent that never answered lost what it received
    #: for each of them, though no ack ever named them
    backends: tuple[str, ...] = ()
    #: steps and ``MEDIA`` events handed to the socket
    shipped_steps: int = 0
    shipped_media: int = 0
    #: the peer's steps taken, steps written by backend, ``(written, lost)`` media
    acked_steps: int = 0
    acked_written: dict[str, int] = field(default_factory=dict)
    acked_media: tuple[int, int] = (0, 0)
    #: the agent's backlog as of its last Ack: bytes held now, the most held
    agent_backlog: tuple[int, int] = (0, 0)
    #: events given up on here (a device value that can never be read): never shipped
    unresolved: int = 0

    def agent_loss(self) -> dict[str, int]:
        """Per backend, steps the agent received but had not confirmed written."""
        names = dict.fromkeys((*self.backends, *self.acked_written))
        return {
            name: max(self.shipped_steps - self.acked_written.get(name, 0), 0) for name in names
        }

    def agent_media_loss(self, again: int) -> int:
        """Images and videos the agent received and neither wrote nor counted, less the
        ``again`` the fallback encodes from their frames."""
        written, lost = self.acked_media
        return max(self.shipped_media - written - lost - again, 0)


@dataclass
class Talk(Generic[R]):
    """The flush and stop asked of the peer, each sent once the events logged before it
    are, and the peer's answers."""

    #: flush requests: asked by the driver, sent to the peer, answered
    flush_asked: int = 0
    flush_sent: int = 0
    flushed: int = 0
    #: the stop asked (its ``summary`` flag; None: not asked) and whether it was sent
    stop_summary: bool | None = None
    stop_sent: bool = False
    #: the peer's last word
    report: R | None = None
    #: aoff's counters (``_core/_checkpoint.py``) from the peer's latest flush or report
    last_state: dict[str, Any] | None = None
    #: bumps on every answer from the peer (finish() watches it; 0: it never answered)
    progress: int = 0

    def waiting(self) -> bool:
        """Whether an answer is awaited: a flush not answered yet, or a stop asked."""
        return self.flush_asked > self.flushed or self.stop_summary is not None


@dataclass
class Pace:
    """How a round is cut (the event loop's driver sets it: ``Shipper.for_loop``)."""

    #: events a round drains (None: all there are; see ``LOOP_ROUND_EVENTS``)
    round_events: int | None = None
    #: bytes a round sends (None: all the socket takes; see ``LOOP_ROUND_BYTES``)
    round_bytes: int | None = None
    #: the last round stopped at ``round_events`` or ``round_bytes`` with more to do
    #: that could be done now (the agent keeps up): come back at once
    cut_short: bool = False
    #: when the peer's answers were last read (``time.monotonic``)
    last_recv: float = 0.0
