"""Gymnasium into an aoff run: ``aoff.gymnasium.log_episodes(log, infos)`` and
``aoff.gymnasium.record_video(env, log)``.

``log_episodes`` reads ``RecordEpisodeStatistics`` infos (single and vector envs);
``record_video`` wraps an ``rgb_array`` env and logs every N-th episode as a video
(encoded in the agent); see ``docs/guides/gymnasium.md``. Importing this module does not
import Gymnasium.
"""

from typing import Any

from ._adapters._gym import episodes_in, log_episodes

__all__ = ["episodes_in", "log_episodes", "record_video"]


def record_video(
    env: Any,
    log: Any,
    *,
    every: int = 10,
    key: str = "episode/video",
    fps: float | None = None,
    on_alert: bool = False,
) -> Any:
    """``env`` wrapped so that every ``every``-th episode (the first included) goes to
    ``log.log_video(key, frames, fps=fps)`` when it ends: ``fps`` defaults to the env's
    ``metadata["render_fps"]``, else 30. The env needs ``render_mode="rgb_array"``;
    ``log`` is the run's logger, or a ``log.remote()`` in a sub-env's process.
    ``on_alert=True``: the episode after each alert (``log.alerts``) is recorded too."""
    from ._adapters._gym_video import EpisodeVideo

    return EpisodeVideo(env, log, every=every, key=key, fps=fps, on_alert=on_alert)


for _obj in (episodes_in, log_episodes, record_video):
    _obj.__module__ = __name__
del _obj
