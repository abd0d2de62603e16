"""One summary ``Value``'s scalar when it is not a plain ``simple_value``.

Why a module of its own: TensorBoard shows a ``Value.tensor`` holding one float as a
scalar when the tag's metadata names the ``scalars`` plugin (torch's ``new_style=True``,
TF2's ``tf.summary.scalar``). Decoding a ``TensorProto`` (its dtype, its shape, and the
value in ``tensor_content`` or one of the typed fields) is a protocol of its own, apart
from walking the events (``_evfolder``).
"""

from __future__ import annotations

import struct

from ._wire import F16, F32, F64, Buf, fields, varint

__all__ = ["plugin_name", "tensor_scalar"]

_DT_FLOAT, _DT_DOUBLE, _DT_HALF = 1, 2, 19


def plugin_name(buf: Buf, start: int, end: int) -> str | None:
    """``SummaryMetadata.plugin_data.plugin_name``."""
    for num, wire, s, e in fields(buf, start, end):
        if num == 1 and wire == 2:  # plugin_data
            for n2, w2, s2, e2 in fields(buf, s, e):
                if n2 == 1 and w2 == 2:
                    return buf[s2:e2].decode("utf-8", "replace")
    return None


def tensor_scalar(buf: Buf, start: int, end: int) -> float | None:
    """The one float a 0-d (or one-element) float ``TensorProto`` holds, else ``None``."""
    dtype = 0
    dims = 1
    values: list[float] = []
    content = b""
    for num, wire, s, e in fields(buf, start, end):
        if num == 1 and wire == 0:
            dtype = varint(buf, s)[0]
        elif num == 2 and wire == 2:  # TensorShapeProto
            for n2, w2, s2, e2 in fields(buf, s, e):
                if n2 == 2 and w2 == 2:  # Dim
                    size = 1
                    for n3, w3, s3, _e3 in fields(buf, s2, e2):
                        if n3 == 1 and w3 == 0:
                            size = varint(buf, s3)[0]
                    dims *= size
        elif num == 4 and wire == 2:
            content = bytes(buf[s:e])
        elif num == 5:  # float_val (packed or not)
            raw = buf[s:e]
            values.extend(v for (v,) in F32.iter_unpack(raw[: len(raw) // 4 * 4]))
        elif num == 6:  # double_val
            raw = buf[s:e]
            values.extend(v for (v,) in F64.iter_unpack(raw[: len(raw) // 8 * 8]))
        elif num == 13:  # half_val: int32 bit patterns, packed varints
            pos = s
            while pos < e:
                bits, pos = varint(buf, pos) if wire == 2 else (varint(buf, s)[0], e)
                values.append(F16.unpack(struct.pack("<H", bits & 0xFFFF))[0])
    if dims != 1:
        return None
    if content:
        fmt = {_DT_FLOAT: F32, _DT_DOUBLE: F64, _DT_HALF: F16}.get(dtype)
        if fmt is None or len(content) != fmt.size:
            return None
        return float(fmt.unpack(content)[0])
    if dtype in (_DT_FLOAT, _DT_DOUBLE, _DT_HALF) and len(values) == 1:
        return float(values[0])
    return None
