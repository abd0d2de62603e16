"""PyTorch helpers for loops that keep their environments on the device.

``EpisodeStats(num_envs, device)``: per-environment episode returns and lengths updated
every env step without a host sync, handed to the run once an iteration
(``stats.log_to(log)``); see docs/guides/tensors.md and ``aoff._adapters._episodes``.
Importing this module imports torch (``import aoff`` does not).
"""

from ._adapters._episodes import EpisodeStats

__all__ = ["EpisodeStats"]

EpisodeStats.__module__ = __name__
