"""``aoff-summary.json``: the run summary's name.

Why a module of its own: the summary backend writes it, ``aoff ls/show`` read it first
(it holds each tag's first, last, range and a short curve, so a run is shown without
reading its data files); the name is spelled here once. It holds no full series, so
:func:`aoff.read_scalars` reads the data files instead.
"""

from __future__ import annotations

__all__ = ["SUMMARY_NAME"]

SUMMARY_NAME = "aoff-summary.json"
