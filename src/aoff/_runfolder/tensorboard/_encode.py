"""A batch of records as TensorBoard event bytes: the hand-written encoder, or protobuf
where needed.

The hand-written encoder (``_events``) covers the hot case, plain scalars and
histograms. ``SummaryWriter``'s summaries that are not plain scalars are rare calls, so
they are built here with TensorBoard's own protobuf classes: texts (``add_text``),
new-style scalars (``add_scalar(new_style=True)``) and the HParams plugin's three
summaries (``add_hparams``). What each holds follows
``torch.utils.tensorboard.summary``: ``<tag>/text_summary`` as a one-element string
tensor with the ``text`` plugin's metadata; a one-element ``DT_FLOAT``/``DT_DOUBLE``
tensor with the ``scalars`` plugin; ``_hparams_/experiment``, ``session_start_info``
and ``session_end_info`` (status success), metadata only, no value.

Why apart from ``_events``: that module is the wire format written by hand for speed;
this one chooses per record and builds the rest as torch's writer does, using the
encoder's pieces (so the choice sits here, above it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..._core._columns import MIN_RUN, ScalarColumns, column_runs
from ..._core._records import Record, StepRecord, TextRecord, WriterRecord
from .._pieces import Pieces, whole
from ._columns import column_parts, join_columns
from ._events import EventEncoder, SummaryRecord, encode_histogram
from ._tfrecord import frame_many

__all__ = ["encode_records", "encode_summary_record", "is_summary_record"]


def is_summary_record(rec: Record) -> bool:
    """Whether ``rec`` needs this module (anything beyond simple values/histograms)."""
    match rec:
        case TextRecord():
            return True
        case WriterRecord(tensor_style=style, hparams=hparams):
            return bool(style) or hparams is not None
    return False


def _event(rec: Record, values: list[Any]) -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    event = event_pb2.Event(wall_time=rec.wall_time, summary=summary_pb2.Summary(value=values))
    if rec.step:
        event.step = rec.step
    return bytes(event.SerializeToString())


def _text_value(tag: str, text: str) -> Any:
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2
    from tensorboard.plugins.text import plugin_data_pb2

    meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name="text",
            content=plugin_data_pb2.TextPluginData(version=0).SerializeToString(),
        )
    )
    tensor = tensor_pb2.TensorProto(
        dtype="DT_STRING",
        string_val=[text.encode("utf-8")],
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]
        ),
    )
    return summary_pb2.Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)


def _tensor_scalar(tag: str, value: float, style: int) -> Any:
    from tensorboard.compat.proto import summary_pb2, tensor_pb2

    if style == 2:
        tensor = tensor_pb2.TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        tensor = tensor_pb2.TensorProto(float_val=[value], dtype="DT_FLOAT")
    meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
    )
    return summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=meta)


def _hparams_values(rec: WriterRecord) -> list[Any]:
    """The experiment, session start and session end summaries, in torch's order."""
    from google.protobuf import struct_pb2  # type: ignore[import-untyped]
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
    from tensorboard.plugins.hparams import metadata as hp

    assert rec.hparams is not None
    values, discrete = rec.hparams.values, rec.hparams.discrete
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for k, v in values.items():
        if v is None:
            continue
        # torch's order: a bool is an int, so it is a number here too
        if isinstance(v, int | float):
            start.hparams[k].number_value = v
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        else:  # str (checked by the call)
            start.hparams[k].string_value = str(v)
            kind, field = "DATA_TYPE_STRING", "string_value"
        domain = None
        if k in discrete:
            domain = struct_pb2.ListValue(
                values=[struct_pb2.Value(**{field: d}) for d in discrete[k]]
            )
        infos.append(
            api_pb2.HParamInfo(name=k, type=api_pb2.DataType.Value(kind), domain_discrete=domain)
        )
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=m)) for m in rec.hparams.metrics]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    out = []
    for tag, data in (
        (hp.EXPERIMENT_TAG, plugin_data_pb2.HParamsPluginData(experiment=experiment)),
        (hp.SESSION_START_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_start_info=start)),
        (hp.SESSION_END_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_end_info=end)),
    ):
        data.version = hp.PLUGIN_DATA_VERSION
        meta = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(
                plugin_name=hp.PLUGIN_NAME, content=data.SerializeToString()
            )
        )
        out.append(summary_pb2.Summary.Value(tag=tag, metadata=meta))
    return out


def encode_summary_record(encoder: EventEncoder, rec: TextRecord | WriterRecord) -> list[bytes]:
    """The serialised events of one ``SummaryWriter`` record: one event, except
    ``add_hparams``' (its three summaries, then one event a metric, as torch writes)."""
    from tensorboard.compat.proto import summary_pb2

    if isinstance(rec, TextRecord):
        return [_event(rec, [_text_value(t, s) for t, s in rec.texts])]
    if rec.hparams is not None:
        out = [_event(rec, [v]) for v in _hparams_values(rec)]
        for tag, value in rec.scalars:
            one = StepRecord(rec.step, rec.iteration, rec.wall_time, ((tag, value),))
            out.append(encoder.encode(one))
        return out
    values: list[Any] = []
    if rec.tensor_style:
        values += [_tensor_scalar(t, v, rec.tensor_style) for t, v in rec.scalars]
    elif rec.scalars:
        values += [summary_pb2.Summary.Value(tag=t, simple_value=v) for t, v in rec.scalars]
    for h in rec.histograms:
        values.append(summary_pb2.Summary.Value.FromString(_strip_value_key(encode_histogram(h))))
    return [_event(rec, values)]


def _strip_value_key(summary_value: bytes) -> bytes:
    """``encode_histogram`` gives ``Summary.value`` with its key and length: the value's
    own bytes without them."""
    i = 1
    while summary_value[i] & 0x80:
        i += 1
    return summary_value[i + 1 :]


def encode_records(
    encoder: EventEncoder, records: Sequence[Record], pieces: Pieces = whole
) -> bytes:
    """Serialise one ``Event`` per record and frame them all into one buffer
    (``SummaryWriter``'s texts, tensors and HParams go through :func:`encode_summary_record`), paced
    by ``pieces``. Unpaced, runs of plain records with one tag sequence are framed in
    bulk (``_columns``: the same bytes), the others record by record."""
    paced = pieces(records)
    if paced is records and len(records) >= MIN_RUN:
        return _in_runs(encoder, records)
    return _per_record(encoder, records, paced)


def _in_runs(encoder: EventEncoder, records: Sequence[Record]) -> bytes:
    """The batch as column runs (bulk) and the records between them (per record),
    joined once. Runs in a row with one tag sequence (the fold's tables, one a drained
    slice: ~130 rows each in a batch of 1,024) are framed as one table: a table's ~20
    NumPy calls are paid once, not once a run."""
    out: list[bytes | memoryview] = []
    others: list[Record] = []
    runs: list[ScalarColumns] = []

    def frame_runs() -> None:
        out.extend(column_parts(encoder, runs[0] if len(runs) == 1 else join_columns(runs)))
        runs.clear()

    for item in column_runs(records):
        if type(item) is ScalarColumns:
            if others:
                out.append(_per_record(encoder, others, others))
                others = []
            if runs and item.tags is not runs[0].tags and item.tags != runs[0].tags:
                frame_runs()
            runs.append(item)
        else:
            if runs:
                frame_runs()
            others.append(item)  # type: ignore[arg-type]
    if runs:
        frame_runs()
    if others:
        out.append(_per_record(encoder, others, others))
    return b"".join(out)


def _per_record(encoder: EventEncoder, records: Sequence[Record], paced: Iterable[Record]) -> bytes:
    """One ``Event`` a record (``paced``: ``records`` as the pacing hands them out)."""
    encode = encoder.encode
    try:
        # encoded and framed record by record: in pieces where the GIL is shared
        return frame_many(map(encode, paced))
    except SummaryRecord:
        out: list[bytes] = []
        for rec in records:
            if isinstance(rec, TextRecord | WriterRecord) and is_summary_record(rec):
                out += encode_summary_record(encoder, rec)
            else:
                out.append(encode(rec))
        return frame_many(out)
