"""TensorBoard backend: event files written without TensorFlow, torch or a writer thread.

Why not ``torch.utils.tensorboard.SummaryWriter``: its ``add_scalar`` builds one
protobuf, one record and one queue hand-off per scalar on the caller's thread, blocks
when its 10-slot queue is full, and loses queued events when ``close()`` is never
reached. Here the pump hands over a whole batch of :class:`~aoff.StepRecord`; a worker
thread turns it into one ``Event`` per step (all of that step's scalars in one
``Summary``), frames the batch as TFRecords (:mod:`aoff._runfolder.tensorboard._tfrecord`) and hands
it to the OS in a single ``write`` on an unbuffered file. Nothing of the training loop's
event loop is spent on protobufs or I/O.

Durability: because every batch goes straight to the OS, nothing written is ever held in
this process's buffers, so the logger's ``flush_secs`` bound (default 2 s, the same
meaning as ``SummaryWriter``'s) is always met even if the pump only ever calls :meth:`write`;
:meth:`flush` has nothing left to do. The file is ``fsync``-ed once, at :meth:`close`
(an ``fsync`` per batch would cost milliseconds on some disks for no gain against a
process crash). A reader tolerates a truncated last record, so a machine crash loses at
most the tail.

Files follow TensorFlow's naming, ``events.out.tfevents.<10-digit time>.<host>.<pid>.<n>``,
directly in ``log_dir`` (like the seed logger), so ``tensorboard --logdir`` finds them.
A file is created with mode ``"xb"`` and ``n`` is the first number that gives a new name,
so two backends started in the same second never clobber one another.

Resume (``purge_after=N``, from ``resume_step=``): the new file's second event is a
``SessionLog.START`` at step ``N + 1`` (what ``SummaryWriter(purge_step=N + 1)`` writes),
and its name sorts after every event file already in the folder, so TensorBoard's
readers, which go through files in name order, drop the older files' points after ``N``.

The x axis (``x=``): TensorBoard has one step per point. By default it is the record's
step (the seed's: the run's env steps once ``log_collector`` gave some, else the
iteration); ``x="iteration"``, ``x="env_steps"`` or the name of an axis the run logs
(``axes={"grad_steps": g}``) makes that axis the step of the run's own records, see
:mod:`aoff._runfolder.tensorboard._xaxis`. Every axis is still a series of its own
(``axis/<name>``) at the same steps, so each point's other clocks read back beside it.

Config (``config=``, ``log_config``): the HParams session infos, the markdown text table
and, at :meth:`TensorBoardBackend.close`, the final metrics; see
:mod:`aoff._runfolder.tensorboard._hparams`.
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import time
from collections.abc import Sequence
from typing import Any, BinaryIO

import anyio.to_thread
from rich.markup import escape

from .._core._records import MediaRecord, Record, StepRecord
from .._runfolder._pieces import Pieces, whole
from .._runfolder.tensorboard._events import load_event_class
from .._runfolder.tensorboard._files import events_name, name_time
from .._runfolder.tensorboard._format import TENSORBOARD, TensorBoardFormat
from .._runfolder.tensorboard._hparams import write_hparams_file
from .._runfolder.tensorboard._media import MEDIA_FORMATS
from .._runfolder.tensorboard._tfrecord import fsync_and_close, write_all, write_whole
from .._runfolder.tensorboard._xaxis import OnAxis
from ._base import BackendContext, Takes
from ._configwrites import ConfigWrites
from ._lockedfile import LockedFileBackend
from ._tensorboardoptions import TensorBoardOptions

__all__ = ["TensorBoardBackend"]

_producer_of = operator.attrgetter("producer")
#: whether a record's type is StepRecord (a step's record is in the run's own folder
#: unless a producer logged it), C-level over a batch: ``map(_is_step, map(type, ...))``
_is_step = functools.partial(operator.is_, StepRecord)


def _quiet(_: str) -> None:
    pass


def _folder_of(rec: Record) -> str:
    """A record's run folder under ``log_dir`` (``""``: ``log_dir`` itself)."""
    run = "" if isinstance(rec, StepRecord) else rec.run
    if rec.producer is None:
        return run
    return os.path.join(rec.producer, run) if run else rec.producer


class TensorBoardBackend(LockedFileBackend):
    """Writes each record as one TensorBoard ``Event``: a step's or a ``SummaryWriter``
    call's scalars and histograms, a text record's texts (an alert's too).

    ``log_dir`` is created if needed; the event file goes straight into it. If the
    ``tensorboard`` package cannot be imported, :meth:`open` prints the original logger's yellow
    ``tensorboard not installed`` and the backend does nothing from then on.
    """

    name = "tensorboard"
    takes = Takes.TEXTS | Takes.MEDIA | Takes.HPARAMS
    label = "TensorBoard"
    closed_message = "event file is closed"
    #: what an event is: the format's (the backend owns the files)
    format: TensorBoardFormat = TENSORBOARD

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        *,
        filename_suffix: str = "",
        purge_after: int | None = None,
        x: str | None = None,
    ) -> None:
        TensorBoardOptions(filename_suffix=filename_suffix)  # checked as the option is
        super().__init__()  # the file, its lock and its closed state (_lockedfile.py)
        self.log_dir = os.fspath(log_dir)
        self.filename_suffix = filename_suffix
        #: the event file's path once :meth:`open` has created it
        self.path: str | None = None
        self.disabled = False
        self._event_cls: Any = None
        self._encoder = self.format.encoder()
        #: resume: steps after this one are hidden from TensorBoard (SessionLog.START)
        self.purge_after = purge_after
        # config (see _runfolder/tensorboard/_hparams.py): the context's HParams, the version
        # written last (-1: none), the run's start time, and the last step written (for
        # the end metrics)
        self._ctx: BackendContext | None = None
        self._config_writes = ConfigWrites()
        self._hp_values: dict[str, Any] = {}
        self._hp_start = 0.0
        self._last_step = 0
        #: producers' event files (``log_dir/<name>/``), by producer name
        self._producer_files: dict[str, BinaryIO] = {}
        #: the axis written as TensorBoard's step (``None``: the record's own step)
        self.x = x
        self._on_x = None if x is None else OnAxis(x)

    @property
    def portable(self) -> bool:
        """Whether the logger may send it to its agent as its constructor's arguments:
        an unopened instance of this class (not a subclass)."""
        return type(self) is TensorBoardBackend and self._file is None and not self._closed

    def __reduce__(self) -> tuple[Any, ...]:
        if not self.portable:
            raise TypeError("an opened TensorBoardBackend (or a subclass) cannot be pickled")
        make = functools.partial(TensorBoardBackend, filename_suffix=self.filename_suffix)
        make = functools.partial(make, x=self.x)
        return (functools.partial(make, purge_after=self.purge_after), (self.log_dir,))

    # -- worker-thread side ------------------------------------------------------------
    def _file_time(self, folder: str, now: float) -> int:
        """The time in a new file's name: now, or (resuming) later than every scalar file
        already in ``folder``, so that readers, which go through files in name order,
        read the ``SessionLog.START`` after the points it hides, and a resumed sub-run's
        points after the earlier session's."""
        t = int(now)
        if self.purge_after is None:
            return t
        for name in os.listdir(folder):
            stamp = name_time(name)
            if stamp is not None:
                t = max(t, stamp + 1)
        return t

    def _new_file(self, folder: str, event_cls: Any, start_step: int | None) -> BinaryIO:
        """A new event file in ``folder``, created exclusively (``"xb"``: the first free
        ``<n>``, so two writers never clobber one another), its first event the file
        version and, with ``start_step``, a ``SessionLog.START`` there (what
        ``SummaryWriter(purge_step=...)`` writes: readers drop the points they read
        before it from that step on)."""
        os.makedirs(folder, exist_ok=True)
        now = time.time()
        stamp = self._file_time(folder, now)
        for n in itertools.count():
            path = os.path.join(folder, events_name(stamp, n, self.filename_suffix))
            try:
                f = open(path, "xb", buffering=0)  # noqa: SIM115 - kept open until close()
            except FileExistsError:
                continue
            break
        try:
            write_all(f, self.format.file_head(event_cls, now, start_step))
        except BaseException:
            f.close()
            raise
        return f

    def _create_file(self, event_cls: Any) -> None:
        with self._lock:
            if self._closed:
                return
            # resume: as SummaryWriter(purge_step=N + 1)
            purge = None if self.purge_after is None else self.purge_after + 1
            f = self._new_file(self.log_dir, event_cls, purge)
            self._event_cls = event_cls
            self._file = f
            self.path = f.name

    def _run_file(self, name: str) -> BinaryIO:
        """The event file of run folder ``name`` under ``log_dir``, made on first use:
        a producer's (``log.remote(name)``: ``<name>/``, which TensorBoard shows as a run
        of its own, so each producer's steps only grow within its file) or a
        ``SummaryWriter`` sub-run's (``add_scalars``, ``add_hparams``). Call with the
        lock held."""
        f = self._producer_files.get(name)
        if f is None:
            f = self._new_file(os.path.join(self.log_dir, name), self._event_cls, None)
            self._producer_files[name] = f
        return f

    def _pieces(self) -> Pieces:
        """The pump's pacing for an encoding (none before ``open``)."""
        return whole if self._ctx is None else self._ctx.pieces

    def _encode_others(self, records: Sequence[Record]) -> tuple[list[Record], dict[str, bytes]]:
        """The run's own records, and the encoded records of other run folders
        (producers', sub-runs'), each folder's in order."""
        own: list[Record] = []
        theirs: dict[str, list[Record]] = {}
        for rec in records:
            name = _folder_of(rec)
            if not name:
                own.append(rec)
            else:
                theirs.setdefault(name, []).append(rec)
        return own, {
            name: self.format.encode(recs, self._pieces(), encoder=self._encoder)
            for name, recs in theirs.items()
        }

    def _write_sync(self, records: Sequence[Record]) -> None:
        # everything encoded before anything is written: a record the format cannot hold
        # fails the batch whole (the runner then writes it record by record), never half
        others: dict[str, bytes] = {}
        if any(map(_producer_of, records)) or (
            not all(map(_is_step, map(type, records)))
            and any(r.run for r in records if not isinstance(r, StepRecord))
        ):
            records, others = self._encode_others(records)
        data = (
            self.format.encode(records, self._pieces(), encoder=self._encoder) if records else b""
        )
        with self._held() as f:
            for name, blob in others.items():
                write_whole(self._run_file(name), blob)
            if records:
                write_whole(f, data)
                self._last_step = records[-1].step

    # -- config (HParams, text table; see _runfolder/tensorboard/_hparams.py) ---------------------

    def _write_config_sync(self, values: dict[str, Any], step: int) -> None:
        now = time.time()
        with self._held() as f:
            write_whole(f, self.format.encode_config(values, step, now))
            self._hp_values = values
            self._write_hparams_file(None)

    def _write_hparams_file(self, end: tuple[float, bool] | None) -> None:
        version = self.format.file_version(self._event_cls, self._hp_start)
        events = self.format.hparams_events(
            self._hp_values,
            start_time=self._hp_start,
            end_time=None if end is None else end[0],
            interrupted=False if end is None else end[1],
        )
        write_hparams_file(self.log_dir, events, version)

    def _finish_config_sync(self, final: dict[str, float], interrupted: bool) -> None:
        """At close: the final metrics as scalars at the last step, and the session end."""
        with self._lock:
            f = self._file
            if f is None:
                return
            if final:
                rec = StepRecord(self._last_step, 0, time.time(), tuple(final.items()))
                write_whole(f, self.format.encode((rec,), encoder=self._encoder))
            self._write_hparams_file((time.time(), interrupted))

    def _close_others(self) -> None:  # under the lock, before the run's own file
        theirs, self._producer_files = list(self._producer_files.values()), {}
        for pf in theirs:
            fsync_and_close(pf)

    async def _write_config(self, step: int) -> None:
        """Write the table and the HParams file if the config changed (see
        :class:`ConfigWrites`)."""
        await self._config_writes.write_if_changed(
            self._ctx,
            lambda values: anyio.to_thread.run_sync(
                self._write_config_sync, values, step, abandon_on_cancel=True
            ),
        )

    # -- Backend protocol --------------------------------------------------------------
    async def open(self, ctx: BackendContext) -> None:
        if self._file is not None or self.disabled:
            return
        if self._closed:
            raise RuntimeError("TensorBoard backend: open() after close()")
        try:
            event_cls = await anyio.to_thread.run_sync(load_event_class, abandon_on_cancel=True)
        except ImportError:
            self.disabled = True
            ctx.say("[yellow]tensorboard not installed[/]")
            return
        await anyio.to_thread.run_sync(self._create_file, event_cls, abandon_on_cancel=True)
        self._choose_where_to_write(ctx, self.log_dir)
        ctx.say(f"[dim]TensorBoard logging to: {escape(self.log_dir)}[/]")
        self._ctx = ctx
        self._hp_start = time.time()
        # a resumed run's table goes at the first step it may log, not under old ones
        await self._write_config(0 if self.purge_after is None else self.purge_after + 1)

    async def write(self, records: Sequence[Record]) -> None:
        if self.disabled or not records:
            return
        self._check_writable()
        if self._on_x is not None:
            records = self._on_x.moved(records, self._ctx.say if self._ctx else _quiet)
        await self._write_config(records[-1].step)
        if self.writes_here:  # the agent, a local disk (_lockedfile.py)
            self._write_sync(records)
            return
        # a tuple: the pump may reuse its list while an abandoned thread still reads ours
        await anyio.to_thread.run_sync(self._write_sync, tuple(records), abandon_on_cancel=True)

    media_formats = MEDIA_FORMATS

    # see _runfolder/tensorboard/_media.py
    async def write_media(self, items: Sequence[MediaRecord]) -> None:
        """Write the encoded images and videos as TensorBoard image summaries."""
        if not self.disabled and items:
            data = self.format.encode_media(items)
            await anyio.to_thread.run_sync(self._write_bytes, data, abandon_on_cancel=True)

    async def close(self) -> None:
        self._closed = True
        if self._file is None:
            return
        try:
            ctx = self._ctx
            if ctx is not None and not self.disabled:
                await self._write_config(self._last_step)  # keys logged after the last step
                if self._config_writes.version >= 0:
                    hp = ctx.hparams
                    await anyio.to_thread.run_sync(
                        self._finish_config_sync,
                        hp.final_metrics(),
                        hp.interrupted,
                        abandon_on_cancel=True,
                    )
        finally:
            await anyio.to_thread.run_sync(self._close_sync, abandon_on_cancel=True)
