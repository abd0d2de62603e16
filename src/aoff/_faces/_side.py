"""A face's process mode in one piece: start the agent, ship, lose it, account.

The faces hold an :class:`AgentSide` instead of a pump. It owns the agent process, the
shipper thread, the stdout/stderr forwarding, and, if the agent dies, the switch to an
in-process :class:`~aoff._pump._thread.PumpThread` that folds every event not yet handed
over. The :class:`~aoff.FinishReport` then adds what the agent wrote before it died and
counts as lost what it had received but not confirmed written; if no fallback can start,
what is logged from then on is discarded and counted (:meth:`AgentSide._discard`).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .._core._buffer import EventBuffer
from .._core._events import Event
from .._core._report import FinishReport, gave_up_line, media_lost_line
from .._core._say import say_to_stderr
from .._display._streams import Forwarding, should_forward
from .._media._encoder import LOST_AGENT
from .._media._freed import FreedBytes
from .._media._shm import ShmPool
from .._pump._backlog import backlog_bytes
from .._pump._options import Options
from .._pump._progresswatch import (
    ProgressWatch,
    await_progressing,
    unwritten_steps,
    wait_progressing,
)
from .._transport._shipper import (
    RECV_INTERVAL,
    SHIP_INTERVAL,
    SHIP_INTERVAL_BUSY,
    Shipper,
    ShipperSetup,
)
from .._transport._wire import AgentGone
from . import _lost
from ._cadence import (
    BACKSTOP_INTERVAL,
    INLINE_CHECK_EVERY,
    INLINE_INTERVAL,
    INLINE_SEND_BYTES,
    INLINE_SLICE,
    INLINE_SLOW_GAP,
    INLINE_SLOW_SLICE,
    STOP_RULE_INTERVAL,
)
from ._defer import signals_deferred
from ._spawn import start_agent

if TYPE_CHECKING:
    from .._pump._thread import PumpThread
    from .._pump._wiring import Core
    from ._early import EarlyWatch, NoteAlert


def _early_watch(options: Options, driver: str, on_alert: NoteAlert | None) -> EarlyWatch | None:
    """The watch that judges the stop rules on the shipped events while the agent starts
    (``_early.py``); None where no rule may stop the loop, or no shipper thread runs."""
    if not (options.stop_rules() and driver == "thread" and on_alert is not None):
        return None
    from ._early import EarlyWatch

    return EarlyWatch(
        options.rules or (),
        functools.partial(on_alert, early=True),
        seed_tags=options.seed_tags,
        clock=options.now,
    )


class AgentSide:
    """A face's half of process mode: the agent, the shipper, the streams, and the
    fallback to an in-process :class:`PumpThread` when the agent is lost.

    The shipping logic is :class:`Shipper`'s; this class only drives it and waits. The
    sync face drives it from a daemon thread (``driver="thread"``), the async face from
    an anyio task running :meth:`run` in its own event loop (``driver="task"``): the two
    differ only in how they wait (:meth:`flush`/:meth:`stop` against
    :meth:`aflush`/:meth:`astop`).
    """

    def __init__(
        self,
        options: Options,
        buffer: EventBuffer,
        make_core: Callable[[], Core],
        *,
        driver: str = "thread",
        pool: ShmPool | None = None,
        on_alert: NoteAlert | None = None,
    ) -> None:
        self.options = options
        self.buffer = buffer
        self.make_core = make_core
        self.proc, link = start_agent(options, big_send_buffer=driver == "thread")
        stops = options.stop_rules()  # the loop may be told to stop by a rule: hear it soon
        self._interval = STOP_RULE_INTERVAL if stops else INLINE_INTERVAL
        # and from the first step: while the agent starts, the shipper thread judges the
        # stop rules on what it shipped (_early.py)
        self._early = _early_watch(options, driver, on_alert)
        freed = FreedBytes()
        if pool is not None:  # frames nobody will read (dropped, lost) give blocks back
            freed.use_pool(pool)
        setup = ShipperSetup(
            keep_events=False,  # only pickles wait: fewer GCs (see Pickled)
            on_alert=on_alert,
            recv_interval=STOP_RULE_INTERVAL if stops else RECV_INTERVAL,
            tap=self._early is not None,
            # until the agent first answers (it is still importing), frames may wait here
            # up to what its backlog takes once it reads: a loop that logs flat out at once
            start_pending_bytes=backlog_bytes(options.capacity),
            freed=freed,
            backends=options.reported_names(),
        )
        self.shipper = Shipper(buffer, link, FinishReport, setup)
        self.gone: str | None = None
        self.fallback: PumpThread | None = None
        self._stranded: int | None = None  # events discarded since a failed fallback
        self._again = 0  # media a lost agent never read, encoded by the fallback
        self._discard_lock = threading.Lock()
        self.forwarding: Forwarding | None = None
        if should_forward(options.log_backend, options.custom_display()):
            self.forwarding = Forwarding(self.shipper.text)
        self._cond = threading.Condition()
        # one round at a time: the shipper thread, or a producer shipping inline (put)
        self._round_lock = threading.Lock()
        self._wake = threading.Event()
        self._last_round = self._last_send = time.monotonic()
        self._closed = False  # _close(): no round after it (the link is closed)
        self._inline = driver == "thread"
        self._inline_events = max(1, min(INLINE_SLICE, buffer.capacity // 2))
        self._slow_events = max(self._inline_events, min(INLINE_SLOW_SLICE, buffer.capacity // 2))
        self.thread: threading.Thread | None = None
        if driver == "thread":
            self.thread = threading.Thread(
                target=self._run_thread, name="aoff-shipper", daemon=True
            )
            self.thread.start()

    # -- driving the shipper ---------------------------------------------------------------
    def _round(self) -> float | None:
        """One round of the shipper: how long to wait before the next, or None once it is
        done (the agent's report is in, or the agent was lost)."""
        if self._closed:  # finish() gave up on the agent and closed the link: done
            return None
        if self._stranded is not None:  # nothing here can write: count, stay bounded
            self._discard()
            return SHIP_INTERVAL
        try:
            wait = self.shipper.step()
        except AgentGone as exc:
            if not self._closed:  # closed under an async face's round: not a loss
                self._gone(str(exc) or "closed")
        except Exception as exc:  # pragma: no cover - a bug: say so, keep the data
            if not self._closed:
                self._gone(f"shipper error: {type(exc).__name__}: {exc}")
        else:
            return wait if self.shipper.talk.report is None else None
        return None if self._stranded is None else SHIP_INTERVAL  # discard rounds go on

    def _run_thread(self) -> None:
        while True:
            with self._round_lock:
                wait = self._round()
                self._last_round = time.monotonic()
            if self.shipper.talk.waiting() or wait is None:
                with self._cond:
                    self._cond.notify_all()
            if wait is None:
                return
            if self._early is not None:
                self._judge_early()
                wait = min(wait, STOP_RULE_INTERVAL)
            # one GIL hand-off a wake-up; the socket is polled, never waited on
            if self._inline and wait >= SHIP_INTERVAL_BUSY * 2 and self._early is None:
                # producers ship inline: wake only when no round ran for a while
                while not self._wake.is_set():
                    due = self._last_round + BACKSTOP_INTERVAL - time.monotonic()
                    if due <= 0:
                        break
                    self._wake.wait(due)
            else:
                self._wake.wait(wait)
            self._wake.clear()

    def _judge_early(self) -> None:
        """The early watch's turn (the shipper thread): what was shipped since the last,
        until the agent first answers or the watch gives up (then never again). Under
        the round lock, as the agent's alerts are read: one writer of the face's alerts
        at a time (a producer's inline round meanwhile is skipped, as under any round)."""
        early, s = self._early, self.shipper
        assert early is not None
        with self._round_lock:
            tapped, s.tap = s.tap, ([] if not s.talk.progress else None)
            try:
                going = tapped is not None and s.tap is not None and early.judge(tapped)
            except Exception:  # pragma: no cover - a bug: the agent judges alone, as later
                going = False
            if not going:
                s.tap = None
                self._early = None

    def put(self) -> Callable[[Event], None]:
        """The sync face's ``put``: the buffer's own, plus a shipping round on the
        caller's thread when one is due (see ``INLINE_INTERVAL``). Never blocks: if
        another thread is in a round, the caller goes on."""
        put = self.buffer.put
        maybe_ship = self._ship_inline
        # a tiny buffer is looked at more often than every 16 calls (not a small slice:
        # a look at the clock every 12 calls instead of 16 cost the median 0.2 us)
        every = max(1, min(INLINE_CHECK_EVERY, self.buffer.capacity // 4))
        left = every

        def put_and_ship(event: Event) -> None:
            nonlocal left
            put(event)
            left -= 1
            if left <= 0:
                left = every
                maybe_ship()

        return put_and_ship

    def _ship_inline(self) -> None:
        """A bounded round on the caller's thread: one slice of events (``INLINE_SLICE``,
        ``INLINE_SLOW_SLICE`` in a slow loop) pickled, or, once the slices are worth a
        system call (``INLINE_SEND_BYTES``, or ``INLINE_INTERVAL`` passed), the slices
        framed and sent instead: no call pays more than a slice or a send (a slice and
        a send while the link is backed up)."""
        now = time.monotonic()
        since, waiting = now - self._last_round, len(self.buffer)
        # a slow loop (a slice's events took a while to come) ships larger slices
        want = self._inline_events if since < INLINE_SLOW_GAP else self._slow_events
        if since < self._interval and (waiting < want or self.shipper.futile_round(waiting, since)):
            slices = self.shipper.slices
            # the last slice's counting and freeing, here rather than in its own call
            if slices.fresh and self._round_lock.acquire(blocking=False):
                try:
                    slices.settle()
                finally:
                    self._round_lock.release()
            return
        if not self._round_lock.acquire(blocking=False):
            return
        try:
            if not self._inline or self._closed:  # the agent is gone, or given up on
                return
            s = self.shipper
            send = (
                now - self._last_send >= self._interval
                or s.slices.nbytes >= INLINE_SEND_BYTES
                or s.talk.waiting()
            )
            # a slice alone needs no signal deferral (``Slices.pickle_from``), unless the
            # round has more to do than pickle (``Shipper.slice_of`` says when)
            if send or not s.slice_of(want):
                # a send due to the slices alone takes no new slice: the next call does
                limit = 0 if send and s.slices.nbytes >= INLINE_SEND_BYTES else want
                with signals_deferred():  # a signal mid-round would lose or tear a batch
                    s.step(limit, send, True)  # into slices
            self._last_round = now
            if send:
                self._last_send = now
        except Exception:  # the agent is gone (or a bug): the shipper thread handles it
            self._inline = False
            self._wake.set()
        finally:
            self._round_lock.release()

    async def run(self) -> None:
        """The async face's shipper task (run it shielded: it ends by itself)."""
        # polled on purpose: producers never wake the shipper (that is the hot path's
        # whole point), so it looks every few milliseconds. A round holds the loop: it
        # is small, a backlog goes round after round with the loop's other tasks in
        # between (a flood never holds a timer back for long): Shipper.for_loop
        pace = self.shipper.for_loop()
        while (wait := self._round()) is not None:  # noqa: ASYNC110
            await anyio.sleep(pace(wait))

    def _gone(self, reason: str) -> None:
        """The agent died: restore the streams, fold the rest in-process (or, if no
        fallback can start, discard and count it: :meth:`_discard`), say which once."""
        if self.forwarding is not None:
            self.forwarding.restore()
        s, failure = self.shipper, None
        lost = max(s.tally.agent_loss().values(), default=0)
        self._inline = False
        unread = s.freed.lost(self.proc)  # media not confirmed written: frames are here
        try:
            self.fallback = _lost.start_fallback(self.make_core, s, self.options.log_dir, unread)
            self._again = len(unread)
        except Exception as exc:  # e.g. no new thread at interpreter shutdown
            s.freed.discarded(unread)
            failure, self._stranded = exc, _lost.discard_unsent(s)
        again = len(unread)
        media_lost = s.tally.agent_media_loss(again)
        line = _lost.gone_line(reason, self.proc.poll(), lost, failure, again, media_lost)
        say_to_stderr(line)
        self.gone = reason

    def _discard(self, *, last: bool = False) -> int:
        """No agent, no fallback: drain and count what was logged since (frames give their
        memory back); the count. One at a time (the async face's rounds run on its loop,
        finish() in a thread), none after the ``last``."""
        with self._discard_lock:
            if not self._closed:
                events = self.buffer.drain()
                self.shipper.freed.discarded(events)
                self._stranded = (self._stranded or 0) + _lost.logged(events)
                self._closed = last
            return self._stranded or 0

    # -- waiting: the one place the two faces differ -----------------------------------------
    def _idle(self, timeout: float) -> ProgressWatch:
        """Whether the agent made no progress for ``timeout`` seconds (events drained from
        the buffer, or any answer from the agent, count as progress)."""
        s = self.shipper
        return ProgressWatch(lambda: (s.buffer.drained, s.talk.progress), timeout)

    def _wait(self, done: Callable[[], bool], idle_timeout: float) -> bool:
        # a lost agent ends the wait too: then whether it got there (the fallback's turn)
        with self._cond:
            finished = wait_progressing(
                lambda: done() or self.gone is not None,
                self._idle(idle_timeout),
                lambda: self._cond.wait(0.05),
            )
        return finished and done()

    async def _await(self, done: Callable[[], bool], idle_timeout: float) -> bool:
        finished = await await_progressing(
            lambda: done() or self.gone is not None,
            self._idle(idle_timeout),
            lambda: anyio.sleep(SHIP_INTERVAL_BUSY),
        )
        return finished and done()

    def _ask_flush(self) -> Callable[[], bool]:
        s = self.shipper
        s.talk.flush_asked += 1
        n = s.talk.flush_asked
        self._wake.set()
        return lambda: s.talk.flushed >= n

    def flush(self, idle_timeout: float) -> None:
        """Wait until the agent (or the fallback) wrote and flushed everything so far."""
        self._wait(self._ask_flush(), idle_timeout)
        if self.fallback is not None:
            self.fallback.flush()

    def state_dict(self, idle_timeout: float) -> dict[str, Any] | None:
        """aoff's counters after a flush (None: the agent never answered)."""
        if self.shipper.talk.report is None and self.fallback is None:
            self.flush(idle_timeout)
        if self.fallback is not None:
            return self.fallback.state_dict()
        return self.shipper.talk.last_state

    async def astate_dict(self, idle_timeout: float) -> dict[str, Any] | None:
        if self.shipper.talk.report is None and self.fallback is None:
            await self.aflush(idle_timeout)
        if self.fallback is not None:
            return await anyio.to_thread.run_sync(self.fallback.state_dict)
        return self.shipper.talk.last_state

    async def aflush(self, idle_timeout: float) -> None:
        await self._await(self._ask_flush(), idle_timeout)
        if self.fallback is not None:
            await anyio.to_thread.run_sync(self.fallback.flush)

    def stop(self, summary: bool, idle_timeout: float) -> FinishReport:
        """Ship the rest, ask the agent to finish; its report (or the fallback's)."""
        self.shipper.talk.stop_summary = summary
        self._wake.set()
        self._wait(lambda: self.shipper.talk.report is not None, idle_timeout)
        return self._conclude(summary, idle_timeout)

    async def astop(self, summary: bool, idle_timeout: float) -> FinishReport:
        self.shipper.talk.stop_summary = summary
        await self._await(lambda: self.shipper.talk.report is not None, idle_timeout)
        return await anyio.to_thread.run_sync(self._conclude, summary, idle_timeout)

    # -- after the wait: the agent's report, the fallback's, or what is known -----------------
    def _conclude(self, summary: bool, idle_timeout: float) -> FinishReport:
        s = self.shipper
        if s.talk.report is not None:
            self._close()
            return s.talk.report
        if self.fallback is not None:
            report = self.fallback.stop(summary, idle_timeout)
            took = _lost.add_confirmed(report, s, self._again)
            if took:
                say_to_stderr(str(media_lost_line({LOST_AGENT: took})))
            return report
        if self.gone is not None:  # lost, and no fallback could start (_gone said why)
            with self._round_lock:  # the last round: the shipper's next one ends
                discarded = self._discard(last=True)
            report = _lost.confirmed_report(
                s, dropped=s.dropped() + discarded, error="agent lost", interrupted=False
            )
            self._close()
            say_to_stderr(_lost.not_written_line(discarded))
            if report.media_lost:
                say_to_stderr(str(media_lost_line(report.media_lost)))
            return report
        # the agent is alive but made no progress: give up, say what is known
        report = _lost.confirmed_report(
            s,
            dropped=s.dropped() + len(self.buffer) + len(s.held),
            error="did not finish",
            interrupted=True,
        )
        self._close()
        say_to_stderr(gave_up_line(len(self.buffer), max(report.backend_lost.values(), default=0)))
        return report

    def unwritten(self) -> dict[str, int]:
        """Per backend, steps not confirmed written as of now (shipped or still here)."""
        if self.fallback is not None:
            here = self.fallback.unwritten()
            return {n: here.get(n, 0) + lost for n, lost in self.shipper.tally.agent_loss().items()}
        s = self.shipper
        # between rounds only: a round moves events from the buffer onto the link and
        # counts them shipped once sent; read mid-round, a frame was counted twice (as
        # unsent, then as shipped: "104,096 steps not written" of a 100,000-step run)
        # or not at all. A round stuck for over a second is read as it stands.
        got = self._round_lock.acquire(timeout=1.0)
        try:
            unsent = [e for batch in s.unsent_frames() for e in batch]
            waiting = list(self.buffer.snapshot()) + s.held + unsent
            shipped = s.tally.shipped_steps
        finally:
            if got:
                self._round_lock.release()
        names = list(s.tally.acked_written) or self.options.backend_names()
        return unwritten_steps(
            {n: shipped - s.tally.acked_written.get(n, 0) for n in names}, waiting
        )

    def _close(self) -> None:
        if self.forwarding is not None:
            self.forwarding.restore()
        if self.thread is not None:
            self.thread.join(1.0)
        try:
            self.proc.wait(2.0)
        except Exception:
            self.proc.kill()
        # a shipper thread still running (finish() gave up) ends its round first; its
        # next one sees the link closed on purpose, not an agent lost (no fallback then)
        with self._round_lock:
            self._closed = True
        self.shipper.link.close()
