"""What each role says on the run's socket: the peer's hello, and the run's answers.

Once the peer has proven the run's key (``_server.py``), its first message names its role;
the run answers that role's way (a producer then speaks the agent's protocol,
``_transport/_messages.py``). On the wire each message is a plain tuple whose first item
is its tag, e.g. ``("view", 4.0)``: that is what ``aoff attach`` and ``RemoteLogger`` of
any aoff version send and read, and a plain tuple unpickles without this module on the
other side. Inside aoff each has a named type, made from its tuple by one decoder a
direction (a malformed tuple is a ``ValueError`` saying why) and back by :func:`to_wire`,
so that a ``match`` takes them apart by name.

a peer's hello (:data:`Hello`)
    :class:`View` ``("view", refresh_hz)``: an ``aoff attach`` viewer;
    :class:`Produce` ``("produce", name, pid)``: a ``RemoteLogger``; ``("produce", name,
    pid, rules)`` when it brings rules of its own (judged in the run on its events only)
to a viewer (:data:`ToViewer`)
    :class:`Snapshot` ``("state", state, now)`` at most every ``1/refresh_hz`` s, then
    :class:`End` ``("end", state, now, summary, lines)`` once; or :class:`Refused`
to a producer (:data:`ToProducer`)
    :class:`Welcome` ``("welcome", live_name)``, or :class:`Refused`
:class:`Refused` ``("error", why)``
    the run does not serve this peer: ``why`` says so in words
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, TypeAlias, TypeVar

from .._core._rules import Rule, check_rules
from .._core._state import State
from ._producers import check_name

__all__ = [
    "End",
    "Hello",
    "Produce",
    "Refused",
    "Snapshot",
    "ToProducer",
    "ToViewer",
    "View",
    "Welcome",
    "decode_hello",
    "decode_to_producer",
    "decode_to_viewer",
    "to_wire",
]

#: a viewer that names no rate gets snapshots this often (per second)
DEFAULT_REFRESH_HZ = 4.0


# -- a peer's hello -----------------------------------------------------------------------------
class View(NamedTuple):
    """An ``aoff attach`` viewer: snapshots at most ``refresh_hz`` times a second."""

    refresh_hz: float = DEFAULT_REFRESH_HZ


class Produce(NamedTuple):
    """A ``RemoteLogger``'s process ``pid`` sends events under ``name`` (its folder and tag
    prefix in the run; ``pid`` is 0 when the peer did not say)."""

    name: str
    pid: int = 0
    #: the producer's own rules (``RemoteLogger(rules=...)``), for the run it joins
    rules: tuple[Rule, ...] = ()


# -- the run's answers --------------------------------------------------------------------------
class Snapshot(NamedTuple):
    """The run's newest state, as of its wall clock ``now``."""

    state: State
    now: float


class End(NamedTuple):
    """The run is over: its final state, whether the run drew its summary, and its
    closing lines (a viewer shows the summary and the lines whatever ``summary`` says)."""

    state: State
    now: float
    summary: bool
    lines: list[str]


class Welcome(NamedTuple):
    """The producer is taken, recorded as ``live_name`` (``name``, or ``name-<pid>`` while
    another producer of that name is connected)."""

    live_name: str


class Refused(NamedTuple):
    """The run does not serve this peer, and why (said to the user as it stands)."""

    why: str


Hello: TypeAlias = View | Produce
ToViewer: TypeAlias = Snapshot | End | Refused
ToProducer: TypeAlias = Welcome | Refused

_TAG: dict[type, str] = {
    View: "view",
    Produce: "produce",
    Snapshot: "state",
    End: "end",
    Welcome: "welcome",
    Refused: "error",
}
_TO_VIEWER: dict[str, type[ToViewer]] = {"state": Snapshot, "end": End, "error": Refused}
_TO_PRODUCER: dict[str, type[ToProducer]] = {"welcome": Welcome, "error": Refused}
#: the roles a peer may name, for the refusal of one it made up
ROLE_TAGS = ("produce", "view")

M = TypeVar("M")


def to_wire(msg: Hello | ToViewer | ToProducer) -> tuple[object, ...]:
    """``msg`` as it crosses the socket: its tag, then its fields in order (a producer
    without rules of its own sends the three items any aoff version reads)."""
    if isinstance(msg, Produce) and not msg.rules:
        return ("produce", msg.name, msg.pid)
    return (_TAG[type(msg)], *msg)


def decode_hello(obj: object) -> Hello:
    """A peer's first message as its role; ``ValueError`` with the reason to refuse it."""
    if not (isinstance(obj, tuple) and obj and isinstance(obj[0], str)):
        raise ValueError("the first message must be a role tag, e.g. ('view', 4)")
    tag, args = obj[0], obj[1:]
    if tag == "view":
        hz = args[0] if args else DEFAULT_REFRESH_HZ
        if isinstance(hz, bool) or not isinstance(hz, int | float) or not hz > 0:
            raise ValueError(f"refresh must be a number > 0, got {hz!r}")
        return View(float(hz))
    if tag == "produce":
        name = args[0] if args else None
        problem = check_name(name)
        if problem is not None:
            raise ValueError(problem)
        assert isinstance(name, str)
        pid = args[1] if len(args) > 1 and type(args[1]) is int else 0
        try:
            rules = check_rules(args[2]) if len(args) > 2 else ()
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        return Produce(name, pid, rules)
    raise ValueError(f"unknown role {tag!r}: known are {list(ROLE_TAGS)}")


def _decode(obj: object, kinds: Mapping[str, type[M]], whom: str) -> M:
    if isinstance(obj, tuple) and obj and isinstance(obj[0], str):
        kind: Any = kinds.get(obj[0])
        if kind is not None and len(obj) == 1 + len(kind._fields):
            msg: M = kind(*obj[1:])
            return msg
    raise ValueError(f"not a message for {whom}: {obj!r:.120}")


def decode_to_viewer(obj: object) -> ToViewer:
    """What the run sent a viewer; ``ValueError`` for anything else."""
    return _decode(obj, _TO_VIEWER, "a viewer")


def decode_to_producer(obj: object) -> ToProducer:
    """What the run answered a producer's hello; ``ValueError`` for anything else."""
    return _decode(obj, _TO_PRODUCER, "a producer")
