"""Waiting for a condition instead of sleeping a fixed time, in tests.

Why: a fixed sleep is a guess about how fast the machine is. On a busy machine it is too
short (the test fails for no reason), on a quiet one too long (the suite is slow). These
helpers poll a condition until it holds and, when it does not within a generous
``timeout``, raise :class:`WaitTimeout` naming what was awaited (and the last value seen),
so a failure says what did not happen rather than which assertion came too early.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["WaitTimeout", "await_until", "wait_until"]

T = TypeVar("T")

#: seconds: long enough for a busy machine with two shared cores
DEFAULT_TIMEOUT = 30.0
DEFAULT_INTERVAL = 0.01


class WaitTimeout(AssertionError):
    """The condition did not hold within the timeout (an ``AssertionError``: a test
    failure, not an error of the code under test)."""


class _Poll(Generic[T]):
    """One wait's bound and its looks at ``predicate``: the logic both waits share
    (they differ only in how they sleep between two looks)."""

    __slots__ = ("deadline", "name", "predicate", "timeout")

    def __init__(
        self, predicate: Callable[[], T], timeout: float, interval: float, what: str | None
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        self.predicate = predicate
        self.timeout = timeout
        self.name = what or getattr(predicate, "__qualname__", None) or repr(predicate)
        self.deadline = time.monotonic() + timeout

    def look(self) -> T:
        """The predicate's value now (true: the wait is over); :class:`WaitTimeout`,
        naming what was awaited and the last value, once the time is up."""
        got = self.predicate()
        if not got and time.monotonic() >= self.deadline:
            raise WaitTimeout(
                f"timed out after {self.timeout:g}s waiting for {self.name} (last value: {got!r})"
            )
        return got


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = DEFAULT_INTERVAL,
    what: str | None = None,
) -> T:
    """Call ``predicate`` every ``interval`` seconds until it returns something true, and
    return that value. Raises :class:`WaitTimeout` (naming ``what``, else the predicate)
    when ``timeout`` seconds pass first; an exception of ``predicate`` propagates."""
    poll = _Poll(predicate, timeout, interval, what)
    while True:
        got = poll.look()
        if got:
            return got
        time.sleep(interval)


async def await_until(
    predicate: Callable[[], T],
    *,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the same bound as wait_until's
    interval: float = DEFAULT_INTERVAL,
    what: str | None = None,
) -> T:
    """:func:`wait_until` for async tests (anyio: asyncio or trio): the event loop runs
    between two calls of ``predicate``, so tasks it waits on make progress."""
    import anyio

    poll = _Poll(predicate, timeout, interval, what)
    while True:
        got = poll.look()
        if got:
            return got
        await anyio.sleep(interval)
