"""The end of a run's input: producers, the last events, device values, the backends.

Why a module of its own: this sequence is where every source of records is waited for,
each within ``finish_timeout`` or a fixed bound, and its order matters (producers first,
then close the buffer, drain, device values, close the runners, wait for them, abandon
the stuck ones). It works on the pump's parts (:class:`Intake`, the runners, the
producers' hub), not on the pump: ``Pump.run`` calls :func:`end_of_input` once, shielded,
then makes the report and closes the screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import anyio
import anyio.abc

from .._channel._producers import ProducerHub
from ._intake import Intake
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
) -> None:
    """Take the last events in, fold them, and see every runner finished or abandoned."""
    await await_producers(hub, intake, finish_timeout, say)
    intake.buffer.close()
    await intake.drain_once(final=True)
    await intake.await_device_values()
    await intake.await_media()
    for r in runners:
        r.close_input()
    with anyio.move_on_after(max(intake.backend_wait_left(), 0.0)):
        for r in runners:
            await r.done.wait()
    for r in runners:
        if not r.done.is_set():
            r.abandon()
            say(
                f"aoff: backend {r.name!r} did not finish within "
                f"{finish_timeout:g}s; {r.lost:,} records not written"
            )
    runners_tg.cancel_scope.cancel()
