"""Number and duration formatting shared by the dashboard, the plain-line output and the summary.

The seed logger's users read these strings every few seconds for hours, and compare them
across runs and screenshots; keeping the seed's exact formats (significant digits that
shrink as magnitudes grow, ``3m07s`` durations) is part of being a drop-in. The rules live
here, apart from the renderables, so they can be tested exhaustively on plain values.
"""

from __future__ import annotations

import math

__all__ = ["fmt_duration", "fmt_ms", "fmt_number"]


def fmt_number(v: float) -> str:
    """Format a metric value the way the seed's dashboard did.

    ``0`` for zero; a two-digit exponent at or beyond one million; one decimal from 100,
    three from 1, four from 0.001; a two-digit exponent below that. NaN and infinities
    are shown as ``nan``, ``inf`` and ``-inf`` (a diverging loss must stay visible).
    """
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e6:
        return f"{v:.2e}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.3f}"
    if a >= 0.001:
        return f"{v:.4f}"
    return f"{v:.2e}"


def fmt_duration(seconds: float) -> str:
    """``42s`` under a minute, ``3m07s`` under an hour, else ``2h03m07s``.

    Fractions of a second are truncated (59.9 s is still ``59s``, never ``60s``);
    negative durations show as ``0s`` and non-finite ones as ``--``.
    """
    if not math.isfinite(seconds):
        return "--"
    total = max(int(seconds), 0)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s"


def fmt_ms(seconds_or_ms: float, *, already_ms: bool = False) -> str:
    """A timing in milliseconds with one decimal and the ``ms`` suffix (``12.3ms``)."""
    ms = seconds_or_ms if already_ms else seconds_or_ms * 1000
    return f"{ms:.1f}ms"
