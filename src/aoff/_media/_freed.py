"""A far producer's running total of frame bytes that left it: sent, or dropped.

Why: a producer that ships its frames to the run over a channel (``log.remote()``'s
:class:`~aoff.RemoteLogger`, a Ray collector's ``RayLogger``) holds their bytes in its
:class:`~aoff._media._calls.MediaBudget` from the call until they leave. They leave when
a batch carrying them is sent, and also when a ``MEDIA`` event is dropped: the buffer's
``drop_oldest`` trim, an event whose device value never resolves, what is left when the
run is gone. A drop that kept its bytes would shrink the budget for good, until every
later image is refused. The shipping thread reports every such exit here, once; the
logger's budget reads the running total (``note_freed``). A ``drop_newest`` refusal or
an event logged after the run is gone never enters the buffer: the logger gives those
bytes back at the call (``MediaBudget.give_back``, :meth:`EventBuffer.offer`).

One thread (the shipping thread) calls it; until the logger's first media event
(``active``) it scans nothing, so a run without media pays nothing for it.

The learner's own shipper (process mode) has no bytes to count (its budget is its
shared-memory pool's blocks in use) but blocks to free: with :meth:`FreedBytes.use_pool`,
frames the trim drops, and those sent to an agent lost before it read them
(:meth:`FreedBytes.lost`), get their blocks back (``ShmPool.release``).
"""

from __future__ import annotations

import collections
import operator
import subprocess
from collections.abc import Callable, Iterable
from typing import Any

from .._core import _events as ev
from .._core._buffer import EventBuffer
from ._shm import MAX_BLOCKS, ShmFrames, ShmPool

__all__ = ["FreedBytes", "has_media", "media_bytes", "shm_media"]


def media_bytes(events: Iterable[Any]) -> int:
    """Bytes of frames the ``MEDIA`` events among ``events`` hold."""
    return sum(e[8] for e in events if e[0] == ev.MEDIA)


_kind = operator.itemgetter(0)


def has_media(events: list[Any]) -> bool:
    """Whether any of ``events`` is a ``MEDIA`` event (a C-speed look at the kinds: a
    batch without media pays nothing more)."""
    return ev.MEDIA in map(_kind, events)


def shm_media(batch: list[Any]) -> list[Any]:
    """The ``MEDIA`` events in ``batch`` whose frames are in shared memory."""
    return [e for e in batch if e[0] == ev.MEDIA and type(e[5]) is ShmFrames]


class FreedBytes:
    """The running total of frame bytes sent or dropped; ``on_total`` is told each new
    total (a budget's ``note_freed``)."""

    def __init__(self, on_total: Callable[[int], object] | None = None) -> None:
        self.on_total = on_total
        self.total = 0
        #: set by the logger before it puts its first ``MEDIA`` event
        self.active = False
        self.pool: ShmPool | None = None
        #: the last ``MEDIA`` events sent with frames in shared memory (with a pool).
        #: The agent reads them in order and at most ``MAX_BLOCKS`` blocks are in use,
        #: so those it never read are among the last ``MAX_BLOCKS`` sent
        self.sent: collections.deque[Any] = collections.deque(maxlen=MAX_BLOCKS)

    def use_pool(self, pool: ShmPool) -> None:
        """Free the blocks of frames dropped here, or lost with the agent (the bytes
        need no count: the pool's blocks in use are the budget)."""
        self.pool = pool

    def sent_frames(self, events: list[Any]) -> None:
        """``MEDIA`` events whose frames are in shared memory were sent to the agent."""
        if self.pool is not None:
            self.sent.extend(events)

    def lost(self, agent: subprocess.Popen[bytes]) -> list[Any]:
        """The agent is lost: the ``MEDIA`` events it was sent and did not confirm
        written (never read, or read and not yet written by every media backend),
        oldest first. Their blocks still hold the frames (the agent frees a block only
        once the item is written), so the fallback encodes them again; those it wrote
        are free, maybe taken again (the tickets tell them apart). Only once it has
        exited: a live agent (a shipper error) may still write one; then none (their
        blocks stay in use until the run ends)."""
        if self.pool is None or not self.sent:
            return []
        try:
            agent.wait(0.2)  # one that closed its end of the link is exiting
        except subprocess.TimeoutExpired:
            return []
        unread = [e for e in self.sent if self.pool.holds(e[5])]
        self.sent.clear()
        return unread

    def add(self, nbytes: int) -> None:
        if nbytes:
            self.total += nbytes
            if self.on_total is not None:
                self.on_total(self.total)

    def left(self, events: Iterable[Any]) -> None:
        """``events`` left the producer (sent, or dropped): their frames' bytes come back."""
        if self.active:
            self.add(media_bytes(events))

    def trim(self, buffer: EventBuffer, bound: int | None) -> int:
        """The buffer's ``drop_oldest`` trim; frames among what it drops come back."""
        if not self.active and self.pool is None:
            return buffer.trim(bound)
        out = buffer.trim_out(bound)
        self.discarded(out)
        return len(out)

    def discarded(self, events: list[Any]) -> None:
        """``events`` will never be sent (trimmed, or the agent is lost and nothing here
        can write them): their frames' bytes, and their blocks, come back."""
        if events and (self.active or self.pool is not None) and has_media(events):
            if self.active:
                self.add(media_bytes(events))
            if self.pool is not None:
                self.pool.release_events(events)

    def unresolved(self, events: list[Any], ready: list[Any], held: list[Any]) -> None:
        """Of ``events``, those neither ``ready`` nor ``held`` were dropped (their device
        values never came: ``ready_prefix``): their frames' bytes come back."""
        if self.active:
            self.add(media_bytes(events) - media_bytes(ready) - media_bytes(held))
