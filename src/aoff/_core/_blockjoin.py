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
block is the fold of its events whatever frame they came in. The sync face also sends
pickles of 96 events among those of 32, read with a template and a shape of their own:
where a shape's events are another's ``k`` times over, field for field (:func:`repeats`),
its block is viewed as ``k`` times as many pickles of the other (its columns picked in
the other's order) and joined with it, rather than stopping the join (a first block of
such a shape is viewed so when the block after it has the shorter shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._events import FOLDED, RUN_BLOCK, STEP_BLOCK, Event
from ._runblock import RunBlock, RunShape

__all__ = ["block_calls", "join_blocks", "markers_end", "repeats"]

#: a step or event its block before it folded (``_transport/_plainsteps``)
_MARKER: Event = (FOLDED,)


def block_calls(e: Event) -> int:
    """The events (calls) block ``e`` stands for: itself and its markers after it."""
    return len(e[2]) if e[0] == STEP_BLOCK else int(e[2].calls)


def markers_end(events: Sequence[Event], i: int, block: Event) -> int:
    """Where ``block``'s ``FOLDED`` markers end when they stand whole from ``i`` (the
    event after it; cut at the events' end), counted at C speed; ``i`` where any other
    event stands among them."""
    end = min(i + block_calls(block) - 1, len(events))
    if end > i and events[i:end].count(_MARKER) != end - i:
        return i
    return end


def _joins(a: Event, b: Event) -> Event | None:
    """Block ``b`` as a block of ``a``'s kind and skeleton (so they fold as one), or
    ``None`` where it is not one."""
    if type(b) is not tuple or b[0] != a[0]:
        return None
    if a[0] == RUN_BLOCK:
        shape: RunShape = a[2].shape
        if b[2].shape is shape:
            return b
        maps = _repeats(b[2].shape, shape)
        if maps is None:
            return None
        return (RUN_BLOCK, b[1], _as_shape(b[2], shape, *maps))
    # the metric names, and arrays of one type and width (a join never converts a value)
    same = b[4] is a[4] or b[4] == a[4]
    if same and _form(b[3]) == _form(a[3]) and _form(b[5]) == _form(a[5]):
        return b
    return None


def repeats(big: RunShape, small: RunShape) -> tuple[Any, Any] | None:
    """Where ``big``'s events are ``small``'s ``k > 1`` times over, field for field (the
    same kinds, keys and ``None`` fields, a float where a float is, an int where an int
    is): the columns of ``big``'s float and int rows that give ``k`` rows of ``small``'s,
    in order (each of ``big``'s columns once); else ``None``."""
    import numpy as np

    n, m = len(big.events), len(small.events)
    if n <= m or n % m:
        return None
    nf, ni = small.n_floats, small.n_ints
    k = n // m
    fmap, imap = [-1] * (k * nf), [-1] * (k * ni)
    for r in range(k):
        for a, b in zip(small.events, big.events[r * m : (r + 1) * m], strict=True):
            if len(a) != len(b):
                return None
            for fa, fb in zip(a, b, strict=True):
                tag = fa[0]
                if tag != fb[0]:
                    return None
                if tag == "f":
                    fmap[r * nf + fa[1]] = fb[1]
                elif tag == "i":
                    imap[r * ni + fa[1]] = fb[1]
                elif tag == "d":
                    if fa[1] != fb[1]:
                        return None
                    for ca, cb in zip(fa[2], fb[2], strict=True):
                        fmap[r * nf + ca] = cb
                elif fa != fb:
                    return None
    if sorted(fmap) != list(range(big.n_floats)) or sorted(imap) != list(range(big.n_ints)):
        return None
    return np.array(fmap, np.intp), np.array(imap, np.intp)


#: :func:`repeats` of each pair of shapes met (``None`` too): ``(big, small)`` by identity,
#: the shapes kept with it so an ``id`` is never another's; a reader keeps a few templates
_REPEATS: dict[tuple[int, int], tuple[RunShape, RunShape, tuple[Any, Any] | None]] = {}
_REPEATS_KEPT = 64


def _repeats(big: RunShape, small: RunShape) -> tuple[Any, Any] | None:
    key = (id(big), id(small))
    got = _REPEATS.get(key)
    if got is None:
        if len(_REPEATS) >= _REPEATS_KEPT:
            _REPEATS.clear()
        got = _REPEATS[key] = (big, small, repeats(big, small))
    return got[2]


def _as_shape(block: RunBlock, shape: RunShape, fmap: Any, imap: Any) -> RunBlock:
    """``block`` (of a shape that repeats ``shape``, :func:`repeats`) as ``shape``'s
    pickles: each row's columns picked in ``shape``'s order, ``k`` rows a row."""
    import numpy as np

    floats = block.floats[:, fmap].reshape(-1, shape.n_floats)
    rows = len(floats)
    ints = block.ints[:, imap].reshape(rows, shape.n_ints) if shape.n_ints else None
    return RunBlock(shape, floats, np.empty((rows, 0), np.int64) if ints is None else ints)


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
    first = head = events[at]
    parts = [first]
    n = len(events)
    last = at
    while True:
        i = last + 1
        end = i + block_calls(events[last]) - 1  # the next event after its markers
        if end >= n or markers_end(events, i, events[last]) != end:
            break
        b = events[end]
        nxt = _joins(head, b)
        if nxt is None and len(parts) == 1 and head[0] == RUN_BLOCK and type(b) is tuple:
            # the first block's shape may repeat the next one's: the first as its pickles
            swapped = _joins(b, head)
            if swapped is not None:
                parts[0] = head = swapped
                nxt = b
        if nxt is None:
            break
        parts.append(nxt)
        last = end
    return (first if last == at else _joined(parts)), last
