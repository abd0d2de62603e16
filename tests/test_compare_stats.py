"""``aoff compare``'s statistics against ``rliable`` itself (a test-only dependency)."""

from __future__ import annotations

import functools
import importlib
import inspect
from importlib.util import find_spec
from typing import Any

import numpy as np
import pytest

from aoff._cli._stats import (
    final_score,
    final_stats,
    iqm,
    iqm_curve,
    probability_of_improvement,
    score_run,
)

# rliable (and SciPy and arch under it) is imported by the tests, not at collection:
# every xdist worker collects every module, and only the one that runs these needs it
pytestmark = pytest.mark.skipif(find_spec("rliable") is None, reason="needs rliable (dev)")


def metrics() -> Any:
    """``rliable.metrics``."""
    return importlib.import_module("rliable.metrics")


@functools.cache
def rly() -> Any:
    """``rliable.library``; its bootstrap comes from ``arch``, whose 7.x calls pandas'
    ``deprecate_kwarg`` without the warning class pandas 3 asks for first: that one call
    is given ``FutureWarning`` so rliable's own code runs unchanged. Pandas 2 (which
    Tianshou pins) takes the call as arch makes it."""
    decorators: Any = importlib.import_module("pandas.util._decorators")

    real = decorators.deprecate_kwarg
    if next(iter(inspect.signature(real).parameters)) == "old_arg_name":  # pandas 2
        import rliable.library as library

        return library

    def deprecate_kwarg(*args: object, **kwargs: object) -> object:
        if args and isinstance(args[0], str):
            args = (FutureWarning, *args)
        return real(*args, **kwargs)

    decorators.deprecate_kwarg = deprecate_kwarg
    try:
        import rliable.library as library
    finally:
        decorators.deprecate_kwarg = real
    return library


@pytest.mark.filterwarnings("ignore:random_state is deprecated:FutureWarning")
@pytest.mark.parametrize("n", [3, 10])
def test_iqm_and_interval_match_rliable(n: int) -> None:
    rng = np.random.default_rng(n)
    scores = rng.normal(100.0, 30.0, size=n)
    ours = final_stats(scores, reps=4000, seed=1)
    assert ours.iqm == pytest.approx(float(metrics().aggregate_iqm(scores[:, None])), rel=1e-12)
    assert ours.mean == pytest.approx(scores.mean())
    assert ours.median == pytest.approx(np.median(scores))
    points, intervals = rly().get_interval_estimates(
        {"a": scores[:, None]},
        lambda x: np.array([metrics().aggregate_iqm(x)]),
        reps=4000,
        random_state=np.random.RandomState(2),
    )
    assert ours.iqm == pytest.approx(float(points["a"][0]))
    lo, hi = intervals["a"][:, 0]
    # two independent Monte-Carlo estimates of the same percentiles
    tol = 0.08 * (hi - lo)
    assert ours.iqm_ci[0] == pytest.approx(lo, abs=tol)
    assert ours.iqm_ci[1] == pytest.approx(hi, abs=tol)
    assert ours.iqm_ci[0] <= ours.iqm <= ours.iqm_ci[1]


def test_interval_is_seeded() -> None:
    x = [1.1, 5.3, 2.2, 8.9, 3.7, 4.1]
    assert final_stats(x, seed=3).iqm_ci == final_stats(x, seed=3).iqm_ci
    assert final_stats(x, seed=3).iqm_ci != final_stats(x, seed=4).iqm_ci


def test_probability_of_improvement_matches_rliable() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(1.0, 1.0, 5).round(1)
    y = rng.normal(0.5, 1.0, 4).round(1)
    y[0] = x[0]  # a tie counts one half
    want = float(metrics().probability_of_improvement(x[:, None], y[:, None]))
    assert probability_of_improvement(x, y) == pytest.approx(want)
    assert probability_of_improvement(y, x) == pytest.approx(1.0 - want)


def test_final_score_is_the_mean_over_the_last_fraction_of_steps() -> None:
    steps = np.arange(0, 1000, 10.0)  # 0..990
    values = steps.copy()
    values[5] = np.nan  # before the final window: a gap, not a divergence
    # last 10 % of the range 0..990: steps >= 891, i.e. 900..990
    assert final_score(steps, values, 0.1) == pytest.approx(np.mean(np.arange(900, 1000, 10)))
    assert final_score([5.0], [3.0], 0.1) == 3.0
    with pytest.raises(ValueError, match="final"):
        final_score(steps, values, 0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_run_diverged_in_its_final_window_scores_minus_inf(bad: float) -> None:
    """Its values from before the divergence never score it: the window is over every
    point's step, and one non-finite value in it makes the score -inf, the worst."""
    steps = np.arange(0, 1000, 10.0)
    values = np.full(100, 104.0)
    values[50:] = bad  # from step 500 on
    got = score_run(steps, values, 0.1)
    assert got.score == -np.inf and got.diverged_from == 500.0 and got.last_step == 490.0
    assert got.nonfinite == {np.nan: "nan", np.inf: "inf"}.get(bad, "-inf")
    values[50:] = 104.0
    values[97] = bad  # one point in the window: diverged from that point
    assert score_run(steps, values, 0.1).diverged_from == 970.0
    # unordered steps are put in order first
    assert score_run(steps[::-1], values[::-1], 0.1).diverged_from == 970.0
    stats = final_stats([101.0, 102.0, 103.0, -np.inf], reps=2000)
    assert stats.mean == -np.inf and stats.iqm == 101.5  # the IQM of 4 trims one run
    lo, hi = stats.iqm_ci  # resamples holding two diverged runs: the bound is -inf
    assert lo == -np.inf and np.isfinite(hi) and lo <= stats.iqm <= hi
    assert probability_of_improvement([-np.inf], [-1e300]) == 0.0


def test_curve_spans_every_run_over_the_runs_that_cover_each_step() -> None:
    a = (np.array([0.0, 10.0, 20.0]), np.array([0.0, 10.0, 20.0]))
    b = (np.array([5.0, 15.0, 30.0]), np.array([5.0, 15.0, 30.0]))
    curve = iqm_curve([a, b], points=4, reps=200)
    assert curve is not None
    assert curve.steps == [0.0, 10.0, 20.0, 30.0]  # no run cut: a to 20, b from 5
    assert curve.runs == [1, 2, 2, 1]
    assert curve.iqm == pytest.approx([0.0, 10.0, 20.0, 30.0])  # both runs are y = step
    assert curve.lo == pytest.approx(curve.iqm) and curve.hi == pytest.approx(curve.iqm)
    # per grid step, the same as rliable's IQM over the interpolated runs covering it
    rng = np.random.default_rng(0)
    runs = [(np.sort(rng.uniform(0, 100, 30)), rng.normal(size=30)) for _ in range(6)]
    c = iqm_curve(runs, points=9, reps=300)
    assert c is not None
    for j, step in enumerate(c.steps):
        over = [np.interp(step, s, v) for s, v in runs if s[0] <= step <= s[-1]]
        assert c.runs[j] == len(over)
        want = float(metrics().aggregate_iqm(np.array(over)[:, None]))
        assert c.iqm[j] == pytest.approx(want)
        assert c.lo[j] <= c.iqm[j] <= c.hi[j]
    # disjoint runs: a step no run covers is a gap (NaN, over 0 runs), never made up
    gap = iqm_curve([(np.array([0.0, 1.0]), np.ones(2)), (np.array([2.0, 3.0]), np.ones(2))])
    assert gap is not None and 0 in gap.runs
    assert all(np.isnan(m) == (n == 0) for m, n in zip(gap.iqm, gap.runs, strict=True))
    assert iqm_curve([(np.array([0.0]), np.array([np.nan]))]) is None
    assert iqm([4.0, 1.0, 2.0, 3.0]) == 2.5
