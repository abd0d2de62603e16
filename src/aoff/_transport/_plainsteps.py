"""A frame's pickles of plain ``log_step`` events read as columns, not unpickled.

Why: a training loop that logs one ``log_step`` of the same keys again and again sends
the agent pickles that are the same bytes but for each step's wall time, iteration and
metric values. Unpickled, each step costs the agent its tuple, its dict and one float
object a value, made by the unpickler, read back one by one by the run fold
(``_core/_fold_columns``) and freed: ~1.5 µs an event to unpickle in the running agent
and about as much again to read. Here a pickle that matches a template (one such pickle
unpickled once and taken apart) is read with NumPy straight into a ``STEP_BLOCK`` event
(``_core/_groupbatch``'s, which ``Folder.apply_block`` folds as the same steps' events),
and the steps after its first become :data:`~aoff._core._events.FOLDED` markers, so the
frame still holds as many events as the sender counted.

Why it is exact: a pickle is read opcode by opcode, and what the reader does next
depends only on the opcodes and their lengths, never on the 8 bytes of a ``BINFLOAT``
or the 1, 2 or 4 bytes of a ``BININT1``/``BININT2``/``BININT``. A candidate whose every
other byte equals the template's (length, opcodes, memo references, the keys' text, the
constant fields: ``None``, the learner's four times of ``+0.0``) therefore unpickles to
the template's structure with those payloads in place: its steps' wall times (floats),
iterations (ints of that width) and metric values (floats, bit for bit: NaN payloads and
``-0.0`` included). Anything else (another key sequence, a value that is not a float, a
reward, a time, axes, an iteration of another width, another kind of event) differs in a
compared byte and is unpickled as before.

A pickle of the standard iteration's four kinds (collector timings, done rates, a
collector, a step with its reward, components, times and ``extra_info``) is read the same
way with a run template (:func:`_run_template`): its events' skeleton is a
``_core/_runblock`` ``RunShape``, its floats and ints the payloads, and matching pickles
in a row become one ``RUN_BLOCK`` (``Folder.apply_runblock`` folds it as columns) and a
``FOLDED`` marker for each event after its first.

Only the single run's agent reads frames this way (``_agent/_serve``): a group's agent
reads its frames of group items with ``_groupsteps`` (the same strided copies,
:class:`Slots`), and a thread-mode run has no pickles.
"""

from __future__ import annotations

import io
import math
import pickle
from collections.abc import Iterable
from typing import Any

from .._core import _events as ev
from .._core._runblock import RunBlock, RunShape, shape_of
from ._batches import load_list, unpack_events

__all__ = ["INT_OPS_BY_CODE", "INT_TYPES", "MIN_STEPS", "PlainSteps", "Slots", "payload_mask"]

#: steps a pickle holds at least for a template (below, the fold's per-block cost wins)
MIN_STEPS = 8
#: templates kept at once (a run has a few: one a slice length and iteration width)
MAX_TEMPLATES = 8
#: templates made in a process at most: making one pickles its steps twice and compares
#: (~3 ms for 96 steps); a run whose pickles never repeat stops trying
MAX_BUILDS = 256
#: events a pickle holds at most for a template: the sync face's slices hold 32 or 96;
#: a larger pickle (a final flush's) seldom repeats, and making its template costs ~50-150 µs
#: an event
MAX_LEARN = 256
#: the fixed part of a plain step after its metrics: no reward, reward metrics,
#: components; the learner's four times; no steps/s
_TAIL = (None, None, None, 0.0, 0.0, 0.0, 0.0, None)
_STEP_LEN = 2 + len(ev.KINDS[ev.STEP].fields)
#: an iteration's opcode and the NumPy type of its payload (``pickle``'s encodings)
INT_TYPES = {"BININT1": "<u1", "BININT2": "<u2", "BININT": "<i4"}
_INT_WIDTHS = {"<u1": 1, "<u2": 2, "<i4": 4}
INT_OPS_BY_CODE = {
    pickle.BININT1[0]: "BININT1",
    pickle.BININT2[0]: "BININT2",
    pickle.BININT[0]: "BININT",
}
#: bytes before any payload: PROTO and FRAME (the frame's length), compared first
_HEAD = 11
_FLOAT_ONLY = frozenset((float,))
#: the kinds of a regular iteration: a pickle of them may make a run template
_RUN_KINDS = frozenset((ev.STEP, ev.COLLECTOR_TIMING, ev.COLLECTOR, ev.DONE_RATES))


def _names(events: list[ev.Event]) -> tuple[str, ...] | None:
    """The key sequence of ``events`` where all are plain ``log_step`` events of metrics
    only (:data:`_TAIL` after them, ``+0.0`` times), plain floats, one key sequence,
    iterations that are ints; else ``None``."""
    if len(events) < MIN_STEPS or type(events[0]) is not tuple or len(events[0]) < 4:
        return None
    first = events[0][3]
    if type(first) is not dict or not first:
        return None
    names = tuple(first)
    if not all(type(k) is str for k in names):
        return None
    for e in events:
        if type(e) is not tuple or len(e) != _STEP_LEN or e[0] != ev.STEP:
            return None
        _, wall, it, m, *tail = e
        if type(wall) is not float or type(it) is not int or type(m) is not dict:
            return None
        if tuple(m) != names or not _FLOAT_ONLY.issuperset(map(type, m.values())):
            return None
        if tuple(tail) != _TAIL or not all(type(t) is float for t in tail[3:7]):
            return None
        if any(math.copysign(1.0, t) < 0 for t in tail[3:7]):  # -0.0: not the block's 0.0
            return None
    return names


def payload_mask(size: int, slots: Iterable[Slots]) -> Any:
    """A template's mask of ``size`` bytes: 0xFF where a candidate must equal the
    template's bytes, 0 over each of ``slots``' payloads (``width`` bytes at each start)."""
    import numpy as np

    mask = np.full(size, 0xFF, np.uint8)
    for s in slots:
        if s.starts:
            mask[(np.array(s.starts)[:, None] + np.arange(s.width)).ravel()] = 0
    return mask


class _Pattern:
    """A template's bytes: what a candidate must equal (``masked``, where ``mask`` is
    0xFF; 0 over the payloads), its first bytes and its length."""

    __slots__ = ("head", "mask", "masked", "size")

    def __init__(self, raw: bytes, slots: tuple[Slots, ...]) -> None:
        import numpy as np

        mask = payload_mask(len(raw), slots)
        self.mask = mask
        self.masked = (np.frombuffer(raw, np.uint8) & mask).tobytes()
        self.head = raw[:_HEAD]
        self.size = len(raw)

    def matches(self, arr: Any, payload: bytes, at: int) -> bool:
        """Whether the pickle at ``at`` in ``payload`` (``arr``: its bytes) is this
        template's but for the payloads."""
        end = at + self.size
        if end > len(payload) or payload[at : at + _HEAD] != self.head:
            return False
        return bool((arr[at:end] & self.mask).tobytes() == self.masked)


class _Template(_Pattern):
    """A pickle of plain steps: its bytes and where its columns are (byte indices)."""

    __slots__ = ("it_type", "its", "n", "names", "values", "walls")

    def __init__(
        self,
        raw: bytes,
        names: tuple[str, ...],
        n: int,
        places: tuple[list[int], list[int], list[int]],
        it_op: str,
    ) -> None:
        import numpy as np

        walls, its, values = places
        width = int(np.dtype(INT_TYPES[it_op]).itemsize)
        self.walls = Slots(walls, 8)
        self.values = Slots(values, 8)
        self.its = Slots(its, width)
        self.it_type = INT_TYPES[it_op]
        super().__init__(raw, (self.walls, self.its, self.values))
        self.names = names
        self.n = n


class Slots:
    """Payloads of one width at byte offsets ``starts`` in a template, in order, read from
    ``m`` adjacent copies of it at once. Cut into runs at a constant stride (a dict's
    values), runs of the same shape (count and stride) at a constant spacing grouped
    (the same field of the steps or iterations after the first, other runs between
    them), each group one strided NumPy view of the payload copied whole into its
    slots: a byte-wise gather costs ~2.5 ns a byte, these few copies a run of pickles
    less than one pickle's unpickling."""

    __slots__ = ("_inverse", "groups", "order", "starts", "width")

    def __init__(self, starts: list[int], width: int) -> None:
        import numpy as np

        self.starts = starts
        self.width = width
        # runs of one shape, in order: (first byte, first slot) each
        shapes: dict[tuple[int, int], list[tuple[int, int]]] = {}
        i = 0
        while i < len(starts):
            j = i + 1
            stride = width
            if j < len(starts):
                stride = starts[j] - starts[i]
                while j + 1 < len(starts) and starts[j + 1] - starts[j] == stride:
                    j += 1
                j += 1
            shapes.setdefault((j - i, stride), []).append((starts[i], i))
            i = j
        # (first byte, runs, spacing, count, stride): ``runs`` runs of one shape
        groups: list[tuple[int, int, int, int, int]] = []
        order: list[int] = []  # the slots in the groups' order
        for (count, stride), runs in shapes.items():
            i = 0
            while i < len(runs):
                j = i + 1
                if j < len(runs):
                    spacing = runs[j][0] - runs[i][0]
                    # a first run whose spacing to the next is not the next ones' (the
                    # pickle's first step or iteration: its keys' text, not memo
                    # references) is a group of its own
                    if j + 1 >= len(runs) or runs[j + 1][0] - runs[j][0] == spacing:
                        while j + 1 < len(runs) and runs[j + 1][0] - runs[j][0] == spacing:
                            j += 1
                        j += 1
                part = runs[i:j]
                spacing = part[1][0] - part[0][0] if len(part) > 1 else 0
                groups.append((part[0][0], len(part), spacing, count, stride))
                for _, slot in part:
                    order += range(slot, slot + count)
                i = j
        self.groups = groups
        #: the slot each payload :meth:`read` gives is (``grouped``), in order
        self.order = order
        self._inverse: Any = None
        if order != sorted(order):
            self._inverse = np.argsort(np.array(order))

    def read(
        self, payload: bytes, start: int, m: int, size: int, kind: str, grouped: bool = False
    ) -> Any:
        """The payloads of ``m`` copies of the template from ``payload[start]`` on, each
        read as the NumPy type ``kind`` (``">f8"``, ``"<u2"``...: of this width), as an
        ``(m, len(starts))`` array of float64 (a float type) or int64, one row a copy: in
        the slots' order, or (``grouped``) in the groups' (:attr:`order`: a reader whose
        indices follow it pays no reordering). Each group is copied as items of its type
        (unaligned views; a copy a byte costs ~1.8 ns a byte, 8 bytes an item ~0.2),
        converted as it is copied (a float's bits kept: a byte swap, no arithmetic)."""
        import numpy as np

        dtype = np.dtype(kind)
        out = np.empty((m, len(self.starts)), np.float64 if dtype.kind == "f" else np.int64)
        at = 0
        for first, k, spacing, count, stride in self.groups:
            # NumPy checks the view lies inside ``payload``
            view = np.ndarray((m, k, count), dtype, payload, start + first, (size, spacing, stride))
            out[:, at : at + k * count].reshape(m, k, count)[...] = view
            at += k * count
        if not grouped and self._inverse is not None:
            out = out[:, self._inverse]
        return out


def _template(raw: bytes, events: list[ev.Event]) -> _Template | None:
    """The template of ``raw`` (one pickle; ``events`` what it holds), or ``None`` where
    its steps are not all plain or its bytes are not the ones this reads.

    Its float payloads' places are where ``raw`` and the pickle of the same events with
    every wall time and value's bits inverted differ (each of their 8 bytes, no other
    byte: checked); an iteration's opcode follows its wall time's payload. Both pickles
    are made by ``pickle`` in C (a walk of the opcodes in Python, ``pickletools``, cost
    ~10 ms for a pickle of 96 steps)."""
    import numpy as np

    names = _names(events)
    if names is None or pickle.dumps(events, protocol=5) != raw:
        return None  # not plain, or pickled otherwise than this process would
    n, k = len(events), len(names)
    floats = np.array([[e[1], *e[3].values()] for e in events], np.float64)
    inverted = (floats.view(np.uint64) ^ np.uint64(2**64 - 1)).view(np.float64).tolist()
    other = [
        (e[0], f[0], e[2], dict(zip(e[3], f[1:], strict=True)), *e[4:])
        for e, f in zip(events, inverted, strict=True)
    ]
    flipped = pickle.dumps(other, protocol=5)
    a, b = np.frombuffer(raw, np.uint8), np.frombuffer(flipped, np.uint8)
    if len(a) != len(b):
        return None
    diff = (a != b).nonzero()[0]
    if len(diff) != 8 * n * (1 + k):
        return None
    starts = diff[::8]
    if not (diff.reshape(-1, 8) == starts[:, None] + np.arange(8)).all():
        return None
    # each slot holds its value's bits, in order: a wall time, then its step's values
    want = floats.astype(">f8").view(np.uint8).reshape(-1, 8)
    if not (a[starts[:, None] + np.arange(8)] == want).all():
        return None
    places = starts.reshape(n, 1 + k)
    walls = places[:, 0]
    it_at = walls + 8  # the iteration's opcode, right after its step's wall time
    ops = set(a[it_at].tolist())
    if len(ops) != 1:
        return None
    it_op = INT_OPS_BY_CODE.get(ops.pop())
    if it_op is None or min(walls.tolist()) < _HEAD:
        return None
    its = it_at + 1
    width = np.dtype(INT_TYPES[it_op]).itemsize
    got = a[its[:, None] + np.arange(width)].copy().view(INT_TYPES[it_op]).ravel().tolist()
    if got != [e[2] for e in events]:
        return None
    return _Template(
        raw, names, n, (walls.tolist(), its.tolist(), places[:, 1:].ravel().tolist()), it_op
    )


class _RunTemplate(_Pattern):
    """A pickle of regular iterations (:class:`~aoff._core._runblock.RunShape`): its
    bytes, its float payloads' places (one :class:`Slots`) and its ints' (one a width).
    Its shape numbers the payloads in the order they are read (the slots' groups, the
    ints' widths one after the other), so a block is read with no reordering."""

    __slots__ = ("floats", "ints", "shape")

    def __init__(
        self, raw: bytes, shape: RunShape, floats: list[int], ints: list[tuple[int, str]]
    ) -> None:
        import numpy as np

        self.floats = Slots(floats, 8)
        by_type: dict[str, tuple[list[int], list[int]]] = {}
        for leaf, (start, typ) in enumerate(ints):
            starts, leaves = by_type.setdefault(typ, ([], []))
            starts.append(start)
            leaves.append(leaf)
        self.ints: list[tuple[str, Slots, int]] = []  # (type, slots, first column)
        int_at = [0] * len(ints)  # each int leaf's column in a read block
        column = 0
        for typ, (starts, leaves) in by_type.items():
            slots = Slots(starts, np.dtype(typ).itemsize)
            self.ints.append((typ, slots, column))
            for k, slot in enumerate(slots.order):
                int_at[leaves[slot]] = column + k
            column += len(starts)
        float_at = [0] * len(floats)
        for k, slot in enumerate(self.floats.order):
            float_at[slot] = k
        self.shape = shape.renumbered(float_at, int_at)
        super().__init__(raw, (self.floats, *(slots for _, slots, _ in self.ints)))

    def read(self, payload: bytes, start: int, m: int) -> RunBlock:
        """The ``m`` pickles from ``payload[start]`` on (each this template's)."""
        import numpy as np

        shape, size = self.shape, self.size
        floats = self.floats.read(payload, start, m, size, ">f8", grouped=True)
        ints = np.empty((m, shape.n_ints), np.int64)
        for typ, slots, at in self.ints:
            ints[:, at : at + len(slots.starts)] = slots.read(payload, start, m, size, typ, True)
        return RunBlock(shape, floats, ints)


def _run_template(raw: bytes, events: list[ev.Event]) -> _RunTemplate | None:
    """The run template of ``raw`` (one pickle; ``events`` what it holds), or ``None``
    where its events have no :class:`~aoff._core._runblock.RunShape` or its bytes are
    not the ones this reads.

    Its payloads' places are where ``raw`` and the pickle of the same events with every
    float's bits inverted and every int's lowest bit flipped differ: a float's 8 bytes,
    an int's first (little-endian) byte, whose opcode before it gives its width
    (flipping the lowest bit keeps an int in its opcode's range); no other byte
    (checked), then each payload checked against its value."""
    import numpy as np

    got = shape_of(events)
    if got is None or pickle.dumps(events, protocol=5) != raw:
        return None
    shape, fl, il, order = got
    inverted = (np.array(fl, np.float64).view(np.uint64) ^ np.uint64(2**64 - 1)).view(np.float64)
    other_f, other_i = inverted.tolist(), [v ^ 1 for v in il]
    other = [shape.event(i, other_f, other_i) for i in range(len(events))]
    a = np.frombuffer(raw, np.uint8)
    b = np.frombuffer(pickle.dumps(other, protocol=5), np.uint8)
    if len(a) != len(b):
        return None
    diff = (a != b).nonzero()[0]
    if len(diff) != 8 * len(fl) + len(il):
        return None
    # each leaf's first differing byte, in order: 8 of a float's (all of them, in a
    # row), 1 of an int's (its opcode before it)
    is_f = np.frombuffer("".join(order).encode(), np.uint8) == ord("f")
    first_at = np.concatenate(([0], np.cumsum(np.where(is_f, 8, 1))[:-1]))
    firsts = diff[first_at]
    if len(firsts) and firsts.min() < _HEAD:
        return None
    eight = np.arange(8)
    f_first = firsts[is_f]
    if not (diff[first_at[is_f][:, None] + eight] == f_first[:, None] + eight).all():
        return None
    i_first = firsts[~is_f].tolist()
    ops = [INT_OPS_BY_CODE.get(raw[at - 1]) for at in i_first]
    if None in ops:
        return None
    i_starts = [(at, INT_TYPES[op]) for at, op in zip(i_first, ops, strict=True) if op]
    want = np.array(fl, ">f8").view(np.uint8).reshape(-1, 8)
    if not (a[f_first[:, None] + eight] == want).all():
        return None
    for (start, typ), value in zip(i_starts, il, strict=True):
        width = _INT_WIDTHS[typ]
        if int.from_bytes(raw[start : start + width], "little", signed=typ == "<i4") != value:
            return None
    f_starts = f_first.tolist()
    return _RunTemplate(raw, shape, f_starts, i_starts)


class PlainSteps:
    """Reads frames (``unpack_events``'s payloads), each pickle of plain ``log_step``
    events that matches a template as columns (see the module's doc), the others
    unpickled; the events in order, as many as the pickles hold."""

    __slots__ = ("builds", "read", "templates")

    def __init__(self) -> None:
        self.templates: list[_Template | _RunTemplate] = []
        #: templates made so far (at most :data:`MAX_BUILDS`)
        self.builds = 0
        #: steps read as columns so far
        self.read = 0

    def unpack(self, payload: bytes) -> list[ev.Event]:
        """The events of a frame (a pickle of a list of events, or several joined); raises
        what ``unpack_events`` raises for a frame it cannot read."""
        if not self.templates and self.builds >= MAX_BUILDS:
            return unpack_events(payload)
        arr: Any = None  # the payload's bytes for NumPy, made once a template may match
        f = io.BytesIO(payload)
        out: list[ev.Event] = []
        size = len(payload)
        at = 0
        run: list[int] = []  # offsets of pickles that match ``tpl``, in a row
        tpl: _Template | _RunTemplate | None = None
        while at < size:
            got = None
            if self.templates:
                if arr is None:
                    import numpy as np

                    arr = np.frombuffer(payload, np.uint8)
                got = self._match(arr, payload, at)
            if got is not None and (got is tpl or not run):
                tpl = got
                run.append(at)
                at += got.size
                continue
            if run:
                assert tpl is not None
                self._block(payload, tpl, run, out)
                run = []
                tpl = None
                continue  # the pickle at ``at`` again, against every template
            f.seek(at)
            events = load_list(f)
            end = f.tell()
            if (
                self.builds < MAX_BUILDS
                and MIN_STEPS <= len(events) <= MAX_LEARN
                and type(events[0]) is tuple
                and events[0][0] in _RUN_KINDS  # the cheap refusal first
            ):
                self._learn(payload[at:end], events)
            out += events
            at = end
        if run:
            assert tpl is not None
            self._block(payload, tpl, run, out)
        return out

    def _match(self, arr: Any, payload: bytes, at: int) -> _Template | _RunTemplate | None:
        for t in self.templates:
            if t.matches(arr, payload, at):
                return t
        return None

    def _learn(self, raw: bytes, events: list[ev.Event]) -> None:
        t: _Template | _RunTemplate | None = _template(raw, events)
        if t is None:  # not plain steps alone: regular iterations?
            t = _run_template(raw, events)
        self.builds += 1
        if t is not None:
            self.templates.insert(0, t)
            del self.templates[MAX_TEMPLATES:]

    def _block(
        self, payload: bytes, t: _Template | _RunTemplate, offsets: list[int], out: list[ev.Event]
    ) -> None:
        """The pickles at ``offsets`` (each ``t``'s) as one ``STEP_BLOCK`` event and a
        :data:`~aoff._core._events.FOLDED` marker for each step after its first; or,
        pickles of regular iterations, one ``RUN_BLOCK`` and a marker for each event
        after its first."""
        start, m = offsets[0], len(offsets)  # adjacent: one after the other
        if type(t) is _RunTemplate:
            block = t.read(payload, start, m)
            last = float(block.floats[-1, t.shape.last_wall])
            out.append((ev.RUN_BLOCK, last, block))
            out += [_FOLDED] * (block.calls - 1)
            self.read += block.steps
            return
        assert type(t) is _Template
        walls = t.walls.read(payload, start, m, t.size, ">f8").ravel().tolist()
        its = t.its.read(payload, start, m, t.size, t.it_type).ravel()
        values = t.values.read(payload, start, m, t.size, ">f8")
        n = len(walls)
        out.append((ev.STEP_BLOCK, walls[-1], walls, its, t.names, values.reshape(n, len(t.names))))
        out += [_FOLDED] * (n - 1)
        self.read += n


#: a step read with the ``STEP_BLOCK`` before it (one object for all)
_FOLDED: ev.Event = (ev.FOLDED,)
