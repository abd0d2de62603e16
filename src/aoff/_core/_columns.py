"""A batch of step records as columns: what the encoders write in bulk.

Why a module of its own: a run's records repeat one tag sequence step after step (the
fold hands out one ``tags`` tuple per sequence, :class:`~aoff._core._records.Scalars`),
so a batch of them is a table: one row a record, one column a tag, beside the steps and
wall times. Encoders that take the table (the TensorBoard framer, ``_runfolder/
_tbcolumns``) do their work once per column with NumPy instead of once per value in
Python. Whatever is not such a row (a histogram, a text, a new-style tensor, HParams, a
record whose scalars are not the fold's columns) stays a record, in its place, for the
per-event encoder: :func:`column_runs` splits a batch, keeping its order.

NumPy is imported where a batch is split (the agent's encoders), never by ``import aoff``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from ._records import Scalars, StepRecord

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ScalarColumns", "column_runs", "plain"]

#: records in a row with one tag sequence below which the per-event encoder is cheaper
#: (the table's fixed cost is a few NumPy calls)
MIN_RUN = 8


@dataclass(frozen=True, slots=True)
class ScalarColumns:
    """Records ``first .. first + len(steps)`` of a batch, all with the tags ``tags``:
    ``steps`` (int64), ``wall_times`` (float64) and ``values`` (float64, one row a
    record, one column a tag), as the records held them."""

    tags: tuple[str, ...]
    steps: np.ndarray[Any, np.dtype[np.int64]]
    wall_times: np.ndarray[Any, np.dtype[np.float64]]
    values: np.ndarray[Any, np.dtype[np.float64]]

    def __len__(self) -> int:
        return len(self.steps)


def plain(rec: StepRecord) -> bool:
    """Whether ``rec`` is a row of a table: scalars only, as the fold's columns."""
    return (
        type(rec.scalars) is Scalars
        and not rec.histograms
        and not rec.texts
        and not rec.tensor_style
        and rec.hparams is None
    )


def _table(records: Sequence[StepRecord]) -> ScalarColumns | None:
    """The table of ``records`` (plain, one tag sequence), or ``None`` where a step
    does not fit an int64 or a value is not a float (the per-event encoder says why)."""
    import numpy as np

    try:
        steps = np.fromiter([r.step for r in records], np.int64, len(records))
        width = len(records[0].scalars.tags)  # type: ignore[attr-defined]
        flat = chain.from_iterable([r.scalars.values for r in records])  # type: ignore[attr-defined]
        values = np.fromiter(flat, np.float64, width * len(records)).reshape(-1, width)
        walls = np.array([r.wall_time for r in records], np.float64)
    except (OverflowError, TypeError, ValueError):
        return None
    return ScalarColumns(records[0].scalars.tags, steps, walls, values)  # type: ignore[attr-defined]


def column_runs(
    records: Sequence[StepRecord], min_run: int = MIN_RUN
) -> list[ScalarColumns | StepRecord]:
    """``records`` in order: each run of at least ``min_run`` plain records with one tag
    sequence as a :class:`ScalarColumns`, every other record as itself."""
    out: list[ScalarColumns | StepRecord] = []
    n = len(records)
    i = 0
    while i < n:
        rec = records[i]
        if not plain(rec):
            out.append(rec)
            i += 1
            continue
        tags = rec.scalars.tags  # type: ignore[attr-defined]
        j = i + 1
        while j < n:
            nxt = records[j]
            if not plain(nxt):
                break
            other = nxt.scalars.tags  # type: ignore[attr-defined]
            if other is not tags and other != tags:
                break
            j += 1
        table = _table(records[i:j]) if j - i >= min_run else None
        if table is None:
            out.extend(records[i:j])
        else:
            out.append(table)
        i = j
    return out
