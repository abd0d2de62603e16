"""The logger's own cost, sampled on the hot path: one ``log_step`` call in 64 is timed.

Why sampled: timing every call would cost two clock reads a call, a measurable share of
a ~1 us call; a counter's decrement is all the other 63 pay. The sampled calls' times
travel to the pump as one ``COST`` event every ``COST_SPAN_NS`` (looked at on a sampled
call), where :func:`summarize` makes the run's ``aoff/hot_path_*`` tags. One event every
5 s is next to nothing in the event stream, and a run shorter than that has none.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

__all__ = ["COST_EVERY", "HotCost", "summarize"]

#: one ``log_step`` call in this many is timed
COST_EVERY = 64
#: a ``COST`` event goes out this often (nanoseconds), on the first sampled call after
COST_SPAN_NS = 5_000_000_000
#: the samples an event carries at most (the newest, for the median and p99); the share
#: counts them all
COST_SAMPLES = 256

_now_ns = time.perf_counter_ns


class HotCost:
    """The training process's samples since the last ``COST`` event."""

    __slots__ = ("count", "samples", "since", "total")

    def __init__(self) -> None:
        self.samples: list[int] = []
        self.count = 0
        self.total = 0
        self.since = _now_ns()

    def add(self, ns: int, now_ns: int) -> tuple[tuple[int, ...], int, int] | None:
        """Note one sampled call; ``(samples, span_ns, total_ns)`` when an event is due."""
        samples = self.samples
        if len(samples) < COST_SAMPLES:
            samples.append(ns)
        else:
            samples[self.count % COST_SAMPLES] = ns
        self.count += 1
        self.total += ns
        span = now_ns - self.since
        if span < COST_SPAN_NS:
            return None
        out = (tuple(samples), span, self.total)
        self.samples, self.count, self.total, self.since = [], 0, 0, now_ns
        return out


def summarize(samples: Sequence[int], span_ns: int, total_ns: int) -> dict[str, float]:
    """The ``aoff/hot_path_*`` tags of one ``COST`` event: the sampled calls' median and
    99th percentile (microseconds) and the share of the loop's time spent in
    ``log_step`` (each sample stands for ``COST_EVERY`` calls)."""
    if not samples:
        return {}
    ordered = sorted(samples)
    n = len(ordered)
    p99 = ordered[min(n - 1, max(0, -(-99 * n // 100) - 1))]  # nearest rank
    share = 100.0 * total_ns * COST_EVERY / span_ns if span_ns > 0 else 0.0
    return {
        "aoff/hot_path_p50_us": ordered[n // 2] / 1000.0,
        "aoff/hot_path_p99_us": p99 / 1000.0,
        "aoff/hot_path_share_percent": min(share, 100.0),
    }
