"""The in-process pump on a private event loop in a daemon thread ("aoff-pump").

The sync face's thread mode, and either face's fallback when the agent is lost, run the
pump this way: the training thread never touches the pump's loop except through
anyio's thread bridge, and waits only in :meth:`PumpThread.flush` and
:meth:`PumpThread.stop`. While it runs, aoff's threads take turns for the GIL with the
training loop (``_pump/_turns``): its long work comes in short pieces.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from .._core._report import FinishReport, gave_up_line
from .._core._say import say_to_stderr
from .._display._streams import Forwarding, should_forward
from ._progresswatch import ProgressWatch, wait_progressing
from ._turns import sharing
from ._wiring import Core


def start_loop_thread(
    main: Callable[[Callable[[], None]], Awaitable[None]], name: str, what: str
) -> threading.Thread:
    """Run ``main(ready)`` on a private asyncio loop in the daemon thread ``name`` and
    return once it called ``ready()``; a failure before that raises here, naming ``what``.
    The training loop shares this process's GIL with the thread: aoff's threads take
    turns with it while the loop runs (``_pump/_turns``)."""
    ready = threading.Event()
    crashed: list[BaseException] = []

    def thread_main() -> None:
        try:
            with sharing():
                anyio.run(main, ready.set, backend="asyncio")
        except BaseException as exc:  # pragma: no cover - reported to the caller
            crashed.append(exc)
            ready.set()

    thread = threading.Thread(target=thread_main, name=name, daemon=True)
    thread.start()
    ready.wait()
    if crashed:
        raise RuntimeError(f"aoff: {what} failed to start") from crashed[0]
    return thread


class PumpThread:
    """A :class:`Core`'s pump on its own loop in the "aoff-pump" thread. The training
    thread calls :meth:`flush`, :meth:`state_dict`, :meth:`unwritten` and :meth:`stop`;
    each reaches the pump only through its public methods (on its loop where they must)."""

    def __init__(self, core: Core, held: list[Any] | None = None) -> None:
        self.core = core
        opts = core.options
        self.forwarding: Forwarding | None = None
        if should_forward(opts.log_backend, opts.custom_display()):
            self.forwarding = Forwarding(core.pump.text_sink())
        if held:
            core.pump.hold_first(held)
        self._token: Any = None

        async def main(ready: Callable[[], None]) -> None:
            self._token = anyio.lowlevel.current_token()
            ready()
            await core.pump.run(core.context)

        self.thread = start_loop_thread(main, "aoff-pump", "the pump thread")

    def flush(self, idle_timeout: float | None = None) -> None:
        """Wait until the pump wrote and flushed everything so far. ``idle_timeout`` is
        the faces' driver call (``_faces/_driver.py``); a pump in this process always
        progresses or ends, so the wait needs no bound of its own."""
        if self.thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                anyio.from_thread.run(self.core.pump.flush, token=self._token)

    def state_dict(self, idle_timeout: float | None = None) -> dict[str, Any]:
        """aoff's counters after a flush (``_core/_checkpoint.py``), made on the pump's
        loop; once the pump has ended, from its final state (``idle_timeout``: as for
        :meth:`flush`)."""
        pump = self.core.pump
        self.flush()
        if self.thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                return anyio.from_thread.run_sync(pump.state_dict, token=self._token)
        return pump.state_dict()

    def unwritten(self) -> dict[str, int]:
        """Per backend, steps not written as of now (events still waiting count too)."""
        return self.core.pump.unwritten()

    def stop(self, summary: bool, idle_timeout: float) -> FinishReport:
        """Ask the pump to stop and wait for its report (partial if it stalls)."""
        pump = self.core.pump
        if self.forwarding is not None:  # what is printed from now on goes straight out
            self.forwarding.restore()
        with contextlib.suppress(RuntimeError):  # the loop is already gone
            anyio.from_thread.run_sync(
                lambda: pump.request_stop(summary=summary), token=self._token
            )
        if self._join(idle_timeout) and pump.result is not None:
            return pump.result
        report = pump.partial_report()
        left = report.dropped_events - pump.dropped()
        say_to_stderr(gave_up_line(left))
        return report

    def _join(self, idle_timeout: float) -> bool:
        """Wait for the pump's final drain; False if it stopped making progress.

        Folding a full buffer is CPU work that can take seconds (100,000 events of a
        10,000-key dict take minutes on a slow machine); cutting it short would lose
        those events at interpreter exit. So this waits as long as events are folded or
        records written, and gives up only after ``idle_timeout`` s without either (the
        pump itself waits at most ``finish_timeout`` for a hung backend; a display that
        blocks, e.g. on a full stdout pipe, is what this catches).
        """
        pump = self.core.pump

        def mark() -> tuple[int, int, int]:
            got = pump.progress()
            return got.drained, got.steps, got.settled

        idle = ProgressWatch(mark, idle_timeout)
        thread = self.thread
        return wait_progressing(lambda: not thread.is_alive(), idle, lambda: thread.join(0.25))
