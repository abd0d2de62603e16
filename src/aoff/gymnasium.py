"""Gymnasium episode statistics into an aoff run: ``aoff.gymnasium.log_episodes(log, infos)``.

Reads ``RecordEpisodeStatistics`` infos (single and vector envs); see ``docs/guides/gymnasium.md``.
Importing this module does not import Gymnasium.
"""

from ._adapters._gym import episodes_in, log_episodes

__all__ = ["episodes_in", "log_episodes"]

for _obj in (episodes_in, log_episodes):
    _obj.__module__ = __name__
del _obj
