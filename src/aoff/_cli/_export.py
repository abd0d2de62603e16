"""``aoff export RUN... --format parquet|csv [--wide] -o FILE``: runs' scalars as one table.

Why: scripts, notebooks and agents want a run's numbers as a table, not as event files.
The runs are read by :func:`aoff.read_scalars` (long form: ``run``, ``tag``, ``step``,
``wall_time``, ``value``, one row a point). ``--wide`` pivots it to one row per run and
step and one column per tag (a tag logged twice at one step keeps the last value;
``wall_time`` is the step's latest), the shape ``pandas.read_csv`` users expect;
``--bucket N`` reduces it to envelopes (``_envelopes``: each run's, tag's and N steps'
min, max, mean, last and count). pandas
(and pyarrow for Parquet) are imported only here.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any, TextIO

from ._whereopt import add_where_argument

__all__ = ["add_export_arguments", "run_export", "to_wide", "write_table"]

FORMATS = ("parquet", "csv")


def to_wide(long: Any) -> Any:
    """The long table ``long`` pivoted to ``run``, ``step``, ``wall_time``, then one
    column per tag in order of first appearance."""
    import pandas as pd

    if long.empty:
        return pd.DataFrame(columns=["run", "step", "wall_time"])
    tags = list(dict.fromkeys(long["tag"]))
    last = long.drop_duplicates(["run", "step", "tag"], keep="last")
    wide = last.set_index(["run", "step", "tag"])["value"].unstack("tag").reindex(columns=tags)
    wide.insert(0, "wall_time", long.groupby(["run", "step"], observed=True)["wall_time"].max())
    wide.columns.name = None
    wide = wide.reset_index()
    order = {run: i for i, run in enumerate(dict.fromkeys(long["run"]))}
    wide = wide.sort_values(["run", "step"], key=lambda c: c.map(order) if c.name == "run" else c)
    return wide.reset_index(drop=True)


def write_table(table: Any, path: Any, fmt: str) -> None:
    """Write ``table`` (a DataFrame) to ``path`` as ``fmt``. Raises ``ImportError`` when
    Parquet's engine is missing, ``OSError`` when the file cannot be written."""
    if fmt == "csv":
        table.to_csv(path, index=False)
    elif fmt == "parquet":
        table.to_parquet(path, index=False)
    else:
        raise ValueError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")


def run_export(ns: argparse.Namespace, err: TextIO) -> int:
    fmt = ns.format or _format_of(ns.output)
    if ns.where is not None:
        from .._runfolder.reading._where import compile_where

        try:
            compile_where(ns.where)
        except ValueError as exc:
            print(f"aoff export: {exc}", file=err)
            return 2
    if ns.bucket is not None and (ns.wide or ns.bucket < 1):
        why = "is one table or the other: not both" if ns.wide else "must be 1 or more"
        print(f"aoff export: --bucket {why}", file=err)
        return 2
    if fmt is None:
        print(
            f"aoff export: cannot tell the format of {ns.output!r}: give --format parquet|csv",
            file=err,
        )
        return 2
    for run in ns.runs:
        if not os.path.isdir(run):
            print(f"aoff export: {run!r} is not a folder", file=err)
            return 1
    try:
        import pandas  # noqa: F401
    except ImportError:
        print("aoff export: needs pandas (pip install pandas)", file=err)
        return 1
    from .._runfolder.reading._scalars import read_scalars

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            table = read_scalars(ns.runs, tags=ns.tag or None, where=ns.where)
        except (OSError, ValueError) as exc:
            print(f"aoff export: {exc}", file=err)
            return 1
    for w in said:  # a torn or corrupt record: one line per file
        print(f"aoff export: {w.message}", file=err)
    if ns.wide:
        table = to_wide(table)
    elif ns.bucket is not None:
        from .._runfolder.reading._envelopes import envelopes

        table = envelopes(table, ns.bucket)
    to_stdout = ns.output == "-"
    try:
        write_table(table, _stdout(fmt) if to_stdout else ns.output, fmt)
    except BrokenPipeError:
        raise  # the reader of our stdout has gone: a quiet exit 0 (aoff.__main__)
    except ImportError as exc:
        print(f"aoff export: Parquet needs pyarrow (pip install pyarrow): {exc}", file=err)
        return 1
    except OSError as exc:
        print(f"aoff export: cannot write {ns.output!r}: {exc.strerror or exc}", file=err)
        return 1
    print(f"aoff export: {len(table):,} rows to {'stdout' if to_stdout else ns.output}", file=err)
    return 0


def _stdout(fmt: str) -> Any:
    """``-o -``: the table goes to stdout (text for CSV, bytes for Parquet)."""
    sys.stdout.flush()
    return sys.stdout if fmt == "csv" else sys.stdout.buffer


def _format_of(path: str) -> str | None:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    return {"parquet": "parquet", "pq": "parquet", "csv": "csv"}.get(ext)


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the file to write (.parquet, .csv); - writes to stdout (give --format)",
    )
    p.add_argument(
        "--format", choices=FORMATS, help="the file's format (default: from FILE's suffix)"
    )
    p.add_argument(
        "--wide",
        action="store_true",
        help="one row per run and step, one column per tag (default: long, one row a point)",
    )
    p.add_argument("--tag", action="append", metavar="TAG", help="only this tag (may be repeated)")
    add_where_argument(p)
    p.add_argument(
        "--bucket",
        type=int,
        metavar="N",
        help="one row per run, tag and N steps: min, max, mean, last, count (an envelope)",
    )
