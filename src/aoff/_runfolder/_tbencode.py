"""A batch of records as TensorBoard event bytes: the fast encoder, or protobuf where needed.

Why a module of its own: the hand-written encoder (``_tbevents``) covers the hot case,
plain scalars and histograms; ``SummaryWriter``'s texts, new-style tensors and HParams
are built with TensorBoard's protobuf classes (``_tbsummaries``, which uses the encoder's
pieces). Choosing between them per record sits above both, so neither imports the other
back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._core._columns import MIN_RUN, ScalarColumns, column_runs
from .._core._records import StepRecord
from ._pieces import Pieces, whole
from ._tbcolumns import encode_columns
from ._tbevents import EventEncoder, SummaryRecord
from ._tfrecord import frame_many

__all__ = ["encode_records"]


def encode_records(
    encoder: EventEncoder, records: Sequence[StepRecord], pieces: Pieces = whole
) -> bytes:
    """Serialise one ``Event`` per record and frame them all into one buffer
    (``SummaryWriter``'s texts, tensors and HParams go through ``_tbsummaries``), paced
    by ``pieces``. Unpaced, runs of plain records with one tag sequence are framed in
    bulk (``_tbcolumns``: the same bytes), the others record by record."""
    paced = pieces(records)
    if paced is records and len(records) >= MIN_RUN:
        return _in_runs(encoder, records)
    return _per_record(encoder, records, paced)


def _in_runs(encoder: EventEncoder, records: Sequence[StepRecord]) -> bytes:
    """The batch as column runs (bulk) and the records between them (per record)."""
    out: list[bytes] = []
    others: list[StepRecord] = []
    for item in column_runs(records):
        if type(item) is ScalarColumns:
            if others:
                out.append(_per_record(encoder, others, others))
                others = []
            out.append(encode_columns(encoder, item))
        else:
            others.append(item)  # type: ignore[arg-type]
    if others:
        out.append(_per_record(encoder, others, others))
    return b"".join(out)


def _per_record(
    encoder: EventEncoder, records: Sequence[StepRecord], paced: Iterable[StepRecord]
) -> bytes:
    """One ``Event`` a record (``paced``: ``records`` as the pacing hands them out)."""
    encode = encoder.encode
    try:
        # encoded and framed record by record: in pieces where the GIL is shared
        return frame_many(map(encode, paced))
    except SummaryRecord:
        from ._tbsummaries import encode_summary_record, is_summary_record

        out: list[bytes] = []
        for rec in records:
            if is_summary_record(rec):
                out += encode_summary_record(encoder, rec)
            else:
                out.append(encode(rec))
        return frame_many(out)
