"""Blocks of columns that follow each other in a slice of events, joined into one.

Why a module of its own: the single run's agent reads each frame's pickles as one block
(``STEP_BLOCK`` for plain ``log_step`` calls, ``RUN_BLOCK`` for regular iterations,
``_transport/_plainsteps``), so a drained slice of 2,048 events holds one block a frame:
~13 blocks of 160 steps, or ~3 of 160 standard iterations. Folding a block costs a fixed
~60 NumPy calls (``RunFold.take_block``/``take_runblock``: ~150-200 µs a standard block on
this machine, ~1 µs an iteration at 160 iterations a block), and each table the fold makes
costs every reader after it (TensorBoard, JSONL, the summary, the rules) its own fixed
calls again. Blocks in a row of one kind and one skeleton, with nothing between them but
their markers, are what one larger frame would have been read as, so the intake folds
them as one (the group's splitter joins its runs' frames for the same reason,
``_groupbatch._split_read``).

Exact: a block stands for its events in order, and so does the join of blocks in a row
(the same skeleton: ``RunShape`` by identity, the same metric names); the fold of a
block is the fold of its events whatever frame they came in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._events import FOLDED, RUN_BLOCK, STEP_BLOCK, Event
from ._runblock import RunBlock

__all__ = ["block_calls", "join_blocks"]

#: a step or event its block before it folded (``_transport/_plainsteps``)
_MARKER: Event = (FOLDED,)


def block_calls(e: Event) -> int:
    """The events (calls) block ``e`` stands for: itself and its markers after it."""
    return len(e[2]) if e[0] == STEP_BLOCK else int(e[2].calls)


def _joins(a: Event, b: Event) -> bool:
    """Whether block ``b`` is of ``a``'s kind and skeleton (so they fold as one)."""
    if type(b) is not tuple or b[0] != a[0]:
        return False
    if a[0] == RUN_BLOCK:
        return bool(b[2].shape is a[2].shape)
    # the metric names, and arrays of one type and width (a join never converts a value)
    same = b[4] is a[4] or b[4] == a[4]
    return bool(same and _form(b[3]) == _form(a[3]) and _form(b[5]) == _form(a[5]))


def _form(x: Any) -> Any:
    """An array's type and its rows' width (``None``: not an array)."""
    shape = getattr(x, "shape", None)
    return None if shape is None else (x.dtype, shape[1:])


def _joined(parts: list[Event]) -> Event:
    """One block standing for ``parts``' events in order."""
    import numpy as np  # blocks are NumPy's: loaded already where they exist

    last = parts[-1]
    if last[0] == RUN_BLOCK:
        blocks: list[RunBlock] = [p[2] for p in parts]
        floats = np.concatenate([b.floats for b in blocks])
        ints = np.concatenate([b.ints for b in blocks])
        return (RUN_BLOCK, last[1], RunBlock(last[2].shape, floats, ints))
    walls: list[Any] = []
    for p in parts:
        walls += p[2]
    its = np.concatenate([p[3] for p in parts])
    values = np.concatenate([p[5] for p in parts])
    return (STEP_BLOCK, last[1], walls, its, last[4], values)


def join_blocks(events: Sequence[Event], at: int) -> tuple[Event, int]:
    """The block ``events[at]`` joined with each block of its kind and skeleton that
    follows it with nothing but the markers of the block before it between them, and
    the index of the last block joined (``at``: none; the block itself is returned)."""
    first = events[at]
    parts = [first]
    n = len(events)
    last = at
    while True:
        i = last + 1
        end = i + block_calls(events[last]) - 1  # the next event after its markers
        if end >= n or not _joins(first, events[end]):
            break
        if end > i and events[i:end].count(_MARKER) != end - i:
            break
        parts.append(events[end])
        last = end
    return (first if last == at else _joined(parts)), last
