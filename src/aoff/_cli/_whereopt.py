"""The ``--where FILTER`` option, one spelling for ``aoff ls``, ``compare`` and ``export``.

Why a module of its own: the three commands take the same filter (the language is
``_runfolder/reading/_where``'s), so its flag and help are written once.
"""

from __future__ import annotations

import argparse

__all__ = ["add_where_argument"]


def add_where_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--where",
        metavar="FILTER",
        help='only the runs this filter keeps, e.g. \'config.env == "Hopper-v4" and '
        "config.seed < 5' (fields: config.KEY, summary.KEY, last.TAG, tags, run; "
        "==, !=, <, <=, >, >=, in, not in, and, or, not, parentheses). Read through the "
        "folder's run index (.aoff-index.msgpack), kept current as runs change",
    )
