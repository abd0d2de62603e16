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
from typing import Any

from .._core._histogram_data import Histogram
from .._core._records import StepRecord

__all__ = ["FILE_VERSION", "EventEncoder", "SummaryRecord", "encode_histogram", "load_event_class"]

FILE_VERSION = "brain.Event:2"


def load_event_class() -> Any:
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
        if rec.texts or rec.tensor_style or rec.hparams is not None:
            raise SummaryRecord
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


class SummaryRecord(Exception):
    """:meth:`EventEncoder.encode` met a record it does not encode (``_tbencode`` decides)."""
