"""A run's config read back: ``config.json``, else aoff's HParams event file, else what
other writers leave in their event files.

Why a module of its own: ``--where config.KEY`` filters runs by their config, and the
config is on disk in one of several forms, whichever tool wrote the run:

* the JSONL and CSV backends' ``config.json`` (one JSON object, ``_configfile``);
* the TensorBoard backend's HParams file (``tensorboard/_hparams``: a session start info
  whose values are numbers, booleans or texts; ``None`` and lists were stored as JSON
  text and come back as such);
* torch's ``SummaryWriter.add_hparams`` (and tensorboardX's): a session start info in an
  event file of the run folder or of a folder below it (torch writes it in a sub-folder
  named by the time); torch stores a boolean as a number (``True`` reads back ``1``);
* CleanRL's hyperparameter table, ``writer.add_text("hyperparameters",
  "|param|value|\n|-|-|\n|seed|1|...")``: each cell as Python printed it, read back by
  its spelling: ``True``/``False`` as booleans, ``None`` as null, an int or a float as a
  number, anything else as the text.

A session start info wins over a text table; the later of several (folders in name
order, records in file order) over the earlier, key by key. The event files are searched
for the two tags at memory speed; only the records that hold one are decoded.
"""

from __future__ import annotations

import json
import os
import re
import struct
from typing import Any

from .._configfile import CONFIG_NAME
from ..tensorboard._files import event_folders
from ..tensorboard._hparams import TEXT_TAG, hparams_files
from ..tensorboard._tfrecord import masked_crc32c

__all__ = ["read_config", "table_config"]

_START_TAG = b"_hparams_/session_start_info"
_TEXT_TAG = TEXT_TAG.encode()
#: the text plugin's tags of the table: as written (tensorboardX, aoff), and as torch's
#: ``add_text`` writes it
_TEXT_TAGS = (TEXT_TAG, TEXT_TAG + "/text_summary")
_INT = re.compile(r"[+-]?\d+")
_WORDS: dict[str, Any] = {"True": True, "False": False, "None": None}


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
    if files:
        try:
            with open(files[-1][1], "rb") as f:
                data = f.read()
        except OSError:
            return {}
        return _from_records(_records(data))[0]
    return _from_event_files(run_dir)


def _from_event_files(run_dir: str) -> dict[str, Any]:
    """The config other writers left in the run's event files (``add_hparams``, else
    CleanRL's table), ``{}`` when none did."""
    started: dict[str, Any] = {}
    texted: dict[str, Any] = {}
    for _, files in sorted(event_folders(run_dir).items()):
        for path in files:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            start, text = _from_records(_holding(data, (_START_TAG, _TEXT_TAG)))
            started.update(start)
            texted.update(text)
    return started or texted


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


def _holding(data: bytes, needles: tuple[bytes, ...]) -> list[bytes]:
    """The records of a TFRecord file that hold one of ``needles`` (their checksums
    held): the bytes are searched first, and the records are walked only up to the last
    hit, by their lengths."""
    hits: list[int] = []
    for needle in needles:
        at = data.find(needle)
        while at >= 0:
            hits.append(at)
            at = data.find(needle, at + len(needle))
    if not hits:
        return []
    hits.sort()
    out: list[bytes] = []
    at = i = 0
    while i < len(hits) and at + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        start, end = at + 12, at + 12 + n
        if end + 4 > len(data):
            break
        if hits[i] < end:
            payload = data[start:end]
            if hits[i] >= start and data[end : end + 4] == struct.pack(
                "<I", masked_crc32c(payload)
            ):
                out.append(payload)
            while i < len(hits) and hits[i] < end:
                i += 1
        at = end + 4
    return out


def _from_records(payloads: list[bytes]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The hparams of the session start infos, and of the hyperparameter tables, in
    ``payloads`` (event records; those that are not events are passed over)."""
    if not payloads:
        return {}, {}
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams import metadata as hp_metadata
    from tensorboard.plugins.hparams import plugin_data_pb2

    started: dict[str, Any] = {}
    texted: dict[str, Any] = {}
    for payload in payloads:
        try:
            ev = event_pb2.Event.FromString(payload)
            for v in ev.summary.value:
                if v.tag in _TEXT_TAGS and v.metadata.plugin_data.plugin_name == "text":
                    for cell in v.tensor.string_val:
                        texted.update(table_config(cell.decode("utf-8", "replace")))
                if v.tag != hp_metadata.SESSION_START_INFO_TAG:
                    continue
                content = v.metadata.plugin_data.content
                info = plugin_data_pb2.HParamsPluginData.FromString(content)
                for key, value in info.session_start_info.hparams.items():
                    kind = value.WhichOneof("kind")
                    if kind == "bool_value":
                        started[key] = value.bool_value
                    elif kind == "number_value":
                        num = value.number_value
                        started[key] = int(num) if num.is_integer() and abs(num) < 2**53 else num
                    elif kind == "string_value":
                        started[key] = value.string_value
        except DecodeError:
            continue
    return started, texted


def _cells(line: str) -> list[str]:
    """A markdown table row's cells (``\\|`` and ``\\\\`` as aoff's table escapes them)."""
    cells: list[str] = []
    cell: list[str] = []
    chars = iter(line.strip()[1:])
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            cell.append(nxt if nxt in ("|", "\\") else c + nxt)
        elif c == "|":
            cells.append("".join(cell).strip())
            cell = []
        else:
            cell.append(c)
    return cells


def _value(text: str) -> Any:
    if text in _WORDS:
        return _WORDS[text]
    if _INT.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def table_config(text: str) -> dict[str, Any]:
    """The ``|param|value|`` markdown table CleanRL writes as a config: each row's first
    cell the key, its second the value, read by its spelling (``True``, ``False``,
    ``None``, an int, a float; else the text). The header row and the ``|-|-|`` rule are
    passed over, as is any line that is not a row of two cells or more."""
    config: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip().startswith("|"):
            continue
        cells = _cells(line)
        if len(cells) < 2 or (cells[0], cells[1]) == ("param", "value"):
            continue
        if set(cells[0]) <= set("-: ") and set(cells[1]) <= set("-: "):
            continue  # the rule under the header
        config[cells[0]] = _value(cells[1])
    return config
