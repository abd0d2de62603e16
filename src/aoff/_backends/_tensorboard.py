"""TensorBoard backend: event files written without TensorFlow, torch or a writer thread.

Why not ``torch.utils.tensorboard.SummaryWriter``: its ``add_scalar`` builds one
protobuf, one record and one queue hand-off per scalar on the caller's thread, blocks
when its 10-slot queue is full, and loses queued events when ``close()`` is never
reached. Here the pump hands over a whole batch of :class:`~aoff.StepRecord`; a worker
thread turns it into one ``Event`` per step (all of that step's scalars in one
``Summary``), frames the batch as TFRecords (:mod:`aoff._tfrecord`) and hands it to the OS
in a single ``write`` on an unbuffered file. Nothing of the training loop's event loop is
spent on protobufs or I/O.

Durability: because every batch goes straight to the OS, nothing written is ever held in
this process's buffers, so the ``flush_secs`` bound (default 2 s, the same meaning as
``SummaryWriter``'s) is always met even if the pump only ever calls :meth:`write`;
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

Config (``config=``, ``log_config``): the HParams session infos, the markdown text table
and, at :meth:`TensorBoardBackend.close`, the final metrics; see :mod:`aoff._backends._hparams`.
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Sequence
from typing import Any, BinaryIO

import anyio.to_thread
from rich.markup import escape

from .._core._histogram import Histogram
from .._core._records import StepRecord
from ._base import BackendContext
from ._hparams import (
    HPARAMS_FILE_PREFIX,
    ConfigWrites,
    hparams_file_events,
    text_table_event,
    write_hparams_file,
)
from ._tfrecord import frame_many, fsync_and_close, write_all, write_whole

__all__ = ["TensorBoardBackend"]

FILE_VERSION = "brain.Event:2"


def _load_event_class() -> Any:
    """Import TensorBoard's ``Event`` protobuf (tensorboard package only, no TensorFlow)."""
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event


def _varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int (< 2**64)."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack
_F32_INF = _pack_f(math.inf)
_F32_NINF = _pack_f(-math.inf)
_U64 = (1 << 64) - 1


class EventEncoder:
    """Encodes a :class:`~aoff.StepRecord` as a serialised ``tensorflow.Event``.

    The wire format is written directly instead of through protobuf objects: building
    ``Summary.Value`` messages cost ~1.3 µs a scalar here and was most of this backend's
    CPU, which the training process pays for (the pump shares its GIL). Each tag's bytes
    (``Summary.Value.tag`` plus the ``simple_value`` key) are built once and cached, so a
    scalar costs one ``struct.pack``. The output is byte-for-byte what protobuf's
    ``SerializeToString`` produces for the same ``Event`` (a test checks it): fields in
    number order, ``wall_time``/``step`` omitted when zero (proto3), ``simple_value``
    always present (it is in a ``oneof``), doubles narrowed to float32 as protobuf does
    (beyond float32's range: ±inf).

    Event: wall_time = 1 (double), step = 2 (int64), summary = 5 (Summary)
    Summary: value = 1 (repeated Value); Value: tag = 1 (string), simple_value = 2 (float)

    A record's histograms (``log_histogram``) follow its scalars, one ``Value`` each with
    a ``HistogramProto`` (:func:`encode_histogram`); their percentiles are scalars.
    """

    def __init__(self) -> None:
        self._heads: dict[str, bytes] = {}

    def _head(self, tag: str) -> bytes:
        raw = tag.encode("utf-8")
        field = b"\x0a" + _varint(len(raw)) + raw  # Value.tag
        head = b"\x0a" + _varint(len(field) + 5) + field + b"\x15"  # Summary.value, key 2
        self._heads[tag] = head
        return head

    def encode(self, rec: StepRecord) -> bytes:
        heads = self._heads
        parts: list[bytes] = []
        append = parts.append
        for tag, value in rec.scalars:
            head = heads.get(tag) or self._head(tag)
            try:
                append(head + _pack_f(value))
            except OverflowError:  # finite but beyond float32: protobuf gives ±inf
                append(head + (_F32_INF if value > 0 else _F32_NINF))
        for h in rec.histograms:
            if h.count:  # all values non-finite: only the <tag>/nonfinite scalar
                append(encode_histogram(h))
        summary = b"".join(parts)
        out = b""
        if rec.wall_time != 0.0:
            out = b"\x09" + _pack_d(rec.wall_time)
        if rec.step:
            out += b"\x10" + _varint(rec.step & _U64)
        if summary:
            out += b"\x2a" + _varint(len(summary)) + summary
        return out


def _double_field(key: int, value: float) -> bytes:
    """A proto3 ``double`` field: omitted when it is +0.0 (the default)."""
    raw = _pack_d(value)
    return b"" if raw == _ZERO_D else bytes((key,)) + raw


_ZERO_D = _pack_d(0.0)


def encode_histogram(h: Histogram) -> bytes:
    """``Summary.Value(tag, histo=HistogramProto(...))``, serialised as protobuf does.

    HistogramProto: min = 1, max = 2, num = 3, sum = 4, sum_squares = 5 (doubles),
    bucket_limit = 6, bucket = 7 (packed repeated doubles); Value.histo = 5.
    """
    proto = b"".join(
        (
            _double_field(0x09, h.min),
            _double_field(0x11, h.max),
            _double_field(0x19, float(h.count)),
            _double_field(0x21, h.sum),
            _double_field(0x29, h.sum_squares),
        )
    )
    for key, values in ((b"\x32", h.bucket_limits), (b"\x3a", h.bucket_counts)):
        if values:
            packed = struct.pack(f"<{len(values)}d", *values)
            proto += key + _varint(len(packed)) + packed
    raw = h.tag.encode("utf-8")
    value = b"\x0a" + _varint(len(raw)) + raw + b"\x2a" + _varint(len(proto)) + proto
    return b"\x0a" + _varint(len(value)) + value  # Summary.value


_producer_of = operator.attrgetter("producer")


def encode_records(encoder: EventEncoder, records: Sequence[StepRecord]) -> bytes:
    """Serialise one ``Event`` per record and frame them all into one buffer."""
    encode = encoder.encode
    return frame_many([encode(rec) for rec in records])


class TensorBoardBackend:
    """Writes each :class:`~aoff.StepRecord` as one TensorBoard ``Event`` of scalars.

    ``log_dir`` is created if needed; the event file goes straight into it. If the
    ``tensorboard`` package cannot be imported, :meth:`open` prints the seed's yellow
    ``tensorboard not installed`` and the backend does nothing from then on.
    """

    name = "tensorboard"

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        *,
        flush_secs: float = 2.0,
        filename_suffix: str = "",
        purge_after: int | None = None,
    ) -> None:
        if not flush_secs > 0:
            raise ValueError(f"flush_secs must be > 0, got {flush_secs!r}")
        if os.sep in filename_suffix or (os.altsep and os.altsep in filename_suffix):
            raise ValueError(
                f"filename_suffix must not contain a path separator: {filename_suffix!r}"
            )
        self.log_dir = os.fspath(log_dir)
        self.flush_secs = float(flush_secs)
        self.filename_suffix = filename_suffix
        #: the event file's path once :meth:`open` has created it
        self.path: str | None = None
        self.disabled = False
        self._event_cls: Any = None
        self._encoder = EventEncoder()
        self._file: BinaryIO | None = None
        self._closed = False
        # Serialises file access between worker threads: after the pump abandons a hung
        # call, the next call may start while the old thread still runs. Only ever
        # taken in worker threads, never on the event loop.
        self._lock = threading.Lock()
        #: resume: steps after this one are hidden from TensorBoard (SessionLog.START)
        self.purge_after = purge_after
        # config (see _hparams.py): the context's HParams, the version written last (-1:
        # none), the run's start time, and the last step written (for the end metrics)
        self._ctx: BackendContext | None = None
        self._config_writes = ConfigWrites()
        self._hp_values: dict[str, Any] = {}
        self._hp_start = 0.0
        self._last_step = 0
        #: producers' event files (``log_dir/<name>/``), by producer name
        self._producer_files: dict[str, BinaryIO] = {}

    # -- worker-thread side ------------------------------------------------------------
    def _file_time(self, now: float) -> int:
        """The time in the file's name: now, or (resuming) later than every scalar file
        already in the folder, so that readers, which go through files in name order,
        read the ``SessionLog.START`` after the points it hides."""
        t = int(now)
        if self.purge_after is None:
            return t
        for name in os.listdir(self.log_dir):
            m = re.match(r"events\.out\.tfevents\.(\d+)\.", name)
            if m and not name.startswith(HPARAMS_FILE_PREFIX):
                t = max(t, int(m[1]) + 1)
        return t

    def _create_file(self, event_cls: Any) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        now = time.time()
        stamp = self._file_time(now)
        base = f"events.out.tfevents.{stamp:010d}.{socket.gethostname()}.{os.getpid()}"
        with self._lock:
            if self._closed:
                return
            for n in itertools.count():
                path = os.path.join(self.log_dir, f"{base}.{n}{self.filename_suffix}")
                try:
                    f = open(path, "xb", buffering=0)  # noqa: SIM115 - kept open until close()
                except FileExistsError:
                    continue
                break
            try:
                first = event_cls(wall_time=now, file_version=FILE_VERSION)
                head = [first.SerializeToString()]
                if self.purge_after is not None:
                    # as SummaryWriter(purge_step=N + 1): readers drop every point they
                    # read before this event with a step > N (TensorBoard's purge rule)
                    start = event_cls(wall_time=now, step=self.purge_after + 1)
                    start.session_log.status = start.session_log.START
                    head.append(start.SerializeToString())
                write_all(f, frame_many(head))
            except BaseException:
                f.close()
                raise
            self._event_cls = event_cls
            self._file = f
            self.path = path

    def _producer_file(self, name: str) -> BinaryIO:
        """The event file of producer ``name`` (``log.remote(name)``): in
        ``log_dir/<name>/``, which TensorBoard shows as a run of its own, so each
        producer's steps only grow within its file (TensorBoard's default loader hides
        points whose step goes back within a file). Call with the lock held."""
        f = self._producer_files.get(name)
        if f is not None:
            return f
        folder = os.path.join(self.log_dir, name)
        os.makedirs(folder, exist_ok=True)
        now = time.time()
        base = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}"
        for n in itertools.count():
            path = os.path.join(folder, f"{base}.{n}{self.filename_suffix}")
            try:
                f = open(path, "xb", buffering=0)  # noqa: SIM115 - kept open until close()
            except FileExistsError:
                continue
            break
        assert f is not None
        try:
            first = self._event_cls(wall_time=now, file_version=FILE_VERSION)
            write_all(f, frame_many([first.SerializeToString()]))
        except BaseException:
            f.close()
            raise
        self._producer_files[name] = f
        return f

    def _write_producers(self, records: Sequence[StepRecord]) -> list[StepRecord]:
        """Write the producers' records to their own files; return the run's own."""
        own: list[StepRecord] = []
        theirs: dict[str, list[StepRecord]] = {}
        for rec in records:
            if rec.producer is None:
                own.append(rec)
            else:
                theirs.setdefault(rec.producer, []).append(rec)
        with self._lock:
            if self._file is None:
                raise RuntimeError("TensorBoard backend: event file is closed")
            for name, recs in theirs.items():
                write_whole(self._producer_file(name), encode_records(self._encoder, recs))
        return own

    def _write_sync(self, records: Sequence[StepRecord]) -> None:
        if any(map(_producer_of, records)):
            records = self._write_producers(records)
            if not records:
                return
        data = encode_records(self._encoder, records)
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError("TensorBoard backend: event file is closed")
            write_whole(f, data)
            if records:
                self._last_step = records[-1].step

    # -- config (HParams, text table; see _hparams.py) ----------------------------------

    def _write_config_sync(self, values: dict[str, Any], step: int) -> None:
        now = time.time()
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError("TensorBoard backend: event file is closed")
            write_whole(f, frame_many([text_table_event(values, step, now)]))
            self._hp_values = values
            self._write_hparams_file(None)

    def _write_hparams_file(self, end: tuple[float, bool] | None) -> None:
        version = self._event_cls(wall_time=self._hp_start, file_version=FILE_VERSION)
        events = hparams_file_events(
            self._hp_values,
            start_time=self._hp_start,
            end_time=None if end is None else end[0],
            interrupted=False if end is None else end[1],
        )
        write_hparams_file(self.log_dir, events, version.SerializeToString())

    def _finish_config_sync(self, final: dict[str, float], interrupted: bool) -> None:
        """At close: the final metrics as scalars at the last step, and the session end."""
        with self._lock:
            f = self._file
            if f is None:
                return
            if final:
                rec = StepRecord(self._last_step, 0, time.time(), tuple(final.items()))
                write_whole(f, encode_records(self._encoder, (rec,)))
            self._write_hparams_file((time.time(), interrupted))

    def _close_sync(self) -> None:
        with self._lock:
            f, self._file = self._file, None
            theirs, self._producer_files = list(self._producer_files.values()), {}
            for pf in theirs:
                fsync_and_close(pf)
            if f is None:
                return
            fsync_and_close(f)

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
            event_cls = await anyio.to_thread.run_sync(_load_event_class, abandon_on_cancel=True)
        except ImportError:
            self.disabled = True
            ctx.say("[yellow]tensorboard not installed[/]")
            return
        await anyio.to_thread.run_sync(self._create_file, event_cls, abandon_on_cancel=True)
        ctx.say(f"[dim]TensorBoard logging to: {escape(self.log_dir)}[/]")
        self._ctx = ctx
        self._hp_start = time.time()
        # a resumed run's table goes at the first step it may log, not under old ones
        await self._write_config(0 if self.purge_after is None else self.purge_after + 1)

    async def write(self, records: Sequence[StepRecord]) -> None:
        if self.disabled or not records:
            return
        if self._file is None:
            raise RuntimeError("TensorBoard backend: write() before open() or after close()")
        await self._write_config(records[-1].step)
        # a tuple: the pump may reuse its list while an abandoned thread still reads ours
        await anyio.to_thread.run_sync(self._write_sync, tuple(records), abandon_on_cancel=True)

    async def flush(self) -> None:
        # Every write() handed its bytes to the OS already (unbuffered file): nothing is
        # held in this process, so there is nothing to do and no thread hop to pay.
        return

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
