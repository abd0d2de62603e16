"""TorchRL through aoff: ``logger = aoff.torchrl.Logger(exp_name, log_dir)``.

Needs ``pip install 'aoff[torchrl]'``; importing this module imports TorchRL (``import
aoff`` does not). A subclass of ``torchrl.record.loggers.Logger``, usable wherever TorchRL
takes one; see ``docs/migrate/torchrl.md`` and ``aoff._adapters._torchrl``.
"""

from ._adapters._torchrl import Logger

__all__ = ["Logger"]

Logger.__module__ = __name__
