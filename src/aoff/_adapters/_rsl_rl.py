"""``aoff.rsl_rl.LogWriter``: rsl_rl's writer plug-in point, through aoff.

Why: rsl_rl (the learning library under Isaac Lab and mjlab) takes outside writers
instead of growing backends: ``cfg["logger"] = {"class_name": "module:Class", ...}``
names a subclass of ``rsl_rl.utils.log_writer.LogWriter``, built as
``Class(log_dir=..., **the other keys)``. Its default writer is torch's
``SummaryWriter``, whose ``add_scalar`` builds a protobuf on the training thread; this
one is :class:`aoff.tensorboard.SummaryWriter` (the same tags, steps and values in the
same run folder, written by aoff's agent) with rsl_rl's optional calls mapped onto
aoff's:

``add_scalar``    the writer's own (a CUDA tensor is copied without a sync)
``store_config``  the run's config: ``{"train_cfg": ..., "env_cfg": ...}`` through
                  ``log_config`` (TensorBoard's HParams and text table, config.json, W&B)
``save_model``    the run's last checkpoint (``log_save``, the final summary) and a text
                  summary ``rsl_rl/models`` at the iteration naming the file
``save_file``     a text summary ``rsl_rl/files`` naming the file (the git diffs rsl_rl
                  stores at the start)
``save_video``    the MP4 decoded here (PyAV) and logged once per file name at the
                  iteration as the video ``video`` (rsl_rl calls it with every MP4 under
                  the log folder every iteration, as its W&B writer expects)
``stop``          ``close()``: everything written, the run's summary printed

The dashboard is on by default and shows the run from the first call.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any

from rsl_rl.utils.log_writer import LogWriter as _RslLogWriter

from ._writer import SummaryWriter

__all__ = ["LogWriter", "env_config"]

#: the video tag (rsl_rl's W&B writer's)
VIDEO_TAG = "video"


def env_config(env_cfg: object) -> Any:
    """An environment config as data: a dict as it is, Isaac Lab's ``configclass``
    (``to_dict()``), a dataclass (``asdict``), else its ``vars()`` (what log_config cannot
    hold as JSON is stored as ``str()``, with one warning)."""
    if isinstance(env_cfg, dict) or env_cfg is None:
        return env_cfg
    to_dict = getattr(env_cfg, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(env_cfg) and not isinstance(env_cfg, type):
        return dataclasses.asdict(env_cfg)
    return dict(vars(env_cfg)) if hasattr(env_cfg, "__dict__") else str(env_cfg)


def _decode_mp4(path: pathlib.Path) -> tuple[Any, float]:
    """Every frame of a video file as a ``(T, H, W, 3)`` uint8 array, and its frame rate."""
    import av
    import numpy as np

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        rate = stream.average_rate
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    if not frames:
        raise ValueError(f"save_video: {path} has no video frames")
    return np.stack(frames), float(rate) if rate else 30.0


class LogWriter(SummaryWriter, _RslLogWriter):  # type: ignore[misc]  # rsl_rl is untyped
    """rsl_rl's ``LogWriter``, writing through aoff: select it with
    ``cfg["logger"] = {"class_name": "aoff.rsl_rl:LogWriter"}`` (more keys: keyword
    arguments of :class:`aoff.tensorboard.SummaryWriter`, e.g. ``"backends": ["jsonl"]``
    or ``"total_steps": 1500`` for the dashboard's ETA).
    ``dashboard`` is on by default."""

    def __init__(self, log_dir: str, *, dashboard: bool = True, **options: Any) -> None:
        super().__init__(log_dir, dashboard=dashboard, **options)
        self._videos: set[str] = set()

    def store_config(self, env_cfg: dict[str, Any] | object, train_cfg: dict[str, Any]) -> None:
        """The run's config: ``train_cfg`` and ``env_cfg`` (made data by :func:`env_config`)."""
        self._engine.log_config({"train_cfg": train_cfg, "env_cfg": env_config(env_cfg)})

    def save_model(self, model_path: str, it: int) -> None:
        """Name the checkpoint in the run (the final summary's last checkpoint)."""
        path = os.fspath(model_path)
        self._engine.log_save(path)
        self.add_text("rsl_rl/models", path, it)

    def save_file(self, path: str) -> None:
        """Name a file in the run (a text summary)."""
        self.add_text("rsl_rl/files", os.fspath(path))

    def save_video(self, video: pathlib.Path, it: int) -> None:
        """Log an MP4 once per file name, at iteration ``it``, as the video ``video``."""
        video = pathlib.Path(video)
        if video.name in self._videos:
            return
        frames, fps = _decode_mp4(video)
        self._videos.add(video.name)
        self._engine.log_video(VIDEO_TAG, frames, step=it, fps=fps)

    def stop(self) -> None:
        """Finish the run (``close()``)."""
        self.close()
