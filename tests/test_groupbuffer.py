"""``GroupBuffer``: a run group's intake, whose capacity and drops count steps of every
run, a whole ``log_many`` block as its ``K`` (``_core/_groupbuffer.py``)."""

from __future__ import annotations

import threading

import numpy as np

from aoff._core._groupbatch import GROUP_BLOCK, item_steps, split_items, take_block_whole
from aoff._core._groupbuffer import GroupBuffer


def _block(k: int, runs: int = 2, first: int = 0) -> tuple[object, ...]:
    steps = (first + np.arange(k))[:, None].repeat(runs, 1)
    whole = take_block_whole(runs, 1.0, steps, {"x": steps.astype(np.float32) / 2})
    assert whole is not None and whole[0] == GROUP_BLOCK and item_steps(whole) == k
    return whole


def _step(i: int) -> tuple[object, ...]:
    return (1.0, i, {"x": 0.5}, None, None)


def test_drop_oldest_counts_a_dropped_block_as_its_steps() -> None:
    buf = GroupBuffer(10, "drop_oldest")
    buf.put_block(_block(8), 8)
    for i in range(5):
        buf.put(_step(i))
    assert (len(buf), buf.steps) == (6, 13)
    assert buf.trim() == 8  # the block goes whole: its 8 steps, not one item
    assert (buf.dropped, buf.steps) == (8, 5)
    buf.put_block(_block(4, first=8), 4)
    assert buf.trim() == 0  # 9 steps: within capacity
    out = buf.drain()
    assert [item_steps(i) for i in out] == [1, 1, 1, 1, 1, 4] and buf.steps == 0


def test_drop_newest_refuses_a_block_when_full_counting_its_steps() -> None:
    buf = GroupBuffer(6, "drop_newest")
    buf.put_block(_block(5), 5)
    buf.put(_step(5))
    assert buf.full()
    buf.put_block(_block(7), 7)  # refused whole
    buf.put(_step(6))  # refused
    assert (buf.dropped, buf.steps) == (8, 6)
    buf.drain(1)  # the block out: room again
    assert buf.steps == 1 and not buf.full()
    buf.put_block(_block(3), 3)
    assert (buf.dropped, buf.steps) == (8, 4)


def test_block_policy_waits_for_room_in_steps_and_drops_nothing() -> None:
    buf = GroupBuffer(5, "block")
    buf.put_block(_block(5), 5)
    done = threading.Event()

    def producer() -> None:
        buf.put_block(_block(2, first=5), 2)
        done.set()

    t = threading.Thread(target=producer)
    t.start()
    assert not done.wait(0.2)  # full in steps (one item): the producer waits
    assert [item_steps(i) for i in buf.drain()] == [5]
    t.join(30)
    assert done.is_set() and buf.steps == 2 and buf.dropped == 0


def test_a_whole_block_splits_into_one_block_event_a_run_bit_for_bit() -> None:
    runs, k = 3, 5
    rng = np.random.default_rng(1)
    steps = np.arange(k, dtype=np.int32)[:, None].repeat(runs, 1)
    x = rng.standard_normal((k, runs)).astype(np.float32)
    y = rng.standard_normal((k, runs))
    whole = take_block_whole(runs, 2.0, steps, {"x": x, "y": y})
    assert whole is not None
    per_run = split_items([whole], runs)
    for r, events in enumerate(per_run):
        (event,) = events
        _, wall, walls, its, names, values = event
        assert (wall, walls, names) == (2.0, (2.0,) * k, ("x", "y"))
        assert its.tolist() == list(range(k))
        assert values[:, 0].astype(np.float32).tobytes() == x[:, r].tobytes()
        assert values[:, 1].tobytes() == y[:, r].tobytes()


def test_what_a_block_of_columns_would_not_keep_goes_step_by_step() -> None:
    steps = np.arange(4)[:, None].repeat(2, 1)
    assert take_block_whole(2, 1.0, steps, {"n": steps * 2}) is None  # ints stay ints
    assert take_block_whole(2, 1.0, steps.astype(np.uint64), {"x": steps * 0.5}) is None
    assert take_block_whole(2, 1.0, steps, {}) is None
