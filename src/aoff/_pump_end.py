"""The end of a run: the final drain, device values, backends, the display, the report.

Why a module of its own: this sequence is the one place where every part of the pump
is waited for, each within ``finish_timeout`` or a fixed bound, and its order matters
(drain, device values, close the runners, wait for them, abandon the stuck ones, close
the display, say what was lost). ``Pump.run`` calls :func:`end_of_run` once, shielded.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from ._report import end_of_run_lines

if TYPE_CHECKING:
    from ._pump import Pump

#: how long the end of a run waits for the dashboard's last frame and summary
DISPLAY_CLOSE_TIMEOUT = 3.0


async def await_device_values(pump: Pump) -> None:
    """Final drain: poll (1 ms, never blocking the loop) for values still on a device.

    Gives up after ``finish_timeout``: the events still waiting are dropped (counted
    in ``dropped_events``) and everything else is folded in order.
    """
    deadline = time.monotonic() + pump.finish_timeout
    while pump._held:
        if time.monotonic() < deadline:
            await anyio.sleep(0.001)
        else:
            pump._give_up = True
            pump.report_line.always(
                f"aoff: device values still not copied after {pump.finish_timeout:g}s; "
                "events waiting for them are dropped"
            )
        await pump.drain_once(final=True)


async def await_room(pump: Pump) -> None:
    """Wait (1 ms polls) while a runner holds the pump back, out of the budget of
    ``finish_timeout`` that finish() spends waiting for backends; once that is spent,
    return at once (everything left is then folded and a stuck backend loses it)."""
    if pump._backend_wait_left <= 0:
        return
    t0 = time.monotonic()
    # polled: runners have no "room" event, and this runs only at finish
    while not pump._may_drain() and time.monotonic() - t0 < pump._backend_wait_left:  # noqa: ASYNC110
        await anyio.sleep(0.001)
    pump._backend_wait_left -= time.monotonic() - t0


async def await_display_closed(pump: Pump) -> None:
    """Wait for the display's close (terminal restored, summary printed), at most
    ``DISPLAY_CLOSE_TIMEOUT``: a terminal that takes no output never holds finish."""
    deadline = time.monotonic() + DISPLAY_CLOSE_TIMEOUT
    while not pump.display.closed() and time.monotonic() < deadline:  # noqa: ASYNC110
        await anyio.sleep(0.005)
    if not pump.display.closed():
        pump.report_line.always(
            f"aoff: the terminal did not take output for {DISPLAY_CLOSE_TIMEOUT:g}s; "
            "the summary panel was not printed (everything was written to the backends)"
        )


async def await_producers(pump: Pump) -> None:
    """Wait up to ``finish_timeout`` for producers (``log.remote()``) still connected,
    folding what they send meanwhile; then stop taking their events and name those still
    open (what they send later is counted as dropped)."""
    hub = pump.producers
    if hub is None:
        return
    t0 = time.monotonic()
    deadline = t0 + pump.finish_timeout
    while hub.open_names() and time.monotonic() < deadline:
        await pump.drain_once()
        await anyio.sleep(0.01)
    left = hub.stop_accepting()
    while hub.in_flight and time.monotonic() < deadline + 1.0:  # a batch being put now
        await pump.drain_once()
        await anyio.sleep(0.001)
    if left:
        names = ", ".join(repr(n) for n in left)
        pump.report_line.always(
            f"aoff: finish() waited {time.monotonic() - t0:.1f}s for remotes still open: "
            f"{names}; what they send from now on is not recorded (close() them first)"
        )


async def end_of_run(pump: Pump, runners_tg: anyio.abc.TaskGroup) -> None:
    if pump._finished:
        return
    pump._finished = True
    await await_producers(pump)
    pump.buffer.close()
    await pump.drain_once(final=True)
    await await_device_values(pump)
    for r in pump.runners:
        r.close_input()
    with anyio.move_on_after(max(pump._backend_wait_left, 0.0)):
        for r in pump.runners:
            await r.done.wait()
    for r in pump.runners:
        if not r.done.is_set():
            r.abandon()
            pump.report_line.always(
                f"aoff: backend {r.name!r} did not finish within "
                f"{pump.finish_timeout:g}s; {r.lost:,} records not written"
            )
    await pump.final_summary()
    runners_tg.cancel_scope.cancel()
    pump.show_dropped()
    pump._sync_problems()
    pump.result = res = pump.report()
    # always close: it restores the terminal even after a failed frame, and prints
    # the summary even if start() was never called (as the seed did)
    pump._echo_text(final=True)
    lines = end_of_run_lines(
        res,
        overflow_dropped=pump.buffer.dropped + pump.upstream_dropped,
        capacity=pump.overflow_label[0],
        overflow=pump.overflow_label[1],
    )
    if pump.live is not None:  # `aoff attach` viewers see the end as the terminal does
        pump.live.end(pump.state.snapshot(), pump.clock(), summary=pump.summary, lines=lines)
    pump.display.close(pump.state.snapshot(), pump.clock(), summary=pump.summary)
    await await_display_closed(pump)
    if pump.display.lines_dropped:
        pump.report_line.always(
            f"aoff: {pump.display.lines_dropped:,} printed lines were not shown: the "
            "terminal took no output while they came"
        )
    for line in lines:
        pump.report_line.always(line)
