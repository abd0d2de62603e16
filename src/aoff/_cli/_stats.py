"""Statistics over seeds for ``aoff compare``: final scores, IQM, bootstrap intervals.

Why a module of its own: RL results are judged across seeds with the interquartile mean
(IQM) and a bootstrap confidence interval over runs, as Agarwal et al. define them and
the ``rliable`` library computes them; these numbers are what the command is for, so they
live apart from reading and drawing, use numpy only, and are checked against ``rliable``
itself in the tests.

Definitions (one task, so rliable's stratified bootstrap is a bootstrap over runs):

- a run's **final score**: the mean of its finite values whose step lies in the last
  ``final`` fraction of its step range (``step >= last - final * (last - first)``; the last
  point always counts);
- **IQM**: the 25 % trimmed mean over runs, trimming ``int(0.25 * n)`` runs at each end
  (``scipy.stats.trim_mean(x, 0.25)``, rliable's ``aggregate_iqm``);
- **interval**: percentile bootstrap over runs (``reps`` resamples, seeded): the 2.5th
  and 97.5th percentiles of the IQM of the resamples;
- **probability of improvement** of X over Y: P(X > Y) + ½ P(X = Y) over all pairs of
  runs (the Mann-Whitney U statistic over ``nx * ny``, rliable's definition);
- **curves**: each run's points are put on a common grid of steps by linear interpolation
  (``numpy.interp``), the grid spanning the steps every run of the group has reached (from
  the latest first step to the earliest last step), so no run is extrapolated; then the
  IQM and its interval at each grid step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Curve",
    "Final",
    "final_score",
    "final_stats",
    "iqm",
    "iqm_curve",
    "probability_of_improvement",
]

Array = np.ndarray[Any, np.dtype[np.float64]]
Scores = Sequence[float] | Array


def final_score(steps: Scores, values: Scores, final: float) -> float:
    """One run's score: the mean of its finite values over the last ``final`` of its
    steps (NaN when it has none)."""
    if not 0.0 < final <= 1.0:
        raise ValueError(f"final must be in (0, 1], got {final!r}")
    s = np.asarray(steps, np.float64)
    v = np.asarray(values, np.float64)
    ok = np.isfinite(v)
    s, v = s[ok], v[ok]
    if not len(v):
        return float("nan")
    first, last = float(s.min()), float(s.max())
    keep = s >= last - final * (last - first)
    return float(v[keep].mean())


def _trimmed(sorted_rows: Array) -> Array:
    """IQM of each row of an already sorted (…, n) array."""
    n = sorted_rows.shape[-1]
    cut = int(0.25 * n)
    return np.asarray(sorted_rows[..., cut : n - cut].mean(axis=-1), np.float64)


def iqm(scores: Scores) -> float:
    """The 25 % trimmed mean of ``scores`` (as ``scipy.stats.trim_mean(x, 0.25)``)."""
    x = np.sort(np.asarray(scores, np.float64))
    if not len(x):
        raise ValueError("iqm of no scores")
    return float(_trimmed(x))


def _resample_index(n: int, reps: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    return rng.integers(0, n, size=(reps, n))


def _interval(samples: Array) -> tuple[Array, Array]:
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    return np.asarray(lo, np.float64), np.asarray(hi, np.float64)


@dataclass
class Final:
    """A group's final performance over its runs."""

    runs: int
    mean: float
    median: float
    iqm: float
    iqm_ci: tuple[float, float]
    scores: list[float]


def final_stats(scores: Scores, *, reps: int = 2000, seed: int = 0) -> Final:
    """Mean, median, IQM and the IQM's 95 % percentile-bootstrap interval of ``scores``."""
    x = np.asarray(scores, np.float64)
    if not len(x):
        raise ValueError("no scores")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    rng = np.random.default_rng(seed)
    samples = np.sort(x[_resample_index(len(x), reps, rng)], axis=1)
    lo, hi = _interval(_trimmed(samples))
    return Final(
        runs=len(x),
        mean=float(x.mean()),
        median=float(np.median(x)),
        iqm=iqm(x),
        iqm_ci=(float(lo), float(hi)),
        scores=[float(s) for s in x],
    )


def probability_of_improvement(x: Scores, y: Scores) -> float:
    """P(X > Y) + ½ P(X = Y) over every pair of a run of X and a run of Y."""
    a = np.asarray(x, np.float64)[:, None]
    b = np.asarray(y, np.float64)[None, :]
    if not a.size or not b.size:
        raise ValueError("probability of improvement needs runs on both sides")
    return float(((a > b).sum() + 0.5 * (a == b).sum()) / (a.size * b.size))


@dataclass
class Curve:
    """A group's sample-efficiency curve: IQM over runs at each grid step, and its band."""

    steps: list[float]
    iqm: list[float]
    lo: list[float]
    hi: list[float]


def iqm_curve(
    runs: Sequence[tuple[Scores, Scores]],
    *,
    points: int = 64,
    reps: int = 2000,
    seed: int = 0,
) -> Curve | None:
    """The IQM curve of ``runs`` (each ``(steps, values)``, finite values only), on
    ``points`` steps within the range every run covers; ``None`` when the runs share no
    range (or a run has no point)."""
    cleaned = []
    for steps, values in runs:
        s = np.asarray(steps, np.float64)
        v = np.asarray(values, np.float64)
        ok = np.isfinite(v)
        s, v = s[ok], v[ok]
        if not len(s):
            return None
        order = np.argsort(s, kind="stable")
        cleaned.append((s[order], v[order]))
    if not cleaned:
        return None
    start = max(float(s[0]) for s, _ in cleaned)
    end = min(float(s[-1]) for s, _ in cleaned)
    if end < start:
        return None
    grid = np.linspace(start, end, max(points, 1) if end > start else 1)
    table = np.stack([np.interp(grid, s, v) for s, v in cleaned])  # (runs, points)
    rng = np.random.default_rng(seed)
    idx = _resample_index(len(cleaned), reps, rng)
    samples = np.sort(table[idx], axis=1)  # (reps, runs, points), sorted over runs
    lo, hi = _interval(_trimmed(np.moveaxis(samples, 1, -1)))
    centre = _trimmed(np.sort(table, axis=0).T)
    return Curve(grid.tolist(), centre.tolist(), lo.tolist(), hi.tolist())
