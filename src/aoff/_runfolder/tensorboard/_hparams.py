"""TensorBoard's HParams and text summaries of a run's config, built from TB's own protos.

The format half (the events and the HParams file); which version of the config a backend
has written is the backends' own (``aoff._backends._configwrites``).

Why a separate event file: TensorBoard keeps the *first* ``SummaryMetadata`` it reads for
a tag of a run, so the session info written when a run starts can never be amended in
the same file (the root of SB3#1099). aoff therefore keeps the HParams summaries of a run
in a small file of their own, ``events.out.tfevents.0000000000.aoff-hparams.<n>``, and
whenever the config grows (``log_config``) or the run ends (session end info) it writes
the whole set again to a new file (``n + 1``: written to a temporary name, ``fsync``-ed,
renamed) and deletes the old one. So the folder always holds exactly one session start
info, with every key of the run. The ``0000000000`` time sorts the file before the
run's scalar files: readers that go through a folder's files in name order (TensorBoard's
``DirectoryWatcher``) read it first and never skip it. A TensorBoard that is already
running keeps the metadata it read first; one started later (or reloaded) shows every key.

No experiment summary (``_hparams_/experiment``) is written on purpose: TensorBoard uses
*one* run's experiment summary for the whole dashboard, which hides every key the other
runs have (SB3#1099 again). Without one, TensorBoard builds the table from the session
infos of all runs: the union of their keys, each run's values. Its metric columns are
then the runs' scalar tags, among them the two the TensorBoard backend writes at the end
of a run: ``hparams/reward_mean_last`` and ``hparams/reward_mean_best``.

The text table (tag ``hyperparameters``, text plugin) is the markdown table CleanRL
writes, ``|param|value|``; it goes into the scalar event file at a step, once when the
run starts and again (with all keys) whenever keys are added.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any

from ..._core._config import ConfigValue
from .._replace import replaced
from ._files import HPARAMS_STAGING_PREFIX, hparams_name, hparams_seq
from ._tfrecord import frame_many, write_all

__all__ = [
    "TEXT_TAG",
    "hparams_file_events",
    "hparams_files",
    "text_table",
    "text_table_event",
    "write_hparams_file",
]

#: the text plugin's tag of the config's table
TEXT_TAG = "hyperparameters"


def _cell(v: object) -> str:
    text = v if isinstance(v, str) else json.dumps(v)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def text_table(values: Mapping[str, ConfigValue]) -> str:
    """The markdown table: ``|param|value|``, one row a key, in the config's order."""
    rows = "\n".join(f"|{_cell(k)}|{_cell(v)}|" for k, v in values.items())
    return "|param|value|\n|-|-|\n" + rows


def text_table_event(values: Mapping[str, ConfigValue], step: int, wall_time: float) -> bytes:
    """A serialised ``Event`` with the table as a text-plugin string tensor."""
    from tensorboard.compat.proto import (
        event_pb2,
        summary_pb2,
        tensor_pb2,
        tensor_shape_pb2,
        types_pb2,
    )
    from tensorboard.plugins.text import metadata as text_metadata

    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(),
        string_val=[text_table(values).encode("utf-8")],
    )
    value = summary_pb2.Summary.Value(
        tag=TEXT_TAG,
        metadata=text_metadata.create_summary_metadata("hyperparameters", ""),
        tensor=tensor,
    )
    event = event_pb2.Event(
        wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=[value])
    )
    return bytes(event.SerializeToString())


def _set_hparam(target: Any, v: ConfigValue) -> None:
    """Fill one ``google.protobuf.Value`` of ``SessionStartInfo.hparams``."""
    if isinstance(v, bool):
        target.bool_value = v
    elif isinstance(v, int | float):
        target.number_value = float(v)
    elif isinstance(v, str):
        target.string_value = v
    else:  # None and lists
        target.string_value = json.dumps(v)


def hparams_file_events(
    values: Mapping[str, ConfigValue],
    *,
    start_time: float,
    end_time: float | None = None,
    interrupted: bool = False,
) -> list[bytes]:
    """The serialised events of the HParams file: session start info (all keys), and
    session end info once the run has ended (``end_time``)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
    from tensorboard.plugins.hparams import metadata as hp_metadata

    def event(tag: str, data: Any, wall: float) -> bytes:
        value = summary_pb2.Summary.Value(
            tag=tag,
            metadata=hp_metadata.create_summary_metadata(data),
            tensor=hp_metadata.NULL_TENSOR,
        )
        ev = event_pb2.Event(wall_time=wall, summary=summary_pb2.Summary(value=[value]))
        return bytes(ev.SerializeToString())

    start = plugin_data_pb2.SessionStartInfo(start_time_secs=start_time)
    for k, v in values.items():
        _set_hparam(start.hparams[k], v)
    out = [
        event(
            hp_metadata.SESSION_START_INFO_TAG,
            plugin_data_pb2.HParamsPluginData(session_start_info=start),
            start_time,
        )
    ]
    if end_time is not None:
        status = api_pb2.STATUS_FAILURE if interrupted else api_pb2.STATUS_SUCCESS
        end = plugin_data_pb2.SessionEndInfo(status=status, end_time_secs=end_time)
        out.append(
            event(
                hp_metadata.SESSION_END_INFO_TAG,
                plugin_data_pb2.HParamsPluginData(session_end_info=end),
                end_time,
            )
        )
    return out


def hparams_files(log_dir: str) -> list[tuple[int, str]]:
    """``(n, path)`` of the HParams files in ``log_dir``, oldest first."""
    try:
        names = os.listdir(log_dir)
    except FileNotFoundError:
        return []
    found: list[tuple[int, str]] = []
    for name in names:
        seq = hparams_seq(name)
        if seq is not None:
            found.append((seq, os.path.join(log_dir, name)))
    return sorted(found)


def write_hparams_file(log_dir: str, events: list[bytes], file_version: bytes) -> str:
    """Write ``file_version`` then ``events`` as the folder's new HParams file (temporary
    name, ``fsync``, rename) and delete the older ones; return its path."""
    old = hparams_files(log_dir)
    seq = old[-1][0] + 1 if old else 1
    path = os.path.join(log_dir, hparams_name(seq))
    with replaced(path, prefix=HPARAMS_STAGING_PREFIX) as f:
        write_all(f, frame_many([file_version, *events]))
    for _, p in old:
        with contextlib.suppress(OSError):
            os.unlink(p)
    return path
