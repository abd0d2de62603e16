"""The messages between a shipper and its peer: one named type each, one decoder a direction.

A peer is the agent (``_agent/_serve.py``), or a run taking a producer's events
(``_channel/_produce.py``, after the channel's own handshake). Each frame of the wire
(``_wire.py``) holds one pickled message. Messages are named tuples: they pickle as the
class and its fields, about as small and fast as the plain tuples they replace, and a
``match`` takes them apart by name.

to the peer (:data:`ToPeer`)
    :class:`Hello` (the agent's first message: the run's options), :class:`Events`,
    :class:`Out` (text the training process printed; the agent only), :class:`Flush`,
    :class:`Stop`; a run group's agent also takes :class:`GroupStop`
from the peer (:data:`FromPeer`)
    :class:`Ack` (the agent only, at most every ``ACK_INTERVAL``), :class:`Alerted` (the
    agent only, as a rule fires), :class:`Flushed`,
    :class:`Report` (the last word: a :class:`~aoff.FinishReport` from the agent, a
    :class:`ProducerReport` from a run taking a producer's events); a run group's agent
    (``_agent/_groupserve.py``) answers :class:`GroupAck`, :class:`GroupAlerted`,
    :class:`Flushed` and, last, :class:`GroupReport` instead
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

from .._core._report import FinishReport
from .._core._rules import Alert

__all__ = [
    "Ack",
    "Alerted",
    "Events",
    "Flush",
    "Flushed",
    "FromPeer",
    "GroupAck",
    "GroupAlerted",
    "GroupReport",
    "GroupStop",
    "Hello",
    "Out",
    "ProducerReport",
    "Report",
    "Stop",
    "ToPeer",
    "decode_from_peer",
    "decode_to_peer",
    "encode",
]


# -- to the peer --------------------------------------------------------------------------------
class Hello(NamedTuple):
    """The agent's first message: the run's ``Options`` (``aoff._pump._options``; the
    transport does not import the pump, so the agent checks the type)."""

    options: object


class Events(NamedTuple):
    """A frame of events: ``payload`` is the pickle of the list of events, in order
    (``_transport/_batches.pack_events``), ``n`` how many; ``dropped`` how many the sender
    dropped so far (its overflow policy and device values that never came).

    The events travel as a pickle inside the message so that the agent can keep the
    frame as it came (bytes, bounded in bytes: ``_pump/_backlog.py``) and unpickle it
    only when the pump drains it; a producer's run (``_channel/_produce.py``) unpacks it
    at once (``unpack_events``)."""

    payload: bytes
    n: int
    dropped: int


class Out(NamedTuple):
    """Text the training process printed on ``stream`` (``"stdout"``/``"stderr"``)."""

    stream: str
    text: str


class Flush(NamedTuple):
    """Write and flush everything received so far, then answer :class:`Flushed` ``n``."""

    n: int


class Stop(NamedTuple):
    """Nothing more comes: finish (with the summary panel or not) and send the report."""

    summary: bool


class GroupStop(NamedTuple):
    """A run group's last word to its agent: close every run with ``final`` (the closing
    event), with the summary or not, and send the reports."""

    final: tuple[Any, ...]
    summary: bool


# -- from the peer ------------------------------------------------------------------------------
class Ack(NamedTuple):
    """How far the run got: steps folded, and records written per backend; the agent's
    backlog (frames received, not folded yet), in bytes now and at its peak."""

    steps: int
    written: dict[str, int]
    backlog_bytes: int = 0
    backlog_peak: int = 0
    #: images and videos handed to the backends, and those counted not written
    media: tuple[int, int] = (0, 0)


class Alerted(NamedTuple):
    """A rule of the run fired (``aoff.rules``): sent at once, not with the next ack, so
    that a loop that asked to stop on it hears it within a few rounds."""

    alert: Alert


class Flushed(NamedTuple):
    """Flush ``n`` is done; aoff's counters as of now (the agent), else None."""

    n: int
    state: dict[str, Any] | None


@dataclass(frozen=True)
class ProducerReport:
    """What the run says to a producer that stopped: the name it was recorded under, how
    many of its events it received, and whether the run had stopped taking them."""

    name: str
    received: int
    lost: bool


class Report(NamedTuple):
    """The peer's last word: its report, and aoff's counters (the agent), else None."""

    report: FinishReport | ProducerReport
    state: dict[str, Any] | None


class GroupAck(NamedTuple):
    """How far a run group's agent got: each run's steps folded."""

    steps: tuple[int, ...]


class GroupAlerted(NamedTuple):
    """A rule of run ``run`` (its index in the group) fired."""

    run: int
    alert: Alert


class GroupReport(NamedTuple):
    """A run group's agent's last word: one report per run, in the group's order."""

    reports: tuple[FinishReport, ...]


ToPeer: TypeAlias = Hello | Events | Out | Flush | Stop | GroupStop
FromPeer: TypeAlias = Ack | Alerted | Flushed | Report | GroupAck | GroupAlerted | GroupReport
_TO_PEER = (Hello, Events, Out, Flush, Stop, GroupStop)
_FROM_PEER = (Ack, Alerted, Flushed, Report, GroupAck, GroupAlerted, GroupReport)


def encode(message: ToPeer | FromPeer) -> bytes:
    return pickle.dumps(message, protocol=5)


def decode_to_peer(payload: bytes) -> ToPeer:
    """A message for the peer; ``ValueError`` for anything else."""
    msg = pickle.loads(payload)
    if not isinstance(msg, _TO_PEER):
        raise ValueError(f"aoff: not a message for the run: {type(msg).__name__}")
    return msg


def decode_from_peer(payload: bytes) -> FromPeer:
    """A message from the peer; ``ValueError`` for anything else."""
    msg = pickle.loads(payload)
    if not isinstance(msg, _FROM_PEER):
        raise ValueError(f"aoff: not a message from the run: {type(msg).__name__}")
    return msg
