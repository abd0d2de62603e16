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

Only the single run's agent reads frames this way (``_agent/_serve``): a group's agent
splits its events per run before the fold, and a thread-mode run has no pickles.
"""

from __future__ import annotations

import io
import math
import pickle
from typing import Any

from .._core import _events as ev
from ._batches import load_list, unpack_events

__all__ = ["MIN_STEPS", "PlainSteps"]

#: steps a pickle holds at least for a template (below, the fold's per-block cost wins)
MIN_STEPS = 8
#: templates kept at once (a run has a few: one a slice length and iteration width)
MAX_TEMPLATES = 8
#: templates made in a process at most: making one pickles its steps twice and compares
#: (~3 ms for 96 steps); a run whose pickles never repeat stops trying
MAX_BUILDS = 256
#: the fixed part of a plain step after its metrics: no reward, reward metrics,
#: components; the learner's four times; no steps/s
_TAIL = (None, None, None, 0.0, 0.0, 0.0, 0.0, None)
_STEP_LEN = 2 + len(ev.KINDS[ev.STEP].fields)
#: an iteration's opcode and the NumPy type of its payload (``pickle``'s encodings)
_INT_TYPES = {"BININT1": "<u1", "BININT2": "<u2", "BININT": "<i4"}
_INT_OPS_BY_CODE = {
    pickle.BININT1[0]: "BININT1",
    pickle.BININT2[0]: "BININT2",
    pickle.BININT[0]: "BININT",
}
#: bytes before any payload: PROTO and FRAME (the frame's length), compared first
_HEAD = 11
_FLOAT_ONLY = frozenset((float,))


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


class _Template:
    """One pickle's bytes with its payloads' places: what a candidate must equal
    (``masked``, where ``mask`` is 0xFF) and where its columns are (byte indices)."""

    __slots__ = (
        "head",
        "it_type",
        "its",
        "mask",
        "masked",
        "n",
        "names",
        "size",
        "values",
        "walls",
    )

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
        width = int(np.dtype(_INT_TYPES[it_op]).itemsize)
        self.walls = _Slots(walls, 8)
        self.values = _Slots(values, 8)
        self.its = _Slots(its, width)
        self.it_type = _INT_TYPES[it_op]
        mask = np.full(len(raw), 0xFF, np.uint8)
        for slots in (self.walls, self.its, self.values):
            mask[(np.array(slots.starts)[:, None] + np.arange(slots.width)).ravel()] = 0
        self.mask = mask
        self.masked = (np.frombuffer(raw, np.uint8) & mask).tobytes()
        self.head = raw[:_HEAD]
        self.size = len(raw)
        self.names = names
        self.n = n

    def matches(self, arr: Any, payload: bytes, at: int) -> bool:
        """Whether the pickle at ``at`` in ``payload`` (``arr``: its bytes) is this
        template's but for the payloads."""
        end = at + self.size
        if end > len(payload) or payload[at : at + _HEAD] != self.head:
            return False
        return bool((arr[at:end] & self.mask).tobytes() == self.masked)


class _Slots:
    """Payloads of one width at byte offsets ``starts`` in a template, in order, read from
    ``m`` adjacent copies of it at once. Cut into runs at a constant stride (a dict's
    values), runs of the same shape at a constant spacing grouped (the steps after the
    first), each group one strided NumPy view of the payload copied whole: a byte-wise
    gather costs ~2.5 ns a byte, these few copies a run of pickles less than one
    pickle's unpickling."""

    __slots__ = ("groups", "starts", "width")

    def __init__(self, starts: list[int], width: int) -> None:
        self.starts = starts
        self.width = width
        runs: list[tuple[int, int, int]] = []  # (first byte, count, stride)
        i = 0
        while i < len(starts):
            j = i + 1
            stride = width
            if j < len(starts):
                stride = starts[j] - starts[i]
                while j + 1 < len(starts) and starts[j + 1] - starts[j] == stride:
                    j += 1
                j += 1
            runs.append((starts[i], j - i, stride))
            i = j
        # (first byte, runs, spacing, count, stride): ``runs`` runs of one shape
        groups: list[tuple[int, int, int, int, int]] = []
        for first, count, stride in runs:
            if groups:
                f0, k, spacing, c0, s0 = groups[-1]
                if (c0, s0) == (count, stride) and (k == 1 or first - f0 == k * spacing):
                    groups[-1] = (f0, k + 1, first - f0 if k == 1 else spacing, c0, s0)
                    continue
            groups.append((first, 1, 0, count, stride))
        self.groups = groups

    def read(self, payload: bytes, start: int, m: int, size: int) -> Any:
        """The payloads of ``m`` copies of the template from ``payload[start]`` on, as an
        ``(m * len(starts), width)`` array of bytes."""
        import numpy as np

        w = self.width
        out = np.empty((m, len(self.starts), w), np.uint8)
        slot = 0
        for first, k, spacing, count, stride in self.groups:
            # NumPy checks the view lies inside ``payload``
            view = np.ndarray(
                (m, k, count, w),
                np.uint8,
                payload,
                start + first,
                (size, spacing, stride, 1),
            )
            out[:, slot : slot + k * count].reshape(m, k, count, w)[...] = view
            slot += k * count
        return out.reshape(m * len(self.starts), w)


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
    it_op = _INT_OPS_BY_CODE.get(ops.pop())
    if it_op is None or min(walls.tolist()) < _HEAD:
        return None
    its = it_at + 1
    width = np.dtype(_INT_TYPES[it_op]).itemsize
    got = a[its[:, None] + np.arange(width)].copy().view(_INT_TYPES[it_op]).ravel().tolist()
    if got != [e[2] for e in events]:
        return None
    return _Template(
        raw, names, n, (walls.tolist(), its.tolist(), places[:, 1:].ravel().tolist()), it_op
    )


class PlainSteps:
    """Reads frames (``unpack_events``'s payloads), each pickle of plain ``log_step``
    events that matches a template as columns (see the module's doc), the others
    unpickled; the events in order, as many as the pickles hold."""

    __slots__ = ("builds", "read", "templates")

    def __init__(self) -> None:
        self.templates: list[_Template] = []
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
        tpl: _Template | None = None
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
                and len(events) >= MIN_STEPS
                and type(events[0]) is tuple
                and events[0][0] == ev.STEP  # the cheap refusal first: most hold other kinds
            ):
                self._learn(payload[at:end], events)
            out += events
            at = end
        if run:
            assert tpl is not None
            self._block(payload, tpl, run, out)
        return out

    def _match(self, arr: Any, payload: bytes, at: int) -> _Template | None:
        for t in self.templates:
            if t.matches(arr, payload, at):
                return t
        return None

    def _learn(self, raw: bytes, events: list[ev.Event]) -> None:
        t = _template(raw, events)
        self.builds += 1
        if t is not None:
            self.templates.insert(0, t)
            del self.templates[MAX_TEMPLATES:]

    def _block(self, payload: bytes, t: _Template, offsets: list[int], out: list[ev.Event]) -> None:
        """The pickles at ``offsets`` (each ``t``'s) as one ``STEP_BLOCK`` event and a
        :data:`~aoff._core._events.FOLDED` marker for each step after its first."""
        import numpy as np

        start, m = offsets[0], len(offsets)  # adjacent: one after the other
        walls = t.walls.read(payload, start, m, t.size).view(">f8").astype(np.float64)
        its = t.its.read(payload, start, m, t.size).view(t.it_type).astype(np.int64).ravel()
        values = t.values.read(payload, start, m, t.size).view(">f8").astype(np.float64)
        walls = walls.ravel().tolist()
        n = len(walls)
        out.append((ev.STEP_BLOCK, walls[-1], walls, its, t.names, values.reshape(n, len(t.names))))
        out += [_FOLDED] * (n - 1)
        self.read += n


#: a step read with the ``STEP_BLOCK`` before it (one object for all)
_FOLDED: ev.Event = (ev.FOLDED,)
