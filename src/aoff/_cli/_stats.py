"""Statistics over seeds for ``aoff compare``: final scores, IQM, bootstrap intervals.

Why a module of its own: RL results are judged across seeds with the interquartile mean
(IQM) and a bootstrap confidence interval over runs, as Agarwal et al. define them and
the ``rliable`` library computes them; these numbers are what the command is for, so they
live apart from reading and drawing, use numpy only, and are checked against ``rliable``
itself in the tests.

Definitions (one task, so rliable's stratified bootstrap is a bootstrap over runs):

- a run's **final window**: its points whose step lies in the last ``final`` fraction of
  its step range (``step >= last - final * (last - first)``, over every point it logged;
  the last point always counts);
- a run's **final score**: the mean of its final window's values; a run whose final
  window holds a non-finite value (NaN, +inf or -inf) has **diverged** and scores
  ``-inf``: it ranks below every run that did not, so it is never scored by its values
  from before the divergence, and a +inf never makes it the best run. rliable has no
  rule of its own: a NaN score makes its mean, median and IQM NaN (``trim_mean``
  propagates it), and a +inf score is trimmed away by its IQM as the *best* run's; with
  ``-inf`` the group's mean is ``-inf``, and its median and IQM are those of a group whose
  worst run is unboundedly bad, which the IQM, by its definition, trims when at least
  one run in four is cut (``int(0.25 * n)``) — the command names every diverged run;
- **IQM**: the 25 % trimmed mean over runs, trimming ``int(0.25 * n)`` runs at each end
  (``scipy.stats.trim_mean(x, 0.25)``, rliable's ``aggregate_iqm``);
- **interval**: percentile bootstrap over runs (``reps`` resamples, seeded): the 2.5th
  and 97.5th percentiles of the IQM of the resamples (``-inf`` where the percentile falls
  on or next to a resample whose IQM is ``-inf``);
- **probability of improvement** of X over Y: P(X > Y) + ½ P(X = Y) over all pairs of
  runs (the Mann-Whitney U statistic over ``nx * ny``, rliable's definition);
- **curves**: a run's curve is its finite points, from its first to its last; the grid
  spans every run of the group (from the earliest first step to the latest last step),
  and at each grid step the IQM and its interval are over the runs whose curve covers
  that step (``numpy.interp`` between their points, never extrapolated), with the count
  of those runs kept beside it: a run that stops early (or diverges) is drawn to where it
  stops, and the count says so;
- **envelope**: beside each curve, the min and max of every run's points nearest each
  grid step (every point counts, in exactly one grid step): the band a one-point spike
  shows in, where interpolation between grid steps, the IQM over runs and the bootstrap
  interval would each hide it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._runfolder._nonfinite import nonfinite_text

__all__ = [
    "Curve",
    "Final",
    "RunScore",
    "envelope",
    "final_score",
    "final_stats",
    "iqm",
    "iqm_curve",
    "probability_of_improvement",
    "score_run",
]

Array = np.ndarray[Any, np.dtype[np.float64]]
Scores = Sequence[float] | Array


@dataclass(frozen=True)
class RunScore:
    """One run's final score, and why it is what it is."""

    score: float  # -inf when diverged
    diverged_from: float | None  # the step its last stretch of non-finite values starts
    nonfinite: str | None  # the first non-finite value in its final window: nan, inf, -inf
    last_step: float | None  # its last step with a finite value: where its curve stops


_value_name = nonfinite_text


def score_run(steps: Scores, values: Scores, final: float) -> RunScore:
    """One run's final score (``-inf`` when its final window holds a non-finite value),
    with the step its divergence starts and where its finite points end."""
    if not 0.0 < final <= 1.0:
        raise ValueError(f"final must be in (0, 1], got {final!r}")
    s = np.asarray(steps, np.float64)
    v = np.asarray(values, np.float64)
    if not len(v):
        return RunScore(float("nan"), None, None, None)
    order = np.argsort(s, kind="stable")
    s, v = s[order], v[order]
    ok = np.isfinite(v)
    last_step = float(s[ok][-1]) if ok.any() else None
    first, last = float(s[0]), float(s[-1])
    window = s >= last - final * (last - first)
    bad = window & ~ok
    if not bad.any():
        with np.errstate(over="ignore"):
            return RunScore(float(v[window].mean()), None, None, last_step)
    at = int(np.argmax(bad))  # the window's first non-finite point
    start = at
    while start > 0 and not ok[start - 1]:  # back to where its non-finite stretch starts
        start -= 1
    return RunScore(float("-inf"), float(s[start]), _value_name(float(v[at])), last_step)


def final_score(steps: Scores, values: Scores, final: float) -> float:
    """One run's score: the mean of its values over the last ``final`` of its steps,
    ``-inf`` when one of them is not finite (NaN when it has no point)."""
    return score_run(steps, values, final).score


def _trimmed(sorted_rows: Array) -> Array:
    """IQM of each row of an already sorted (…, n) array."""
    n = sorted_rows.shape[-1]
    cut = int(0.25 * n)
    with np.errstate(invalid="ignore", over="ignore"):
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
    # Scores are finite or -inf; interpolating next to a -inf gives NaN (-inf + inf),
    # whose honest value is -inf.
    with np.errstate(invalid="ignore"):
        lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    lo = np.where(np.isnan(lo), -np.inf, lo)
    hi = np.where(np.isnan(hi), -np.inf, hi)
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
    """A group's sample-efficiency curve: IQM over runs at each grid step, its band, and
    how many runs each step is over (NaN where none covers it); and the envelope: the
    least and greatest value of every run's points nearest each grid step (NaN where
    none is), so that a spike the IQM and its interval smooth away is still drawn."""

    steps: list[float]
    iqm: list[float]
    lo: list[float]
    hi: list[float]
    runs: list[int]
    env_lo: list[float]
    env_hi: list[float]


def iqm_curve(
    runs: Sequence[tuple[Scores, Scores]],
    *,
    points: int = 64,
    reps: int = 2000,
    seed: int = 0,
) -> Curve | None:
    """The IQM curve of ``runs`` (each ``(steps, values)``; non-finite values are gaps it
    interpolates over) on ``points`` steps spanning every run; at each step, over the
    runs that cover it. ``None`` when no run has a finite point."""
    cleaned = []
    for steps, values in runs:
        s = np.asarray(steps, np.float64)
        v = np.asarray(values, np.float64)
        ok = np.isfinite(v)
        s, v = s[ok], v[ok]
        if len(s):
            order = np.argsort(s, kind="stable")
            cleaned.append((s[order], v[order]))
    if not cleaned:
        return None
    start = min(float(s[0]) for s, _ in cleaned)
    end = max(float(s[-1]) for s, _ in cleaned)
    grid = np.linspace(start, end, max(points, 1) if end > start else 1)
    table = np.stack([np.interp(grid, s, v) for s, v in cleaned])  # (runs, points)
    covers = np.stack([(grid >= s[0]) & (grid <= s[-1]) for s, _ in cleaned])
    centre = np.full(len(grid), np.nan)
    lo = np.full(len(grid), np.nan)
    hi = np.full(len(grid), np.nan)
    rng = np.random.default_rng(seed)
    # The steps covered by the same runs share one bootstrap: one when every run covers
    # the whole grid.
    patterns: dict[bytes, list[int]] = {}
    for j in range(len(grid)):
        patterns.setdefault(covers[:, j].tobytes(), []).append(j)
    for cols_list in patterns.values():
        cols = np.asarray(cols_list)
        who = covers[:, cols[0]]
        if not who.any():
            continue
        sub = table[who][:, cols]  # (covering runs, columns)
        idx = _resample_index(len(sub), reps, rng)
        samples = np.sort(sub[idx], axis=1)  # (reps, runs, columns), sorted over runs
        lo[cols], hi[cols] = _interval(_trimmed(np.moveaxis(samples, 1, -1)))
        centre[cols] = _trimmed(np.sort(sub, axis=0).T)
    env_lo, env_hi = envelope(cleaned, grid)
    return Curve(
        grid.tolist(),
        centre.tolist(),
        lo.tolist(),
        hi.tolist(),
        covers.sum(axis=0).tolist(),
        env_lo.tolist(),
        env_hi.tolist(),
    )


def envelope(runs: Sequence[tuple[Array, Array]], grid: Array) -> tuple[Array, Array]:
    """The min and max of every run's points (``(steps, finite values)``) over the grid
    step each point is nearest (a cell ``[g - h/2, g + h/2)`` around each step ``g`` of an
    evenly spaced grid): every point lies in one cell, so the band holds every value."""
    lo = np.full(len(grid), np.inf)
    hi = np.full(len(grid), -np.inf)
    width = (grid[-1] - grid[0]) / (len(grid) - 1) if len(grid) > 1 else 0.0
    for s, v in runs:
        if width > 0:
            cell = np.clip(np.floor((s - grid[0]) / width + 0.5), 0, len(grid) - 1)
            cell = cell.astype(np.intp)
        else:
            cell = np.zeros(len(s), np.intp)
        np.minimum.at(lo, cell, v)
        np.maximum.at(hi, cell, v)
    empty = lo > hi
    lo[empty] = np.nan
    hi[empty] = np.nan
    return lo, hi
