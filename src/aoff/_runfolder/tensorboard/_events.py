"""TensorBoard ``Event`` records, serialised by hand: scalars and histograms.

Why by hand: building ``Summary.Value`` protobuf objects cost ~1.3 µs a scalar here and
was most of the TensorBoard backend's CPU. :class:`EventEncoder` writes the same bytes
(``SerializeToString``'s, checked by a test) with one cached head per tag and one
``struct.pack`` per value; :func:`encode_histogram` does the same for a
``HistogramProto``. The backend (:mod:`aoff._backends._tensorboard`) owns files, runs
and config; this module only turns records into bytes.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..._core._columns import record_columns
from ..._core._histogram_data import Histogram
from ..._core._records import PerTags, Record, TextRecord, WriterRecord

__all__ = [
    "FILE_VERSION",
    "EventEncoder",
    "SummaryRecord",
    "encode_histogram",
    "load_event_class",
    "varint_bytes",
]

FILE_VERSION = "brain.Event:2"


def load_event_class() -> Any:
    """Import TensorBoard's ``Event`` protobuf (tensorboard package only, no TensorFlow)."""
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event


def varint_bytes(n: int) -> bytes:
    """The protobuf base-128 varint of a non-negative int (< 2**64): every record's step (env
    steps: millions), so up to four bytes (below 2**28) are made without the loop."""
    if n < 0x80:
        return _ONE_BYTE[n]
    if n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    if n < 0x200000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    if n < 0x10000000:
        return bytes(
            ((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, ((n >> 14) & 0x7F) | 0x80, n >> 21)
        )
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))
_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack
_F32_INF = _pack_f(math.inf)
_F32_NINF = _pack_f(-math.inf)
_U64 = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


#: tag sequences whose packer is kept at most (a ``SummaryWriter`` run may vary them)
_LAYOUTS_MAX = 256


class _Layout(NamedTuple):
    """One tag sequence's summary packer: ``pack(*args)`` once the values are put at
    ``args``' odd places (its even places hold each tag's head)."""

    pack: Callable[..., bytes]
    args: list[object]


class EventEncoder:
    """Encodes a step's or a ``SummaryWriter`` call's numbers (:class:`~aoff.StepRecord`,
    :class:`~aoff.WriterRecord`) as a serialised ``tensorflow.Event``; a text, a
    new-style tensor or HParams raise :class:`SummaryRecord` (``_encode``).

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
        #: per tag sequence: one ``Struct`` that packs a whole summary (see ``_layout``)
        self._layouts: PerTags[_Layout] = PerTags(self._layout, _LAYOUTS_MAX)
        self._lengths: dict[int, bytes] = {}

    def _head(self, tag: str) -> bytes:
        raw = tag.encode("utf-8")
        field = b"\x0a" + varint_bytes(len(raw)) + raw  # Value.tag
        head = b"\x0a" + varint_bytes(len(field) + 5) + field + b"\x15"  # Summary.value, key 2
        self._heads[tag] = head
        return head

    def _layout(self, tags: tuple[str, ...]) -> _Layout:
        """The packer of a summary whose values have these tags, in this order."""
        heads = self._heads
        hs = [heads.get(tag) or self._head(tag) for tag in tags]
        fmt = "<" + "".join(f"{len(h)}sf" for h in hs)
        args: list[object] = []
        for h in hs:
            args += (h, 0.0)
        return _Layout(struct.Struct(fmt).pack, args)

    def summary_heads(self, tags: tuple[str, ...]) -> list[bytes]:
        """Each tag's ``Summary.value`` head, in order: what precedes its float32 in a
        summary (the bulk framer, ``_tbcolumns``, fills in the values)."""
        return self._layouts.get(tags).args[0::2]  # type: ignore[return-value]

    def _summary(self, tags: tuple[str, ...], values: Sequence[float]) -> bytes:
        """The ``Summary.value``s of a record's columns: one ``Struct.pack`` for the
        whole sequence (its tags' heads cached per tag sequence), or value by value when
        one is finite but beyond float32 (protobuf writes ±inf)."""
        layout = self._layouts.get(tags)
        args = layout.args.copy()
        args[1::2] = values
        try:
            return layout.pack(*args)
        except OverflowError:
            pass
        heads = self._heads
        parts: list[bytes] = []
        append = parts.append
        for tag, value in zip(tags, values, strict=True):
            head = heads.get(tag) or self._head(tag)
            try:
                append(head + _pack_f(value))
            except OverflowError:  # finite but beyond float32: protobuf gives ±inf
                append(head + (_F32_INF if value > 0 else _F32_NINF))
        return b"".join(parts)

    def encode(self, rec: Record) -> bytes:
        if isinstance(rec, TextRecord) or (
            type(rec) is WriterRecord and (rec.tensor_style or rec.hparams is not None)
        ):
            raise SummaryRecord
        cols = record_columns(rec)
        summary = b"" if cols is None else self._summary(*cols)
        if rec.histograms:
            parts = [summary]
            for h in rec.histograms:
                if h.count:  # all values non-finite: only the <tag>/nonfinite scalar
                    parts.append(encode_histogram(h))
            summary = b"".join(parts)
        wall, step = rec.wall_time, rec.step
        out = b"\x09" + _pack_d(wall) if wall != 0.0 else b""
        if step:
            if not _I64_MIN <= step <= _I64_MAX:  # protobuf's own refusal, not a wrapped step
                raise ValueError(f"Value out of range: {step}")
            out += b"\x10" + varint_bytes(step & _U64)
        if summary:
            n = len(summary)
            key = self._lengths.get(n) or self._length(n)
            out = b"".join((out, key, summary))
        return out

    def _length(self, n: int) -> bytes:
        """``Event.summary``'s key and length ``n`` (cached: a run has a few sizes)."""
        if len(self._lengths) >= _LAYOUTS_MAX:
            self._lengths.clear()
        key = self._lengths[n] = b"\x2a" + varint_bytes(n)
        return key


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
            proto += key + varint_bytes(len(packed)) + packed
    raw = h.tag.encode("utf-8")
    value = b"\x0a" + varint_bytes(len(raw)) + raw + b"\x2a" + varint_bytes(len(proto)) + proto
    return b"\x0a" + varint_bytes(len(value)) + value  # Summary.value


class SummaryRecord(Exception):
    """:meth:`EventEncoder.encode` met a record it does not encode (``_encode`` decides)."""
