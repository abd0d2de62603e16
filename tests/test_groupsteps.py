"""The group agent's reader of plain group steps as columns (``_transport/_groupsteps``):
each run gets the same steps, bit for bit, and folds them into the same records as the
same frames unpickled; as many items as the sender counted; only frames that match a
template read as columns."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoff._core import _events as ev
from aoff._core._groupbatch import GROUP_BLOCK, PER_RUN, split_items, take_batch
from aoff._core._vectors import Vector
from aoff._pump._backlog import Backlog
from aoff._transport._batches import pack_events, unpack_events
from aoff._transport._groupsteps import MIN_ITEMS, GroupSteps

from .conftest import read_tensorboard
from .test_fold_columns import FLOATS, KEYS, same
from .test_plainsteps import norm as _norm
from .test_plainsteps import plain

NAN_PAYLOADS = [
    struct.unpack(">d", bytes.fromhex(h))[0]
    for h in ("7ff8000000000abc", "fff8000000000001", "7ff0000000000001", "fff4000000000000")
]
VALUES = st.one_of(FLOATS, st.sampled_from([*NAN_PAYLOADS, 5e-324, -5e-324, -0.0]))
#: steps where pickle's integer opcodes change width (BININT1, BININT2, BININT, LONG1)
EDGES = [0, 250, 65_530, 2**31 - 6, -3, 2**40]


@st.composite
def loops(draw: st.DrawFn) -> tuple[int, list[Any], list[bytes]]:
    """A group loop's items as the training process queues them (``take_batch`` of float
    arrays, a float for all runs, steps for all or a run each across the opcodes'
    widths; now and then another key sequence, an int value, a reward, axes, a per-run
    vector, an event for every run or a run each between), cut into frames of 1-N
    items, pickled as the group's shipper pickles them."""
    runs = draw(st.integers(1, 4))
    keys = [tuple(draw(st.lists(KEYS, min_size=1, max_size=3, unique=True))) for _ in range(2)]
    step = draw(st.sampled_from(EDGES))
    per_run = draw(st.booleans())
    scalar = draw(st.booleans())  # the first key a float for all runs
    wall = 1.7e9
    names = keys[0]
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 200))):
        wall += 0.25
        step += 1
        if draw(st.integers(0, 60)) == 0:
            names = keys[names == keys[0]]
        if draw(st.integers(0, 80)) == 0:
            per_run = not per_run
        metrics: dict[str, Any] = {k: np.array([draw(VALUES) for _ in range(runs)]) for k in names}
        if scalar:
            metrics[names[0]] = draw(VALUES)
        steps: Any = np.arange(step, step + runs) if per_run else step
        reward, axes = None, None
        odd = draw(st.integers(0, 150))
        if odd == 0:
            metrics[names[-1]] = np.arange(runs)  # ints
        elif odd == 1:
            reward = 1.5
        elif odd == 2:
            axes = {"env_steps": step * 10}
        elif odd == 3:
            metrics[names[0]] = np.ones((runs, 2))  # a vector a run
        elif odd == 4:
            items.append((ev.DONE_RATES, wall, 0.01, 0.002))
        elif odd == 5:
            items.append((PER_RUN, [(ev.DONE_RATES, wall, 0.5, float(k)) for k in range(runs)]))
        items.append(take_batch(runs, wall, steps, metrics, reward, axes))
    frames: list[bytes] = []
    at = 0
    while at < len(items):
        size = draw(st.sampled_from([1, 3, 4, 9, 33, 64]))
        frames.append(pack_events(items[at : at + size]))
        at += size
    return runs, items, frames


def norm(x: object) -> object:
    """``x`` with each float as its bits, a per-env vector as its values' bytes."""
    if type(x) is tuple:
        return tuple(map(norm, x))
    if type(x) is dict:
        return [(k, norm(v)) for k, v in x.items()]
    if type(x) is Vector:
        return ("Vector", x.values.tobytes())
    return _norm(x)


def read(reader: GroupSteps, frames: list[bytes]) -> list[Any]:
    got: list[Any] = []
    for f in frames:
        part = reader.unpack(f)
        assert len(part) == len(unpack_events(f))  # as many items as the sender counted
        got += part
    return got


def expand(events: list[ev.Event]) -> list[ev.Event]:
    """A run's events, its blocks as the steps they stand for."""
    out: list[ev.Event] = []
    for e in events:
        if e[0] == ev.STEP_BLOCK:
            _, _, walls, its, names, values = e
            for w, i, row in zip(walls, its.tolist(), values.tolist(), strict=True):
                out.append(plain(i, w, dict(zip(names, row, strict=True))))
        else:
            out.append(e)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loops())
def test_frames_read_as_columns_give_each_run_its_steps_bit_for_bit(drawn: Any) -> None:
    """Split per run, the frames read as columns are the unpickled frames' steps and
    events, bit for bit (NaN payloads, -0.0, subnormals, steps of every width), and each
    run folds them into the same records, TensorBoard and JSONL bytes, rules, summary,
    CSV and state (``test_fold_columns.same``)."""
    runs, _, frames = drawn
    reader = GroupSteps(runs)
    read(reader, frames)  # the templates, learned from the first frames
    got = read(reader, frames)
    by_frame = [split_items(unpack_events(f), runs) for f in frames]
    unpickled = [[e for part in by_frame for e in part[k]] for k in range(runs)]
    for k, events in enumerate(split_items(got, runs)):
        mine = expand(events)
        assert list(map(norm, mine)) == list(map(norm, expand(unpickled[k])))
        assert ev.steps_in(events) == ev.steps_in(unpickled[k])
        same(mine, events)


def loop(n: int, start: int = 1000, runs: int = 3, names: tuple[str, ...] = ("a", "b")) -> bytes:
    def metrics(i: int) -> dict[str, Any]:
        return {k: np.full(runs, 0.5 + i + j) for j, k in enumerate(names)}

    return pack_events(
        [take_batch(runs, 1.7e9 + i, i, metrics(i), None) for i in range(start, start + n)]
    )


def test_only_frames_like_a_template_are_read_as_columns() -> None:
    """The first frame of a layout is unpickled (and makes the template); the next ones,
    of any length from ``MIN_ITEMS`` on (across pickle's batches of 1,000 appends), are
    one ``GROUP_BLOCK`` and its markers, each step's wall time kept; other keys, fewer
    items, a reward among them: unpickled."""
    reader = GroupSteps(3)
    assert reader.unpack(loop(20))[0][0] == 1.7e9 + 1000 and reader.read == 0
    for n in (MIN_ITEMS, 57, 1000):
        got = reader.unpack(loop(n, 5000))
        walls = tuple(1.7e9 + i for i in range(5000, 5000 + n))
        assert got[0][0] == GROUP_BLOCK and got[0][5] == walls
        assert got[0][2].tolist() == [list(range(5000, 5000 + n))] * 3
        assert got[1:] == [(ev.FOLDED,)] * (n - 1)
    for n in (1001, 1024, 2000, 2001, 3500):  # pickle's batches of 1,000 appends
        got = reader.unpack(loop(n, 5000))
        assert got[0][0] == GROUP_BLOCK and got[0][5] == tuple(
            1.7e9 + i for i in range(5000, 5000 + n)
        )
        assert got[0][2].tolist() == [list(range(5000, 5000 + n))] * 3
        assert got[0][4][:, :, 1].tolist() == [[1.5 + i for i in range(5000, 5000 + n)]] * 3
    assert reader.read == MIN_ITEMS + 57 + 1000 + 1001 + 1024 + 2000 + 2001 + 3500
    items = unpack_events(loop(1500, 5000))
    items[1200] = (*items[1200][:3], 0.5, None)  # a reward in the second batch
    assert type(reader.unpack(pack_events(items))[0][0]) is float
    for payload in (loop(20, 5000, names=("a", "c")), loop(MIN_ITEMS - 1)):
        assert type(reader.unpack(payload)[0][0]) is float
    items = unpack_events(loop(20))
    items[7] = (*items[7][:3], 0.5, None)  # a reward
    assert type(reader.unpack(pack_events(items))[0][0]) is float
    big = reader.unpack(loop(20, 70_000))  # steps of another width: a template of its own
    assert type(big[0][0]) is float and reader.unpack(loop(30, 80_000))[0][0] == GROUP_BLOCK


def test_the_backlog_counts_a_block_as_its_items() -> None:
    """A frame read as a block still holds as many items as its sender counted: the
    drain's limits, ``len`` and ``drained`` are the same as unpickled; the splitter
    gives each run one block of all its steps, cut wherever the drain cut it."""
    buf = Backlog(10**7)
    buf.read_group_steps(3)
    buf.put_frame(loop(32), 32)
    buf.put_frame(loop(128, 2000), 128)
    assert len(buf) == 160
    a, b, c = buf.drain(50), buf.drain(100), buf.drain()
    assert (len(a), len(b), len(c), len(buf), buf.drained) == (50, 100, 10, 0, 160)
    for events in split_items(a + b + c, 3):
        assert ev.steps_in(events) == 160 and events[-1][0] == ev.STEP_BLOCK


def test_a_process_group_writes_what_a_thread_group_writes(tmp_path: Path) -> None:
    """Through the group's agent (its frames read as columns) and in thread mode (items,
    never pickled): the same TensorBoard scalars and JSONL rows, wall times aside (and
    where the NaN's alert row falls)."""
    import re

    import aoff

    def run(folder: Path, pump: str) -> list[str]:
        g = aoff.RunGroup(3, folder, backends=("jsonl",), display="none", pump=pump,
                          system_interval=0)  # fmt: skip
        x = np.random.default_rng(5).standard_normal((3000, 3)).astype(np.float32)
        x[700, 1] = np.nan
        for i in range(3000):
            metrics: dict[str, Any] = {"q_loss": x[i], "lr": 3e-4}
            if i % 500 == 499:
                metrics["eval/return"] = x[i] * 2
            if i == 2345:
                metrics["lr"] = 3
            g.log_step(i, metrics)
        assert [r.steps for r in g.finish()] == [3000] * 3
        return g.run_dirs

    for a, b in zip(run(tmp_path / "p", "process"), run(tmp_path / "t", "thread"), strict=True):
        tb = read_tensorboard(a)
        assert repr(tb) == repr(read_tensorboard(b)) and len(tb["train/q_loss"]) == 3000
        lines = [
            [re.sub(r'"wall_time":[^,]*,', "", row) for row in (Path(d) / "metrics.jsonl")
             .read_text().splitlines()]
            for d in (a, b)
        ]  # fmt: skip
        # the NaN's alert line lands where the rules' timing puts it, either way
        assert sorted(lines[0]) == sorted(lines[1]) and len(lines[0]) >= 3000
        assert [x for x in lines[0] if "alerts" not in x] == [
            x for x in lines[1] if "alerts" not in x
        ]


def test_frames_read_and_the_small_frames_between_are_one_block_a_run() -> None:
    """The shipper's ~50-item frames (read as columns) and the 1-2-item ones between
    them (unpickled) give each run one ``STEP_BLOCK`` of all their steps, in order; a
    small frame with an int value goes step by step where it is."""
    reader = GroupSteps(3)
    reader.unpack(loop(20))
    items = reader.unpack(loop(50, 2000)) + reader.unpack(loop(2, 2050))
    items += reader.unpack(loop(50, 2052))
    for events in split_items(items, 3):
        assert [e[0] for e in events] == [ev.STEP_BLOCK]
        assert events[0][3].tolist() == list(range(2000, 2102))
        assert events[0][2] == tuple(1.7e9 + i for i in range(2000, 2102))
    odd = unpack_events(loop(2, 2050))
    odd[1][2]["a"] = [1, 2, 3]  # ints: the per-event fold's
    items = reader.unpack(loop(50, 2000)) + odd + reader.unpack(loop(50, 2052))
    for events in split_items(items, 3):
        assert [e[0] for e in events] == [ev.STEP_BLOCK, ev.STEP, ev.STEP, ev.STEP_BLOCK]
        assert events[0][3].tolist() == list(range(2000, 2050))
