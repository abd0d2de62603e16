"""Reading with Python's cyclic garbage collector paused: :func:`collector_paused`.

Why a module of its own: a run being read keeps its incremental state alive (each event
file's offsets, its decoder's learned record layouts, the series it fills: about a hundred
container objects a run), and the collector, triggered every few hundred allocations,
walks those objects again each time they age a generation; over thousands of small runs
that walking is a fifth to a third of the reading's CPU, and it is what reading itself
needs none of: what a read makes is either handed back or kept as the runs' state, alive
either way, so a collection during the read finds nothing to free. The collector is
paused for the read and resumed after it (only if it was running: a caller that turned it
off keeps it off), so the objects are walked once, after, instead of over and over. The
switch is the process's: another thread's cyclic garbage also waits for the read's end
(memory held a little longer, never lost).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["collector_paused"]

# reads in several threads at once: the first to begin pauses the collector, the last to
# end gives it back as the first found it (not each as it found it: the first to end
# would turn it on under the others, or the last leave it off)
_LOCK = threading.Lock()
_depth = 0
_was_on = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off inside the block, back on after the last such block (of
    any thread) ends, if it was on before the first began."""
    global _depth, _was_on
    with _LOCK:
        if _depth == 0:
            _was_on = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _was_on:
                gc.enable()
