"""Envelopes: a long table of points reduced to buckets of steps, each bucket's
``min``, ``max``, ``mean``, ``last`` and ``count``.

Why a module of its own: downsampling by a reservoir (TensorBoard keeps 1,000 points a
tag) or smoothing by an EMA hides a spike; a bucket's min and max never do, and a
thousand runs of a million steps reduce to a table small enough to plot. The buckets
are ``bucket`` steps wide and start at multiples of it (``step // bucket * bucket``), the
same for every run and tag, so runs line up bucket by bucket. ``last`` is the value of
the bucket's last point in file order, ``wall_time`` that point's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ENVELOPE_COLUMNS", "envelopes"]

#: the envelope table's columns
ENVELOPE_COLUMNS = ("run", "tag", "step", "wall_time", "min", "max", "mean", "last", "count")


def envelopes(long: pd.DataFrame, bucket: int) -> pd.DataFrame:
    """``long`` (``read_scalars``' columns) reduced to one row per run, tag and bucket of
    ``bucket`` steps (``step``: the bucket's first step), runs and tags in their order in
    ``long``, buckets by step. Raises ``ValueError`` unless ``bucket`` is an int >= 1."""
    import numpy as np
    import pandas as pd

    if isinstance(bucket, bool) or not isinstance(bucket, int | np.integer) or bucket < 1:
        raise ValueError(f"bucket={bucket!r}: a whole number of steps, 1 or more")
    runs = long["run"].cat.codes.to_numpy(np.int64)
    tags = long["tag"].cat.codes.to_numpy(np.int64)
    steps = long["step"].to_numpy(np.int64)
    values = long["value"].to_numpy(np.float64)
    walls = long["wall_time"].to_numpy(np.float64)
    starts = steps // bucket * bucket
    # rows in (run, tag, bucket) order, file order kept within a bucket (stable)
    order = np.lexsort((starts, tags, runs))
    runs, tags, starts = runs[order], tags[order], starts[order]
    values, walls = values[order], walls[order]
    n = len(order)
    first: Any = (
        np.flatnonzero(
            np.concatenate(
                (
                    [True],
                    (runs[1:] != runs[:-1]) | (tags[1:] != tags[:-1]) | (starts[1:] != starts[:-1]),
                )
            )
        )
        if n
        else np.empty(0, np.int64)
    )
    last = np.append(first[1:], n) - 1 if n else first
    count = last - first + 1
    out: dict[str, Any] = {
        "run": pd.Categorical.from_codes(runs[first], categories=long["run"].cat.categories),
        "tag": pd.Categorical.from_codes(tags[first], categories=long["tag"].cat.categories),
        "step": starts[first],
        "wall_time": walls[last],
        "min": np.minimum.reduceat(values, first) if n else values,
        "max": np.maximum.reduceat(values, first) if n else values,
        "mean": np.add.reduceat(values, first) / count if n else values,
        "last": values[last],
        "count": count,
    }
    return pd.DataFrame(out, columns=list(ENVELOPE_COLUMNS))
