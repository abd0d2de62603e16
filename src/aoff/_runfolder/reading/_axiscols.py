"""``read_scalars(..., axes=True)``: one column per axis beside each point.

Why a module of its own: which tags are axes, and how a point finds its record's axes, is
the run folder's format; the reader itself (``_scalars.py``) stays the long form's.

An axis is a tag ``axis/<name>`` (the seed's ``axis/iteration`` and
``axis/env_steps_total``, and each ``axes={name: ...}``); a sub-run's (a producer's
``c0/axis/<name>``) belongs to the tags under the same ``c0/``. A record's scalars share
its step and its wall time, in every format aoff writes (one TensorBoard event a step,
one JSONL line, one CSV row), so a point's axes are the axis values at the same run,
sub-run, step and wall time. The columns are named ``iteration``, ``env_steps`` and each
axis's own name, in that order and the others by name (the order records reached a file
depends on which of a run's writers came first, so it is no order to hand a user); a
point whose record had no value on an axis has NaN there (points logged before the first
``axes=`` that names it, or another writer's runs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["axes_of", "axis_column", "with_axes"]

_AXIS = "axis/"
#: the seed's axes, under the names ``--x`` and ``TensorBoardBackend(x=)`` give them
_SEED_NAMES = {"iteration": "iteration", "env_steps_total": "env_steps"}
_KEY = ["run", "_sub", "step", "wall_time"]


def _column_order(name: str) -> tuple[int, str]:
    """The seed's axes first, in their order, then every other axis by name."""
    seed = list(_SEED_NAMES.values())
    return (seed.index(name), "") if name in seed else (len(seed), name)


def axis_column(tag: str) -> tuple[str, str] | None:
    """``(sub-run prefix, column name)`` when ``tag`` is an axis, else ``None``."""
    at = 0
    while True:
        i = tag.find(_AXIS, at)
        if i < 0:
            return None
        if i == 0 or tag[i - 1] == "/":
            name = tag[i + len(_AXIS) :]
            return (tag[:i], _SEED_NAMES.get(name, name)) if name else None
        at = i + 1


def axes_of(tags: Iterable[str]) -> list[str]:
    """The clocks a run's points have, as ``aoff compare --x`` names them: ``step`` and
    ``wall_time``, then each axis tag of the run's own (``iteration``, ``env_steps``, each
    ``axes=`` name by name)."""
    own = {got[1] for tag in tags if (got := axis_column(tag)) is not None and not got[0]}
    return ["step", "wall_time", *sorted(own - {"step", "wall_time"}, key=_column_order)]


def with_axes(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (the long form) with one column per axis present, each point's record's."""
    tags = [str(t) for t in df["tag"].cat.categories]
    axes = {t: got for t in tags if (got := axis_column(t)) is not None}
    if not axes:
        return df
    # the sub-run of each tag: the longest axis prefix it starts with ("" the run's own)
    prefixes = sorted({p for p, _ in axes.values()}, key=len, reverse=True)
    sub_of = {t: next((p for p in prefixes if t.startswith(p)), "") for t in tags}
    out = df.assign(_sub=df["tag"].map(sub_of).astype(object))
    for tag, (_prefix, name) in sorted(axes.items(), key=lambda a: _column_order(a[1][1])):
        rows = out.loc[out["tag"] == tag, [*_KEY, "value"]]
        rows = rows.drop_duplicates(_KEY, keep="last").rename(columns={"value": name})
        if name in out.columns:  # one name in two sub-runs: fill in what is missing
            merged = out.merge(rows, on=_KEY, how="left", suffixes=("", "_more"))
            merged[name] = merged[name].fillna(merged.pop(name + "_more"))
            out = merged
        else:
            out = out.merge(rows, on=_KEY, how="left")
    return out.drop(columns="_sub")
