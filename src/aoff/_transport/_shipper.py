"""The shipper: all the training process keeps of the pump in process mode.

Each round drains the event buffer (a C-speed ``popleft`` loop), keeps events whose
values wait for a device copy until they land (polled, never waited for; later events
stay behind them, so order is kept), pickles what is ready in frames of up to
``FRAME_EVENTS`` (the events' own pickle inside an ``Events`` message: the agent keeps
it as it came until its pump drains it) and queues them on the
:class:`~aoff._transport._wire.Link`. A round is one GIL hold however it is cut
(``pickle.dumps`` never releases the GIL), so frames are large: fewer system calls, and
one pickler memo for the dict keys of many events. The logic is here once;
``_faces/_side.AgentSide`` drives it from a daemon thread (the sync face) or an anyio
task in the caller's loop (the async face).

Backpressure: while more than ``MAX_PENDING_BYTES`` wait for the socket (the agent is
behind; before its first answer, while it starts, ``start_pending_bytes``: as much as
its backlog will take), nothing more is drained; the buffer's overflow policy then
applies at ``capacity``, exactly as with the in-process pump. While events are leaving,
``drop_oldest`` trims only beyond ``BURST_FACTOR`` x ``capacity`` (a burst outrunning the
shipper for a few rounds). Memory in the training process is therefore at most
``BURST_FACTOR`` x ``capacity`` events during a burst, ``capacity`` otherwise (plus up to
``BURST_ROUND`` between a producer's rounds while the agent is behind), plus one drained
round being pickled (one frame while the socket lags) and ``MAX_PENDING_BYTES`` of
pickles (``start_pending_bytes`` while the agent starts: ~98 bytes an event, where the
buffer holds ~536).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic

from .._core._buffer import EventBuffer
from .._core._events import Event
from .._core._pending import PendingEvent, ready_prefix
from .._core._rules import Alert
from .._core._say import SayOnce, say_to_stderr
from .._media._freed import FreedBytes
from ._batches import Pickled, Slices, pack_events, picklable_batch, steps_and_frames
from ._messages import (
    Ack,
    Alerted,
    Events,
    Flush,
    Flushed,
    Out,
    Report,
    Stop,
    decode_from_peer,
    encode,
)
from ._shipstate import Pace, R, Talk, Tally
from ._wire import MAX_PENDING_BYTES, Link

#: events per pickled frame (~60-100 bytes an event on the wire)
FRAME_EVENTS = 4096
#: a round with more events than this waiting is a burst: the driver comes back sooner
SHIP_BATCH = 256
#: producers ship a round themselves once this many events wait (``_side``)
BURST_ROUND = 4096
#: while events are leaving (the agent keeps up), ``drop_oldest`` trims only beyond this
#: many times ``capacity``: a burst from several threads can outrun the shipper for a few
#: rounds without losing anything; once the agent falls behind, ``capacity`` applies
BURST_FACTOR = 4
#: events one round drains when the shipper runs on an event loop (the async face,
#: ``Shipper.for_loop``), and about how many it lets come in between rounds. Measured on
#: the 2-core test machine under load: a round of 256 events held the loop ~0.3 ms (p99
#: 0.4), of 128 ~0.15 ms (p99 0.27), of none 8 us (the pickling is ~0.5-0.9 us an
#: event, the rest a send). The loop runs its other tasks between rounds. Few events
#: then wait at a time, which the garbage collector sees too (see :class:`Pickled`).
LOOP_ROUND_EVENTS = 128
#: bytes one round sends when the shipper runs on an event loop (``Pace.round_bytes``,
#: whole frames): a round of LOOP_ROUND_EVENTS is ~25 KB on the wire, so this sends a
#: round's frame and catches up on two more. Unbounded, a round after the agent had
#: fallen behind sent every frame waiting (up to ``MAX_PENDING_BYTES``) and freed their
#: events in one hold of the loop: a 0.7 ms p99, up to 1.6 ms, on the test machine
LOOP_ROUND_BYTES = 96 << 10
#: how often the shipper looks at the buffer when all is quiet, and when it has work in
#: hand (a backlog, bytes the socket did not take, a flush or stop to see through). Each
#: round wakes a thread that needs the GIL, and with a GIL-bound training loop every GIL
#: hand-off costs that loop tens of microseconds: few rounds, few system calls a round.
SHIP_INTERVAL = 0.05
SHIP_INTERVAL_BUSY = 0.005
#: while the link is backed up (over ``MAX_PENDING_BYTES`` wait: the agent is behind, e.g.
#: a loop logging flat out), the buffer stays at ``capacity``, past ``BURST_ROUND``, and a
#: producer (``_side``) ran a round every 16 calls, 30-60 us each to trim and be refused
#: by the socket: 2-4 us a call (``benchmarks/bench_burst.py``). It ships at most this
#: often then, or once ``BURST_ROUND`` (at most half ``capacity``) beyond ``capacity``:
#: ``drop_oldest``'s soft bound, that much looser while the agent is behind
BACKED_UP_INTERVAL = SHIP_INTERVAL_BUSY
#: how often answers from the agent are read when nothing is being waited for (they
#: only matter if the agent is lost, and a lost agent is seen at the next send anyway)
RECV_INTERVAL = 1.0


@dataclass(frozen=True)
class ShipperSetup:
    """How the shipper's driver wants it (the face's ``AgentSide``, a producer's
    ``Conn``): given when it is built, never set on it after."""

    #: prints a problem found here (a device value that can never be read); None: each
    #: distinct one once on stderr, never waiting for it (a round may run on a producer's
    #: thread); in process mode stderr is forwarded, so it shows above the agent's panel
    say: Callable[[str], None] | None = None
    #: whether a frame keeps its events until it is sent (False: only the pickle,
    #: :class:`Pickled`; the link's ``on_sent`` and ``unsent`` then see those)
    keep_events: bool = True
    #: told each alert the peer sends (the face's ``alerts``/``should_stop``)
    on_alert: Callable[[Alert], None] | None = None
    #: how often answers are read when nothing is waited for (shorter when the loop may
    #: be asked to stop by a rule)
    recv_interval: float = RECV_INTERVAL
    #: every event drained is also appended to the shipper's ``tap`` list, in order (one
    #: list extend a round): the face's early watch, while the agent starts (_faces/_early)
    tap: bool = False
    #: frames that may wait for a peer that has not answered yet (``backed_up``): the
    #: agent reads nothing while it imports (~0.3 s here), and a loop that starts logging
    #: flat out at once lost events against the usual ``MAX_PENDING_BYTES`` with its
    #: backlog empty; ``AgentSide`` gives the agent's backlog bound
    start_pending_bytes: int = MAX_PENDING_BYTES
    #: the frames the overflow policy or an unresolved device value drops, counted back:
    #: a far producer's budget (``_channel/_sender.py``) or the face's pool; None: a new,
    #: inactive one
    freed: FreedBytes | None = None
    #: the run's backends by name: an agent that never answered lost what it received
    #: for each of them, though no ack ever named them
    backends: tuple[str, ...] = ()


class Shipper(Generic[R]):
    """Face-independent: drain, resolve, batch, queue; read the peer's answers.

    ``report_type`` is the report the peer ends with (:class:`FinishReport` from the
    agent, :class:`ProducerReport` from a run taking a producer's events); ``setup``: how
    its driver wants it (:class:`ShipperSetup`).
    """

    def __init__(
        self,
        buffer: EventBuffer,
        link: Link,
        report_type: type[R],
        setup: ShipperSetup = ShipperSetup(),
    ) -> None:
        # the shipper's parts, what waits to leave, and its state grouped by what changes
        # it (``_shipstate.py``), each with why it is there, in one place
        self.buffer = buffer
        self.link = link
        self.report_type: type[R] = report_type
        #: how its driver wants it (frames keeping their events, alerts, intervals)
        self.setup = setup
        self.say = setup.say or SayOnce(lambda line: say_to_stderr(line, wait=False))
        link.on_sent = self._sent
        self.freed = setup.freed if setup.freed is not None else FreedBytes()
        #: when a list (``setup.tap``), every event drained is also appended to it
        self.tap: list[Event] | None = [] if setup.tap else None
        self.held: list[Event] = []  # drained, behind an event waiting for a device
        #: this process's stdout/stderr writes, forwarded to the agent (``Out``) before the
        #: next events
        self.text: collections.deque[tuple[str, str]] = collections.deque()
        #: slices pickled by ``collect(slices=True)`` and not framed yet (the sync face's
        #: rounds on the caller's thread): framed by :meth:`frame_slices`, before anything
        #: else is queued, so the order on the link is the order logged
        self.slices = Slices()
        self.tally = Tally(backends=setup.backends)
        self.talk: Talk[R] = Talk()
        self.pace = Pace()

    # -- outgoing ---------------------------------------------------------------------------
    def dropped(self) -> int:
        return self.buffer.dropped + self.tally.unresolved

    def futile_round(self, waiting: int, since: float) -> bool:
        """Whether a producer's round now could only trim (see ``BACKED_UP_INTERVAL``): the
        link is backed up, the last round is younger than that, and ``waiting`` is under
        ``capacity`` plus ``BURST_ROUND`` (at most half ``capacity``)."""
        cap = self.buffer.capacity
        return (
            since < BACKED_UP_INTERVAL
            and self.link.pending_out > 0
            and self.backed_up()
            and waiting < cap + min(BURST_ROUND, cap // 2)
        )

    def backed_up(self) -> bool:
        """More bytes wait for the socket than the peer should owe us: ``MAX_PENDING_BYTES``
        once it answered, ``start_pending_bytes`` before (it is still starting)."""
        limit = MAX_PENDING_BYTES if self.talk.progress else self.setup.start_pending_bytes
        return self.link.pending_out > limit

    def collect(self, limit: int | None = None, slices: bool = False) -> None:
        """Move what is ready from the buffer onto the link (never blocks): up to ``limit``
        events (default ``round_events``; all there are if that is None too). With
        ``slices`` (only when frames keep only their pickles: ``keep_events`` False) the
        events are pickled into :attr:`slices`, framed later by :meth:`frame_slices`."""
        self.pace.cut_short = False
        slices = slices and not self.setup.keep_events
        if self.text or not slices:
            self.frame_slices()
        while self.text:
            stream, text = self.text.popleft()
            self.link.queue(encode(Out(stream, text)))
        if self.backed_up():
            # the agent is behind and nothing can leave: the policy applies at capacity
            self._trim(None)
            return
        # the buffer is moving: a burst may outrun one round, so only a far bound applies
        self._trim(BURST_FACTOR * self.buffer.capacity)
        # while the socket has not taken the last frames, one frame a round: a round that
        # drained the whole buffer as the link fell under MAX_PENDING_BYTES pickled up to
        # capacity (and BURST_FACTOR x) at once, ~10 MB more pending and as much again
        # in flight (a stalled pump: 17 MiB pending, +27 MB peak; bench_memory.py)
        if limit is None:
            limit = self.pace.round_events
        if self.link.pending_out and (limit is None or limit > FRAME_EVENTS):
            limit = FRAME_EVENTS
        drained = self.buffer.drain(limit)
        if self.tap is not None:
            self.tap += drained
        events = self.held + drained if self.held else drained
        self.held = []
        if events:
            ready = self._ready_prefix(events)
            if slices:
                if ready:
                    self._queue_events(ready, slices=True)
            elif len(ready) <= FRAME_EVENTS:
                self._queue_events(ready)
            else:
                for i in range(0, len(ready), FRAME_EVENTS):
                    self._queue_events(ready[i : i + FRAME_EVENTS])
        # a flush follows every event logged before it: not while a sliced round left some
        drained_all = limit is None or len(drained) < limit
        self.pace.cut_short = not drained_all and len(self.buffer) > 0
        talk = self.talk
        if talk.flush_asked > talk.flush_sent and not self.held and drained_all:
            self.frame_slices()
            self.link.queue(encode(Flush(talk.flush_asked)))
            talk.flush_sent = talk.flush_asked
        stop_now = not self.held and not len(self.buffer)
        if talk.stop_summary is not None and not talk.stop_sent and stop_now:
            self.frame_slices()
            self.link.queue(encode(Stop(talk.stop_summary)))
            talk.stop_sent = True

    def slice_of(self, limit: int) -> bool:
        """Pickle up to ``limit`` events from the buffer into :attr:`slices`, safe from
        signals without deferring them (:meth:`Slices.pickle_from`); False (nothing
        done) where a round needs more than that: text to queue, events held for a device
        value or waiting for one, frames that keep their events, the link backed
        up or the buffer beyond its burst bound (a trim), a flush or stop to queue. The
        caller then runs :meth:`step` with signals deferred."""
        buffer = self.buffer
        n = len(buffer)
        if (
            self.text
            or self.held
            or self.setup.keep_events
            or self.talk.flush_asked > self.talk.flush_sent
            or self.talk.stop_summary is not None
            or n > BURST_FACTOR * buffer.capacity
            or (self.link.pending_out and self.backed_up())
        ):
            return False
        n = min(limit, n)
        # only this thread drains: the n oldest now are the n moved
        if PendingEvent.made and PendingEvent in set(map(type, buffer.oldest(n))):
            return False
        self.pace.cut_short = False
        self.slices.pickle_from(buffer, n)
        return True

    def for_loop(self, clock: Callable[[], float] = time.monotonic) -> Callable[[float], float]:
        """Set this shipper up for an event loop's task (the async face): small rounds
        (``LOOP_ROUND_EVENTS``, ``LOOP_ROUND_BYTES``; its frames keep only their pickles,
        as ``AgentSide`` sets for both faces). Returns the pacing: the wait :meth:`step`
        asked for, cut so that the next round comes once about ``LOOP_ROUND_EVENTS`` more
        events have come in at the rate seen (64,000 calls/s: every 2 ms): few events
        wait at a time (see ``LOOP_ROUND_EVENTS``: the garbage collector).

        The rate is measured over at least ``SHIP_INTERVAL_BUSY`` and kept through a gap
        with nothing new: a flood comes in bursts (actors logging every 10 ms). Measured
        from one round to the next, as it was, a round just after a burst saw nothing new
        and slept the whole ``SHIP_INTERVAL`` (50 ms: 2.2-2.9 s of a 3 s flood in 50 ms
        sleeps, ~3,000 events waiting at a time), then caught up in rounds cut short.
        ``clock``: for tests."""
        self.pace.round_events, self.pace.round_bytes = LOOP_ROUND_EVENTS, LOOP_ROUND_BYTES
        buf = self.buffer
        came, last = buf.drained + len(buf), clock()
        rate = 0.0  # events a second, as last measured (0: quiet)

        def pace(wait: float) -> float:
            nonlocal came, last, rate
            if not wait:  # the round was cut short: more can go now
                return wait
            now, total = clock(), buf.drained + len(buf)
            elapsed = now - last
            if total > came and (elapsed >= SHIP_INTERVAL_BUSY or not rate):
                rate = (total - came) / max(elapsed, 1e-6)
                came, last = total, now
            elif total == came and elapsed >= SHIP_INTERVAL:  # quiet: the flood stopped
                rate = 0.0
            if rate:
                wait = min(wait, LOOP_ROUND_EVENTS / rate)
            return wait

        return pace

    def _ready_prefix(self, events: list[Event]) -> list[Event]:
        """The events that can go now; from the first one still waiting, keep the rest."""
        ready, self.held, unresolved = ready_prefix(events, self.say)
        self.tally.unresolved += unresolved
        if unresolved:
            self.freed.unresolved(events, ready, self.held)
        return ready

    def _trim(self, bound: int | None) -> None:
        self.freed.trim(self.buffer, bound)

    def _queue_events(self, batch: list[Event], slices: bool = False) -> None:
        try:
            inner = pack_events(batch)
        except Exception:
            batch = picklable_batch(batch)  # a value pickle refuses
            inner = pack_events(batch)
        if slices:
            self.slices.add(inner, batch)
            return
        payload = encode(Events(inner, len(batch), self.dropped()))
        keep = self.setup.keep_events
        self.link.queue(payload, batch if keep else Pickled.of(payload, batch))

    def frame_slices(self) -> None:
        """Queue the :attr:`slices` pickled so far as one frame (none: nothing)."""
        if self.slices.parts:
            inner, n, steps, media, frames = self.slices.take()
            payload = encode(Events(inner, n, self.dropped()))
            self.link.queue(payload, Pickled(payload, n, steps, media, frames))

    def waiting_bytes(self) -> int:
        """Bytes of events that wait to be sent: queued on the link, or slices."""
        return self.link.pending_out + self.slices.nbytes

    def unsent_frames(self) -> list[Any]:
        """What waits to be sent, oldest first: the link's frames (each its events, or a
        :class:`Pickled`), then the :attr:`slices` not framed yet."""
        out: list[Any] = self.link.unsent()
        if self.slices.parts:
            out.append(self.slices)
        return out

    def _sent(self, batch: list[Event] | Pickled) -> None:
        if isinstance(batch, Pickled):
            steps, media, frames = batch.steps, batch.media, batch.frames
        else:
            steps, media, frames = steps_and_frames(batch)
        self.tally.shipped_steps += steps
        self.tally.shipped_media += media
        if frames:  # a lost agent's unread frames are encoded again (FreedBytes.lost)
            self.freed.sent_frames(frames)

    # -- incoming ---------------------------------------------------------------------------
    def receive(self) -> None:
        talk, tally = self.talk, self.tally
        for payload in self.link.recv_some():
            msg = decode_from_peer(payload)
            talk.progress += 1
            match msg:
                case Ack(steps, written, backlog_bytes, backlog_peak, media):
                    tally.acked_steps, tally.acked_written = steps, written
                    tally.agent_backlog = (backlog_bytes, backlog_peak)
                    tally.acked_media = media
                case Alerted(alert):
                    if self.setup.on_alert is not None:
                        self.setup.on_alert(alert)
                case Flushed(n, state):
                    talk.flushed = n
                    talk.last_state = state
                case Report(report, state):
                    if not isinstance(report, self.report_type):
                        raise ValueError(f"aoff: unexpected report {type(report).__name__}")
                    talk.report = report
                    talk.last_state = state

    def step(self, limit: int | None = None, send: bool = True, slices: bool = False) -> float:
        """One round: collect (up to ``limit`` events, into :attr:`slices` if ``slices``:
        see :meth:`collect`); unless ``send`` is False (the slices and frames then wait
        for a later round), frame the slices and send; read the agent's answers when
        they matter (raises :class:`AgentGone`); returns how long to wait before the
        next round."""
        self.collect(limit, slices)
        if send:
            self.frame_slices()
            if self.link.pending_out and self.link.send_some(self.pace.round_bytes):
                self.pace.cut_short = True
        now = time.monotonic()
        waiting = self.talk.waiting()
        if waiting or now - self.pace.last_recv >= self.setup.recv_interval:
            self.pace.last_recv = now
            self.receive()
        if self.pace.cut_short:
            return 0.0
        busy = waiting or self.link.pending_out or self.held or len(self.buffer) > SHIP_BATCH
        return SHIP_INTERVAL_BUSY if busy else SHIP_INTERVAL

    def unsent_events(self) -> list[Event]:
        """After :class:`AgentGone`: events never handed to the agent, oldest first."""
        out: list[Event] = [e for batch in self.unsent_frames() for e in batch]
        return out + self.held
