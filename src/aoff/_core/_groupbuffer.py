"""A run group's intake: the overflow policy counted in steps, a whole block as its ``K``.

Why its own buffer: a group queues one item per call, which is one step of every run,
except ``aoff.jax.log_many``'s block, carried whole as one item of ``K`` steps
(``_groupbatch.take_block_whole``) so the caller pays one conversion a value for the
block, not one item a step. Counted as one item, a dropped block would lose ``K``
steps while the reports said one, and ``capacity`` would bound ``K`` times what it
says. Here the capacity, the drops (``dropped``) and the length the group's shipper
reports (``steps``) are in steps of every run: an item is 1, a block its ``K``;
``len()`` stays in items (what the splitter and the shipper move). A group call under
``drop_oldest`` (the default) keeps :class:`~aoff._core._buffer.EventBuffer`'s path (a
bare ``deque.append``; the consumer's trim weighs each item it drops, and the drains
look for blocks only while some are queued); ``drop_newest`` and ``block`` compare the
steps queued with the capacity.
"""

from __future__ import annotations

import threading

from ._buffer import EventBuffer, Overflow
from ._events import Event
from ._groupbatch import GROUP_BLOCK, item_steps

__all__ = ["GroupBuffer"]


def _extra_of(items: list[Event]) -> int:
    """The steps beyond one a item of ``items``' blocks."""
    return sum(
        item_steps(item) - 1 for item in items if type(item[0]) is str and item[0] == GROUP_BLOCK
    )


class GroupBuffer(EventBuffer):
    """An :class:`EventBuffer` whose ``capacity`` and drops count steps of every run."""

    def __init__(self, capacity: int, overflow: Overflow = "drop_oldest") -> None:
        super().__init__(capacity, overflow)
        self._block_lock = threading.Lock()
        # the queued blocks' steps beyond one each: added by the producers (under the
        # lock), removed by the one consumer; two counters, so neither races the other
        self._added = 0
        self._removed = 0
        self._refused_steps = 0  # a refused block's steps beyond the one ``refused`` counts

    @property
    def steps(self) -> int:
        """Steps of every run queued now (a block counts its ``K``)."""
        return len(self._dq) + self._added - self._removed

    def full(self) -> bool:
        return self.steps >= self.capacity

    def put_block(self, item: Event, k: int) -> None:
        """Queue a whole block of ``k`` steps (``GROUP_BLOCK``) under the policy, in steps:
        ``drop_newest`` refuses it (``k`` counted) when the buffer is full, ``block``
        waits for room, ``drop_oldest`` takes it (the consumer's trim counts what goes)."""
        if self.overflow == "drop_newest" and self.steps >= self.capacity:
            next(self._refused)
            with self._block_lock:
                self._refused_steps += k - 1
            return
        if self.overflow == "block":
            self.wait_for_space()
        with self._block_lock:
            self._added += k - 1
            self._dq.append(item)

    def _put_drop_newest(self, event: Event) -> None:
        if self.steps >= self.capacity:
            next(self._refused)
            return
        self._dq.append(event)

    def _put_block(self, event: Event) -> None:
        if self.steps >= self.capacity and not self.closed:
            self.wait_for_space()
        self._dq.append(event)

    def trim(self, bound: int | None = None) -> int:
        """``drop_oldest``: discard the oldest items until the steps queued are within
        ``bound`` (default: capacity); return the steps discarded (a block: its ``K``)."""
        # each item looked at as it goes (no C-level fast path for "no block queued": a
        # block appended between that check and the trim would be counted as one step)
        if self.overflow != "drop_oldest":
            return 0
        limit = self.capacity if bound is None else bound
        excess = self.steps - limit - self._slack
        if excess <= 0:
            return 0
        gone = 0
        dq = self._dq
        while gone < excess and dq:
            item = dq.popleft()
            n = item_steps(item) if type(item[0]) is str and item[0] == GROUP_BLOCK else 1
            self._removed += n - 1
            gone += n
        self._trimmed += gone
        return gone

    def drain(self, limit: int | None = None) -> list[Event]:
        out = super().drain(limit)
        if self._added != self._removed:
            self._removed += _extra_of(out)
        return out

    def drain_into(self, out: list[Event], limit: int) -> int:
        before = len(out)
        n = super().drain_into(out, limit)
        if n and self._added != self._removed:
            self._removed += _extra_of(out[before:])
        return n

    @property
    def dropped(self) -> int:
        """Steps of every run discarded by the overflow policy so far (exact; a block
        counts its ``K``)."""
        return self._trimmed + self.refused + self._refused_steps
