"""rsl_rl (Isaac Lab, mjlab) through aoff.

Select the writer with ``cfg["logger"] = {"class_name": "aoff.rsl_rl:LogWriter"}``.

Needs ``pip install 'aoff[rsl-rl]'``; importing this module imports rsl_rl (``import aoff``
does not). See ``docs/migrate/rsl_rl.md`` and ``aoff._adapters._rsl_rl``.
"""

from ._adapters._rsl_rl import LogWriter, env_config, track_episodes

__all__ = ["LogWriter", "env_config", "track_episodes"]

for _obj in (LogWriter, env_config, track_episodes):
    _obj.__module__ = __name__
del _obj
