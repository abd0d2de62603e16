"""Read the history rows back out of an offline W&B run file (``run-<id>.wandb``).

Why: offline runs (``WANDB_MODE=offline``) are the only way to check what the W&B
backend logged without a server, and wandb 0.31 no longer ships a Python reader for its
own file (``wandb.sdk.internal.datastore`` is gone; the writer lives in the Go core).

Format (checked against files wandb 0.31 writes): a 7-byte header ``b":W&B"``, u16 LE
magic ``0xBEE1``, u8 version ``0``; then LevelDB-log framing in 32 KiB blocks (the header
counts towards the first block): each chunk is ``u32 LE crc | u16 LE length | u8 type``
then the data, where ``crc`` is the plain (unmasked) zlib CRC-32 of the type byte and the
data, and type is FULL=1, FIRST=2, MIDDLE=3 or LAST=4; a block tail shorter than a chunk
header is zero padding. Each reassembled payload is a ``wandb_internal_pb2.Record``.
A truncated last chunk ends the read quietly, like TensorBoard's reader.

W&B writes the file from its own service process, which may still be writing when the
run's ``finish()`` has returned (CI once read a file before its ``run`` record was in):
:func:`wait_for_run` and :func:`wait_for_runs` wait until a file holds its ``exit``
record, the last one W&B writes, before a test reads it.
"""

from __future__ import annotations

import importlib
import json
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._wait import wait_until

__all__ = [
    "iter_records",
    "read_config",
    "read_history",
    "read_run_id",
    "wait_for_run",
    "wait_for_runs",
]

#: seconds: W&B's service process can lag a busy machine by several seconds
DEFAULT_RUN_TIMEOUT = 60.0

_IDENT = b":W&B"
_MAGIC = 0xBEE1
_HEADER = struct.Struct("<4sHB")
_CHUNK = struct.Struct("<IHB")
_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


class CorruptRunFile(ValueError):
    """The file is not a W&B run file, or a chunk's checksum does not match."""


def _payloads(data: bytes) -> Iterator[bytes]:
    if len(data) < _HEADER.size:
        raise CorruptRunFile("too short for a W&B run file header")
    ident, magic, version = _HEADER.unpack_from(data, 0)
    if ident != _IDENT or magic != _MAGIC:
        raise CorruptRunFile(f"not a W&B run file (header {data[: _HEADER.size]!r})")
    if version != 0:
        raise CorruptRunFile(f"unsupported W&B run file version {version}")
    pos = _HEADER.size
    end = len(data)
    pending: list[bytes] | None = None
    while pos < end:
        left = _BLOCK - pos % _BLOCK
        if left < _CHUNK.size:
            pos += left
            continue
        if pos + _CHUNK.size > end:
            return  # truncated chunk header
        crc, length, kind = _CHUNK.unpack_from(data, pos)
        if crc == 0 and length == 0 and kind == 0:  # zero fill to the end of the block
            pos += left
            continue
        start = pos + _CHUNK.size
        chunk = data[start : start + length]
        if len(chunk) < length:
            return  # truncated last chunk
        if zlib.crc32(bytes((kind,)) + chunk) != crc:
            raise CorruptRunFile(f"checksum mismatch in the chunk at byte {pos}")
        pos = start + length
        if kind == _FULL:
            yield chunk
        elif kind == _FIRST:
            pending = [chunk]
        elif kind == _MIDDLE and pending is not None:
            pending.append(chunk)
        elif kind == _LAST and pending is not None:
            pending.append(chunk)
            yield b"".join(pending)
            pending = None
        else:
            raise CorruptRunFile(f"unexpected chunk type {kind} at byte {pos}")


def iter_records(path: str | os.PathLike[str]) -> Iterator[Any]:
    """Every ``wandb_internal_pb2.Record`` in the file, in order (needs wandb installed)."""
    # imported as Any: wandb picks the generated module by protobuf version at run time
    pb: Any = importlib.import_module("wandb.proto.wandb_internal_pb2")
    with open(path, "rb") as f:
        data = f.read()
    for payload in _payloads(data):
        record = pb.Record()
        record.ParseFromString(payload)
        yield record


def _item_value(item: Any) -> Any:
    if item.value_json:
        return json.loads(item.value_json)  # accepts NaN/Infinity, which wandb writes
    kind = item.WhichOneof("value") if "value" in item.DESCRIPTOR.oneofs_by_name else None
    if kind is not None:
        return getattr(item, kind)
    return None


def read_history(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The history rows of an offline run: one dict per logged step.

    Each row maps the logged keys (nested keys joined with ``"/"``) to their values and
    ``"_step"`` to the step; wandb's own bookkeeping keys (``_runtime``, ``_timestamp``)
    are kept as they are.
    """
    rows: list[dict[str, Any]] = []
    for record in iter_records(path):
        if record.WhichOneof("record_type") != "history":
            continue
        history = record.history
        row: dict[str, Any] = {}
        for item in history.item:
            key = item.key or "/".join(item.nested_key)
            row[key] = _item_value(item)
        if history.HasField("step"):
            row.setdefault("_step", history.step.num)
        rows.append(row)
    return rows


def read_run_id(path: str | os.PathLike[str]) -> str:
    """The id of the run an offline run file belongs to (its ``run`` record)."""
    for record in iter_records(path):
        if record.WhichOneof("record_type") == "run":
            return str(record.run.run_id)
    raise CorruptRunFile(f"no run record in {os.fspath(path)!r}")


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The run's config as the file has it: the ``run`` record's config, then every later
    ``config`` update in order (nested keys joined with ``"/"``); wandb's own ``_wandb``
    key is left out."""
    config: dict[str, Any] = {}

    def apply(items: Any) -> None:
        for item in items:
            key = item.key or "/".join(item.nested_key)
            if key != "_wandb":
                config[key] = json.loads(item.value_json)

    for record in iter_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            apply(record.run.config.update)
        elif kind == "config":
            apply(record.config.update)
    return config


def _ended(path: str | os.PathLike[str]) -> bool:
    """Whether the run file exists and holds its ``exit`` record."""
    try:
        return any(r.WhichOneof("record_type") == "exit" for r in iter_records(path))
    except FileNotFoundError:
        return False


def wait_for_run(path: str | os.PathLike[str], *, timeout: float = DEFAULT_RUN_TIMEOUT) -> Path:
    """``path`` once the offline run file there holds its ``exit`` record (W&B's
    service process has written all of it); raises ``aoff.testing.WaitTimeout`` after
    ``timeout`` seconds. Call it after the run's ``finish()``, before reading the file."""
    wait_until(
        lambda: _ended(path),
        timeout=timeout,
        interval=0.05,
        what=f"the W&B run file {os.fspath(path)!r} to hold its exit record",
    )
    return Path(path)


def wait_for_runs(
    root: str | os.PathLike[str], count: int = 1, *, timeout: float = DEFAULT_RUN_TIMEOUT
) -> list[Path]:
    """The ``count`` offline run files under ``root`` (``offline-run-*/run-*.wandb``,
    at any depth), sorted, once there are that many and each holds its ``exit`` record;
    raises ``aoff.testing.WaitTimeout`` after ``timeout`` seconds (also when more than
    ``count`` files are there: a test that expects one run must not pass on two)."""

    def ended() -> list[Path]:
        files = sorted(Path(root).rglob("offline-run-*/run-*.wandb"))
        if len(files) == count and all(_ended(f) for f in files):
            return files
        return []

    return wait_until(
        ended,
        timeout=timeout,
        interval=0.05,
        what=f"{count} W&B run file(s) under {os.fspath(root)!r}, each with its exit record",
    )
