"""The run summary's tags folded together (``_Tag.feed_rows``) keep the statistics each
tag's own fold (``_Tag.feed``) keeps, bit for bit: sums, counts, first, last, min, max
(signed zeros included), stride and buckets, from any place in a curve."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from aoff._runfolder.summary import _writer
from aoff._runfolder.summary._writer import CURVE_POINTS, RunSummary, _Tag

SPECIAL = [
    0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 5e-324, -5e-324, 1e308, -1e308,
    2.2250738585072014e-308, 1.0, -1.0, 0.1, 1e16, 1e-16,
]  # fmt: skip
floats = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True))
#: the tags folded together, the tables folded before (a place in the curve), the last's rows
TAGS = st.integers(1, 5)
BEFORE = st.lists(st.integers(0, 700), max_size=3)
ROWS = st.integers(0, 700)


def state(acc: _Tag) -> tuple[Any, ...]:
    """Everything a tag keeps, floats as their bits."""

    def b(x: float) -> bytes:
        return struct.pack("<d", x)

    return (
        acc.count,
        acc.stride,
        b(acc.first),
        b(acc.last),
        b(acc.lo),
        b(acc.hi),
        [b(s) for s in acc.sums],
        list(acc.fins),
    )


@settings(max_examples=300, deadline=None)
@given(
    tags=TAGS,
    before=BEFORE,
    rows=ROWS,
    pool=st.one_of(
        st.lists(floats, min_size=1, max_size=12),
        st.lists(st.sampled_from([0.0, -0.0, math.nan, math.inf]), min_size=2, max_size=4),
    ),
    exact=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_tags_folded_together_keep_what_each_alone_keeps(
    tags: int, before: list[int], rows: int, pool: list[float], exact: bool, seed: int
) -> None:
    """``exact``: the pool's values only (a min or max among 0.0 and -0.0: the zero's
    sign is the array's, not the value's)."""
    rng = np.random.default_rng(seed)

    def values(n: int) -> np.ndarray[Any, Any]:
        drawn = np.array(pool, np.float64)[rng.integers(0, len(pool), (tags, n))]
        if exact:
            return drawn
        noise = rng.standard_normal((tags, n)) * rng.choice([0.0, 1.0, 1e-3, 1e9], (tags, n))
        return np.where(rng.random((tags, n)) < 0.5, drawn, drawn + noise)

    together = fold_curves(tags, [*before, rows], values)
    assert all(len(a.sums) <= 2 * CURVE_POINTS for a in together)


FINITE = [v for v in SPECIAL if math.isfinite(v)]


@settings(max_examples=200, deadline=None)
@given(
    tags=TAGS,
    before=BEFORE,
    rows=ROWS,
    pool=st.lists(
        st.one_of(st.sampled_from(FINITE), st.floats(allow_nan=False, allow_infinity=False)),
        min_size=1,
        max_size=12,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_tags_with_every_value_finite_keep_what_each_alone_keeps(
    tags: int, before: list[int], rows: int, pool: list[float], seed: int
) -> None:
    """Tables with no NaN or infinity (a run's metrics: ``feed_rows``' shortcut, where the
    values are their own clean copy and a bucket's count is its length): signed zeros,
    subnormals, ±1e308 (sums beyond float64), from any place in a curve."""
    rng = np.random.default_rng(seed)

    def values(n: int) -> np.ndarray[Any, Any]:
        return np.array(pool, np.float64)[rng.integers(0, len(pool), (tags, n))]

    fold_curves(tags, [*before, rows], values)


def fold_curves(
    tags: int, sizes: list[int], values: Callable[[int], np.ndarray[Any, Any]]
) -> list[_Tag]:
    """``tags`` tags folded one by one and together (:func:`fold_both`) over tables of
    ``sizes`` rows made by ``values``; the tags folded together."""
    alone = [_Tag() for _ in range(tags)]
    together = [_Tag() for _ in range(tags)]
    with np.errstate(over="ignore", invalid="ignore"):  # sums beyond float64, as feed's
        fold_both(alone, together, [values(n) for n in sizes])
    return together


def fold_both(alone: list[_Tag], together: list[_Tag], tables: list[Any]) -> None:
    for table in tables:  # earlier folds bring both to the same place in their curve
        for acc, row in zip(alone, table, strict=True):
            acc.feed(np.ascontiguousarray(row))
        _Tag.feed_rows(together, table)
        assert [state(a) for a in together] == [state(a) for a in alone]


def test_a_tag_at_another_place_folds_alone(monkeypatch: Any) -> None:
    """A tag that joined later (fewer points) is not folded with the others, and the
    summary's content is what each tag's own fold gives."""
    from aoff._core._records import StepRecord

    def recs(first: int, n: int, tags: tuple[str, ...]) -> list[StepRecord]:
        return [
            StepRecord(s, s, 1.0 + s, tuple((t, float(s * (k + 1))) for k, t in enumerate(tags)))
            for s in range(first, first + n)
        ]

    def content(grouped: bool) -> dict[str, Any]:
        if not grouped:
            monkeypatch.setattr(_writer, "_GROUPS_FROM", 10**9)
        s = RunSummary("/nonexistent/aoff-summary.json")
        s.add(recs(0, 300, ("a", "b", "c")))
        s.fold()
        s.add(recs(300, 500, ("a", "b", "c", "d")))
        s.fold()
        got = s.snapshot()["tags"]
        monkeypatch.undo()
        return got  # type: ignore[no-any-return]

    assert content(True) == content(False)
