"""The agent's buffer (``_pump/_backlog.py``): frames kept pickled, bounded in bytes.

Unit tests without an agent: the bound is honoured (a put waits while it is reached,
and goes on once the pump's drain frees room), frames and single events come out in
the order they went in, in slices of any size, a close releases a waiting put, and a
frame that cannot be read back is counted as dropped and said once. The agent's own
use of it (a burst larger than the old bound arrives whole) is in ``test_agent.py``.
"""

from __future__ import annotations

import pickle
import threading

import pytest

from aoff._core import _events as ev
from aoff._pump._backlog import EVENT_BYTES, Backlog
from aoff.testing import wait_until

WAIT = 10.0


def status(i: int) -> ev.Event:
    return (ev.STATUS, float(i), f"s{i}")


def frame(first: int, n: int) -> tuple[bytes, int]:
    """A sender's frame: the pickle of ``n`` numbered events, and ``n``."""
    return pickle.dumps([status(i) for i in range(first, first + n)], protocol=5), n


def numbers(events: list[ev.Event]) -> list[int]:
    return [int(e[1]) for e in events]


def test_frames_and_single_events_come_out_in_order_in_slices_of_any_size() -> None:
    b = Backlog(1 << 20)
    b.put_frame(*frame(0, 5))
    b.put(status(5))  # a producer's event, after the frame that came first
    b.put_frame(*frame(6, 3))
    b.append_final(status(9))
    assert len(b) == 10 and b.drained == 0
    assert numbers(list(b.snapshot())) == list(range(10))  # a copy: nothing taken
    got = numbers(b.drain(2)) + numbers(b.drain(4)) + numbers(b.drain(1))
    assert got == list(range(7)) and len(b) == 3
    assert numbers(b.drain()) == [7, 8, 9]
    assert len(b) == 0 and b.nbytes == 0 and b.drained == 10 and b.dropped == 0
    assert b.drain() == []


def test_the_bound_is_in_bytes_of_pickles_and_single_events_count_a_fixed_size() -> None:
    payload, n = frame(0, 100)
    b = Backlog(10 * len(payload))
    b.put_frame(payload, n)
    assert b.nbytes == len(payload) and len(b) == 100 and not b.full()
    b.put(status(100))
    assert b.nbytes == len(payload) + EVENT_BYTES
    b.drain(50)  # the frame is unpickled as the drain reaches it: its bytes are free
    assert b.nbytes == EVENT_BYTES and len(b) == 51
    b.drain()
    assert b.nbytes == 0 and b.peak_bytes == len(payload) + EVENT_BYTES


def test_a_put_waits_while_the_bound_is_reached_until_the_drain_frees_room() -> None:
    frames = [frame(50 * k, 50) for k in range(6)]
    bound = len(frames[0][0]) + len(frames[1][0])  # room for the first two frames
    b = Backlog(bound)
    done = threading.Event()

    def receiver() -> None:
        for f in frames:
            b.put_frame(*f)
        done.set()

    th = threading.Thread(target=receiver, daemon=True)
    th.start()
    wait_until(lambda: b._waiters == 1, timeout=WAIT, interval=0.001, what="a waiting put")
    assert not done.is_set() and len(b) == 100 and b.full()  # two frames: the bound
    got: list[int] = []
    largest = max(len(p) for p, _ in frames)
    while not done.is_set() or len(b):
        # a frame goes in while the bytes held are under the bound: at most one beyond
        assert b.nbytes < bound + largest
        got += numbers(b.drain(7))
    th.join(WAIT)
    assert got == list(range(300)) and b.dropped == 0
    assert b.peak_bytes < bound + largest


def test_a_frame_is_taken_whole_once_there_is_any_room() -> None:
    """The bound is soft by one frame: a frame larger than the room left (or than the
    whole bound) goes in rather than waiting forever."""
    b = Backlog(10)
    b.put_frame(*frame(0, 20))  # far larger than 10 bytes, and the backlog was empty
    assert b.full() and len(b) == 20
    assert numbers(b.drain()) == list(range(20))


def test_close_releases_a_waiting_put_and_nothing_waits_after_it() -> None:
    payload, n = frame(0, 10)
    b = Backlog(len(payload))
    b.put_frame(payload, n)
    done = threading.Event()
    th = threading.Thread(target=lambda: (b.put(status(10)), done.set()), daemon=True)
    th.start()
    wait_until(lambda: b._waiters == 1, timeout=WAIT, interval=0.001, what="a waiting put")
    b.close()
    th.join(WAIT)
    assert done.is_set()
    b.put_frame(*frame(11, 3))  # closed: no wait
    assert b.wait_for_space(0) is True
    assert numbers(b.drain()) == list(range(14))


def test_wait_for_space_says_whether_room_came() -> None:
    payload, n = frame(0, 10)
    b = Backlog(len(payload))
    b.put_frame(payload, n)
    assert b.wait_for_space(0.01) is False
    b.drain(1)
    assert b.wait_for_space(0.01) is True


@pytest.mark.parametrize("payload", [b"not a pickle", pickle.dumps({"not": "a list"})])
def test_a_frame_that_cannot_be_read_back_is_counted_dropped_and_said(payload: bytes) -> None:
    said: list[str] = []
    b = Backlog(1 << 20)
    b.on_unreadable = said.append
    b.put_frame(*frame(0, 2))
    b.put_frame(payload, 7)
    b.put(status(2))
    assert len(b) == 10
    assert numbers(b.drain()) == [0, 1, 2]
    assert b.dropped == 7 and len(b) == 0 and b.nbytes == 0
    assert len(said) == 1 and "7 events could not be read back" in said[0]


def test_a_frame_that_holds_fewer_events_than_it_says_loses_only_those() -> None:
    b = Backlog(1 << 20)
    payload, _ = frame(0, 3)
    b.put_frame(payload, 5)  # says 5, holds 3
    b.put(status(3))
    assert numbers(b.drain(4)) == [0, 1, 2, 3]
    assert len(b) == 0 and b.nbytes == 0


def test_bad_bound() -> None:
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_bytes must be a positive int"):
            Backlog(bad)
