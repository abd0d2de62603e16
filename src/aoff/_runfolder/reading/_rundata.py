"""What ``aoff show`` and ``aoff ls`` know about one run, whatever file it came from.

Why a module of its own: the run summary, ``metrics.jsonl`` and the event files are read
by different readers (``_runsummary``, ``_runfiles``) into this one shape, and the
commands print only this shape: :class:`RunData` (the run's range and state) and a
:class:`TagStats` per tag (first/last/min/max and a curve short enough to draw). Which
files make a run is the format table's (``_formats``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CURVE_POINTS",
    "REWARD_TAG",
    "RunData",
    "TagStats",
    "stats_of",
]

#: a curve longer than this is kept as this many bucket means (what a sparkline needs)
CURVE_POINTS = 128
REWARD_TAG = "reward/mean"


@dataclass
class TagStats:
    """One tag as ``show`` prints it."""

    count: int
    first: float
    last: float
    lo: float | None  # finite values only; None when there is none
    hi: float | None
    #: the curve, or bucket means of it when it is long (NaN: no finite value there)
    curve: list[float]


@dataclass
class RunData:
    """What ``show``/``ls`` print about one run."""

    path: str
    source: str  # the file (JSONL, summary) or folder (TensorBoard) the numbers came from
    kind: str  # "summary", "jsonl", "csv" or "tensorboard"
    records: int = 0
    steps: int | None = None
    iterations: int | None = None
    max_iterations: int | None = None
    first_time: float | None = None
    last_time: float | None = None
    #: "running", "finished" or "interrupted" (from the summary); None when not known
    state: str | None = None
    #: tag -> its statistics, tags in order of first appearance
    tags: dict[str, TagStats] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: rows logged by ``log.remote()`` producers, by name: not the run's own series
    producer_rows: dict[str, int] = field(default_factory=dict)
    #: sessions or writers that wrote into the folder (their run summaries and event
    #: files); the numbers are the union of all of them, as TensorBoard shows it
    writers: int = 1
    #: images/videos written (None: not known, the run summary alone says it), refused
    #: at the call, and accepted but not written, by reason (``FinishReport.media_lost``)
    media_written: int | None = None
    media_refused: int = 0
    media_lost: dict[str, int] = field(default_factory=dict)

    @property
    def curves(self) -> dict[str, list[float]]:
        return {tag: t.curve for tag, t in self.tags.items()}

    @property
    def wall_time(self) -> float | None:
        """Seconds from the first record to the last, when both are known."""
        if self.first_time is None or self.last_time is None:
            return None
        return max(self.last_time - self.first_time, 0.0)

    def last(self, tag: str) -> float | None:
        t = self.tags.get(tag)
        return t.last if t is not None else None

    def best(self, tag: str) -> float | None:
        t = self.tags.get(tag)
        return t.hi if t is not None else None


def stats_of(values: Any) -> TagStats:
    """:class:`TagStats` of a non-empty sequence (or numpy array) of floats."""
    import numpy as np

    v = np.asarray(values, np.float64)
    finite = np.isfinite(v)
    n = len(v)
    lo = hi = None
    if finite.any():
        lo, hi = float(v[finite].min()), float(v[finite].max())
    if n <= CURVE_POINTS:
        curve = v.tolist()
    else:
        edges = (np.arange(CURVE_POINTS) * n) // CURVE_POINTS
        sums = np.add.reduceat(np.where(finite, v, 0.0), edges)
        counts = np.add.reduceat(finite.astype(np.int64), edges)
        with np.errstate(invalid="ignore", divide="ignore"):
            curve = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).tolist()
    return TagStats(n, float(v[0]), float(v[-1]), lo, hi, curve)
