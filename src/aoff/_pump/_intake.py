"""The pump's intake: drain the buffer, fold the events in order, hand records to the runners.

Why a part of its own: this is where the ordering rule lives (no event is folded before
an earlier one, even while that one waits for values still on a device: those are
polled, never waited for, and what comes after them is held), and where the two waits
of a run's end that concern the events themselves are made: for device values, and for
room in the backends' queues (out of ``finish_timeout``'s budget).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from .._backends._base import Takes
from .._core._blockjoin import join_blocks, markers_end
from .._core._buffer import EventBuffer
from .._core._columns import Spans, row_spans
from .._core._events import (
    COLLECTOR,
    COLLECTOR_TIMING,
    DONE_RATES,
    FOLDED,
    MEDIA,
    MEDIA_REFUSED,
    REMOTE,
    RUN_BLOCK,
    STEP,
    STEP_BLOCK,
    Event,
)
from .._core._fold import FoldedInPart, Folder
from .._core._pending import PendingEvent, event_ready, resolve_event, unreadable_line
from .._core._records import MediaRecord, Record, StepRecord
from .._core._say import SayOnce
from .._core._state import State
from .._media._encoder import BACKEND_FAILED, NO_BACKEND, MediaEncoder
from . import _registry
from ._progresswatch import ProgressWatch, await_progressing
from ._runner import BackendRunner

__all__ = ["BEHIND_SLICE", "FOLD_SLICE", "TURN_BACKLOG", "TURN_SLICE", "Intake"]

FOLD_SLICE = 512
#: while the pump shares the training process (``shares``) and is not behind (less
#: than ``TURN_BACKLOG`` events wait): smaller slices, each followed by a GIL pause, so a
#: pure-Python training loop waits for one of them at a time, not for 512 events' fold
TURN_SLICE = 32
TURN_BACKLOG = 4 * FOLD_SLICE
#: while the pump has the process to itself (the agent) and at least this many events
#: wait: slices this large. A run fold's fixed cost is ~40 NumPy calls a span
#: (``_core/_fold_columns``), ~1 µs an iteration at ``FOLD_SLICE``; a backlog pays it a
#: quarter as often, and the runners' and the rules' per-batch costs with it
BEHIND_SLICE = 4 * FOLD_SLICE
_MEDIA_KINDS = (MEDIA, MEDIA_REFUSED)
#: the kinds a run of regular iterations is made of (``Folder.apply_run``)
_RUN_KINDS = frozenset((STEP, COLLECTOR_TIMING, COLLECTOR, DONE_RATES))


#: events that stand for several calls, folded as columns
_BLOCKS = frozenset((STEP_BLOCK, RUN_BLOCK))


def _alone() -> bool:
    return False


class Intake:
    """Buffer -> :class:`Folder` -> runners, in order, in slices of ``FOLD_SLICE``.

    ``held`` keeps drained events that wait for device values (and those behind them);
    ``unresolved`` counts pending events given up on (dropped). ``on_change`` is called
    when the state may have changed (a fold, a trim); ``on_slice`` before each slice
    (the pump's chores that must not wait for its tick: the agent's ack, the dropped
    count). The pacing is passed in: ``shares()`` says whether the process's GIL is
    shared with a training loop now (then slices are ``TURN_SLICE``), ``pause`` is
    awaited after each such slice; by default nothing is shared.
    """

    def __init__(
        self,
        buffer: EventBuffer,
        state: State,
        runners: Sequence[BackendRunner],
        say: SayOnce,
        *,
        finish_timeout: float,
        on_change: Callable[[], None],
        on_slice: Callable[[], None],
        seed_tags: bool = True,
        on_records: Callable[[list[Record], Spans], None] | None = None,
        on_watch: Callable[[list[Record], Spans], None] | None = None,
        on_media_freed: Callable[[int], None] | None = None,
        shares: Callable[[], bool] = _alone,
        pause: Callable[[], Awaitable[None]] = anyio.lowlevel.checkpoint,
    ) -> None:
        self._shares = shares
        self._pause = pause
        self.buffer = buffer
        self.state = state
        self.runners = runners
        self.say = say
        self.folder = Folder(state, say, seed_tags=seed_tags)
        self.finish_timeout = finish_timeout
        self._on_change = on_change
        self._on_slice = on_slice
        # events drained but not folded yet because an earlier one still waits for values
        # from a device (a PendingEvent); they are folded, in order, before anything newer
        self.held: list[Event] = []
        self.unresolved = 0  # pending events given up on at finish (counted as dropped)
        self.saw_full = False  # the buffer was full at the last drain
        self._give_up = False
        #: whether the fold takes runs of regular iterations at once (off after a failure)
        self._runs = True
        self._room_given_up = False  # the final drain stopped waiting for a stuck runner
        #: also handed every slice's records (the run summary file), if set; both
        #: callbacks get the records' row spans (``_core/_columns.row_spans``), walked
        #: once for the two (~0.1 µs a record a walk)
        self.on_records = on_records
        #: also handed every slice's records after the runners: the run's rules
        self.on_watch = on_watch
        #: media events go to the encoder thread, never through the fold (``_media``);
        #: ``on_media_freed`` is told the bytes of each frame it frees (the media budget)
        self.media = MediaEncoder(say, on_media_freed)
        for r in runners:
            for what, fmt in getattr(r.backend, "media_formats", {}).items():
                self.media.formats[what].add(fmt)
        self.last_step = 0  # the run's latest record's step: a media call's step=None
        #: encoded, and written by at least one backend (counted once every backend that
        #: took it is done with it; none wrote it: lost, ``BACKEND_FAILED``)
        self.media_written = 0
        #: media records still in a runner: ``id(record) -> [runners left, release]``
        self._held_media: dict[int, list[Any]] = {}
        for r in runners:
            if r.takes_media:
                r.media_done = self._media_done

    def _media_event(self, e: Event, *, own: bool = True) -> None:
        """Hand a media event to the encoder. ``own``: the logger's (its bytes go back to
        this process's budget once encoded); a producer's frames were its own budget's
        until sent, so they free nothing here."""
        s = self.state
        if e[0] == MEDIA_REFUSED:
            s.media_refused += 1
            return
        _, wall, key, step, what, payload, fmt, fps, nbytes, encoding = e
        step = self.last_step if step is None else step
        self.media.submit(
            (key, step, wall, what, payload, fmt, fps, nbytes if own else 0, encoding)
        )

    def offer_media(self) -> None:
        """Hand what the encoder finished to the runners whose backend writes media."""
        done = self.media.done
        # a backend whose library is missing (``disabled``) writes nothing: not a taker
        takers = [
            r for r in self.runners if r.takes_media and not getattr(r.backend, "disabled", False)
        ]
        while done:
            rec, release = done.popleft()
            if takers:
                # before the offers: a failed runner lets go of it at once
                self._held_media[id(rec)] = [len(takers), release, rec, False]
                for r in takers:
                    r.offer((rec,))
                self.state.last_media = (rec.key, rec.step)  # the panel names only these
            else:
                if release is not None:
                    release()
                self.media.lost[NO_BACKEND] += 1
                named = _registry.said(_registry.takers(Takes.MEDIA))
                self.say(
                    f"aoff: no backend of this run writes images or videos ({named} "
                    "do); they are not written"
                )

    def _media_done(self, rec: MediaRecord, written: bool) -> None:
        """A runner is done with ``rec`` (``written``, or lost and counted there); once
        every runner that took it is, it is counted written (or, when none wrote it, lost)
        and its frames' block is marked free: until then a lost agent's fallback finds it
        in use and encodes it again (``FreedBytes.lost``)."""
        held = self._held_media.get(id(rec))
        if held is None:
            return
        held[0] -= 1
        held[3] = held[3] or written
        if held[0] <= 0:
            del self._held_media[id(rec)]
            if held[3]:
                self.media_written += 1
            else:
                self.media.lost[BACKEND_FAILED] += 1
            if held[1] is not None:
                held[1]()

    def media_unconfirmed(self) -> int:
        """Media handed to backends that have not all said yet whether they wrote them."""
        return len(self._held_media)

    def may_drain(self) -> bool:
        return not any(r.holds_back() for r in self.runners)

    def hold_first(self, events: list[Event]) -> None:
        """Fold ``events`` before anything in the buffer (the agent's unsent events)."""
        self.held = events + self.held

    def _pending_ready(self, e: PendingEvent) -> bool | None:
        """Whether a pending event's values are known (None: they never will be)."""
        try:
            return event_ready(e)
        except Exception as exc:  # e.g. a CUDA error surfacing in Event.query()
            self.say(unreadable_line(exc))
            return None

    def fold(self, events: Sequence[Event]) -> list[Record]:
        """Fold ``events`` in order; stop at the first whose device values are not ready.

        The rest (that event included) is kept in ``held`` and folded first next time:
        ``PendingEvent.waits`` are polled (never waited for), so the loop is never blocked,
        and no event is folded before an earlier one, so order and steps are kept.
        """
        apply = self.folder.apply
        apply_run = self.folder.apply_run
        records: list[Record] = []
        folded = 0
        n = len(events)
        i = 0
        run_at = 0  # no run of regular iterations starts before this index
        while i < n:
            e = events[i]
            if i >= run_at and e[0] in _RUN_KINDS and type(e) is tuple and self._runs:
                try:
                    run, end, run_at = apply_run(events, i)
                except Exception as exc:  # a bug: the per-event fold takes every event
                    self._runs = False
                    self.say(f"aoff: the run fold failed ({type(exc).__name__}: {exc}); "
                             "folding event by event")  # fmt: skip
                    run = []
                if run:  # a run folded at once (_core/_fold_columns)
                    records += run
                    folded += end - i
                    i = end
                    self.last_step = run[-1].step  # the run's own steps (no producers)
                    continue
            at = i
            i += 1
            if type(e) is PendingEvent:
                ready = self._pending_ready(e)
                if not ready:
                    if ready is False and not self._give_up:
                        self.held = list(events[at:])
                        break
                    self.unresolved += 1
                    if e[0] == MEDIA:  # its frames never came: the budget's bytes do
                        self.media.drop([e])
                    folded += 1
                    continue
                e = resolve_event(e)
            folded += 1
            kind = e[0]
            if kind in _MEDIA_KINDS:
                self._media_event(e)
                continue
            # a step its block before it folded (_transport/_plainsteps): the fold's table
            # folds it as nothing too; passed over here, one a step, before apply's work
            if kind == FOLDED:
                continue
            if kind in _BLOCKS:  # columns (a group's, or read so)
                # the blocks of its kind and skeleton right after it (a frame each) with
                # theirs: one fold's fixed cost, one table (_core/_blockjoin)
                e, last = join_blocks(events, at)
                folded += last - at
                i = last + 1
                block = self._block(e)
                if block:
                    records += block
                    self.last_step = block[-1].step
                # the last block's markers after it, passed over at once (not a turn of
                # this loop each); any other event among them stops the skip
                end = markers_end(events, i, events[last])
                folded += end - i
                i = end
                continue
            if kind == REMOTE and type(e[3]) is tuple and e[3][0] in _MEDIA_KINDS:
                self._media_event(e[3], own=False)  # a producer's: the run's encoder
                continue
            try:
                rec = apply(e)
            except Exception as exc:  # a bug or an exotic input: report, keep going
                self.state.invalid_values += 1
                self.say(f"aoff: could not process {e[0]!r} event: {type(exc).__name__}: {exc}")
                continue
            if rec is not None:
                records.append(rec)
                if type(rec) is StepRecord and rec.producer is None:
                    self.last_step = rec.step
        if folded:
            self._on_change()
        return records

    def _block(self, e: Event) -> list[Record]:
        """A block (a group's plain steps, or pickles read as columns: ``RUN_BLOCK``)
        folded as columns, or event by event once the columns failed (as for a run of
        regular iterations); a step the per-event fold cannot take is counted and said
        there, as for any event."""
        apply = self.folder.apply_block if e[0] == STEP_BLOCK else self.folder.apply_runblock
        done: list[Record] = []
        if self._runs:
            try:
                return apply(e)
            except Exception as exc:  # a bug: the per-event fold takes every step
                self._runs = False
                cause: BaseException = exc
                if isinstance(exc, FoldedInPart):  # its first part folded already
                    done, e = exc.records, exc.rest
                    cause = exc.__cause__ or exc
                self.say(f"aoff: the run fold failed ({type(cause).__name__}: {cause}); "
                         "folding event by event")  # fmt: skip
        return done + apply(e, columns=False)

    def _offer(self, records: list[Record]) -> None:
        for r in self.runners:
            r.offer(records)
        if not records or (self.on_records is None and self.on_watch is None):
            return
        spans = list(row_spans(records))
        if self.on_records is not None:
            self.on_records(records, spans)
        if self.on_watch is not None:
            self.on_watch(records, spans)

    async def drain_once(self, *, final: bool = False) -> int:
        """Drain what is buffered now, fold it in slices, offer records to backends."""
        total = 0
        buffer = self.buffer
        if self.media.done:
            self.offer_media()
        self.saw_full = buffer.full()
        # Not final: fold at most what is buffered now (then the caller renders), so a
        # producer faster than the fold cannot keep the pump in here forever.
        budget = None if final else len(buffer) + FOLD_SLICE
        size = FOLD_SLICE
        if self._shares():
            if not final and len(buffer) < TURN_BACKLOG:
                size = TURN_SLICE
        elif len(buffer) >= BEHIND_SLICE:  # behind, and no training loop to wait for us
            size = BEHIND_SLICE
        while True:
            # drop_oldest: trim before every slice, so the buffer stays bounded even while
            # a long backlog is being folded (not only once per tick)
            if self.media.trim(buffer):  # dropped frames free their budget
                self._on_change()
            self._on_slice()
            if not self.may_drain():
                if not final:
                    break
                # final drain: fold no faster than the backends write, so that the last
                # buffer-full does not become records all at once (memory stays bounded)
                await self.await_room()
            if self.held:  # older than anything in the buffer: fold these first
                held, self.held = self.held, []
                self._offer(self.fold(held))
                if self.held:
                    break  # still waiting for a device; poll again on a later tick
                continue
            events = buffer.drain(size)
            if not events:
                break
            total += len(events)
            self._offer(self.fold(events))
            if self.held or len(events) < size or (budget is not None and total >= budget):
                break
            if size == TURN_SLICE:
                await self._pause()
            else:
                await anyio.lowlevel.checkpoint()
        return total

    # -- the end of a run's waits ----------------------------------------------------------------
    async def await_room(self) -> None:
        """Wait (1 ms polls) while a runner holds the pump back and the runners make
        progress, so the final drain folds no faster than the backends write and their
        outboxes stay bounded however long the backlog; once none has made progress for
        ``finish_timeout``, return at once from then on (everything left is folded, and
        ``await_runners`` gives the stuck one up). A hung backend stops holding the
        others back by itself after ``stall_timeout``."""
        if self._room_given_up:
            return
        runners = self.runners
        idle = ProgressWatch(lambda: [r.progress() for r in runners], self.finish_timeout)
        # polled: runners have no "room" event, and this runs only at finish
        if not await await_progressing(self.may_drain, idle, lambda: anyio.sleep(0.001)):
            self._room_given_up = True

    async def _wait_media(self) -> bool:
        """Wait (a worker thread) while the encoder makes progress, handing each item it
        finishes to the runners as it comes (their writes are the run's progress too);
        False once it finished no item within ``finish_timeout`` (it stalled)."""
        media = self.media
        while not media.idle():
            since = media.finished()
            moved = await anyio.to_thread.run_sync(
                media.wait_progress, since, self.finish_timeout, abandon_on_cancel=True
            )
            self.offer_media()
            if not moved:
                return False
        return True

    async def flush_media(self) -> None:
        """flush(): what was accepted so far, encoded (while the encoder makes progress)
        and offered to the runners."""
        await self._wait_media()
        self.offer_media()

    async def await_media(self) -> None:
        """finish() and the signal drains: wait for every accepted image and video while
        the encoder makes progress (the rule the runners follow), giving up only on one
        that finished no item within ``finish_timeout``: what it still holds is counted
        (``FinishReport.media_lost``) and named in the end-of-run line."""
        await self._wait_media()
        self.media.close()
        self.offer_media()

    async def await_device_values(self) -> None:
        """Final drain: poll (1 ms, never blocking the loop) for values still on a device.

        Gives up after ``finish_timeout``: the events still waiting are dropped (counted
        in ``dropped_events``) and everything else is folded in order.
        """
        deadline = time.monotonic() + self.finish_timeout
        while self.held:
            if time.monotonic() < deadline:
                await anyio.sleep(0.001)
            else:
                self._give_up = True
                self.say.always(
                    f"aoff: device values still not copied after {self.finish_timeout:g}s; "
                    "events waiting for them are dropped"
                )
            await self.drain_once(final=True)
