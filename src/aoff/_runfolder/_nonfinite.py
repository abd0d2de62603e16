"""How aoff's files spell a number that is not finite: ``"nan"``, ``"inf"``, ``"-inf"``.

Why a module of its own: JSON has no such numbers, so ``metrics.jsonl``, the run summary
and ``aoff ls/show --json`` write these words, CSV cells the same; every writer and
reader of them uses this one spelling (a reader that knew another would read a number
as missing, in silence).
"""

from __future__ import annotations

import math

__all__ = ["NONFINITE", "from_json_float", "nonfinite_text", "to_json_float"]

#: the words, as read back
NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def nonfinite_text(v: float) -> str:
    """The word for a non-finite ``v``."""
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def to_json_float(v: float | None) -> float | str | None:
    """``v`` as JSON holds it: a finite number as is, a non-finite one as its word."""
    if v is None or math.isfinite(v):
        return v
    return nonfinite_text(v)


def from_json_float(v: object) -> float | None:
    """A number :func:`to_json_float` wrote (None: none); ``ValueError`` for anything
    else."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and v in NONFINITE:
        return NONFINITE[v]
    raise ValueError(f"not a number: {v!r}")
