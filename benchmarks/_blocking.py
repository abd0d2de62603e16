"""Backends that stop writing until a flag file appears, for ``bench_memory.py``.

They are ``portable`` (plain data: a path and a name), so a logger in process mode
sends them to its agent, which imports this module by name: the benchmark puts
``benchmarks/`` on the ``PYTHONPATH`` the agent inherits. Each holds its first write
until the flag file exists, then writes nothing (records are dropped on the floor; the
benchmark measures memory, not output):

* ``in_loop=False`` waits in a worker thread, as the ``Backend`` contract asks (a hung
  disk or service): aoff isolates it (``stall_timeout``), the pump goes on;
* ``in_loop=True`` waits on the pump's own event loop (a backend that breaks the
  contract, or a pump that cannot keep up at all): nothing is folded meanwhile, so
  events pile up in front of the pump, in the agent and then in the training process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import anyio.to_thread


def _wait_for(flag: str) -> None:
    while not os.path.exists(flag):
        time.sleep(0.05)


class FlagBackend:
    portable = True

    def __init__(self, flag: str, *, in_loop: bool, name: str = "stalled") -> None:
        self.flag = flag
        self.in_loop = in_loop
        self.name = name
        self.released = False

    async def open(self, ctx: Any) -> None:
        pass

    async def write(self, records: Sequence[Any]) -> None:
        if self.released:
            return
        if self.in_loop:
            _wait_for(self.flag)  # holds the event loop on purpose
        else:
            await anyio.to_thread.run_sync(_wait_for, self.flag, abandon_on_cancel=True)
        self.released = True

    async def flush(self) -> None:
        pass

    async def close(self) -> None:
        pass
