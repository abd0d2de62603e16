"""``aoff.testing.wait_until`` / ``await_until``: wait on a condition, fail with its name."""

from __future__ import annotations

import threading

import anyio
import pytest

from aoff.testing import WaitTimeout, await_until, wait_until


def test_wait_until_returns_the_first_true_value_set_by_another_thread() -> None:
    box: list[int] = []
    timer = threading.Timer(0.05, box.append, (7,))
    timer.start()
    try:
        assert wait_until(lambda: box[:1], what="the timer's value") == [7]
    finally:
        timer.cancel()


def test_wait_until_times_out_naming_what_and_the_last_value() -> None:
    with pytest.raises(WaitTimeout, match=r"0\.05s waiting for the answer \(last value: 0\)"):
        wait_until(lambda: 0, timeout=0.05, what="the answer")
    with pytest.raises(AssertionError, match=r"waiting for .*never"):  # a test failure
        wait_until(never, timeout=0.05)


def never() -> bool:
    return False


def test_wait_until_rejects_bad_arguments_and_passes_errors_on() -> None:
    with pytest.raises(ValueError, match="timeout must be > 0"):
        wait_until(never, timeout=0)
    with pytest.raises(ValueError, match="interval must be > 0"):
        wait_until(never, interval=-1)
    with pytest.raises(ZeroDivisionError):
        wait_until(lambda: 1 / 0)


@pytest.mark.anyio
async def test_await_until_lets_tasks_run_between_checks() -> None:
    done = anyio.Event()

    async def later() -> None:
        await anyio.sleep(0.05)  # on purpose: the awaited thing comes a little later
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(later)
        assert await await_until(done.is_set, what="the task") is True
    with pytest.raises(WaitTimeout, match="waiting for nothing"):
        await await_until(never, timeout=0.05, what="nothing")
