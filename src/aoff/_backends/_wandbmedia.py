"""Images and videos for W&B-style backends: ``<lib>.Image`` (PNG) and ``<lib>.Video`` (MP4).

Why shared: trackio mirrors W&B's media API (``Image(path)``, ``Video(path, fps=,
format=)``), so the W&B and trackio backends hand their media over the same way, written
once here. The encoder hands over the encoded bytes; each is written to a file in a
temporary folder (removed when the backend closes) and given to the library by path, so
it copies the file into its own store and needs neither moviepy nor a second encoding.

The step (W&B's, :meth:`MediaFiles.log`; trackio logs each item at its own step): W&B's
step may not go back, and a video arrives after it was encoded, when the run may have
logged later steps. So an item is logged at its step or, if W&B is already past it, at
W&B's current step (W&B merges it into that step's row), with its own step in
``<key>/media_step`` (always present).
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from .._core._records import MediaRecord

__all__ = ["MEDIA_FORMATS", "MediaFiles"]

MEDIA_FORMATS = {"image": "png", "video": "mp4"}


class MediaFiles:
    """The temporary files handed to ``lib`` (``"wandb"`` or ``"trackio"``), and the
    media values that carry them. Use from the backend's one library thread only."""

    def __init__(self, lib: str = "wandb") -> None:
        self._lib = lib
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._n = 0

    def _path(self, ext: str) -> str:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix=f"aoff-{self._lib}-media-")
        self._n += 1
        return os.path.join(self._folder.name, f"{self._n}.{ext}")

    def values(self, items: Sequence[MediaRecord]) -> Iterator[tuple[MediaRecord, Any]]:
        """Each item with the library's ``Image``/``Video`` of its bytes, written to a file."""
        lib = importlib.import_module(self._lib)
        for rec in items:
            fmt = MEDIA_FORMATS[rec.what]
            path = self._path(fmt)
            with open(path, "wb") as f:
                f.write(rec.encoded[fmt])
            if rec.what == "video":
                yield rec, lib.Video(path, fps=max(1, round(rec.fps)), format="mp4")
            else:
                yield rec, lib.Image(path)

    def log(self, run: Any, items: Sequence[MediaRecord], last_step: int) -> int:
        """Log ``items`` on the W&B ``run``; the step W&B is at afterwards."""
        for rec, value in self.values(items):
            last_step = max(last_step, rec.step)
            run.log({rec.key: value, rec.key + "/media_step": rec.step}, step=last_step)
        return last_step

    def close(self) -> None:
        folder, self._folder = self._folder, None
        if folder is not None:
            folder.cleanup()
