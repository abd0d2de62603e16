"""The end of a run's input: producers, the last events, device values, the backends.

Why a module of its own: this sequence is where every source of records is waited for,
each within ``finish_timeout`` or a fixed bound, and its order matters (producers first,
then close the buffer, drain, device values, close the runners, wait for them while
they make progress, abandon the stuck ones). It works on the pump's parts
(:class:`Intake`, the runners, the producers' hub), not on the pump: ``Pump.run`` calls
:func:`end_of_input` once, shielded, then makes the report and closes the screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import anyio
import anyio.abc

from .._channel._producers import ProducerHub
from ._intake import Intake
from ._progresswatch import ProgressWatch
from ._runner import BackendRunner

__all__ = ["end_of_input"]


async def await_producers(
    hub: ProducerHub | None, intake: Intake, finish_timeout: float, say: Callable[[str], None]
) -> None:
    """Wait up to ``finish_timeout`` for producers (``log.remote()``) still connected,
    folding what they send meanwhile; then stop taking their events and name those still
    open (what they send later is counted as dropped)."""
    if hub is None:
        return
    t0 = time.monotonic()
    deadline = t0 + finish_timeout
    while hub.open_names() and time.monotonic() < deadline:
        await intake.drain_once()
        await anyio.sleep(0.01)
    left = hub.stop_accepting()
    while hub.in_flight and time.monotonic() < deadline + 1.0:  # a batch being put now
        await intake.drain_once()
        await anyio.sleep(0.001)
    if left:
        names = ", ".join(repr(n) for n in left)
        say(
            f"aoff: finish() waited {time.monotonic() - t0:.1f}s for remotes still open: "
            f"{names}; what they send from now on is not recorded (close() them first)"
        )


async def end_of_input(
    intake: Intake,
    runners: Sequence[BackendRunner],
    runners_tg: anyio.abc.TaskGroup,
    hub: ProducerHub | None,
    *,
    finish_timeout: float,
    say: Callable[[str], None],
    on_wait: Callable[[], object] = lambda: None,
) -> None:
    """Take the last events in, fold them, and see every runner finished or abandoned.
    ``on_wait`` is called while the runners are waited for (the agent's ack: the
    training process gives up on an agent it hears nothing from)."""
    await await_producers(hub, intake, finish_timeout, say)
    intake.buffer.close()
    await intake.drain_once(final=True)
    await intake.await_device_values()
    await intake.await_media()
    for r in runners:
        r.close_input()
    await await_runners(runners, finish_timeout, say, on_wait)
    runners_tg.cancel_scope.cancel()


async def await_runners(
    runners: Sequence[BackendRunner],
    finish_timeout: float,
    say: Callable[[str], None],
    on_wait: Callable[[], object] = lambda: None,
) -> None:
    """Wait for every runner to write its outbox and close while it makes progress; give
    up on one (its outbox and the batch in flight counted lost) once it has shown no
    progress for ``finish_timeout``: a hung backend costs finish() that long at most, a
    slow one that keeps writing (a busy machine) is waited for. What it has left to
    write is finite (no input comes after close_input), so the wait ends."""
    # each runner still waited for, and whether it still moves on
    waiting = {r: ProgressWatch(r.progress, finish_timeout) for r in runners if not r.done.is_set()}
    while waiting:
        # polled (10 ms, only at finish): progress is a count, not an event
        with anyio.move_on_after(0.01):
            await next(iter(waiting)).done.wait()
        on_wait()
        for r, idle in list(waiting.items()):
            if r.done.is_set():
                del waiting[r]
            elif idle.stalled():
                del waiting[r]
                r.abandon()
                say(
                    f"aoff: backend {r.name!r} did not finish within {finish_timeout:g}s "
                    f"({r.busy_with or 'its work'} made no progress); {r.lost:,} records "
                    "not written"
                )
