"""A batch of records as TensorBoard event bytes: the fast encoder, or protobuf where needed.

Why a module of its own: the hand-written encoder (``_tbevents``) covers the hot case,
plain scalars and histograms; ``SummaryWriter``'s texts, new-style tensors and HParams
are built with TensorBoard's protobuf classes (``_tbsummaries``, which uses the encoder's
pieces). Choosing between them per record sits above both, so neither imports the other
back.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._core._records import Record, TextRecord, WriterRecord
from ._pieces import Pieces, whole
from ._tbevents import EventEncoder, SummaryRecord
from ._tfrecord import frame_many

__all__ = ["encode_records"]


def encode_records(
    encoder: EventEncoder, records: Sequence[Record], pieces: Pieces = whole
) -> bytes:
    """Serialise one ``Event`` per record and frame them all into one buffer
    (``SummaryWriter``'s texts, tensors and HParams go through ``_tbsummaries``), paced
    by ``pieces``."""
    encode = encoder.encode
    try:
        # encoded and framed record by record: in pieces where the GIL is shared
        return frame_many(map(encode, pieces(records)))
    except SummaryRecord:
        from ._tbsummaries import encode_summary_record, is_summary_record

        out: list[bytes] = []
        for rec in records:
            if isinstance(rec, TextRecord | WriterRecord) and is_summary_record(rec):
                out += encode_summary_record(encoder, rec)
            else:
                out.append(encode(rec))
        return frame_many(out)
