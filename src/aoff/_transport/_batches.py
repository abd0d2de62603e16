"""What a frame of events is on the wire, apart from the message itself: its payload,
one or more pickles of a list of events (:func:`pack_events`, :func:`unpack_events`), a
batch made
picklable (a value pickle refuses becomes an ``Opaque`` stand-in the fold reports), a
sent frame kept only as its pickle (:class:`Pickled`), and slices pickled one by one
that go out together as one frame (:class:`Slices`).

Why a module of its own: the Shipper and the Ray pusher both make batches picklable, and
the Shipper's round logic reads better without the frame's own bookkeeping beside it.
"""

from __future__ import annotations

import io
import itertools
import operator
import pickle
from collections.abc import Callable, Iterator
from typing import Any

from .._core import _events as ev
from .._core._buffer import EventBuffer
from .._core._convert import Opaque
from .._core._events import Event
from .._media._freed import shm_media
from ._messages import Events, decode_to_peer

__all__ = [
    "Pickled",
    "Slices",
    "load_list",
    "pack_events",
    "picklable_batch",
    "steps_and_frames",
    "unpack_events",
]

_kind = operator.itemgetter(0)


def pack_events(events: list[Event]) -> bytes:
    """A frame's payload: the pickle of a list of events (raises what pickle raises).
    Here, with the rest of a frame's wire format, so the sender and the agent's drain
    (``_pump/_backlog``) read one definition."""
    return pickle.dumps(events, protocol=5)


def unpack_events(payload: bytes) -> list[Event]:
    """A frame's events: the pickle of a list of events, or several such pickles one
    after the other (a sender's slices framed together: ``pack_events`` of each, joined);
    ``ValueError`` if one holds no list."""
    f = io.BytesIO(payload)
    events = load_list(f)
    size = len(payload)
    while f.tell() < size:
        events += load_list(f)
    return events


def load_list(f: io.BytesIO) -> list[Event]:
    """The pickle of a list of events at ``f``'s position, ``f`` left after it."""
    events = pickle.Unpickler(f).load()  # a fresh memo for each pickle
    if type(events) is not list:
        raise ValueError(f"aoff: not a frame of events: {type(events).__name__}")
    return events


def steps_and_frames(batch: list[Event]) -> tuple[int, int, list[Event]]:
    """How many of ``batch`` are ``log_step`` events and how many ``MEDIA`` events (C-speed
    counts), and those ``MEDIA`` events whose frames are in shared memory (none looked
    for without one)."""
    kinds = list(map(_kind, batch))
    media = kinds.count(ev.MEDIA)
    return kinds.count(ev.STEP), media, (shm_media(batch) if media else [])


def _pickles(event: Event) -> bool:
    try:
        pickle.dumps(event, protocol=5)
    except Exception:
        return False
    return True


def _fix(v: Any) -> Any:
    try:
        pickle.dumps(v, protocol=5)
    except Exception:
        return Opaque(v)
    return v


def picklable_batch(batch: list[Event]) -> list[Event]:
    """``batch`` after pickle refused it whole: each event that does not pickle has every
    value pickle refuses (a dict's values one by one) replaced by an :class:`Opaque`
    stand-in, which the fold reports and skips, as it would have in-process. Looking event
    by event costs ~1-2 us each; only the events that hold such a value are taken apart.
    Shared by the Shipper and the Ray pusher."""
    out: list[Event] = []
    for e in batch:
        if not _pickles(e):
            e = tuple({k: _fix(v) for k, v in x.items()} if type(x) is dict else _fix(x) for x in e)
        out.append(e)
    return out


class Pickled:
    """What a frame on the link keeps of its events when they are let go once pickled
    (``ShipperSetup.keep_events`` False: the training process's shipper, on both faces; a
    producer's keeps its events, whose media bytes it gives back once sent): how many,
    how many are steps, and the pickle, read back only if the agent is lost before it
    took them.

    Kept whole, a backlog of frames (the agent behind a flood, up to
    ``MAX_PENDING_BYTES``) held up to ~40,000 events alive. An event holding a dict
    stays tracked, so waiting events set off a young collection every few milliseconds
    and moved on to the oldest generation; each time a quarter of its size had moved
    in, a full collection of the process held the event loop 13-30 ms on a quiet
    machine, 75-200 ms on a busy one: every second or two. With pickles only, asyncio
    runs of the flood benchmark saw 0-1 full collections in 3 s instead of 1-2, and
    10-50 in all instead of 90-140 (the buffer itself still holds thousands when the
    loop is starved of CPU). The sync face, 60,000 flat-out iterations of the standard
    workload (load 5-7): full collections 3 for 166-243 ms in all, against 4 for
    600-711 ms with whole events kept.
    """

    __slots__ = ("frames", "media", "n", "payload", "steps")

    def __init__(self, payload: bytes, n: int, steps: int, media: int, frames: list[Event]) -> None:
        self.payload = payload
        self.n = n
        self.steps, self.media, self.frames = steps, media, frames

    @classmethod
    def of(cls, payload: bytes, batch: list[Event]) -> Pickled:
        """The frame ``payload`` made of ``batch``."""
        return cls(payload, len(batch), *steps_and_frames(batch))

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Event]:
        msg = decode_to_peer(self.payload)
        assert isinstance(msg, Events)
        return iter(unpack_events(msg.payload))


class _Fresh:
    """A slice pickled and not counted yet: its pickle, and its events until
    :meth:`Slices.settle` counts them and lets them go."""

    __slots__ = ("events", "inner")

    def __init__(self, inner: bytes, events: list[Event]) -> None:
        self.inner, self.events = inner, events


_Part = list[Event] | _Fresh | tuple[bytes, int, int, int, list[Event]]


class Slices:
    """Slices of events a producer pickled one at a time (``pack_events`` each, in order)
    and has not framed yet: :meth:`take` joins them into one ``Events`` frame's payload
    (``unpack_events`` reads the pickles one after the other).

    Why: the sync face ships a bounded slice on the caller's thread at a time
    (``_faces/_cadence.INLINE_SLICE``); framed and queued one by one, each slice paid
    for its own message, its frame's accounting (:class:`Pickled`) and, once sent, its
    callback: ~5 us of a ~20 us round. Joined, they pay that once a send.

    :meth:`pickle_from` needs no signal deferral around it (``_faces/_defer.py``: two
    ``sigaction`` calls each way, ~1.5-3.5 us, as much as ~10 events' pickling): each
    part of :attr:`parts` is a list of events moved out of the buffer in one C-level
    call, then its pickle (a :class:`_Fresh`, holding the events until
    :meth:`settle`), then its pickle and counts (a tuple), each stored over the last in
    one bytecode. Wherever a Ctrl+C's ``KeyboardInterrupt`` comes, every event is in
    the buffer or in exactly one part (a part still a list is pickled when framed).

    Counting a slice's steps and media and freeing its events (~3.5 us of a ~19 us slice
    in a flat-out loop) is left to :meth:`settle`, which the caller's next look at the
    buffer runs (``_faces/_side.py``), where no slice is pickled: the iteration that
    pays a slice, the p99 of a flat-out loop, pays that much less. At most one slice
    waits to be settled (the next :meth:`pickle_from` settles it first).
    """

    __slots__ = ("fresh", "nbytes", "parts")

    def __init__(self) -> None:
        self.parts: list[_Part] = []
        #: bytes pickled so far (when to send: ``INLINE_SEND_BYTES``)
        self.nbytes = 0
        #: a part may wait for :meth:`settle`
        self.fresh = False

    def pickle_from(self, buffer: EventBuffer, limit: int) -> int:
        """Move up to ``limit`` events from ``buffer`` into one more slice and pickle it;
        how many. The caller made sure none of them waits for a device value
        (``PendingEvent``)."""
        if self.fresh:
            self.settle()
        raw: list[Event] = []
        parts = self.parts
        at = len(parts)
        parts.append(raw)
        if not buffer.drain_into(raw, limit):
            return 0  # an empty part: nothing to frame, nothing lost
        parts[at] = _Fresh(self._pickle(raw), raw)
        self.fresh = True
        return len(raw)

    def settle(self) -> None:
        """Count the steps and media of the slices not counted yet, and let go of their
        events (their pickles stay)."""
        self.fresh = False
        parts = self.parts
        for i in range(len(parts) - 1, -1, -1):  # the fresh one is the last
            p = parts[i]
            if type(p) is _Fresh:
                parts[i] = (p.inner, len(p.events), *steps_and_frames(p.events))
            elif type(p) is tuple:
                return

    def add(self, inner: bytes, batch: list[Event]) -> None:
        """One more slice: ``inner`` the pickle of ``batch``."""
        self.parts.append((inner, len(batch), *steps_and_frames(batch)))
        self.nbytes += len(inner)

    def _pickle(self, batch: list[Event]) -> bytes:
        try:
            inner = pack_events(batch)
        except Exception:
            inner = pack_events(picklable_batch(batch))  # a value pickle refuses
        self.nbytes += len(inner)
        return inner

    @staticmethod
    def _counted(
        p: _Part, pickle: Callable[[list[Event]], bytes]
    ) -> tuple[bytes, int, int, int, list[Event]]:
        if isinstance(p, tuple):
            return p
        if isinstance(p, _Fresh):
            return (p.inner, len(p.events), *steps_and_frames(p.events))
        return (pickle(p), len(p), *steps_and_frames(p))

    def take(self) -> tuple[bytes, int, int, int, list[Event]]:
        """The slices as one frame's payload, with their count, steps, media events and
        those of them in shared memory; none are left."""
        if not self.parts:
            return b"", 0, 0, 0, []
        parts: list[Any] = self.parts
        if set(map(type, parts)) != {tuple}:  # a slice not settled, or cut short
            parts = [self._counted(p, self._pickle) for p in parts]
        inners, ns, steps, media, frames = zip(*parts, strict=True)
        out = (
            b"".join(inners),
            sum(ns),
            sum(steps),
            sum(media),
            list(itertools.chain.from_iterable(frames)),
        )
        self.parts = []
        self.nbytes = 0
        self.fresh = False
        return out

    @property
    def n(self) -> int:
        """Events in the slices."""
        return sum(
            len(p) if isinstance(p, list) else len(p.events) if isinstance(p, _Fresh) else p[1]
            for p in self.parts
        )

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Event]:
        out: list[Event] = []
        for p in self.parts:
            if isinstance(p, list):
                out += p
            elif isinstance(p, _Fresh):
                out += p.events
            else:
                out += unpack_events(p[0])
        return iter(out)
