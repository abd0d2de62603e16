"""Images and videos as files under ``<log_dir>/media/``, for the JSONL and CSV backends.

An image is a PNG, a video an MP4 (H.264, PyAV); the file is named after the key (every
character that is not a letter, digit, ``-``, ``_`` or ``.`` as ``_``), the step and the
wall time in milliseconds (``eval_episode_s120_1733380000123.mp4``), so the JSONL and
CSV backends of one run name the same file and write it once (``open(..., "xb")``: the
second finds it there). Each backend then adds one row that points to it::

    {"step": 120, "wall_time": 1733380000.12, "media": "video",
     "eval/episode": "media/eval_episode_s120_1733380000123.mp4"}

(the CSV row has the same cells; the path is relative to ``log_dir``). ``aoff show``
skips these rows (they hold no numbers).
"""

from __future__ import annotations

import os
import re

from .._core._records import MediaRecord

__all__ = ["MEDIA_FORMATS", "media_row", "write_media_file"]

#: what the JSONL and CSV backends ask the media encoder for
MEDIA_FORMATS = {"image": "png", "video": "mp4"}
MEDIA_DIR = "media"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def relative_path(rec: MediaRecord) -> str:
    fmt = MEDIA_FORMATS[rec.what]
    name = f"{_UNSAFE.sub('_', rec.key)[:100]}_s{rec.step}_{round(rec.wall_time * 1000)}.{fmt}"
    return f"{MEDIA_DIR}/{name}"


def write_media_file(log_dir: str, rec: MediaRecord) -> str:
    """Write ``rec``'s file (unless the other file backend did); its relative path."""
    rel = relative_path(rec)
    path = os.path.join(log_dir, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = rec.encoded[MEDIA_FORMATS[rec.what]]
    try:
        f = open(path, "xb")  # noqa: SIM115 - closed by the with below
    except FileExistsError:
        return rel
    with f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return rel


def media_row(rec: MediaRecord, rel: str) -> dict[str, object]:
    return {"step": rec.step, "wall_time": rec.wall_time, "media": rec.what, rec.key: rel}
