"""Pickles of regular iterations held as columns: one skeleton, a matrix of payloads.

Why a module of its own: the single run's agent reads a pickle of the four kinds of a
regular iteration (``update_collector_timing``, ``update_done_rates``, ``log_collector``,
``log_step``; ``_transport/_plainsteps``) without unpickling it when its bytes equal a
template's but for the floats and ints it holds. What such a pickle stands for is a
:class:`RunShape` (the events' skeleton: kinds, keys, ``None`` fields, which leaf is a
float or an int) and one row of payloads; ``m`` pickles in a row are a :class:`RunBlock`,
an ``m x floats`` float64 and an ``m x ints`` int64 matrix. The run fold
(``_fold_columns.RunFold.take_runblock``) reads the block's columns through the shape's
indices (a step's metrics are ``floats[:, shape.metric_slots]``), with no event, tuple,
dict or float made a step; :meth:`RunBlock.events` gives the events themselves, bit for
bit, for the per-event fold (its fallback) and the tests.

A shape is made only of events the run fold takes as they are (the four kinds without
``axes=``, plain floats, ints, dicts of plain floats with ``str`` keys, each kind's
events alike within the pickle); anything else has no shape and is unpickled.
"""

from __future__ import annotations

from typing import Any

from . import _events as ev

__all__ = ["RunBlock", "RunShape", "shape_of"]

_STEP, _TIMING, _COLLECTOR, _DONE = ev.STEP, ev.COLLECTOR_TIMING, ev.COLLECTOR, ev.DONE_RATES
#: each kind's length without optional fields (``axes=``: no shape)
_LENS = {k: 2 + len(ev.KINDS[k].fields) for k in (_STEP, _TIMING, _COLLECTOR, _DONE)}
_FLOAT_ONLY = frozenset((float,))

#: a field of a skeleton: ("f", slot) a float, ("i", slot) an int, ("n",) ``None``,
#: ("d", keys, slots) a dict of floats
Field = tuple[Any, ...]


class _Leaves:
    """The float and int leaves of events in the order pickle writes them, and each
    event's skeleton as it is read."""

    __slots__ = ("floats", "ints", "order")

    def __init__(self) -> None:
        self.floats: list[float] = []
        self.ints: list[int] = []
        self.order: list[str] = []  # "f" or "i", a leaf

    def float_(self, x: object) -> Field | None:
        if type(x) is not float:
            return None
        self.floats.append(x)
        self.order.append("f")
        return ("f", len(self.floats) - 1)

    def int_(self, x: object) -> Field | None:
        if type(x) is not int:  # not a bool
            return None
        self.ints.append(x)
        self.order.append("i")
        return ("i", len(self.ints) - 1)

    def dict_(self, x: object) -> Field | None:
        """A dict of plain floats with ``str`` keys, not empty."""
        if type(x) is not dict or not x or not all(type(k) is str for k in x):
            return None
        values = list(x.values())
        if not _FLOAT_ONLY.issuperset(map(type, values)):
            return None
        start = len(self.floats)
        self.floats += values
        self.order += "f" * len(values)
        return ("d", tuple(x), list(range(start, start + len(values))))

    def optional(self, x: object, read: Any) -> Field | None:
        return ("n",) if x is None else read(x)


def _skeleton(e: object, leaves: _Leaves) -> tuple[Field, ...] | None:
    """One event's skeleton (its fields after the kind), its leaves added; ``None``
    where the run fold would not take it as it is."""
    if type(e) is not tuple or not e or e[0] not in _LENS or len(e) != _LENS[e[0]]:
        return None
    kind, f, i, d = e[0], leaves.float_, leaves.int_, leaves.dict_
    if kind == _TIMING:
        got = [f(e[1]), d(e[2])]
    elif kind == _DONE:
        got = [f(e[1]), f(e[2]), f(e[3])]
    elif kind == _COLLECTOR:
        got = [f(e[1]), i(e[2]), i(e[3]), f(e[4])]
    else:
        opt = leaves.optional
        got = [f(e[1]), i(e[2]), d(e[3]), opt(e[4], f), opt(e[5], d), opt(e[6], d)]
        got += [f(t) for t in e[7:11]]
        got.append(opt(e[11], i))
    if any(g is None for g in got):
        return None
    return (("k", kind), *(g for g in got if g is not None))


class RunShape:
    """One pickle's events: their skeletons and, for the run fold, where each column's
    payloads are (indices into a block's ``floats`` and ``ints`` rows).

    Within the pickle every step has one shape (metric keys, a reward or none, reward
    metrics and components or none, ``extra_info`` or none) and every timing dict one
    key sequence, so a column of ``m`` pickles is one fancy index of the block."""

    __slots__ = (
        "_spans",
        "c_names",
        "c_slots",
        "coll_buf",
        "coll_reward",
        "coll_tail",
        "coll_total",
        "done_a",
        "done_b",
        "done_tail",
        "events",
        "extra_slots",
        "it_slots",
        "kinds",
        "last_step",
        "last_wall",
        "m_names",
        "m_slots",
        "n_floats",
        "n_ints",
        "reward_slots",
        "rm_names",
        "rm_slots",
        "step_slots",
        "steps",
        "time_slots",
        "timing_keys",
        "timing_slots",
        "timing_tail",
        "wall_slots",
    )

    def __init__(self, skeletons: list[tuple[Field, ...]], n_floats: int, n_ints: int) -> None:
        import numpy as np

        self.events = skeletons
        self.n_floats, self.n_ints = n_floats, n_ints
        self.kinds = [sk[0][1] for sk in skeletons]
        steps = [sk for sk in skeletons if sk[0][1] == _STEP]
        self.steps = len(steps)
        self.last_step = len(self.kinds) - 1 - self.kinds[::-1].index(_STEP)
        self.last_wall = skeletons[-1][1][1]

        def slots(rows: list[list[int]]) -> Any:
            width = len(rows[0]) if rows else 0
            return np.array(rows, np.intp).reshape(len(rows), width)

        def names(field: Field) -> tuple[str, ...] | None:
            return None if field[0] == "n" else field[1]

        first = steps[0]
        self.wall_slots = slots([[sk[1][1]] for sk in steps]).ravel()
        self.it_slots = slots([[sk[2][1]] for sk in steps]).ravel()
        self.m_names = names(first[3])
        self.m_slots = slots([sk[3][2] for sk in steps])
        self.reward_slots = None if first[4][0] == "n" else slots([[sk[4][1]] for sk in steps])
        self.rm_names = names(first[5])
        self.rm_slots = None if self.rm_names is None else slots([sk[5][2] for sk in steps])
        self.c_names = names(first[6])
        self.c_slots = None if self.c_names is None else slots([sk[6][2] for sk in steps])
        self.time_slots = slots([[t[1] for t in sk[7:11]] for sk in steps])  # S x 4
        self.extra_slots = None if first[11][0] == "n" else slots([[sk[11][1]] for sk in steps])
        if self.reward_slots is not None:
            self.reward_slots = self.reward_slots.ravel()
        if self.extra_slots is not None:
            self.extra_slots = self.extra_slots.ravel()
        tail = self.kinds[self.last_step + 1 :]  # each pickle's events after its last step
        done = [sk for sk in skeletons if sk[0][1] == _DONE]
        self.done_a = slots([[sk[2][1]] for sk in done]).ravel()
        self.done_b = slots([[sk[3][1]] for sk in done]).ravel()
        self.done_tail = tail.count(_DONE)
        coll = [sk for sk in skeletons if sk[0][1] == _COLLECTOR]
        self.coll_total = slots([[sk[2][1]] for sk in coll]).ravel()
        self.coll_buf = slots([[sk[3][1]] for sk in coll]).ravel()
        self.coll_reward = slots([[sk[4][1]] for sk in coll]).ravel()
        self.coll_tail = tail.count(_COLLECTOR)
        timing = [sk for sk in skeletons if sk[0][1] == _TIMING]
        self.timing_keys = timing[0][2][1] if timing else ()
        self.timing_slots = slots([sk[2][2] for sk in timing])
        self.timing_tail = tail.count(_TIMING)
        # a step's floats as one row (one fancy index a block): wall, metrics, reward,
        # reward metrics, components, the four times
        parts = [self.wall_slots[:, None], self.m_slots]
        if self.reward_slots is not None:
            parts.append(self.reward_slots[:, None])
        parts += [x for x in (self.rm_slots, self.c_slots) if x is not None]
        parts.append(self.time_slots)
        self.step_slots = np.concatenate(parts, axis=1)
        self._spans: dict[int, tuple[Any, Any, dict[Any, Any]]] = {}

    def span(self, pickles: int) -> tuple[Any, Any, dict[Any, Any]]:
        """The kinds (int64) of ``pickles`` pickles up to the last one's last step, its
        steps' places, and a dict the run fold keeps what it derives from them in
        (made once a block size: a template's blocks are mostly of one)."""
        import numpy as np

        got = self._spans.get(pickles)
        if got is None:
            if len(self._spans) >= 64:
                self._spans.clear()
            end = (pickles - 1) * len(self.kinds) + self.last_step + 1
            ka = np.tile(np.array(self.kinds, np.int64), pickles)[:end]
            got = self._spans[pickles] = (ka, (ka == _STEP).nonzero()[0], {})
        return got

    def renumbered(self, float_at: list[int], int_at: list[int]) -> RunShape:
        """The same shape with float leaf ``j`` at column ``float_at[j]`` of a block's
        ``floats`` and int leaf ``j`` at ``int_at[j]`` of its ``ints`` (the order a
        reader reads them in)."""

        def field(f: Field) -> Field:
            if f[0] == "f":
                return ("f", float_at[f[1]])
            if f[0] == "i":
                return ("i", int_at[f[1]])
            if f[0] == "d":
                return ("d", f[1], [float_at[j] for j in f[2]])
            return f

        skeletons = [tuple(map(field, sk)) for sk in self.events]
        return RunShape(skeletons, self.n_floats, self.n_ints)

    def event(self, i: int, floats: list[float], ints: list[int]) -> ev.Event:
        """Event ``i`` of a pickle of this shape with the payloads ``floats``, ``ints``."""
        out: list[object] = []
        for field in self.events[i]:
            tag = field[0]
            if tag == "f":
                out.append(floats[field[1]])
            elif tag == "i":
                out.append(ints[field[1]])
            elif tag == "d":
                out.append(dict(zip(field[1], [floats[j] for j in field[2]], strict=True)))
            elif tag == "k":
                out.append(field[1])
            else:
                out.append(None)
        return tuple(out)


def shape_of(events: list[ev.Event]) -> tuple[RunShape, list[float], list[int], list[str]] | None:
    """The shape of a pickle's ``events`` (see :class:`RunShape`), their float and int
    leaves in the order pickle writes them and that order (``"f"``/``"i"`` a leaf);
    ``None`` where an event is not one the run fold takes as it is, the steps or the
    timing dicts differ in shape, or no event is a step."""
    leaves = _Leaves()
    skeletons: list[tuple[Field, ...]] = []
    for e in events:
        sk = _skeleton(e, leaves)
        if sk is None:
            return None
        skeletons.append(sk)
    steps = [sk for sk in skeletons if sk[0][1] == _STEP]
    if not steps:
        return None

    def form(sk: tuple[Field, ...]) -> tuple[object, ...]:
        return tuple(f[0] if f[0] != "d" else ("d", f[1]) for f in sk)

    if len(set(map(form, steps))) != 1:
        return None
    timing = [form(sk) for sk in skeletons if sk[0][1] == _TIMING]
    if len(set(timing)) > 1:
        return None
    shape = RunShape(skeletons, len(leaves.floats), len(leaves.ints))
    return shape, leaves.floats, leaves.ints, leaves.order


class RunBlock:
    """``m`` pickles of one :class:`RunShape` in a row: their payloads as an ``m x
    n_floats`` float64 and an ``m x n_ints`` int64 matrix (``RUN_BLOCK``'s one field)."""

    __slots__ = ("floats", "ints", "shape")

    def __init__(self, shape: RunShape, floats: Any, ints: Any) -> None:
        self.shape = shape
        self.floats = floats
        self.ints = ints

    @property
    def pickles(self) -> int:
        return len(self.floats)

    @property
    def calls(self) -> int:
        """The events (calls) the block stands for."""
        return len(self.floats) * len(self.shape.kinds)

    @property
    def steps(self) -> int:
        return len(self.floats) * self.shape.steps

    def part(self, start: int, stop: int | None = None) -> RunBlock:
        """Pickles ``start .. stop`` of the block (views)."""
        return RunBlock(self.shape, self.floats[start:stop], self.ints[start:stop])

    def events(self, first: int = 0) -> list[ev.Event]:
        """The events the block stands for, from event ``first`` on (bit for bit those
        the pickles held)."""
        shape = self.shape
        per = len(shape.kinds)
        out: list[ev.Event] = []
        rows = zip(self.floats.tolist(), self.ints.tolist(), strict=True)
        for p, (fl, il) in enumerate(rows):
            for i in range(max(0, first - p * per), per):
                out.append(shape.event(i, fl, il))
        return out
