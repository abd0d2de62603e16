"""A batch of records as TensorBoard event bytes: the fast encoder, or protobuf where needed.

Why a module of its own: the hand-written encoder (``_tbevents``) covers the hot case,
plain scalars and histograms; ``SummaryWriter``'s texts, new-style tensors and HParams
are built with TensorBoard's protobuf classes (``_tbsummaries``, which uses the encoder's
pieces). Choosing between them per record sits above both, so neither imports the other
back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from .._core._records import StepRecord
from .._core._turns import RECORDS_A_PIECE, pause, shared
from ._tbevents import EventEncoder, SummaryRecord
from ._tfrecord import frame_many

__all__ = ["encode_records"]


def _in_pieces(
    encode: Callable[[StepRecord], bytes], records: Sequence[StepRecord]
) -> Iterator[bytes]:
    """Each record's event, with a GIL pause every ``RECORDS_A_PIECE`` (framed as they
    come, so the framing is cut into the same pieces): where the training loop shares
    this process (``_core/_turns``), it never waits for a whole batch."""
    for i, rec in enumerate(records):
        if i and not i % RECORDS_A_PIECE:
            pause()
        yield encode(rec)


def encode_records(encoder: EventEncoder, records: Sequence[StepRecord]) -> bytes:
    """Serialise one ``Event`` per record and frame them all into one buffer
    (``SummaryWriter``'s texts, tensors and HParams go through ``_tbsummaries``)."""
    encode = encoder.encode
    try:
        if shared() and len(records) > RECORDS_A_PIECE:
            return frame_many(_in_pieces(encode, records))
        return frame_many([encode(rec) for rec in records])
    except SummaryRecord:
        from ._tbsummaries import encode_summary_record, is_summary_record

        out: list[bytes] = []
        for rec in records:
            if is_summary_record(rec):
                out += encode_summary_record(encoder, rec)
            else:
                out.append(encode(rec))
        return frame_many(out)
