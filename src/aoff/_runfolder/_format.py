"""``RunFormat``: what one file format of the run folder is to the rest of aoff.

Why a protocol: the readers (:func:`aoff.read_scalars` and :class:`aoff.ScalarReader`,
``aoff ls/show/export/compare``), resume (the last step, the cut after a step) and run
discovery ("is this a run folder") iterate the formats of one table
(``reading/_formats.py``) instead of naming files, so a new format is one object that
answers these questions, plus the registry line of the backend that writes it.

A format names its files in a folder, reads a run back as points (or holds none: the run
summary), gives its last step and cuts its rows after a step, and owns the bytes of its
files: a backend that writes it keeps the file (its handle, batching, flushing) and asks
its format object how a record is encoded (the built-ins: ``TENSORBOARD.encode``,
``JSONL.encode``, ``CSV.batch_cells``/``encode_rows``, whose header the backend keeps). One
that is an append-only file of encoded records (:class:`AppendFormat`) says it in one
call, ``encode(batch)``: aoff's own backend for such a file
(``_backends/_formatfile.py``) appends it, so such a format needs no backend of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol, runtime_checkable

from .._core._records import Record
from ._tagseries import Series

__all__ = ["AppendFormat", "Points", "RunFormat"]


class Points(Protocol):
    """A run's points in one format, read incrementally: each :meth:`read` hands over
    what was appended since the last (a torn last record is left for the next)."""

    def read(self) -> list[dict[str, Series]]:
        """The new points: one ``tag -> series`` map per sub-run, the run's own first
        (TensorBoard: one per sub-folder; a line file: its producers' and sub-runs' rows
        apart), each sub-run's tags with its path and ``/`` in front."""
        ...

    @property
    def rows(self) -> int | None:
        """The run's own records read so far (None: not counted; TensorBoard's are
        counted as its distinct steps)."""
        ...

    @property
    def iteration(self) -> int | None:
        """The run's own last row's iteration (None: its rows have none; the
        ``axis/iteration`` tag stands for it)."""
        ...

    def apart(self) -> dict[str, int]:
        """Rows read of each sub-run whose rows share the run's file (a line file's
        producers), by name; ``aoff show`` names them beside the run's own."""
        ...

    def problems(self) -> list[tuple[str, int, int]]:
        """``(file, corrupt records skipped, torn bytes at its end)`` of each file."""
        ...

    def notes(self) -> list[str]:
        """One line for each kind of row skipped or refused so far."""
        ...

    @property
    def bytes_read(self) -> int:
        """Bytes of event files read so far (0 for a format that does not count them)."""
        ...

    @property
    def bulk_records(self) -> int:
        """Records decoded in bulk so far (0 where there is no bulk path)."""
        ...

    @property
    def retracted(self) -> list[tuple[int, frozenset[str] | None]]:
        """``(step, tags or None)`` of each purge that hides points handed out already."""
        ...

    def handed_out(self) -> None:
        """Say that the points read so far were handed to the caller."""
        ...


@runtime_checkable
class RunFormat(Protocol):
    """One file format of the run folder."""

    @property
    def name(self) -> str:
        """Its short name (``"tensorboard"``, ``"jsonl"``, ...)."""
        ...

    @property
    def label(self) -> str:
        """How its files are named in messages (``"metrics.jsonl"``)."""
        ...

    def files(self, folder: str) -> list[str]:
        """Its files directly in ``folder`` (none: the folder holds nothing of it); a
        folder with a file of any format is a run."""
        ...

    def points(self, path: str, tags: Collection[str] | None) -> Points | None:
        """A reader of the run at ``path`` (a folder, or one file of this format), or
        None when there is nothing of this format there, or it holds no points."""
        ...

    def last_step(self, folder: str) -> int | None:
        """The last step it logged in ``folder`` (None: no row, or not known cheaply)."""
        ...

    def cut_after(self, folder: str, step: int) -> None:
        """Drop its rows after ``step`` in ``folder`` (resume); nothing when it has none."""
        ...

    def writers(self, folder: str) -> int:
        """How many sessions or writers its files in ``folder`` show: one file each
        (TensorBoard's event files, the run summaries), or 0 where writers share its
        file (a line file), which shows none."""
        ...

    def bytes_to_read(self, path: str) -> int:
        """The bytes its reader of the run at ``path`` reads in all, as
        :attr:`Points.bytes_read` counts them (0: it does not count them); ``aoff compare``
        sizes its progress from it."""
        ...

    @property
    def exact(self) -> bool:
        """Whether its values are the float64s logged, so ``aoff ls/show`` read it before
        the others (aoff's JSONL; TensorBoard's are float32)."""
        ...

    @property
    def holds_points(self) -> bool:
        """Whether its files hold a run's points (the run summary's do not)."""
        ...

    @property
    def last_step_fallback(self) -> bool:
        """Whether resume asks it for the last step only when no other format has one
        (TensorBoard's: a scan of whole files, and its steps may be on another axis)."""
        ...


@runtime_checkable
class AppendFormat(RunFormat, Protocol):
    """A format that is one append-only file of encoded records."""

    @property
    def file_name(self) -> str:
        """The file's name in ``log_dir``."""
        ...

    def encode(self, records: Sequence[Record]) -> bytes:
        """A batch of records as the bytes appended to the file, whole."""
        ...
