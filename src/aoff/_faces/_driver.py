"""What a face needs of the part that drives its pump: the driver's two small protocols.

Why: a face does not care where its pump runs, only that something takes what it
logged to the backends and answers flush, ``state_dict`` and stop. The sync face holds
a :class:`Driver` (a ``PumpThread`` in thread mode, an ``AgentSide`` in process mode),
the async face an :class:`AsyncDriver` (a ``PumpTask`` on the caller's loop, or an
``AgentSide`` run as a task); both hold it as ``_driver``. ``idle_timeout`` is how long
a wait may see no progress before it gives up (``finish_timeout`` plus a grace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._core._report import FinishReport

__all__ = ["AsyncDriver", "Driver"]


class Driver(Protocol):
    """The sync face's driver: each call may block the training thread until done."""

    def flush(self, idle_timeout: float) -> None:
        """Return once everything logged so far is written and flushed."""

    def state_dict(self, idle_timeout: float) -> dict[str, Any] | None:
        """aoff's counters after a flush; None when the pump never answered."""

    def stop(self, summary: bool, idle_timeout: float) -> FinishReport:
        """Drain, close the backends, and return the run's report."""

    def unwritten(self) -> dict[str, int]:
        """Per backend, the steps not written as of now (for the force-quit line)."""


class AsyncDriver(Protocol):
    """The async face's driver. Its task (``run``) is started by the face where it makes
    the driver, as each kind starts differently: the pump's task says it started once
    its backends are open, the agent's shipper at once."""

    async def aflush(self, idle_timeout: float) -> None:
        """Return once everything logged so far is written and flushed."""

    async def astate_dict(self, idle_timeout: float) -> dict[str, Any] | None:
        """aoff's counters after a flush; None when the pump never answered."""

    async def astop(self, summary: bool, idle_timeout: float) -> FinishReport:
        """Drain, close the backends, and return the run's report."""
