"""Frames handed to the agent in a shared-memory block, by name, never pickled.

Why: a 200-frame 84x84 RGB episode is 4.2 MB; pickled into the event stream it would be
copied three more times (pickle, socket, unpickle) and hold the scalars behind it on the
link. The call copies the frames once, into a fresh :class:`SharedMemory` block, and the
event carries only :class:`ShmFrames` (name, shape, dtype). The agent's encoder maps the
block, encodes from it, and unlinks it (:meth:`ShmFrames.release`).

The resource tracker: the training process creates the block but never frees it, so it
unregisters the block at once (otherwise its tracker would unlink it again, and warn
about a leak, when the training process exits). The agent attaches (which registers it
with the agent's tracker, Python < 3.13) and unlinks (which unregisters it): each tracker
sees a balanced pair and says nothing.

A block whose event never reaches the agent (the event buffer's ``drop_oldest`` policy,
a lost agent) is unlinked by whoever drops it where that is known (the lost agent's
fallback pump encodes it instead); blocks in events dropped by the overflow policy stay
in ``/dev/shm`` until reboot: the budget (``media_budget``) bounds them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

__all__ = ["ShmFrames", "to_shm"]


@dataclass(frozen=True, slots=True)
class ShmFrames:
    """A shared-memory block holding one call's frames (C order)."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def open(self) -> tuple[Any, Any]:
        """``(block, array)``: the frames as a NumPy view of the mapped block."""
        from multiprocessing.shared_memory import SharedMemory

        import numpy as np

        block = SharedMemory(name=self.name)
        arr = np.ndarray(self.shape, dtype=np.dtype(self.dtype), buffer=block.buf)
        return block, arr

    def release(self, block: Any) -> None:
        """Unmap and free the block (the receiving side's job). A view still alive (an
        error's traceback) keeps the mapping until it goes; the name is freed anyway."""
        with contextlib.suppress(BufferError):
            block.close()
        block.unlink()

    def discard(self) -> None:
        """Free a block nobody will read (best effort)."""
        try:
            block, arr = self.open()
        except OSError:
            return
        del arr
        self.release(block)


def to_shm(arr: Any) -> ShmFrames:
    """Copy ``arr`` (a NumPy array of any layout) into a new block; its handle."""
    from multiprocessing import resource_tracker
    from multiprocessing.shared_memory import SharedMemory

    import numpy as np

    block = SharedMemory(create=True, size=max(int(arr.nbytes), 1))
    try:
        view: Any = np.ndarray(arr.shape, dtype=arr.dtype, buffer=block.buf)
        np.copyto(view, arr, casting="no")
        del view
        handle = ShmFrames(block.name, tuple(int(n) for n in arr.shape), arr.dtype.str)
    except BaseException:
        block.close()
        block.unlink()
        raise
    block.close()
    # the agent frees it: this process's tracker must not (see the module's docstring)
    resource_tracker.unregister(block._name, "shared_memory")  # type: ignore[attr-defined]
    return handle
