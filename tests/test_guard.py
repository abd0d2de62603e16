"""The guarded display: a slow first call is not a stuck terminal; a slow frame is."""

from __future__ import annotations

import threading
from typing import cast

from aoff._core._view import RunView
from aoff._display._guard import GuardedDisplay
from aoff.testing import wait_until


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Slow:
    """A display whose calls named in ``slow`` move the injected clock past the stall."""

    def __init__(self, clock: _Clock, slow: set[str]) -> None:
        self.clock = clock
        self.slow = slow
        self.frames = 0
        self.done = threading.Event()

    def _took(self, kind: str) -> None:
        if kind in self.slow:
            self.clock.now += 10.0

    def open(self, state: RunView, now: float) -> None:
        self._took("open")

    def update(self, state: RunView, now: float) -> None:
        self._took("frame")
        self.frames += 1
        self.done.set()

    def say(self, markup: str) -> None:
        pass

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        pass


def _state() -> RunView:
    return cast(RunView, object())  # the stand-in display never reads it


def test_a_slow_open_leaves_the_dashboard_on() -> None:
    clock = _Clock()
    said: list[str] = []
    inner = _Slow(clock, {"open"})
    guard = GuardedDisplay(inner, say=said.append, stall=2.0, monotonic=clock)
    guard.open(_state(), 0.0)
    wait_until(lambda: not guard.busy(), what="the open to run")
    guard.update(_state(), 1.0)
    wait_until(lambda: inner.frames == 1, what="a frame drawn after the slow open")
    assert not guard.disabled and said == []


def test_a_slow_frame_switches_the_dashboard_off_and_says_so() -> None:
    clock = _Clock()
    said: list[str] = []
    inner = _Slow(clock, {"frame"})
    guard = GuardedDisplay(inner, say=said.append, stall=2.0, monotonic=clock)
    guard.open(_state(), 0.0)
    guard.update(_state(), 1.0)
    wait_until(lambda: guard.disabled, what="the dashboard switched off")
    assert len(said) == 1 and "dashboard is off" in said[0]
    guard.update(_state(), 2.0)
    wait_until(lambda: not guard.busy(), what="the guard idle")
    assert inner.frames == 1  # nothing drawn once it is off
