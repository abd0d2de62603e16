"""A run group's batched values: checked and copied once in the caller, split per run later.

Why a module of its own: a group's ``log_step`` must cost about one call plus the copy of
the batch, never one call per run. So the caller's side (:func:`take_batch`) only checks
each value's shape and copies it once (a NumPy array, a torch tensor or a JAX array with
a leading axis of one entry per run; a plain number goes to every run), and the split
into one ``STEP`` event per run (:func:`split_step`) runs beside the group's pump, off the
training loop. Values stay in their dtype until the split, which turns each column into
Python numbers with ``tolist()`` (exact: a float32 becomes the float64 of the same value,
so what the backends write back as float32 is bit for bit the value logged). Plain
steps in a row (metrics only, floats, one key sequence) are not split into events at all
(:func:`split_items`): each run gets one block of them as arrays, which its fold takes as
columns (``Folder.apply_block``), as a run of regular iterations is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np

from . import _events as ev
from ._vectors import Vector

__all__ = [
    "GROUP_BLOCK",
    "PER_RUN",
    "GroupStep",
    "PerRunVectors",
    "axes_at",
    "batch_axes",
    "batch_of",
    "item_steps",
    "split_item",
    "split_items",
    "split_step",
    "take_batch",
    "take_block",
    "take_block_whole",
]

_STEP = ev.STEP
_BLOCK = ev.STEP_BLOCK
_FOLDED = ev.FOLDED
#: group steps in a row below which a block is not worth its arrays: split one by one (the
#: run fold's own threshold, ``_fold_columns.MIN_STEPS``)
BLOCK_MIN = 4
_FLOAT_ONLY = {float}
_INT_ONLY = {int}
#: the dtype kinds a batch takes: bool, signed and unsigned integers, floats
_NUMBERS = "biuf"

#: marks a queued item that carries its own event for each run: ``(PER_RUN, events)``.
#: Compared with ``==``: the item may have crossed a pickle (the group's agent)
PER_RUN = "per-run"

#: marks a queued item that carries ``K`` steps of every run whole (``aoff.jax.log_many``'s
#: block of floats, :func:`take_block_whole`): ``(GROUP_BLOCK, wall, steps, names,
#: values)``, ``steps`` an int64 array ``(runs, K)``, ``values`` a float64 array
#: ``(runs, K, keys)``. Compared with ``==``, as ``PER_RUN``. The group's agent reads a
#: frame of plain group steps as one with each step's wall time after its fields (a
#: tuple of ``K`` floats) and ``K - 1`` ``FOLDED`` markers, which :func:`split_items`
#: skips (``_transport/_groupsteps``)
GROUP_BLOCK = "group-block"

#: one group ``log_step``: (wall time, steps, metrics, reward, axes); each of steps, the
#: metrics' values, reward and the axes' values is a list of one number per run, or one
#: number for all (axes: None when the call gave none)
GroupStep = tuple[float, Any, dict[str, Any], Any, dict[str, Any] | None]


class PerRunVectors:
    """A ``(runs, num_envs)`` value: row ``k`` is run ``k``'s per-environment vector
    (a float64 copy), which that run reduces as a single run reduces one
    (``_core/_vectors.py``: the mean under the tag, the spread in ``<tag>/envs``)."""

    __slots__ = ("rows",)

    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def at(self, k: int) -> Vector:
        return Vector(self.rows[k])


def batch_of(where: str, value: Any, runs: int, *, vectors: bool = False) -> Any:
    """``value`` as one number for every run, or a list of one number per run.

    A value with a leading axis of length ``runs`` (NumPy, torch, JAX, a list) is split
    across the runs; a 0-d value or a plain number goes to all. With ``vectors`` (a
    metric or the reward), a ``(runs, num_envs)`` value is each run's per-environment
    vector (:class:`PerRunVectors`). Anything else is a clear error here, at the call:
    ``ValueError`` for a wrong shape, ``TypeError`` for a value that is not numbers.
    """
    if type(value) is float or type(value) is int:
        return value
    detach = getattr(value, "detach", None)
    if detach is not None:  # a torch tensor, on any device: one copy to the host
        value = detach().cpu().numpy()
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - numpy's own message says what
        raise TypeError(f"{where}: cannot read {type(value).__name__} as numbers: {exc}") from None
    if arr.dtype.kind not in _NUMBERS:
        raise TypeError(
            f"{where}: expected numbers, got dtype {arr.dtype} ({type(value).__name__})"
        )
    if arr.ndim == 0:
        return arr.item()
    if vectors and arr.ndim == 2 and arr.shape[0] == runs and arr.shape[1] > 0:
        return PerRunVectors(np.array(arr, dtype=np.float64))  # the one copy
    if arr.ndim != 1 or arr.shape[0] != runs:
        also = f", a vector per run (shape ({runs}, num_envs))" if vectors else ""
        raise ValueError(
            f"{where}: a group of {runs} runs takes one number per run (shape ({runs},))"
            f"{also} or one number for all, got shape {tuple(arr.shape)}"
        )
    return arr.tolist()  # the one copy: Python numbers, exact for every float dtype


def batch_axes(where: str, axes: Mapping[str, Any] | None, runs: int) -> dict[str, Any] | None:
    """A group call's ``axes=``: each axis one number for every run or one per run, as a
    value is (:func:`batch_of`); whether each is a clock a run may set is the run's fold's
    to say (``_fold_axes.py``), as for a single run."""
    if axes is None:
        return None
    if not isinstance(axes, Mapping):
        raise TypeError(f"{where}: axes must be a dict, got {type(axes).__name__}")
    out = {}
    for name, v in axes.items():
        if not isinstance(name, str):
            raise TypeError(f"{where}: axis names must be str, got {name!r}")
        out[name] = batch_of(f"{where}: axis {name!r}", v, runs)
    return out


def axes_at(axes: dict[str, Any], k: int) -> dict[str, Any]:
    """Run ``k``'s axes of a batch from :func:`batch_axes`."""
    return {name: _at(v, k) for name, v in axes.items()}


def take_batch(
    runs: int,
    wall: float,
    step: Any,
    metrics: Mapping[str, Any] | None,
    reward: Any,
    axes: Mapping[str, Any] | None = None,
) -> GroupStep:
    """The caller's half of a group ``log_step``: every value checked and copied once."""
    if metrics is not None and not isinstance(metrics, Mapping):
        raise TypeError(f"log_step: metrics must be a dict, got {type(metrics).__name__}")
    cols = {}
    for k, v in (metrics or {}).items():
        if not isinstance(k, str):
            raise TypeError(f"log_step: metric keys must be str, got {k!r}")
        if type(v) is np.ndarray and v.ndim == 1 and len(v) == runs and v.dtype.kind in _NUMBERS:
            cols[k] = v.tolist()  # batch_of's common case, without naming it for an error
        else:
            cols[k] = batch_of(f"log_step: metric {k!r}", v, runs, vectors=True)
    steps = batch_of("log_step: step", step, runs)
    for s in steps if type(steps) is list else (steps,):
        if type(s) is not int:
            raise TypeError(f"log_step: steps must be integers, got {s!r}")
    r = None if reward is None else batch_of("log_step: reward", reward, runs, vectors=True)
    return (wall, steps, cols, r, batch_axes("log_step", axes, runs))


def take_block(runs: int, wall: float, steps: Any, metrics: Mapping[str, Any]) -> list[GroupStep]:
    """``K`` group ``log_step`` calls at once (``aoff.jax.log_many``'s block of steps): each
    value an array of shape ``(K, runs)``, ``steps`` of integers, ``metrics`` of numbers.

    What :func:`take_batch` does ``K`` times, with one conversion a value for the ``K``
    steps (``tolist`` of the whole array: the one copy, exact as there) instead of one
    check and one copy a value and a step. The caller checked the shapes (a
    ``ValueError`` here otherwise); a dtype that is not numbers is a ``TypeError`` as in
    :func:`take_batch`."""
    arrays = {"step": np.asarray(steps), **{k: np.asarray(v) for k, v in metrics.items()}}
    for name, arr in arrays.items():
        if arr.ndim != 2 or arr.shape[1] != runs:
            raise ValueError(f"log_step: {name}: a block is (steps, {runs}), got {arr.shape}")
        if arr.dtype.kind not in ("iu" if name == "step" else _NUMBERS):
            raise TypeError(f"log_step: {name}: expected numbers, got dtype {arr.dtype}")
    step_rows = arrays.pop("step").tolist()
    names = tuple(metrics)
    columns = [arr.tolist() for arr in arrays.values()]
    rows: Iterable[tuple[Any, ...]] = (
        zip(*columns, strict=True) if names else repeat((), len(step_rows))
    )
    return [
        (wall, s, dict(zip(names, row, strict=True)), None, None)
        for s, row in zip(step_rows, rows, strict=True)
    ]


def take_block_whole(
    runs: int, wall: float, steps: Any, metrics: Mapping[str, Any]
) -> tuple[str, float, Any, tuple[str, ...], Any] | None:
    """``K`` group steps as one ``GROUP_BLOCK`` item: ``steps`` and each metric of shape
    ``(K, runs)``, converted once for the block (each metric one float64 copy into the
    ``(runs, K, keys)`` array every run's ``STEP_BLOCK`` is a slice of; exact: a float32
    becomes the float64 of the same value). ``None`` where :func:`take_block`'s step by
    step path keeps what a block of columns would not (a metric that is not a float of
    at most 64 bits, steps that are not integers within int64, no metrics); a wrong
    shape is a ``ValueError`` as there."""
    s = np.asarray(steps)
    if s.ndim != 2 or s.shape[1] != runs:
        raise ValueError(f"log_step: step: a block is (steps, {runs}), got {s.shape}")
    if s.dtype.kind not in "iu" or (s.dtype.kind == "u" and s.dtype.itemsize >= 8):
        return None
    arrays = [np.asarray(v) for v in metrics.values()]
    if not arrays:
        return None
    for name, arr in zip(metrics, arrays, strict=True):
        if arr.shape != s.shape:
            raise ValueError(f"log_step: {name}: a block is (steps, {runs}), got {arr.shape}")
        if arr.dtype.kind != "f" or arr.dtype.itemsize > 8:
            return None
    k = s.shape[0]
    values = np.empty((runs, k, len(arrays)), np.float64)
    for j, arr in enumerate(arrays):
        values[:, :, j] = arr.T
    return (GROUP_BLOCK, wall, np.ascontiguousarray(s.T, np.int64), tuple(metrics), values)


def item_steps(item: Any) -> int:
    """Steps of every run a queued item stands for: a group ``log_step`` 1, a
    ``GROUP_BLOCK`` its ``K``, any other call 0."""
    head = item[0]
    if type(head) is float:
        return 1
    if type(head) is str and head == GROUP_BLOCK:
        return int(item[2].shape[1])
    return 0


def _block_events(item: Any, runs: int) -> list[ev.Event]:
    """A ``GROUP_BLOCK``'s ``STEP_BLOCK`` event a run: slices of its arrays, no copy. Its
    steps' wall times are the item's for all, or (the group's agent reading a frame as
    columns, ``_transport/_groupsteps``) each step's, a sixth field."""
    wall, its, names, values = item[1:5]
    walls = item[5] if len(item) > 5 else (wall,) * its.shape[1]
    return [(_BLOCK, wall, walls, its[r], names, values[r]) for r in range(runs)]


def _at(value: Any, k: int) -> Any:
    if type(value) is list:
        return value[k]
    if type(value) is PerRunVectors:
        return value.at(k)
    return value


def _per_run(value: Any, runs: int) -> Sequence[Any]:
    """A batch's value as a sequence of one entry per run (a value for all repeated)."""
    if type(value) is list:
        return value
    if type(value) is PerRunVectors:
        return [value.at(k) for k in range(runs)]
    return repeat(value, runs)  # type: ignore[return-value]  # zip() only iterates it


def split_step(batch: GroupStep, runs: int) -> list[ev.Event]:
    """One ``STEP`` event per run from a group ``log_step`` (beside the pump).

    Built by transposing the batch's columns (``zip`` over one sequence per tag, then one
    ``dict(zip(names, row))`` a run): the loop over runs and tags is C's, not one Python
    look-up per value."""
    wall, steps, cols, reward, axes = batch
    names = tuple(cols)
    rows: Iterable[tuple[Any, ...]] = (
        zip(*[_per_run(v, runs) for v in cols.values()], strict=True) if names else repeat((), runs)
    )
    step_of = _per_run(steps, runs)
    reward_of = repeat(None, runs) if reward is None else _per_run(reward, runs)
    out: list[ev.Event] = [
        (
            _STEP,
            wall,
            s,
            dict(zip(names, row, strict=True)),
            r,
            None,
            None,
            0.0,
            0.0,
            0.0,
            0.0,
            None,
        )
        for s, row, r in zip(step_of, rows, reward_of, strict=True)
    ]
    if axes is not None:
        # ``axes`` is an optional field: an event without it is the call without axes=
        out = [(*event, axes_at(axes, k)) for k, event in enumerate(out)]
    return out


def split_item(item: Any, runs: int) -> list[ev.Event]:
    """One event per run from any item a group queues: a group ``log_step``
    (:func:`take_batch`), ``(PER_RUN, events)``, a whole block (``GROUP_BLOCK``: one
    ``STEP_BLOCK`` a run), or an event every run gets as is. One
    definition for the pump thread and the group's agent, which split the same items."""
    head = item[0]
    if type(head) is float:  # a group log_step: its wall time comes first
        return split_step(item, runs)
    if type(head) is str:
        if head == PER_RUN:
            return list(item[1])
        if head == GROUP_BLOCK:
            return _block_events(item, runs)
    return [item] * runs


def _plain_keys(item: Any) -> tuple[str, ...] | None:
    """A group ``log_step``'s metric keys when a block may carry it (metrics only, no
    reward, no axes, each value a list a run or one value for all); else ``None``."""
    if type(item[0]) is not float or item[3] is not None or item[4] is not None:
        return None
    cols = item[2]
    if not cols or PerRunVectors in set(map(type, cols.values())):
        return None
    return tuple(cols)


def _block(
    stretch: Sequence[GroupStep], names: tuple[str, ...], runs: int
) -> list[ev.Event] | None:
    """One ``STEP_BLOCK`` event a run from group steps of one key sequence, or ``None``
    where a value is not a plain float or a step not an int64 (split one by one: the
    per-event fold's checks and conversions take those)."""
    got = _arrays(stretch, names, runs)
    if got is None:
        return None
    return _block_events((GROUP_BLOCK, got[0][-1], got[1], names, got[2], got[0]), runs)


def _arrays(
    stretch: Sequence[GroupStep], names: tuple[str, ...], runs: int
) -> tuple[tuple[float, ...], Any, Any] | None:
    """Group steps of one key sequence as columns: their wall times, steps ``(runs, K)``
    int64 and values ``(runs, K, keys)`` float64; ``None`` where a value is not a plain
    float or a step not an int64."""
    per_run = [runs * [v] if type(v) is not list else v for v in _values(stretch)]
    steps = [runs * [s] if type(s) is not list else s for s in (item[1] for item in stretch)]
    if not _FLOAT_ONLY.issuperset(map(type, chain.from_iterable(per_run))):
        return None
    if set(map(type, chain.from_iterable(steps))) != _INT_ONLY:
        return None
    try:
        its = np.array(steps, np.int64).T.copy()  # (runs, K)
    except OverflowError:
        return None
    k, keys = len(stretch), len(names)
    values = np.array(per_run, np.float64).reshape(k, keys, runs).transpose(2, 0, 1).copy()
    return tuple(item[0] for item in stretch), its, values


def _values(stretch: Sequence[GroupStep]) -> Iterable[Any]:
    return chain.from_iterable(item[2].values() for item in stretch)


def split_items(items: Sequence[Any], runs: int) -> list[list[ev.Event]]:
    """Each run's events from items a group queued, in order: :func:`split_item`'s, but
    ``BLOCK_MIN`` or more plain group steps in a row with one key sequence (metrics
    only, floats: what ``log_step``/``log_many`` hand over in a training loop) become
    one ``STEP_BLOCK`` event a run, its steps as arrays (``K`` steps by keys, one slice
    a run): the run's fold takes them as columns, no dict a step and run. The group's
    agent's frames read as columns (``GROUP_BLOCK`` items with each step's wall time,
    their ``FOLDED`` markers) join the plain steps of their key sequence around them."""
    out: list[list[ev.Event]] = [[] for _ in range(runs)]
    n = len(items)
    i = 0
    while i < n:
        if _is_folded(items[i]):  # a step of the GROUP_BLOCK before it
            i += 1
            continue
        names = _stretch_keys(items[i])
        j = i + 1
        if names is not None:
            while j < n and (_is_folded(items[j]) or _stretch_keys(items[j]) == names):
                j += 1
        stretch = items[i:j]
        if names is not None and any(_is_read(item) for item in stretch):
            _split_read(stretch, names, runs, out)
            i = j
            continue
        block = _block(stretch, names, runs) if names is not None and j - i >= BLOCK_MIN else None
        if block is not None:
            for events, event in zip(out, block, strict=True):
                events.append(event)
        else:
            _split_each(stretch, runs, out)
        i = j
    return out


def _is_folded(item: Any) -> bool:
    """Whether ``item`` is a ``FOLDED`` marker: a step of the ``GROUP_BLOCK`` before it."""
    head = item[0]
    return type(head) is int and head == _FOLDED


def _is_read(item: Any) -> bool:
    """Whether ``item`` is a frame the group's agent read as columns (``GROUP_BLOCK``
    with each step's wall time)."""
    head = item[0]
    return type(head) is str and head == GROUP_BLOCK and len(item) > 5


def _stretch_keys(item: Any) -> tuple[str, ...] | None:
    """The key sequence a block may join ``item`` on: a plain group step's, a frame
    read as columns'; else ``None``."""
    if _is_read(item):
        return item[3]  # type: ignore[no-any-return]
    return _plain_keys(item)


def _split_each(items: Sequence[Any], runs: int, out: list[list[ev.Event]]) -> None:
    for item in items:
        for events, event in zip(out, split_item(item, runs), strict=True):
            events.append(event)


def _split_read(
    stretch: Sequence[Any], names: tuple[str, ...], runs: int, out: list[list[ev.Event]]
) -> None:
    """Frames read as columns and plain steps of ``names`` between them (their markers
    skipped) as one ``STEP_BLOCK`` a run; plain steps whose values are not all floats
    (or steps beyond int64) one by one where they are. Why joined: the group's shipper
    sends a frame of ~50 steps and then one of the 1-2 that came meanwhile, and each
    block costs each run's fold and writers a fixed ~60 NumPy calls."""
    parts: list[tuple[tuple[float, ...], Any, Any]] = []
    plain: list[Any] = []

    def take_plain() -> None:
        if not plain:
            return
        got = _arrays(plain, names, runs)
        if got is None:
            emit()
            _split_each(plain, runs, out)
        else:
            parts.append(got)
        plain.clear()

    def emit() -> None:
        if not parts:
            return
        if len(parts) == 1:
            walls, its, values = parts[0]
        else:
            walls = tuple(chain.from_iterable(p[0] for p in parts))
            its = np.concatenate([p[1] for p in parts], axis=1)
            values = np.concatenate([p[2] for p in parts], axis=1)
        block = _block_events((GROUP_BLOCK, walls[-1], its, names, values, walls), runs)
        for events, event in zip(out, block, strict=True):
            events.append(event)
        parts.clear()

    for item in stretch:
        if _is_read(item):
            take_plain()
            parts.append((item[5], item[2], item[4]))
        elif not _is_folded(item):
            plain.append(item)
    take_plain()
    emit()
