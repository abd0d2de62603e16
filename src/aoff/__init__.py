"""aoff: an asyncio-native training logger for off-policy RL.

The hot path (``log_step`` and every ``update_*``) only records an event; one background
pump folds events into the dashboard state and writes TensorBoard/W&B/JSONL in batches.
Public names only; the implementation lives in the ``_``-prefixed modules and packages.
"""

from typing import TYPE_CHECKING, Any

from ._backends._base import Backend, BackendContext, Takes
from ._core._buffer import DEFAULT_CAPACITY, Overflow
from ._core._records import Record, RunConfig, StepRecord, TextRecord, WriterRecord
from ._core._report import FinishReport
from ._core._view import RunView
from ._core._warning import AoffWarning

if TYPE_CHECKING:
    from ._backends._csv import CsvBackend
    from ._backends._jsonl import JsonlBackend
    from ._backends._mlflow import MlflowBackend
    from ._backends._tensorboard import TensorBoardBackend
    from ._backends._trackio import TrackioBackend
    from ._backends._wandb import WandbBackend
    from ._display._api import Display, NullDisplay
    from ._display._dashboard import Dashboard
    from ._faces._async import AsyncOffPolicyLogger
    from ._faces._asyncgroup import AsyncRunGroup
    from ._faces._group import RunGroup
    from ._faces._remote import RemoteLogger, RemoteReport
    from ._faces._sync import OffPolicyLogger
    from ._runfolder.reading._scalars import ScalarReader, read_scalars

# backends are imported on first use: TensorBoard's protobufs and wandb are slow imports
_LAZY = {
    # the loggers and their display: what `aoff ls` and the other commands never use
    "OffPolicyLogger": "._faces._sync",
    "AsyncOffPolicyLogger": "._faces._async",
    "RemoteLogger": "._faces._remote",
    "RemoteReport": "._faces._remote",
    "Display": "._display._api",
    "NullDisplay": "._display._api",
    "TensorBoardBackend": "._backends._tensorboard",
    "CsvBackend": "._backends._csv",
    "JsonlBackend": "._backends._jsonl",
    "MlflowBackend": "._backends._mlflow",
    "WandbBackend": "._backends._wandb",
    "TrackioBackend": "._backends._trackio",
    # Rich's Live: only where a dashboard is drawn (the agent, thread mode)
    "Dashboard": "._display._dashboard",
    # runs as data: numpy on import, pandas when a DataFrame is made
    "ScalarReader": "._runfolder.reading._scalars",
    "read_scalars": "._runfolder.reading._scalars",
    # a group's batches are NumPy arrays: numpy on first use
    "RunGroup": "._faces._group",
    "AsyncRunGroup": "._faces._asyncgroup",
}


def __getattr__(name: str) -> Any:
    if name == "ray":  # aoff.ray imports ray: only when asked for
        import importlib

        return importlib.import_module(".ray", __name__)
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        value.__module__ = __name__
        return value
    raise AttributeError(f"module 'aoff' has no attribute {name!r}")


__all__ = [
    "DEFAULT_CAPACITY",
    "AoffWarning",
    "AsyncOffPolicyLogger",
    "AsyncRunGroup",
    "Backend",
    "BackendContext",
    "CsvBackend",
    "Dashboard",
    "Display",
    "FinishReport",
    "JsonlBackend",
    "MlflowBackend",
    "NullDisplay",
    "OffPolicyLogger",
    "Overflow",
    "Record",
    "RemoteLogger",
    "RemoteReport",
    "RunConfig",
    "RunGroup",
    "RunView",
    "ScalarReader",
    "StepRecord",
    "Takes",
    "TensorBoardBackend",
    "TextRecord",
    "TrackioBackend",
    "WandbBackend",
    "WriterRecord",
    "read_scalars",
]

# public classes show their public home (as anyio does)
for _obj in (
    Backend,
    BackendContext,
    RunConfig,
    RunView,
    StepRecord,
    Takes,
    TextRecord,
    WriterRecord,
):
    _obj.__module__ = __name__
del _obj

__version__ = "0.1.0"
