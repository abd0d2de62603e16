"""Waiting as long as work moves on, and the steps not written yet: one rule each.

The training process waits for a pump in two places, the in-process pump thread
(``_pump/_thread.PumpThread``) and the agent's training-process half
(``_faces/_side.AgentSide``), and on a second Ctrl+C both say how many steps each backend
did not get. Both rules live here, in the pump's part (the faces stand on it), so the
two cannot differ. Nothing here blocks except through the ``pause`` it is given.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping

from .._core._events import Event, steps_in


class ProgressWatch:
    """Whether ``mark()`` (what progress looks like: counts that grow) stayed the same for
    more than ``timeout`` seconds. The faces wait for a pump, here or in the agent, as
    long as it makes progress, and give up only once it stopped."""

    def __init__(self, mark: Callable[[], object], timeout: float) -> None:
        self.mark = mark
        self.timeout = timeout
        self.last: object = None
        self.since = time.monotonic()

    def stalled(self) -> bool:
        mark = self.mark()
        now = time.monotonic()
        if mark != self.last:
            self.last, self.since = mark, now
            return False
        return now - self.since > self.timeout


def wait_progressing(
    done: Callable[[], bool], idle: ProgressWatch, pause: Callable[[], object]
) -> bool:
    """``pause()`` until ``done()`` (True) or until ``idle`` stalled (False)."""
    while not done():
        if idle.stalled():
            return False
        pause()
    return True


async def await_progressing(
    done: Callable[[], bool], idle: ProgressWatch, pause: Callable[[], Awaitable[object]]
) -> bool:
    """:func:`wait_progressing` in an event loop: ``await pause()`` between looks."""
    while not done():
        if idle.stalled():
            return False
        await pause()
    return True


def unwritten_steps(
    behind: Mapping[str, int], waiting: Iterable[Event], *, failed: Collection[str] = ()
) -> dict[str, int]:
    """Per backend, the steps it has not written as of now.

    ``behind``: per backend, steps handed on towards it but not confirmed written (lost
    included); ``waiting``: events not handed on yet (the buffer's, those held behind a
    device value, those not sent): each of their steps is one more record for every
    backend except the ``failed`` ones, which take nothing more (their loss is counted
    in ``behind`` already)."""
    more = steps_in(list(waiting))
    return {name: n + (0 if name in failed else more) for name, n in behind.items()}
