"""aoff: an asyncio-native training logger for off-policy RL.

Public names only; the implementation lives in the ``_``-prefixed modules.
"""

from ._backend import Backend, BackendContext
from ._state import RunConfig, State, StepRecord

__all__ = ["Backend", "BackendContext", "RunConfig", "State", "StepRecord"]
__version__ = "0.1.0"
