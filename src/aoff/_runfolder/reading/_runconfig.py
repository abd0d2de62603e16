"""A run's config read back: ``config.json``, else aoff's HParams event file.

Why a module of its own: ``--where config.KEY`` filters runs by their config, and the
config is on disk in one of two forms, whichever backends the run had: the JSONL and
CSV backends' ``config.json`` (one JSON object, ``_configfile``), or the TensorBoard
backend's HParams file (``tensorboard/_hparams``: a session start info whose values are numbers,
booleans or texts; ``None`` and lists were stored as JSON text and come back as such).
Both give the flattened keys the run was given (``sac/tau``).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

from .._configfile import CONFIG_NAME
from ..tensorboard._hparams import hparams_files
from ..tensorboard._tfrecord import masked_crc32c

__all__ = ["read_config"]


def read_config(run_dir: str) -> dict[str, Any]:
    """The run's config (``{}`` when it has none, or it cannot be read)."""
    try:
        with open(os.path.join(run_dir, CONFIG_NAME), "rb") as f:
            got = json.loads(f.read())
        if isinstance(got, dict):
            return got
    except (OSError, ValueError):
        pass
    files = hparams_files(run_dir)
    if not files:
        return {}
    try:
        with open(files[-1][1], "rb") as f:
            data = f.read()
    except OSError:
        return {}
    return _hparams(data)


def _records(data: bytes) -> list[bytes]:
    """The records of a TFRecord file whose checksums hold (the rest is not read)."""
    out: list[bytes] = []
    at = 0
    while at + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        end = at + 12 + n + 4
        if end > len(data):
            break
        payload = data[at + 12 : at + 12 + n]
        (crc,) = struct.unpack_from("<I", data, at + 12 + n)
        if crc != masked_crc32c(payload):
            break
        out.append(payload)
        at = end
    return out


def _hparams(data: bytes) -> dict[str, Any]:
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams import metadata as hp_metadata
    from tensorboard.plugins.hparams import plugin_data_pb2

    config: dict[str, Any] = {}
    for payload in _records(data):
        try:
            ev = event_pb2.Event.FromString(payload)
            for v in ev.summary.value:
                if v.tag != hp_metadata.SESSION_START_INFO_TAG:
                    continue
                content = v.metadata.plugin_data.content
                info = plugin_data_pb2.HParamsPluginData.FromString(content)
                for key, value in info.session_start_info.hparams.items():
                    kind = value.WhichOneof("kind")
                    if kind == "bool_value":
                        config[key] = value.bool_value
                    elif kind == "number_value":
                        num = value.number_value
                        config[key] = int(num) if num.is_integer() and abs(num) < 2**53 else num
                    elif kind == "string_value":
                        config[key] = value.string_value
        except DecodeError:
            continue
    return config
