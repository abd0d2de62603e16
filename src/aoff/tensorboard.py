"""``from aoff.tensorboard import SummaryWriter``: torch's ``SummaryWriter``, through aoff.

Change one import; the calls, the run folders, tags, steps and values on disk stay what
torch's writer makes (see docs/migrate/summarywriter.md for what is covered, and the
keyword-only extras: the live dashboard, JSONL/CSV/W&B backends, ``remote()``).
"""

from ._adapters._writer import SummaryWriter

__all__ = ["SummaryWriter"]
