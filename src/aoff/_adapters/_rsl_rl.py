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

:func:`track_episodes` moves rsl_rl's per-env-step episode bookkeeping onto the device:
the runner's ``Logger.process_env_step`` (a ``nonzero`` and two ``.cpu()`` copies every
env step) becomes ``aoff.torch.EpisodeStats.update``, and ``Train/mean_reward`` and
``Train/mean_episode_length`` (the mean of the last 100 episodes, and their ``/time``
series) are written from the iteration's one copy, computed off the training thread,
the same numbers at the same steps.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import statistics
import time
from collections import deque
from typing import Any

from rsl_rl.utils.log_writer import LogWriter as _RslLogWriter

from .._core import _events as ev
from .._core._pending import ABSENT, PendingEvent, Placeholder
from ._episodes import EpisodeRows, EpisodeStats
from ._writer import SummaryWriter

__all__ = ["LogWriter", "env_config", "track_episodes"]

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
    ``dashboard`` is on by default; files are flushed every 10 s (``flush_secs``), as
    rsl_rl's own TensorBoard writer does."""

    def __init__(self, log_dir: str, *, dashboard: bool = True, **options: Any) -> None:
        options.setdefault("flush_secs", 10)  # rsl_rl's own SummaryWriter's
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


# -- rsl_rl's episode bookkeeping on the device ------------------------------------------------
#: what rsl_rl's Logger keeps (its rewbuffer/lenbuffer: deques of 100)
WINDOW = 100


class _Window:
    """The last :data:`WINDOW` episodes' returns and lengths, fed in the order the
    iterations' copies are read (the order their events are drained)."""

    __slots__ = ("lengths", "returns")

    def __init__(self) -> None:
        self.returns: deque[float] = deque(maxlen=WINDOW)
        self.lengths: deque[float] = deque(maxlen=WINDOW)


class _IterationMeans:
    """One iteration's rows, read once into the window; the window's means after them."""

    __slots__ = ("_means", "rows", "window")

    def __init__(self, rows: EpisodeRows, window: _Window) -> None:
        self.rows = rows
        self.window = window
        self._means: tuple[Any, Any] | None = None

    def means(self) -> tuple[Any, Any]:
        if self._means is None:
            returns, lengths = self.rows.value()
            w = self.window
            w.returns.extend(returns.tolist())
            w.lengths.extend(float(n) for n in lengths.tolist())
            if w.returns:  # as rsl_rl: statistics.mean of the window
                self._means = (statistics.mean(w.returns), statistics.mean(w.lengths))
            else:  # no episode has ended yet: rsl_rl writes nothing either
                self._means = (ABSENT, ABSENT)
        return self._means


class _Mean(Placeholder):
    __slots__ = ("index", "iteration")

    def __init__(self, iteration: _IterationMeans, index: int) -> None:
        self.iteration = iteration
        self.index = index

    def ready(self) -> bool:
        return self.iteration.rows.ready()

    def value(self) -> Any:
        return self.iteration.means()[self.index]


def track_episodes(runner: Any) -> EpisodeStats:
    """Move ``runner``'s (an rsl_rl ``OnPolicyRunner``) episode bookkeeping onto the
    device; returns the :class:`~aoff.torch.EpisodeStats` it uses. Call it once, after
    building the runner and before ``learn()``; the runner's ``cfg["logger"]`` must
    select :class:`LogWriter`.

    Every env step, the runner's ``logger.process_env_step`` keeps the episode extras as
    rsl_rl does and hands rewards and dones to ``EpisodeStats.update`` (no ``nonzero``,
    no ``.cpu()``); each iteration, after rsl_rl's ``logger.log``, ``Train/mean_reward``
    and ``Train/mean_episode_length`` at the iteration and their ``/time`` series at
    the elapsed seconds are recorded with values still on their way: the mean of the
    last 100 episodes, as rsl_rl computes it, taken where aoff drains the events.
    rsl_rl's console block then leaves out its two "Mean reward/episode length" lines
    (its own buffers stay empty); aoff's dashboard shows the reward. Not for RND
    (its extrinsic and intrinsic sums): ``NotImplementedError``."""
    logger = runner.logger
    if logger.cfg["algorithm"].get("rnd_cfg"):
        raise NotImplementedError(
            "track_episodes: rsl_rl's RND bookkeeping (extrinsic and intrinsic returns) "
            "is not moved to the device; leave rsl_rl's in place"
        )
    stats = EpisodeStats(logger.num_envs, logger.device)
    window = _Window()
    rsl_log = logger.log

    def process_env_step(
        rewards: Any, dones: Any, extras: dict[str, Any], intrinsic_rewards: Any = None
    ) -> None:
        if logger.writer is None:  # a rank that does not log: rsl_rl keeps no books
            return
        if "episode" in extras:
            logger.ep_extras.append(extras["episode"])
        elif "log" in extras:
            logger.ep_extras.append(extras["log"])
        stats.update(rewards, dones)

    def log(*args: Any, **kwargs: Any) -> None:
        writer = logger.writer
        if writer is None:
            rsl_log(*args, **kwargs)
            return
        if not isinstance(writer, LogWriter):
            raise TypeError(
                "track_episodes: the runner's writer is "
                f"{type(writer).__name__}; select aoff's with "
                'cfg["logger"] = {"class_name": "aoff.rsl_rl:LogWriter"}'
            )
        it = kwargs["it"] if "it" in kwargs else args[0]
        iteration = _IterationMeans(stats.take(), window)
        rsl_log(*args, **kwargs)
        seconds = int(logger.tot_time)  # rsl_rl's log has added this iteration's time
        put = writer._engine._put
        wall = time.time()
        for tag, index, step in (
            ("Train/mean_reward", 0, it),
            ("Train/mean_episode_length", 1, it),
            ("Train/mean_reward/time", 0, seconds),
            ("Train/mean_episode_length/time", 1, seconds),
        ):
            mean = _Mean(iteration, index)
            put(PendingEvent((ev.W_SCALAR, wall, "", tag, mean, step, 0), (mean,)))

    logger.process_env_step = process_env_step
    logger.log = log
    return stats
