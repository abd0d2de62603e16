"""A throwaway run folder format, added as docs/architecture.md ("Adding a file format")
says: this one module (the format) and the one registry line at its end, nothing else.

``metrics.tsv``: one line a record, ``step<TAB>wall_time<TAB>tag=value...``. Rows are
read, last-stepped and cut by aoff's line reader (``_runfolder/lines``); the backend
that appends it is aoff's own (``_backends/_formatfile.py``), built in the agent from
the registry entry, which pickles this module's ``TSV`` by reference: the agent imports
this module by its name, and so learns of the format too.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from aoff._core._records import Record, TextRecord
from aoff._pump._registry import NamedBackend, register
from aoff._runfolder.lines._lines import LineCursor, RowSink, cut_rows, last_row_step
from aoff._runfolder.lines._points import LineFormat

FILE = "metrics.tsv"


def row_step(line: bytes) -> int | None:
    head = line.split(b"\t", 1)[0]
    return int(head) if head.isdigit() else None


class TsvScalars:
    """The rows appended since the last read, into aoff's row sink."""

    def __init__(self, path: str, tags: Collection[str] | None) -> None:
        self.cursor = LineCursor(path)
        self.sink = RowSink(tags)

    def read(self) -> None:
        for line in self.cursor.new_lines():
            step, wall, *cells = line.decode("utf-8").split("\t")
            self.sink.row({"step": step, "wall_time": wall, **dict(c.split("=", 1) for c in cells)})


@dataclass(frozen=True)
class TsvFormat(LineFormat):
    def encode(self, records: Sequence[Record]) -> bytes:
        lines = []
        for rec in records:
            if isinstance(rec, TextRecord):
                continue  # not routed here: the backend takes no texts (Takes.NOTHING)
            cells = "".join(f"\t{tag}={value!r}" for tag, value in rec.scalars)
            lines.append(f"{rec.step}\t{rec.wall_time!r}{cells}\n")
        return "".join(lines).encode("utf-8")


def last_step(path: str) -> int | None:
    return last_row_step(path, row_step)


def cut_after(path: str, step: int) -> None:
    cut_rows(path, row_step, step, header=False)


TSV = TsvFormat("tsv", FILE, ".tsv", TsvScalars, last_step, cut_after)

register(NamedBackend("tsv", needs_log_dir=f"writes log_dir/{FILE}", format=TSV, resumable=True))
