"""Stable-Baselines3 through aoff: ``model.set_logger(aoff.sb3.configure(folder, formats))``.

Needs ``pip install 'aoff[sb3]'``; importing this module imports Stable-Baselines3
(``import aoff`` does not). See ``docs/migrate/sb3.md`` and ``aoff._adapters._sb3`` for what each
format string means and how a dump maps onto aoff's logger.
"""

from ._adapters._sb3 import FORMATS, AoffLogger, AoffOutputFormat, configure

__all__ = ["FORMATS", "AoffLogger", "AoffOutputFormat", "configure"]

for _obj in (AoffLogger, AoffOutputFormat, configure):
    _obj.__module__ = __name__
del _obj
