"""The logger's own cost, sampled on the hot path: one ``log_step`` call in 64 is timed.

Why sampled: timing every call would cost two clock reads a call, a measurable share of
a ~1 us call; a counter's decrement is all the other 63 pay. The sampled calls' times
travel to the pump as one ``COST`` event every 64 samples or 5 s (whichever first, on a
sampled call), where :func:`summarize` makes the run's ``aoff/hot_path_*`` tags.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

__all__ = ["COST_EVERY", "HotCost", "summarize"]

#: one ``log_step`` call in this many is timed
COST_EVERY = 64
#: a ``COST`` event goes out with this many samples, or after ``COST_SPAN_NS``
COST_SAMPLES = 64
COST_SPAN_NS = 5_000_000_000

_now_ns = time.perf_counter_ns


class HotCost:
    """The training process's samples since the last ``COST`` event."""

    __slots__ = ("samples", "since")

    def __init__(self) -> None:
        self.samples: list[int] = []
        self.since = _now_ns()

    def add(self, ns: int, now_ns: int) -> tuple[tuple[int, ...], int] | None:
        """Note one sampled call; ``(samples, span_ns)`` when an event is due."""
        samples = self.samples
        samples.append(ns)
        span = now_ns - self.since
        if len(samples) < COST_SAMPLES and span < COST_SPAN_NS:
            return None
        self.samples, self.since = [], now_ns
        return tuple(samples), span


def summarize(samples: Sequence[int], span_ns: int) -> dict[str, float]:
    """The ``aoff/hot_path_*`` tags of one ``COST`` event: the sampled calls' median and
    99th percentile (microseconds) and the share of the loop's time spent in
    ``log_step`` (the samples stand for ``COST_EVERY`` times as many calls)."""
    if not samples:
        return {}
    ordered = sorted(samples)
    n = len(ordered)
    p99 = ordered[min(n - 1, max(0, -(-99 * n // 100) - 1))]  # nearest rank
    share = 100.0 * sum(ordered) * COST_EVERY / span_ns if span_ns > 0 else 0.0
    return {
        "aoff/hot_path_p50_us": ordered[n // 2] / 1000.0,
        "aoff/hot_path_p99_us": p99 / 1000.0,
        "aoff/hot_path_share_percent": min(share, 100.0),
    }
