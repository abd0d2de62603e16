"""The async face's in-process pump: a task on the caller's own event loop.

Why a class of its own: it is the async face's :class:`~._driver.AsyncDriver` when the
pump stays in this process (``pump="thread"``, or what must stay here was given), as
``AgentSide`` is in process mode, so the face holds one driver and asks it the same
things either way. It owns what running the pump as a task takes: the terminal
forwarding while the panel draws, the event that says the task ended, and whether a
stop was asked (after which a flush is not waited for).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from .._display._streams import Forwarding, should_forward

if TYPE_CHECKING:
    from .._core._report import FinishReport
    from .._pump._wiring import Core

__all__ = ["PumpTask"]


class PumpTask:
    """A :class:`Core`'s pump run by :meth:`run` as a task of the async face's group.
    Made in ``__aenter__``: its ``anyio.Event`` needs the running loop."""

    def __init__(self, core: Core) -> None:
        self._core = core
        opts = core.options
        self._forwarding: Forwarding | None = None  # on a terminal, while the panel draws
        if should_forward(opts.log_backend, opts.custom_display()):
            self._forwarding = Forwarding(core.pump.text_sink())
        self._done = anyio.Event()  # the pump's task ended
        self._stopping = False

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the pump until a stop was asked and its final drain is over. Shielded:
        cancelling the body of ``async with`` (a timeout around it, SIGTERM) must not
        cancel the backends' runners while records are still queued for them."""
        try:
            with anyio.CancelScope(shield=True):
                await self._core.pump.run(self._core.context, task_status=task_status)
        finally:
            self._done.set()

    def request_stop(self, *, summary: bool) -> None:
        """Ask the pump to end (its final drain is shielded: asked, not cancelled)."""
        self._stopping = True
        self._core.pump.request_stop(summary=summary)

    async def aflush(self, idle_timeout: float) -> None:
        """Return once the pump wrote and flushed everything so far (the pump in this
        loop always progresses or ends: ``idle_timeout`` bounds only the agent's side)."""
        await self._core.pump.flush()

    async def astate_dict(self, idle_timeout: float) -> dict[str, Any] | None:
        """aoff's counters, after a flush while the pump still runs."""
        if not self._stopping:
            await self._core.pump.flush()
        return self._core.pump.state_dict()

    async def astop(self, summary: bool, idle_timeout: float) -> FinishReport:
        """Ask the pump to stop, wait for its task to end, and return its report."""
        if self._forwarding is not None:  # printed from now on: straight out
            self._forwarding.restore()
        self.request_stop(summary=summary)
        await self._done.wait()
        pump = self._core.pump
        return pump.result or pump.partial_report()
