"""aoff: an asyncio-native training logger for off-policy RL.

The hot path (``log_step`` and every ``update_*``) only records an event; one background
pump folds events into the dashboard state and writes TensorBoard/W&B/JSONL in batches.
Public names only; the implementation lives in the ``_``-prefixed modules.
"""

from ._backend import Backend, BackendContext
from ._bridge import AoffWarning, OffPolicyLogger
from ._buffer import DEFAULT_CAPACITY, Overflow
from ._display_api import Display
from ._logger import AsyncOffPolicyLogger
from ._pump import FinishReport
from ._state import RunConfig, State, StepRecord

__all__ = [
    "DEFAULT_CAPACITY",
    "AoffWarning",
    "AsyncOffPolicyLogger",
    "Backend",
    "BackendContext",
    "Display",
    "FinishReport",
    "OffPolicyLogger",
    "Overflow",
    "RunConfig",
    "State",
    "StepRecord",
]
__version__ = "0.1.0"
