"""Tianshou through aoff: ``logger = aoff.tianshou.Logger(SummaryWriter(log_path))``.

Needs ``pip install 'aoff[tianshou]'``; importing this module imports Tianshou (``import
aoff`` does not). A subclass of Tianshou's ``BaseLogger``, usable wherever a trainer takes
one (``logger=``); see ``docs/migrate/tianshou.md`` and ``aoff._adapters._tianshou``.
"""

from ._adapters._tianshou import Logger

__all__ = ["Logger"]

Logger.__module__ = __name__
