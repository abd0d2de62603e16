"""The dashboard's non-ASCII symbols and their ASCII stand-ins.

A console whose output encoding cannot carry ``⏱ ▲ ▼ ━ ✓ ✗ 🚀 …`` (``LANG=C`` pipes,
old Windows code pages) would raise or print mojibake; the glyph set is picked once per
console from its encoding, and every renderable takes it as an argument so that the same
state renders the same way wherever it is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.console import Console

__all__ = ["ASCII_GLYPHS", "UNICODE_GLYPHS", "Glyphs", "glyphs_for", "glyphs_for_encoding"]


@dataclass(frozen=True, slots=True)
class Glyphs:
    """The non-ASCII symbols the dashboard uses, and their stand-ins for ASCII consoles.

    ``overflow`` is how over-long single-line fields are cut: an ellipsis (``…``) needs
    Unicode too, so the ASCII set crops instead. ``table_box`` is the tables' box: the
    seed's ``SIMPLE_HEAVY``, or the same shape drawn with ``-`` (left to itself, Rich
    would swap in a fully ruled ASCII grid).
    """

    timer: str
    up: str
    down: str
    flat: str
    yes: str
    no: str
    rocket: str
    overflow: Literal["ellipsis", "crop"]
    table_box: box.Box


_ASCII_SIMPLE_HEAVY = box.Box(
    "    \n    \n -- \n    \n    \n -- \n    \n    \n",
    ascii=True,
)
UNICODE_GLYPHS = Glyphs(
    timer="⏱",
    up="▲",
    down="▼",
    flat="━",
    yes="✓",
    no="✗",
    rocket="🚀",
    overflow="ellipsis",
    table_box=box.SIMPLE_HEAVY,
)
ASCII_GLYPHS = Glyphs(
    timer="time",
    up="^",
    down="v",
    flat="-",
    yes="yes",
    no="no",
    rocket="",
    overflow="crop",
    table_box=_ASCII_SIMPLE_HEAVY,
)
_PROBE = "".join(
    (
        UNICODE_GLYPHS.timer,
        UNICODE_GLYPHS.up,
        UNICODE_GLYPHS.down,
        UNICODE_GLYPHS.flat,
        UNICODE_GLYPHS.yes,
        UNICODE_GLYPHS.no,
        UNICODE_GLYPHS.rocket,
        "…",
    )
)


def glyphs_for_encoding(encoding: str | None) -> Glyphs:
    """The Unicode set if ``encoding`` can encode every glyph, else the ASCII set."""
    try:
        _PROBE.encode(encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ASCII_GLYPHS
    return UNICODE_GLYPHS


def glyphs_for(console: Console) -> Glyphs:
    """The glyph set ``console``'s output encoding can show."""
    return glyphs_for_encoding(console.encoding)
