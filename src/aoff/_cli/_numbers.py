"""The commands' numeric options, checked as they are parsed: a bad one is one line.

Why a module of its own: a number out of range used to reach the command (``--interval
-1`` into ``time.sleep``, ``--reps 10**12`` into an array) and end in a traceback. Each
option's range is written once, next to its ``add_argument``, as :func:`number`'s bounds;
the parser (``aoff.__main__``) prints the one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["number"]


def number(
    kind: type[int] | type[float], low: float, high: float, *, above: bool = False
) -> Callable[[str], float]:
    """An argparse ``type=``: ``kind`` from ``low`` to ``high`` (``above``: more than
    ``low``, not equal), finite; the error says the range and what was given."""
    low_word = f"> {_shown(low)}" if above else f">= {_shown(low)}"
    said = f"{'an int' if kind is int else 'a number'} {low_word} and <= {_shown(high)}"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {said}, got {text!r}") from None
        if not math.isfinite(value) or value > high or value < low or (above and value == low):
            raise argparse.ArgumentTypeError(f"must be {said}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse's "invalid int value" names the kind
    return parse


def _shown(bound: float) -> str:
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"
