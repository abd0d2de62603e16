"""A run group's frames of plain group steps read as columns, not unpickled.

Why: a group's training process ships its items (one a group call,
``_core/_groupbatch.take_batch``: ``(wall, step, {key: [one float a run]}, None, None)``)
to the group's agent as one pickle a frame (``_faces/_groupside``: all its buffer held,
~50 items at 1 kHz). Unpickled, each item of 8 runs x 32 metrics is a tuple, a dict, 32
lists and 257 floats, ~60 µs in the running agent, which the splitter then checks float
by float and copies into arrays (``_groupbatch._block``). Here a frame that matches a
template is read with NumPy straight into the ``GROUP_BLOCK`` item the splitter already
splits into one ``STEP_BLOCK`` a run (with each step's wall time), and the items after
its first become :data:`~aoff._core._events.FOLDED` markers, which the splitter skips:
the frame still holds as many items as its sender counted (the backlog's ``len``,
``drained`` and bound are unchanged).

Why it is exact (as ``_plainsteps``, whose strided copies this reuses): the unpickler's
next move depends only on opcodes and their lengths, never on a ``BINFLOAT``'s 8 bytes
or a ``BININT1``/``BININT2``/``BININT``'s 1, 2 or 4. A frame is one pickle of a list
of items; taken out of pickle's framing (its ``FRAME`` opcodes only mark where the bytes
were cut: the frames' contents joined are what the unpickler reads), its bytes are the
list's head and first item (which holds the keys' text), ``n - 1`` items that are the
same bytes but for their payloads (their keys are memo references to the first item's),
and ``APPENDS``, ``STOP``. A candidate whose every other byte equals the template's
head, each later item's and the tail therefore unpickles to items of the template's
structure with its own payloads: wall times and values bit for bit (NaN payloads,
``-0.0``), steps of that width; a frame of more than 1,000 items has ``APPENDS MARK``
after each 1,000 (pickle's batches), checked and cut out. Anything else (another key
sequence, an int value, a per-run vector, a reward, axes, another item between, a step
of another width) differs in a compared byte or in length, and the frame is unpickled
as before.
"""

from __future__ import annotations

import pickle
from typing import Any

from .._core import _events as ev
from .._core._groupbatch import GROUP_BLOCK
from ._batches import unpack_events
from ._plainsteps import INT_OPS_BY_CODE, INT_TYPES, Slots, payload_mask

__all__ = ["MIN_ITEMS", "GroupSteps"]

#: items a frame holds at least to be read as columns (the splitter's ``BLOCK_MIN``)
MIN_ITEMS = 4
#: pickle appends a list's items in batches of this many (``APPENDS MARK`` between)
BATCH = 1000
#: items a frame holds at most to make a template (one batch of appends)
MAX_ITEMS = BATCH
#: items a frame read as columns holds at most (the shipper's frames hold 1,024)
MAX_READ = 8 * BATCH
#: templates kept at once (one a key sequence, step width and layout)
MAX_TEMPLATES = 4
#: templates tried at most in a process (making one pickles a frame three times, ~ms)
MAX_BUILDS = 64
_PROTO = b"\x80\x05"
_FRAME = pickle.FRAME[0]
#: the list's end: APPENDS, STOP
_TAIL = b"e."
#: between two batches of a list's appends: APPENDS, MARK
_BREAK = b"e("
_FOLDED: ev.Event = (ev.FOLDED,)


def _deframed(payload: bytes) -> bytes | None:
    """``payload``'s bytes after ``PROTO 5``, its frames' contents joined (what the
    unpickler reads), or ``None`` where it is not a protocol-5 pickle cut into frames
    end to end."""
    if payload[:2] != _PROTO:
        return None
    parts = []
    at, size = 2, len(payload)
    while at < size:
        if payload[at] != _FRAME or at + 9 > size:
            return None
        end = at + 9 + int.from_bytes(payload[at + 1 : at + 9], "little")
        if end > size:
            return None
        parts.append(payload[at + 9 : end])
        at = end
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _layout(items: list[Any], runs: int) -> tuple[tuple[str, ...], tuple[bool, ...], bool] | None:
    """The key sequence, which metric is a list a run (else one float for all), and
    whether the step is a list a run, where every item is a plain group step of that
    layout (metrics only, plain floats, int steps); else ``None``."""
    first = items[0]
    if type(first) is not tuple or len(first) != 5 or type(first[2]) is not dict:
        return None
    names = tuple(first[2])
    if not names or not all(type(k) is str for k in names):
        return None
    lists = tuple(type(v) is list for v in first[2].values())
    step_list = type(first[1]) is list
    for item in items:
        if type(item) is not tuple or len(item) != 5 or type(item[0]) is not float:
            return None
        if item[3] is not None or item[4] is not None or type(item[2]) is not dict:
            return None
        step = item[1]
        if step_list:
            if type(step) is not list or len(step) != runs or {type(s) for s in step} != {int}:
                return None
        elif type(step) is not int:
            return None
        cols = item[2]
        if tuple(cols) != names:
            return None
        for v, is_list in zip(cols.values(), lists, strict=True):
            if is_list:
                if type(v) is not list or len(v) != runs or {type(x) for x in v} != {float}:
                    return None
            elif type(v) is not float:
                return None
    return names, lists, step_list


def _flat(item: Any, lists: tuple[bool, ...], step_list: bool) -> tuple[list[float], list[int]]:
    """An item's floats (its wall time, then its values in order) and its steps."""
    floats = [item[0]]
    for v, is_list in zip(item[2].values(), lists, strict=True):
        if is_list:
            floats += v
        else:
            floats.append(v)
    return floats, list(item[1]) if step_list else [item[1]]


def _other(item: Any, lists: tuple[bool, ...], floats: list[float], ints: list[int]) -> Any:
    """``item`` with these floats and steps (:func:`_flat`'s order)."""
    step: Any = ints if len(ints) > 1 or type(item[1]) is list else ints[0]
    cols: dict[str, Any] = {}
    at = 1
    for k, is_list in zip(item[2], lists, strict=True):
        if is_list:
            cols[k] = floats[at : at + len(item[2][k])]
            at += len(item[2][k])
        else:
            cols[k] = floats[at]
            at += 1
    return (floats[0], step, cols, None, None)


class _Part:
    """One part of a template (the head, or an item after the first): its bytes where a
    candidate must equal them (``masked``, ``mask`` 0 over the payloads), and where its
    floats and steps are."""

    __slots__ = ("floats", "it_type", "mask", "masked", "size", "steps")

    def __init__(self, raw: bytes, floats: list[int], steps: list[int], it_type: str) -> None:
        import numpy as np

        self.floats = Slots(floats, 8)
        self.steps = Slots(steps, int(np.dtype(it_type).itemsize))
        self.mask = payload_mask(len(raw), (self.floats, self.steps))
        self.masked = np.frombuffer(raw, np.uint8) & self.mask
        self.size = len(raw)
        self.it_type = it_type


class _Template:
    """A frame of plain group steps: its head (the list and its first item), the bytes of
    each item after it, and how a read item's floats make each run's values."""

    __slots__ = ("head", "index", "item", "names", "runs")

    def __init__(
        self, head: _Part, item: _Part, names: tuple[str, ...], lists: tuple[bool, ...], runs: int
    ) -> None:
        import numpy as np

        self.head, self.item, self.names, self.runs = head, item, names, runs
        # column of each (key, run) value among an item's floats (0 is its wall time)
        index: list[int] = []
        at = 1
        for is_list in lists:
            index += range(at, at + runs) if is_list else [at] * runs
            at += runs if is_list else 1
        self.index = np.array(index, np.intp)

    def read(self, body: bytes) -> tuple[Any, ...] | None:
        """The ``GROUP_BLOCK`` item of ``body`` (a frame's bytes, :func:`_deframed`)
        with each step's wall time after its fields, or ``None`` where it does not
        match."""
        import numpy as np

        head, item = self.head, self.item
        if body[-2:] != _TAIL:
            return None
        rest = len(body) - head.size - len(_TAIL)
        # pickle appends a list's items in batches of 1,000: ``APPENDS MARK`` after each
        # batch but the last (a frame of the shipper's 1,024, while the agent is behind)
        for breaks in range(MAX_READ // BATCH + 1):
            k, odd = divmod(rest - len(_BREAK) * breaks, item.size)
            if not odd and k // BATCH == breaks:
                break
        else:
            return None
        n = k + 1
        if not MIN_ITEMS <= n <= MAX_READ:
            return None
        if breaks:
            parts, at = [], 0
            for j in range(1, breaks + 1):
                cut = head.size + (BATCH * j - 1) * item.size + len(_BREAK) * (j - 1)
                if body[cut : cut + len(_BREAK)] != _BREAK:
                    return None
                parts.append(body[at:cut])
                at = cut + len(_BREAK)
            parts.append(body[at:])
            body = b"".join(parts)
            rest -= len(_BREAK) * breaks
        arr = np.frombuffer(body, np.uint8)
        if not np.array_equal(arr[: head.size] & head.mask, head.masked):
            return None
        items = arr[head.size : head.size + rest].reshape(n - 1, item.size)
        if not np.array_equal(items & item.mask, np.broadcast_to(item.masked, items.shape)):
            return None
        floats = np.empty((n, len(head.floats.starts)), np.float64)
        floats[:1] = head.floats.read(body, 0, 1, head.size, ">f8")
        floats[1:] = item.floats.read(body, head.size, n - 1, item.size, ">f8")
        steps = np.empty((n, len(head.steps.starts)), np.int64)
        steps[:1] = head.steps.read(body, 0, 1, head.size, head.it_type)
        steps[1:] = item.steps.read(body, head.size, n - 1, item.size, item.it_type)
        runs, keys = self.runs, len(self.names)
        values = np.empty((runs, n, keys), np.float64)
        values[...] = floats[:, self.index].reshape(n, keys, runs).transpose(2, 0, 1)
        its = np.empty((runs, n), np.int64)
        its[...] = steps.T  # one step for all runs: broadcast
        walls = tuple(floats[:, 0].tolist())
        return (GROUP_BLOCK, walls[-1], its, self.names, values, walls)


def _template(payload: bytes, items: list[Any], runs: int) -> _Template | None:
    """The template of ``payload`` (one frame; ``items`` what it holds), or ``None``
    where its items are not plain group steps of one layout or its bytes are not the
    ones this reads.

    Its payloads' places are where the frame's bytes and those of the same items with
    every float's bits inverted and every step's lowest bit flipped differ (a float's 8
    bytes, a step's first byte after its opcode, which gives its width; flipping the
    lowest bit keeps an int in its opcode's range), no other byte (checked), each then
    checked against its value; an item's size is the difference of the frame's length
    and that of its first two items."""
    import numpy as np

    n = len(items)
    got = _layout(items, runs) if MIN_ITEMS <= n <= MAX_ITEMS else None
    if got is None or pickle.dumps(items, protocol=5) != payload:
        return None
    names, lists, step_list = got
    body = _deframed(payload)
    two = _deframed(pickle.dumps(items[:2], protocol=5))
    if body is None or two is None or body[-2:] != _TAIL:
        return None
    size, odd = divmod(len(body) - len(two), n - 2)
    head_size = len(two) - size - len(_TAIL)
    if odd or size <= 0 or head_size <= 0:
        return None
    flat = [_flat(item, lists, step_list) for item in items]
    fl = np.array([f for f, _ in flat], np.float64)  # (n, floats an item)
    il = [i for _, i in flat]
    inverted = (fl.view(np.uint64) ^ np.uint64(2**64 - 1)).view(np.float64).tolist()
    other = [
        _other(item, lists, f, [s ^ 1 for s in i])
        for item, f, i in zip(items, inverted, il, strict=True)
    ]
    flipped = _deframed(pickle.dumps(other, protocol=5))
    if flipped is None or len(flipped) != len(body):
        return None
    a, b = np.frombuffer(body, np.uint8), np.frombuffer(flipped, np.uint8)
    diff = (a != b).nonzero()[0]
    n_f, n_i = fl.shape[1], len(il[0])
    per = 8 * n_f + n_i
    if len(diff) != n * per:
        return None
    # an item's leaves in pickle's order: its wall time, its steps, its values
    widths = np.array([8] + [1] * n_i + [8] * (n_f - 1))
    first_at = np.concatenate(([0], np.cumsum(widths)[:-1]))
    firsts = diff.reshape(n, per)[:, first_at]  # (n, leaves): each leaf's first byte
    is_f = widths == 8
    eight = np.arange(8)
    f_first = firsts[:, is_f]
    got_f = diff.reshape(n, per)[:, first_at[is_f][:, None] + eight]
    if not (got_f == f_first[:, :, None] + eight).all():
        return None
    if not (
        a[f_first[:, :, None] + eight] == fl.astype(">f8").view(np.uint8).reshape(n, n_f, 8)
    ).all():
        return None
    s_first = firsts[:, ~is_f]
    ops = {INT_OPS_BY_CODE.get(op) for op in a[s_first - 1].ravel().tolist()}
    if len(ops) != 1 or None in ops:
        return None
    op = ops.pop()
    assert op is not None
    it_type = INT_TYPES[op]
    width = int(np.dtype(it_type).itemsize)
    read_i = a[s_first[:, :, None] + np.arange(width)].copy().view(it_type)[..., 0]
    if read_i.tolist() != il:
        return None
    # the items after the first: the same places, one item's size apart
    if f_first.min() < 1 or f_first[0].max() >= head_size or f_first[1].min() < head_size:
        return None
    steps_at = np.arange(n - 1)[:, None] * size + head_size
    if not (f_first[1:] - steps_at == f_first[1] - head_size).all():
        return None
    if not (s_first[1:] - steps_at == s_first[1] - head_size).all():
        return None
    if s_first[0].max() >= head_size or s_first[1].min() < head_size:
        return None
    head = _Part(body[:head_size], f_first[0].tolist(), s_first[0].tolist(), it_type)
    rel_f = (f_first[1] - head_size).tolist()
    rel_s = (s_first[1] - head_size).tolist()
    item = _Part(body[head_size : head_size + size], rel_f, rel_s, it_type)
    t = _Template(head, item, names, lists, runs)
    # read back, the template must give this frame's walls, steps and values, bit for bit
    block = t.read(body)
    if block is None or not (np.array(block[5]).view(np.uint64) == fl[:, 0].view(np.uint64)).all():
        return None
    its = np.array(il, np.int64).T
    if not (block[2] == (its if step_list else np.broadcast_to(its, (runs, n)))).all():
        return None
    want = fl[:, 1:]
    got_v = block[4].transpose(1, 2, 0)  # (n, keys, runs)
    got_cols = np.empty((n, n_f - 1), np.float64)
    got_cols[:, t.index - 1] = got_v.reshape(n, -1)
    if not (got_cols.view(np.uint64) == want.view(np.uint64)).all():
        return None
    return t


class GroupSteps:
    """Reads a group's frames (``Events`` payloads), each that matches a template as one
    ``GROUP_BLOCK`` item and its ``FOLDED`` markers (see the module's doc), the others
    unpickled; as many items as the frame holds."""

    __slots__ = ("builds", "read", "runs", "templates")

    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.templates: list[_Template] = []
        #: templates tried so far (at most :data:`MAX_BUILDS`)
        self.builds = 0
        #: items read as columns so far
        self.read = 0

    def unpack(self, payload: bytes) -> list[ev.Event]:
        """A frame's items; raises what ``unpack_events`` raises for one it cannot read."""
        if self.templates:
            body = _deframed(payload)
            if body is not None:
                for t in self.templates:
                    block = t.read(body)
                    if block is not None:
                        k = len(block[5])
                        self.read += k
                        return [block, *[_FOLDED] * (k - 1)]
        items = unpack_events(payload)
        if (
            self.builds < MAX_BUILDS
            and MIN_ITEMS <= len(items) <= MAX_ITEMS
            and type(items[0]) is tuple
            and type(items[0][0]) is float  # the cheap refusal first
        ):
            self.builds += 1
            made = _template(payload, items, self.runs)
            if made is not None:
                self.templates.insert(0, made)
                del self.templates[MAX_TEMPLATES:]
        return items
