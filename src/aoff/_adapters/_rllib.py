"""``aoff.ray.RLlibEpisodeStats``: an RLlib callback that keeps each episode value's min, max
and mean.

Why: RLlib's new API stack logs custom metrics through its ``MetricsLogger``, one
reduction a key; the old stack's automatic ``_min``/``_max``/``_mean`` of every custom
metric is gone (ray-project/ray #49138), so a value logged once per episode shows only
its mean. This callback logs each value of :meth:`RLlibEpisodeStats.values` three times at
the end of every episode, as ``aoff/<name>_mean`` (over RLlib's usual 100-episode
window), ``aoff/<name>_min`` and ``aoff/<name>_max`` (over the episodes of the
iteration): they reach the training results under ``env_runners``, and from there
Tune's loggers and :class:`aoff.ray.TuneCallback`. It runs where RLlib runs callbacks
(the env runners); nothing of aoff's is started there.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback

__all__ = ["RLlibEpisodeStats"]

#: RLlib's own window for its episode means (``metrics_num_episodes_for_smoothing``)
_WINDOW = 100


class RLlibEpisodeStats(RLlibCallback):
    """``config.callbacks(aoff.ray.RLlibEpisodeStats)``: every episode's return and length
    (and whatever a subclass's :meth:`values` adds) with min, max and mean kept."""

    def values(self, episode: Any) -> dict[str, float]:
        """The values of one finished episode: ``episode_return`` and ``episode_len``.
        Override (and extend ``super().values(episode)``) to add your own."""
        return {"episode_return": float(episode.get_return()), "episode_len": float(len(episode))}

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        """Log :meth:`values` with ``mean``, ``min`` and ``max`` reductions."""
        if metrics_logger is None:  # the old API stack: no MetricsLogger to log into
            return
        for name, value in self.values(episode).items():
            value = float(value)  # a NaN stays one: the run's nonfinite rule sees it
            metrics_logger.log_value(f"aoff/{name}_mean", value, reduce="mean", window=_WINDOW)
            metrics_logger.log_value(f"aoff/{name}_min", value, reduce="min")
            metrics_logger.log_value(f"aoff/{name}_max", value, reduce="max")
