"""What a reduced distribution is: :class:`Histogram`, its buckets and its scalars.

Shared by the two reductions, NumPy's in ``_histogram`` and the device's in
``_histogram_torch`` (and by the fold and the backends that read a histogram), so that
neither reduction module imports the other: ``_histogram`` loads ``_histogram_torch``
lazily for a CUDA tensor, and both take the shape of the result from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: equal-width buckets between the finite min and max (TensorBoard shows 30 by default)
BINS = 30
#: the percentiles logged as ``<key>/p<q>``
PERCENTILES: tuple[int, ...] = (5, 25, 50, 75, 95)


@dataclass(frozen=True, slots=True)
class Histogram:
    """One distribution, reduced. ``count`` counts the finite values only."""

    tag: str
    count: int
    nonfinite: int
    min: float
    max: float
    sum: float
    sum_squares: float
    #: right edges of the buckets (the first bucket starts at ``min``)
    bucket_limits: tuple[float, ...]
    bucket_counts: tuple[float, ...]
    #: ``(q, value)`` for each of :data:`PERCENTILES`
    percentiles: tuple[tuple[int, float], ...]

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else math.nan


def histogram_scalars(h: Histogram) -> list[tuple[str, float]]:
    """The scalars every backend gets for ``h``: min, max, mean, the percentiles, and
    ``nonfinite`` when some values were NaN or infinite (only that one when all were)."""
    out: list[tuple[str, float]] = []
    tag = h.tag
    if h.count:
        out += ((tag + "/min", h.min), (tag + "/max", h.max), (tag + "/mean", h.mean))
        out += [(f"{tag}/p{q}", v) for q, v in h.percentiles]
    if h.nonfinite:
        out.append((tag + "/nonfinite", float(h.nonfinite)))
    return out


def bucket_limits(lo: float, hi: float) -> tuple[float, ...]:
    """The right edges of the :data:`BINS` buckets; the last is exactly ``hi``."""
    step = (hi - lo) / BINS
    return (*(lo + step * (i + 1) for i in range(BINS - 1)), hi)


def from_packed(tag: str, packed: list[float]) -> Histogram:
    """A :class:`Histogram` from the device reduction's vector (see ``_histogram_torch``):
    ``[numel, count, min, max, sum, sum_squares, *percentiles, *bucket_counts]``."""
    numel = int(packed[0])
    n = int(packed[1])
    if n == 0:
        return Histogram(tag, 0, numel, math.nan, math.nan, 0.0, 0.0, (), (), ())
    lo, hi, total, squares = packed[2:6]
    k = 6 + len(PERCENTILES)
    pct = tuple(zip(PERCENTILES, packed[6:k], strict=True))
    counts = tuple(packed[k : k + BINS])
    return Histogram(tag, n, numel - n, lo, hi, total, squares, bucket_limits(lo, hi), counts, pct)
