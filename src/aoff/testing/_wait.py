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
from typing import TypeVar

__all__ = ["WaitTimeout", "await_until", "wait_until"]

T = TypeVar("T")

#: seconds: long enough for a busy machine with two shared cores
DEFAULT_TIMEOUT = 30.0
DEFAULT_INTERVAL = 0.01


class WaitTimeout(AssertionError):
    """The condition did not hold within the timeout (an ``AssertionError``: a test
    failure, not an error of the code under test)."""


def _check(timeout: float, interval: float) -> None:
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    if not interval > 0:
        raise ValueError(f"interval must be > 0 seconds, got {interval!r}")


def _name(predicate: Callable[[], object], what: str | None) -> str:
    if what:
        return what
    return getattr(predicate, "__qualname__", None) or repr(predicate)


def _timed_out(name: str, timeout: float, last: object) -> WaitTimeout:
    return WaitTimeout(f"timed out after {timeout:g}s waiting for {name} (last value: {last!r})")


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
    _check(timeout, interval)
    name = _name(predicate, what)
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise _timed_out(name, timeout, got)
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

    _check(timeout, interval)
    name = _name(predicate, what)
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise _timed_out(name, timeout, got)
        await anyio.sleep(interval)
