"""Blocks read from frames in a row are folded as one (``_core/_blockjoin``): the intake
folds them with one call of the run fold, and gets the records, files and state the
events give folded one by one; blocks that are not in a row, or not alike, stay apart."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aoff._core import _events as ev
from aoff._core import _fold_columns
from aoff._core._blockjoin import block_calls, join_blocks, repeats
from aoff._core._buffer import EventBuffer
from aoff._core._runblock import shape_of
from aoff._core._say import SayOnce
from aoff._core._state import State
from aoff._pump._intake import Intake
from aoff._transport._batches import pack_events
from aoff._transport._plainsteps import PlainSteps

from .test_fold_columns import FIELDS, bits, fold, same
from .test_plainsteps import iterations, plain


def steps(n: int, keys: tuple[str, ...] = ("a", "b"), start: int = 1000) -> list[ev.Event]:
    return [
        plain(i, 1.7e9 + i, {k: 0.5 / i + j for j, k in enumerate(keys)})
        for i in range(start, start + n)
    ]


def read_frames(events: list[ev.Event], per: int, frame: int) -> list[ev.Event]:
    """``events`` pickled ``per`` to a pickle, ``frame`` pickles to a frame, read by one
    reader (its templates made from the first pickle, sent alone)."""
    pickles = [pack_events(events[k : k + per]) for k in range(0, len(events), per)]
    reader = PlainSteps()
    got = reader.unpack(pickles[0])
    for k in range(1, len(pickles), frame):
        got += reader.unpack(b"".join(pickles[k : k + frame]))
    return got


def intake_fold(events: list[ev.Event]) -> tuple[list[Any], State]:
    state = State()
    intake = Intake(
        EventBuffer(100_000),
        state,
        [],
        SayOnce(lambda line: None),
        finish_timeout=5.0,
        on_change=lambda: None,
        on_slice=lambda: None,
    )
    return intake.fold(events), state


def spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """The steps (``take_block``) or pickles (``take_runblock``) of each call."""
    taken: list[int] = []
    real = getattr(_fold_columns.RunFold, name)

    def spied(self: _fold_columns.RunFold, *args: Any) -> Any:
        taken.append(len(args[0]) if name == "take_block" else args[0].pickles)
        return real(self, *args)

    monkeypatch.setattr(_fold_columns.RunFold, name, spied)
    return taken


def test_the_frames_of_plain_steps_fold_as_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    events = steps(32 * 13)
    got = read_frames(events, 32, 3)
    blocks = [e for e in got if e[0] == ev.STEP_BLOCK]
    assert len(blocks) == 4  # frames of 3, 3, 3 and 3 pickles
    taken = spy(monkeypatch, "take_block")
    records, state = intake_fold(got)
    assert taken == [12 * 32]  # one call of the run fold for the four frames
    want, want_state = fold(events, runs=False)
    assert bits(records) == bits(want)
    for name in FIELDS:
        assert repr(getattr(state, name)) == repr(getattr(want_state, name)), name
    same(events, got)


def test_the_frames_of_iterations_fold_as_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    events = iterations(8 * 13)
    got = read_frames(events, 32, 4)
    assert [e[0] for e in got].count(ev.RUN_BLOCK) == 3
    taken = spy(monkeypatch, "take_runblock")
    records, state = intake_fold(got)
    assert taken == [12]
    want, want_state = fold(events, runs=False)
    assert bits(records) == bits(want)
    for name in FIELDS:
        assert repr(getattr(state, name)) == repr(getattr(want_state, name)), name
    joined, last = join_blocks(got, 32)
    assert last == len(got) - block_calls(got[last])
    parts = [e[2] for e in got if e[0] == ev.RUN_BLOCK]
    assert np.array_equal(joined[2].floats, np.concatenate([b.floats for b in parts]))
    assert np.array_equal(joined[2].ints, np.concatenate([b.ints for b in parts]))
    assert joined[2].events() == events[32:]
    same(events, got)


def test_blocks_not_in_a_row_or_not_alike_stay_apart() -> None:
    events = steps(32 * 7)
    got = read_frames(events, 32, 3)
    at = [k for k, e in enumerate(got) if e[0] == ev.STEP_BLOCK]
    assert len(at) == 2
    block, last = join_blocks(got, at[0])
    assert last == at[1] and len(block[2]) == 6 * 32
    assert block[2] == [e[1] for e in events[32:]]
    assert block[3].dtype == np.int64 and block[5].shape == (6 * 32, 2)
    # an event between them, a marker missing (a slice cut), the last block alone
    other = (ev.DONE_RATES, 1.0, 0.0, 0.0)
    assert join_blocks([*got[: at[1]], other, *got[at[1] :]], at[0]) == (got[at[0]], at[0])
    assert join_blocks(got[: at[1] - 1] + got[at[1] :], at[0]) == (got[at[0]], at[0])
    assert join_blocks(got[: at[1]], at[0]) == (got[at[0]], at[0])
    assert join_blocks(got, at[1]) == (got[at[1]], at[1])
    # other metric names, values of another type or width: another block, folded alone
    second = got[at[1]]
    for other_block in (
        (*second[:4], ("a", "c"), second[5]),
        (*second[:5], second[5].astype(np.float32)),  # never converted by a join
        (*second[:5], second[5][:, :1]),  # rows of another width: never stacked
    ):
        changed = [*got[: at[1]], other_block, *got[at[1] + 1 :]]
        assert join_blocks(changed, at[0]) == (got[at[0]], at[0])


def test_a_block_of_a_repeating_shape_joins_as_its_pickles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pickle of 96 events among pickles of 32 (the sync face sends both) has a
    template and a shape of its own, three times the other's: its block is joined as
    three pickles of the other shape; the fold and the files are the per-event fold's."""
    events = iterations(8 * 24)
    small = [pack_events(events[k : k + 32]) for k in range(0, 256, 32)]
    large = pack_events(events[256:352])
    rest = [pack_events(events[k : k + 32]) for k in range(352, len(events), 32)]
    reader = PlainSteps()
    reader.unpack(small[0])  # the templates, learned from pickles read before
    reader.unpack(large)
    got = reader.unpack(b"".join(small)) + reader.unpack(large) + reader.unpack(b"".join(rest))
    at = [k for k, e in enumerate(got) if e[0] == ev.RUN_BLOCK]
    assert len(at) == 3 and got[at[1]][2].shape is not got[at[0]][2].shape
    joined, last = join_blocks(got, at[0])
    assert last == at[2] and joined[2].shape is got[at[0]][2].shape
    assert joined[2].pickles == 8 + 3 + len(rest)
    assert joined[2].events() == events
    # a slice that starts at the longer pickle: it is viewed as the next block's pickles
    joined, last = join_blocks(got, at[1])
    assert last == at[2] and joined[2].shape is got[at[2]][2].shape
    assert joined[2].pickles == 3 + len(rest) and joined[2].events() == events[256:]
    taken = spy(monkeypatch, "take_runblock")
    records, state = intake_fold(got)
    # one block: the run not started, its first pickle event by event, the rest at once
    assert taken == [8 + 3 + len(rest), 7 + 3 + len(rest)]
    want, want_state = fold(events, runs=False)
    assert bits(records) == bits(want)
    for name in FIELDS:
        assert repr(getattr(state, name)) == repr(getattr(want_state, name)), name
    same(events, got)


def test_shapes_that_do_not_repeat_another_stay_apart() -> None:
    events = iterations(8 * 16)
    small = shape_of(events[:32])
    assert small is not None
    for other in (
        events[1:65],  # another phase of the iteration: other kinds at each place
        events[:40],  # not a whole number of the other's pickles
        events[:32],  # the same length: its own shape
        iterations(16, reward=None),  # no reward: other fields
        [(*e[:3], {"loss": 1.0}, *e[4:]) if e[0] == ev.STEP else e for e in events[:64]],
    ):
        got = shape_of(other)
        assert got is not None
        assert repeats(got[0], small[0]) is None
    twice = shape_of(events[:64])
    assert twice is not None
    fmap, imap = repeats(twice[0], small[0])  # type: ignore[misc]
    assert sorted(fmap.tolist()) == list(range(twice[0].n_floats))
    assert sorted(imap.tolist()) == list(range(twice[0].n_ints))
