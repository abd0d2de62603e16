"""aoff: an asyncio-native training logger for off-policy RL.

The hot path (``log_step`` and every ``update_*``) only records an event; one background
pump folds events into the dashboard state and writes TensorBoard/W&B/JSONL in batches.
Public names only; the implementation lives in the ``_``-prefixed modules.
"""

from typing import TYPE_CHECKING, Any

from ._backend import Backend, BackendContext
from ._bridge import OffPolicyLogger
from ._buffer import DEFAULT_CAPACITY, Overflow
from ._core import AoffWarning
from ._dashboard import Dashboard
from ._display_api import Display, NullDisplay
from ._logger import AsyncOffPolicyLogger
from ._pump import FinishReport
from ._state import RunConfig, State, StepRecord

if TYPE_CHECKING:
    from ._jsonl import JsonlBackend
    from ._tensorboard import TensorBoardBackend
    from ._wandb import WandbBackend

# backends are imported on first use: TensorBoard's protobufs and wandb are slow imports
_LAZY = {
    "TensorBoardBackend": "._tensorboard",
    "JsonlBackend": "._jsonl",
    "WandbBackend": "._wandb",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'aoff' has no attribute {name!r}")


__all__ = [
    "DEFAULT_CAPACITY",
    "AoffWarning",
    "AsyncOffPolicyLogger",
    "Backend",
    "BackendContext",
    "Dashboard",
    "Display",
    "FinishReport",
    "JsonlBackend",
    "NullDisplay",
    "OffPolicyLogger",
    "Overflow",
    "RunConfig",
    "State",
    "StepRecord",
    "TensorBoardBackend",
    "WandbBackend",
]
__version__ = "0.1.0"
