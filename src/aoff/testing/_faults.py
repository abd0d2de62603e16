"""Hooks that change a logger's behaviour on purpose, for tests: inject an event, hold
the media encoder, drive a backend's stall clock, watch the buffer, kill the agent.

Why: the faults aoff must survive (a backend that hangs, an encoder that never returns,
the agent process dying, a device value that never lands) cannot all be made from the
outside in a test, and tests that made them by patching private attributes broke at
every rename. Each hook here is the one documented way to make its fault, and is as
thin as the part it reaches: it installs the fault and returns what the test needs to
release or observe it. Read-only views are in ``_probe.py``.

aoff's own and unstable: these hooks reach private parts and change with them, so they
are not exported from ``aoff.testing`` and carry no compatibility promise. aoff's tests
and benchmarks import them from here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ._parts import _face, _Parts, _side

__all__ = [
    "BackendWatch",
    "BufferWatch",
    "aput_event",
    "drive_backend_clock",
    "finish_grace",
    "hold_drains",
    "hold_media_encoder",
    "kill_agent",
    "put_event",
    "record_report_lines",
    "remove_sigterm_handler",
    "reset_once_a_process_notices",
    "ship_inline_after",
    "signal_while_draining",
    "watch_backend",
    "watch_buffer",
    "without_tensor_capture",
]


def put_event(log: object, event: tuple[Any, ...]) -> None:
    """Hand one raw event (built with aoff's private event helpers, e.g. a step whose
    device value never lands) to a sync logger's hot path, exactly as a logging call
    hands its own."""
    _face(log)._put(event)


async def aput_event(log: object, event: tuple[Any, ...]) -> None:
    """:func:`put_event` for an ``AsyncOffPolicyLogger`` (awaits space under
    ``overflow="block"`` like its logging calls)."""
    await _face(log)._put(event)


def record_report_lines(log: object) -> list[str]:
    """A list that receives every line the in-process pump reports from now on
    (problems, once each, and the end-of-run totals), in order. The lines still go to
    stderr as well."""
    say_once = _Parts(log).say_once
    lines: list[str] = []
    write: Callable[[str], None] = say_once.write

    def tee(line: str) -> None:
        lines.append(line)
        write(line)

    say_once.write = tee
    return lines


class BufferWatch:
    """What :func:`watch_buffer` saw: ``waits`` holds the buffer's length each time a
    producer had to wait for space (``overflow="block"``), ``drains`` the size of each
    non-empty drain (one shipping round or pump slice each)."""

    def __init__(self) -> None:
        self.waits: list[int] = []
        self.drains: list[int] = []


def watch_buffer(log: object) -> BufferWatch:
    """Count, from now on, the producers' waits for space and the drains of ``log``'s
    buffer (the logging side's buffer, in either pump mode)."""
    buf = _face(log)._buffer
    watch = BufferWatch()
    wait_for_space = buf.wait_for_space

    def counted_wait(timeout: float | None = None) -> bool:
        watch.waits.append(len(buf))
        return bool(wait_for_space(timeout))

    buf.wait_for_space = counted_wait
    _after_each_drain(log, lambda out: watch.drains.append(len(out)))
    return watch


def _after_each_drain(log: object, seen: Callable[[list[Any]], object]) -> None:
    """Call ``seen(events)`` right after each non-empty drain of ``log``'s buffer."""
    buf = _face(log)._buffer
    drain = buf.drain

    def drained(limit: int | None = None) -> list[Any]:
        out: list[Any] = drain(limit)
        if out:
            seen(out)
        return out

    buf.drain = drained


class BackendWatch:
    """What :func:`watch_backend` saw: ``peak_pending`` is the most records ever queued
    for the backend right after an offer; ``offers`` the size of each offer."""

    def __init__(self) -> None:
        self.peak_pending = 0
        self.offers: list[int] = []


def watch_backend(log: object, name: str) -> BackendWatch:
    """Watch, from now on, what the in-process pump offers the backend ``name``."""
    r = _Parts(log).runner(name)
    watch = BackendWatch()
    offer = r.offer

    def tracking_offer(records: Any) -> None:
        offer(records)
        watch.offers.append(len(records))
        watch.peak_pending = max(watch.peak_pending, len(r.pending))

    r.offer = tracking_offer
    return watch


def drive_backend_clock(log: object, name: str, clock: Callable[[], float]) -> None:
    """Let ``clock`` (e.g. ``aoff.testing.ManualClock``) be what the backend ``name``'s
    stall detection reads, so that a test can make a hung ``write`` count as stalled
    without waiting ``stall_timeout`` (the logger's ``clock=`` does not reach it)."""
    _Parts(log).runner(name).monotonic = clock


def hold_drains(log: object) -> threading.Event:
    """Hold ``log``'s buffer until the returned event is set, as a stalled agent or pump
    would: a drain on aoff's own threads (the shipper's or the pump's rounds,
    ``finish()``'s) waits for it, and one on the thread that logs (process mode's
    inline rounds, which only take what is ready) takes nothing meanwhile. What is logged
    stays in the buffer, so a test's signal reaches a drain still under way however
    loaded the machine (a real drain of a few seconds can end before a signal sent from
    a loaded machine arrives). The logging thread is the one that calls this. Not for the
    async face in thread mode: its pump is a task on the logging thread's own loop, and
    a drain that takes nothing there reads as a drain that is over."""
    buf = _face(log)._buffer
    gate = threading.Event()
    logging_thread = threading.get_ident()
    drain, drain_into = buf.drain, buf.drain_into

    def held(limit: int | None = None) -> list[Any]:
        if not gate.is_set():
            if threading.get_ident() == logging_thread:
                return []
            gate.wait()
        out: list[Any] = drain(limit)
        return out

    def held_into(out: list[Any], limit: int) -> int:
        return int(drain_into(out, limit)) if gate.is_set() else 0

    buf.drain, buf.drain_into = held, held_into
    return gate


def hold_media_encoder(log: object) -> threading.Event:
    """Make the in-process pump's media encoder wait before each image/video until the
    returned event is set (``.set()`` it to let it go; a held job waits at most 60 s)."""
    encoder = _Parts(log).encoder
    gate = threading.Event()
    encode = encoder._encode

    def held(job: Any) -> Any:
        gate.wait(60)
        return encode(job)

    encoder._encode = held
    return gate


def signal_while_draining(log: object, signum: int, *, drain: int = 1) -> None:
    """Raise ``signum`` in this process right after the ``drain``-th non-empty drain of
    ``log``'s buffer took its events: the worst moment for a Ctrl+C, with events out of
    the buffer and not yet shipped (process mode) or folded (thread mode)."""
    seen = 0

    def count(_: list[Any]) -> None:
        nonlocal seen
        seen += 1
        if seen == drain:
            signal.raise_signal(signum)

    _after_each_drain(log, count)


def ship_inline_after(log: object, events: int) -> None:
    """Process mode, sync face: a logging call ships a round itself once this many
    events wait, and such a round takes at most this many (default: half the
    ``capacity``, at most 32, or 96 in a slow loop), instead of leaving it to the
    shipper thread. A test that must see the buffer fill sets it above the capacity."""
    side = _side(_face(log))
    if side is None:
        raise LookupError("ship_inline_after needs a sync logger in process mode")
    side._inline_events = side._slow_events = max(1, int(events))


def kill_agent(log: object, signum: int = signal.SIGKILL) -> int:
    """Send ``signum`` (default ``SIGKILL``) to ``log``'s agent process; its pid.
    ``SIGSTOP`` freezes it (it can neither write nor answer) until a later kill."""
    side = _side(_face(log))
    if side is None:
        raise LookupError("kill_agent needs a logger in process mode")
    pid = int(side.proc.pid)
    os.kill(pid, signum)
    return pid


@contextlib.contextmanager
def without_tensor_capture() -> Iterator[None]:
    """While open, loggers and producers take the torch-free path of the logging calls,
    as if torch had never been imported (open it around the whole test: a logger may
    look again later). For a test that checks both paths give the same outcome."""
    from .._core._recorder import Recorder

    refresh = Recorder.__dict__["_refresh_capture"]
    Recorder._refresh_capture = lambda self: False  # type: ignore[method-assign]
    try:
        yield
    finally:
        Recorder._refresh_capture = refresh  # type: ignore[method-assign]


@contextlib.contextmanager
def finish_grace(seconds: float) -> Iterator[None]:
    """While open, ``finish()``/``close()`` give up on a pump that made no progress for
    ``finish_timeout`` plus ``seconds`` (10 s otherwise), so that a test of a stuck
    final drain need not wait the full grace."""
    from .._faces import _face

    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    grace = _face.FINISH_GRACE
    _face.FINISH_GRACE = float(seconds)
    try:
        yield
    finally:
        _face.FINISH_GRACE = grace


def reset_once_a_process_notices() -> None:
    """Forget which once-a-process notices were printed (e.g. "the pump runs in this
    process, not in its agent"), so that the next logger made prints its own again."""
    from .._faces import _face

    _face._said_in_process.clear()


def remove_sigterm_handler() -> bool:
    """Take aoff's SIGTERM handler back out, if it is installed: a sync logger made with
    ``handle_sigterm=True`` installs it for the rest of the process (as a training script
    wants), and the next such logger installs it afresh. True if it was installed."""
    from .._faces import _sync

    if signal.getsignal(signal.SIGTERM) is not _sync._on_sigterm:
        return False
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _sync._prev_sigterm = None
    return True
