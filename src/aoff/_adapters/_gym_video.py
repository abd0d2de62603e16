"""Episode videos from a Gymnasium env: ``aoff.gymnasium.record_video(env, log)``.

Why a wrapper of our own rather than Gymnasium's ``RecordVideo``: that one encodes an
MP4 with moviepy on the process that steps the env (the training loop or a collector).
This one only keeps each recorded episode's ``env.render()`` frames and, when the
episode ends, hands them to ``log.log_video`` once: the caller pays one copy, the agent
encodes (see ``_media/``).

Every ``every``-th episode is recorded (the 1st, the ``every + 1``-th, ...), and with
``on_alert=True`` also the episode that starts after a rule of the run fired
(``log.alerts`` grew), so that the video of the moment it went wrong exists; from the
``reset`` frame to the last step's; an episode cut short by another ``reset`` or by
``close`` is dropped. The env must have ``render_mode="rgb_array"``. ``log`` is any
aoff logger with ``log_video``: the run's own (sync face), or a ``log.remote()`` for a
sub-env that runs in another process (``AsyncVectorEnv``). For a vector env, wrap the
sub-env(s) to record before vectorising (CleanRL records env 0).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

__all__ = ["EpisodeVideo"]


class EpisodeVideo(gymnasium.Wrapper[Any, Any, Any, Any]):
    def __init__(
        self,
        env: Any,
        log: Any,
        *,
        every: int,
        key: str,
        fps: float | None,
        on_alert: bool = False,
    ) -> None:
        super().__init__(env)
        if env.render_mode != "rgb_array":
            raise ValueError(
                f"aoff.gymnasium.record_video: the env must have render_mode='rgb_array', "
                f"got {env.render_mode!r}"
            )
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(
                f"aoff.gymnasium.record_video: every must be an int >= 1, got {every!r}"
            )
        if not callable(getattr(log, "log_video", None)):
            raise TypeError(f"aoff.gymnasium.record_video: {type(log).__name__} has no log_video")
        self._log = log
        self._every = every
        self._key = key
        self._fps = float(fps or env.metadata.get("render_fps") or 30)
        self._episode = -1
        self._frames: list[Any] | None = None
        if not isinstance(on_alert, bool):
            raise TypeError(
                f"aoff.gymnasium.record_video: on_alert must be a bool, got {on_alert!r}"
            )
        # on_alert: the alerts seen at the last reset (a logger without ``alerts``, e.g.
        # a producer's, never triggers one)
        self._on_alert = on_alert
        self._alerts_seen = self._alert_count()

    def _alert_count(self) -> int:
        return len(getattr(self._log, "alerts", ())) if self._on_alert else 0

    def _alerted(self) -> bool:
        """A new alert since the last reset: this episode is recorded (one attribute read)."""
        if not self._on_alert:
            return False
        n = self._alert_count()
        new, self._alerts_seen = n > self._alerts_seen, n
        return new

    def reset(self, **kwargs: Any) -> Any:
        out = self.env.reset(**kwargs)
        self._episode += 1
        alerted = self._alerted()
        self._frames = [] if alerted or self._episode % self._every == 0 else None
        self._grab()
        return out

    def step(self, action: Any) -> Any:
        out = self.env.step(action)
        if self._frames is not None:
            self._grab()
            if out[2] or out[3]:  # terminated or truncated
                frames, self._frames = self._frames, None
                self._log.log_video(self._key, np.stack(frames), fps=self._fps)
        return out

    def _grab(self) -> None:
        if self._frames is not None:
            frame: Any = self.env.render()
            if frame is not None:
                self._frames.append(np.asarray(frame))

    def close(self) -> None:
        self._frames = None
        close_env: Any = super().close  # untyped in some gymnasium releases
        close_env()
