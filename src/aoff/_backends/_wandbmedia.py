"""Images and videos for the W&B backend: ``wandb.Image`` (PNG) and ``wandb.Video`` (MP4).

The encoder hands over the encoded bytes; each is written to a file in a temporary
folder (removed when the backend closes) and given to W&B by path, so W&B copies it into
the run's ``media/`` folder and needs neither moviepy nor a second encoding.

The step: W&B's step may not go back, and a video arrives after it was encoded, when the
run may have logged later steps. So an item is logged at its step or, if W&B is already
past it, at W&B's current step (W&B merges it into that step's row), with its own step
in ``<key>/media_step`` (always present).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

from .._core._records import MediaRecord

__all__ = ["MEDIA_FORMATS", "MediaFiles"]

MEDIA_FORMATS = {"image": "png", "video": "mp4"}


class MediaFiles:
    """The temporary files handed to W&B, and the rows that carry them. Use from the
    backend's one W&B thread only."""

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._n = 0

    def _path(self, ext: str) -> str:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="aoff-wandb-media-")
        self._n += 1
        return os.path.join(self._folder.name, f"{self._n}.{ext}")

    def log(self, run: Any, items: Sequence[MediaRecord], last_step: int) -> int:
        """Log ``items`` on ``run``; the step W&B is at afterwards."""
        import wandb

        for rec in items:
            fmt = MEDIA_FORMATS[rec.what]
            path = self._path(fmt)
            with open(path, "wb") as f:
                f.write(rec.encoded[fmt])
            if rec.what == "video":
                value: Any = wandb.Video(path, fps=max(1, round(rec.fps)), format="mp4")
            else:
                value = wandb.Image(path)
            last_step = max(last_step, rec.step)
            run.log({rec.key: value, rec.key + "/media_step": rec.step}, step=last_step)
        return last_step

    def close(self) -> None:
        folder, self._folder = self._folder, None
        if folder is not None:
            folder.cleanup()
