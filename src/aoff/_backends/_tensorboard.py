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
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import struct
import threading
import time
from collections.abc import Sequence
from typing import Any, BinaryIO

import anyio.to_thread
from rich.markup import escape

from .._core._records import StepRecord
from ._base import BackendContext
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
        summary = b"".join(parts)
        out = b""
        if rec.wall_time != 0.0:
            out = b"\x09" + _pack_d(rec.wall_time)
        if rec.step:
            out += b"\x10" + _varint(rec.step & _U64)
        if summary:
            out += b"\x2a" + _varint(len(summary)) + summary
        return out


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

    # -- worker-thread side ------------------------------------------------------------
    def _create_file(self, event_cls: Any) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        now = time.time()
        base = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}"
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
                write_all(f, frame_many((first.SerializeToString(),)))
            except BaseException:
                f.close()
                raise
            self._event_cls = event_cls
            self._file = f
            self.path = path

    def _write_sync(self, records: Sequence[StepRecord]) -> None:
        data = encode_records(self._encoder, records)
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError("TensorBoard backend: event file is closed")
            write_whole(f, data)

    def _close_sync(self) -> None:
        with self._lock:
            f, self._file = self._file, None
            if f is None:
                return
            fsync_and_close(f)

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

    async def write(self, records: Sequence[StepRecord]) -> None:
        if self.disabled or not records:
            return
        if self._file is None:
            raise RuntimeError("TensorBoard backend: write() before open() or after close()")
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
        await anyio.to_thread.run_sync(self._close_sync, abandon_on_cancel=True)
