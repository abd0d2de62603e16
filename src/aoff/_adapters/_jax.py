"""``aoff.jax.log``: log from inside ``jax.jit``, ``lax.scan``/``fori_loop`` and ``vmap``.

Why a ``custom_vmap`` around one ``jax.debug.callback``: a plain debug callback under
``vmap`` runs once per mapped element, which is one host call per seed per step. Here the
batching rule does not map the callback: it calls the same function again with the whole
batch (an unbatched argument broadcast to it), so a ``vmap`` over N seeds lowers to ONE
host callback per call with arrays of leading axis N. Nested ``vmap``s nest the same way:
the callback gets the axes outermost first, and they are flattened into runs in that
(row-major) order. So the seed axis is the mapped axis of the outermost ``vmap``, and
with nested ones run ``i * inner + j`` is outer index ``i``, inner index ``j``.

Into a group, the callback does the least it can: it looks the target up and queues the
arrays JAX handed it (``jax.Array``s on the host, immutable, so a reference keeps them
valid: no copy) for the "aoff-jax" thread, which converts, checks and splits them and
queues them in the group (:class:`_Courier`). The compiled program waits for that
queueing only, not for the logger's work; one thread, first in first out, so each run's
steps keep the program's order. ``finish()`` waits for the thread to deliver everything
the program's callbacks queued (after ``jax.effects_barrier()``). A single run's logger
(``OffPolicyLogger``) is served in the callback itself: its user's ``effects_barrier()``
before ``finish()`` is all it needs. It is an ordered effect
(``ordered=True``), which a mapped callback could not be: unordered, XLA may run a call
outside a ``scan`` (rejax's first evaluation) after the calls inside it, and a run's
steps would reach its files out of order. Because the batching rule never maps the
callback, the order holds under ``vmap`` too.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_batching

from .._core._warning import AoffWarning
from .._faces._group import BEFORE_STOP, RunGroup

__all__ = ["Target", "counts", "log", "log_many", "use", "wait"]


class Target(Protocol):
    """What ``log`` delivers to: a :class:`~aoff.RunGroup`, or a single run's logger
    (``OffPolicyLogger``: one run, no ``vmap``)."""

    def log_step(
        self,
        step: Any,
        metrics: Mapping[str, Any] | None = ...,
        reward: Any = ...,
        *,
        axes: Mapping[str, Any] | None = ...,
    ) -> Any: ...


_lock = threading.Lock()
_default: list[Target] = []
#: host callbacks that ran (``delivered``) and that could not be delivered
_counts = {"delivered": 0, "failed": 0}
_said: set[str] = set()


@contextlib.contextmanager
def use(target: Target) -> Iterator[Target]:
    """``log`` calls with no ``logger=`` go to ``target`` while this block runs.

    The target is looked up when each callback runs, on the host, not when the program
    is traced: one compiled program can log into a new group each time it runs."""
    with _lock:
        _default.append(target)
    try:
        yield target
    finally:
        with _lock:
            _default.remove(target)


def counts() -> dict[str, int]:
    """Host callbacks delivered so far, and those that failed (no target, a bad shape):
    each failure also warns once with why. A group's calls are delivered by a thread
    beside the program: :func:`wait` (or the group's ``finish()``) first for exact
    counts."""
    return dict(_counts)


#: a courier with nothing delivered for this long while calls wait is stuck: ``wait``
#: gives up, says so and counts it failed (what comes later reaches a closed group, which
#: says that in its turn)
STALL_SECONDS = 30.0


#: how often the courier looks for calls while the program makes them, and how long
#: without any before it sleeps until the next call wakes it
POLL_SECONDS = 0.002
IDLE_SECONDS = 0.25


class _Courier:
    """The "aoff-jax" thread: delivers the calls the program's callbacks queued, in order.

    ``put`` (in the callback: a ``deque.append`` and a counter, C code) is all the program
    waits for; the thread does the conversion, the checks and the group's queueing.
    While calls come it looks for them every ``POLL_SECONDS`` instead of being woken by
    each: a wake-up a call makes the scheduler switch to the courier in the middle of the
    callback (measured: 30-50 us a call on the loaded 2-core machine, against ~1 us for
    the append), and the callback thread then waits for the interpreter lock. Idle for
    ``IDLE_SECONDS``, it sleeps until the next call sets ``_wake``. ``wait`` returns
    once every call queued before it is delivered."""

    def __init__(self) -> None:
        self._calls: collections.deque[tuple[Any, ...]] = collections.deque()
        self._queued = itertools.count()  # next(): atomic under the GIL
        self.done = 0
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._idle = False
        self._thread: threading.Thread | None = None
        self._pid = 0

    def put(self, call: tuple[Any, ...]) -> None:
        if self._thread is None or self._pid != os.getpid():  # first call, or a forked child
            self._start()
        next(self._queued)
        self._calls.append(call)
        if self._idle:
            self._wake.set()

    @property
    def queued(self) -> int:
        """Calls queued so far (itertools.count has no getter; its repr is "count(N)")."""
        return int(repr(self._queued)[6:-1])

    def _start(self) -> None:
        with self._cond:
            if self._thread is not None and self._pid == os.getpid():
                return
            if self._pid != os.getpid() and self._pid:  # a forked child: a fresh state
                self._calls = collections.deque()
                self._queued = itertools.count()
                self.done = 0
                self._wake = threading.Event()
                self._idle = False
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="aoff-jax", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        calls, cond = self._calls, self._cond
        quiet_since = time.monotonic()
        while True:
            n = len(calls)
            if not n:
                if time.monotonic() - quiet_since < IDLE_SECONDS:
                    time.sleep(POLL_SECONDS)
                    continue
                self._idle = True
                if not calls:  # a call appended before _idle was seen: no sleep
                    self._wake.wait()
                self._wake.clear()
                self._idle = False
                quiet_since = time.monotonic()
                continue
            try:
                for _ in range(n):
                    _deliver(*calls.popleft())
            finally:
                with cond:
                    self.done += n
                    cond.notify_all()
            quiet_since = time.monotonic()

    def wait(self) -> bool:
        """Block until every call queued so far is delivered; False (said once) if the
        thread delivered nothing for ``STALL_SECONDS`` meanwhile."""
        target = self.queued
        with self._cond:
            seen, since = self.done, time.monotonic()
            while self.done < target:
                self._cond.wait(0.25)
                if self.done != seen:
                    seen, since = self.done, time.monotonic()
                elif time.monotonic() - since > STALL_SECONDS:
                    _fail(
                        f"{target - self.done} calls still waiting for delivery after "
                        f"{STALL_SECONDS:g} s without progress; finish() went on without them"
                    )
                    return False
        return True


_courier = _Courier()


def wait() -> None:
    """Wait until every ``log``/``log_many`` call the programs made so far is delivered:
    ``jax.effects_barrier()`` (every callback in flight runs), then the "aoff-jax"
    thread's queue. A group's ``finish()`` does this itself."""
    jax.effects_barrier()  # type: ignore[no-untyped-call]
    _courier.wait()


def _resolve(logger: Target | None) -> Target | None:
    if logger is not None:
        return logger
    with _lock:
        return _default[-1] if _default else None


def _deliver(
    logger: Target | None,
    step: Any,
    metrics: dict[str, Any],
    reward: Any,
    axes: dict[str, Any] | None,
    block: bool,
) -> None:
    """The host side: one call per ``log`` call, the whole batch at once (``block``: a
    ``log_many`` call, whose last batch axis is ``K`` steps of every run)."""
    target = _resolve(logger)
    try:
        if target is None:
            raise RuntimeError("no logger: pass logger= or run inside aoff.jax.use(group)")
        # NumPy views first: the callback may be handed jax.Arrays, and every reshape
        # of one would be a JAX dispatch (~0.1 ms each) inside the program's callback
        s = np.asarray(step)
        host = {k: np.asarray(v) for k, v in metrics.items()}
        r = None if reward is None else np.asarray(reward)
        ax = None if axes is None else {k: np.asarray(v) for k, v in axes.items()}
        if not block:
            _one(target, s, host, r, ax)
        else:
            if s.ndim == 0:
                raise ValueError("log_many: steps must have one entry per step logged")
            lead = s.ndim - 1  # the vmapped axes before the K steps
            if _block_at_once(target, s, host, r, ax):
                _counts["delivered"] += 1
                return
            for j in range(s.shape[-1]):

                def at(v: Any, j: int = j) -> Any:
                    return v[(slice(None),) * lead + (j,)]

                _one(
                    target,
                    at(s),
                    {k: at(v) for k, v in host.items()},
                    None if r is None else at(r),
                    None if ax is None else {k: at(v) for k, v in ax.items()},
                )
    except Exception as exc:
        _fail(str(exc))
        return
    _counts["delivered"] += 1


def _block_at_once(
    target: Target, s: Any, host: dict[str, Any], r: Any, ax: dict[str, Any] | None
) -> bool:
    """A ``log_many`` block of a group's scalars, handed over whole: each value one
    conversion for the ``K`` steps of every run (:meth:`RunGroup._log_block`), where the
    loop over the steps would take a view, a reshape and a copy a value a step. False
    (nothing logged) for what the loop handles: a single run's logger, per-environment
    vectors, a reward, axes, a batch that is not one entry per run."""
    if type(target) is not RunGroup or r is not None or ax is not None or s.ndim < 2:
        return False
    shape = s.shape
    k = shape[-1]
    n = s.size // k if k else 0
    if n != target.runs or any(v.shape != shape for v in host.values()):
        return False

    def rows(v: Any) -> Any:  # (runs..., K) -> (K, runs), runs flattened row-major
        return np.moveaxis(v, -1, 0).reshape(k, n)

    target._log_block(rows(s), {name: rows(v) for name, v in host.items()})
    return True


def _one(target: Target, s: Any, host: dict[str, Any], r: Any, ax: dict[str, Any] | None) -> None:
    """One step of every run: the vmapped axes (``s``'s) flattened into runs."""
    extra = {} if ax is None else {"axes": ax}
    if s.ndim == 0:
        target.log_step(int(s), host, r, **extra)
        return
    n = s.size

    def flat(v: Any) -> Any:
        return v.reshape((n, *v.shape[s.ndim :]))

    if ax is not None:
        extra = {"axes": {k: flat(v) for k, v in ax.items()}}
    metrics = {k: flat(v) for k, v in host.items()}
    target.log_step(s.reshape(n), metrics, None if r is None else flat(r), **extra)


def _fail(why: str) -> None:
    """A callback not delivered: counted, and said once a reason."""
    _counts["failed"] += 1
    if why not in _said:
        _said.add(why)
        warnings.warn(f"aoff.jax.log: not delivered: {why}", AoffWarning, stacklevel=3)


def _emit_for(ref: Callable[[], Target | None] | None, block: bool) -> Any:
    """The ``custom_vmap`` function that logs to the logger ``ref`` points to (None: the
    target of ``use``). A weak reference: a finished group is not kept alive by the
    programs that logged into it (its calls then count as failed, with the reason)."""

    def host(s: Any, m: dict[str, Any], r: Any, a: dict[str, Any] | None) -> None:
        if ref is None:
            target = _resolve(None)
            if target is None:
                _fail("no logger: pass logger= or run inside aoff.jax.use(group)")
                return
        else:
            target = ref()
            if target is None:
                _fail("the logger passed as logger= no longer exists")
                return
        if isinstance(target, RunGroup):
            _courier.put((target, s, m, r, a, block))  # the arrays as handed: no copy
        else:
            _deliver(target, s, m, r, a, block)

    @custom_batching.custom_vmap
    def emit(step: Any, metrics: dict[str, Any], reward: Any, axes: Any) -> Any:
        jax.debug.callback(host, step, metrics, reward, axes, ordered=True)
        return step

    @emit.def_vmap
    def _batched(
        axis_size: int, in_batched: Any, step: Any, metrics: Any, reward: Any, axes: Any
    ) -> Any:
        def full(v: Any, batched: bool) -> Any:
            return v if batched else jnp.broadcast_to(v, (axis_size, *jnp.shape(v)))

        sb, mb, rb, ab = in_batched
        step = full(step, sb)
        metrics = jax.tree.map(full, metrics, mb)
        reward = None if reward is None else full(reward, rb)
        axes = None if axes is None else jax.tree.map(full, axes, ab)
        return emit(step, metrics, reward, axes), True

    return emit


#: per logger (by id; 0: ``use``'s target) and kind (``log_many``'s or not), its weak
#: reference and its function
_EMITS: dict[tuple[int, bool], tuple[Any, Any]] = {}


def _emit(logger: Target | None, block: bool) -> Any:
    key = (id(logger) if logger is not None else 0, block)
    got = _EMITS.get(key)
    if got is None or (got[0] is not None and got[0]() is not logger):
        ref = None if logger is None else weakref.ref(logger)
        got = _EMITS[key] = (ref, _emit_for(ref, block))
    return got[1]


def _arrays(where: str, values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise TypeError(f"aoff.jax.{where} must be a dict, got {type(values).__name__}")
    return {str(k): jnp.asarray(v) for k, v in values.items()}


def log(
    step: Any,
    metrics: Mapping[str, Any],
    *,
    reward: Any = None,
    axes: Mapping[str, Any] | None = None,
    logger: Target | None = None,
) -> None:
    """Log one step from inside ``jit``/``scan``/``vmap`` (or eagerly).

    ``step``: an integer (each run's step under ``vmap``); ``metrics``: a flat dict of
    numbers (a scalar per run, or a per-environment vector per run, which each run
    reduces to its mean and spread); ``reward``: the step's reward, optional; ``axes``:
    the step's other clocks (``{"grad_steps": ...}``, docs/guides/axes.md), a number per
    run. Goes to ``logger`` (a :class:`~aoff.RunGroup` under ``vmap``, one run per
    seed), or to the target of the innermost ``aoff.jax.use``. One host callback per
    call for the whole batch; see the module's docstring for the seed axis.
    """
    m = _arrays("log: metrics", metrics)
    assert m is not None
    a = _arrays("log: axes", axes)
    _emit(logger, False)(jnp.asarray(step), m, reward, a)


def log_many(
    steps: Any,
    metrics: Mapping[str, Any],
    *,
    reward: Any = None,
    axes: Mapping[str, Any] | None = None,
    logger: Target | None = None,
) -> None:
    """Log ``K`` steps at once: ``steps`` has ``K`` entries (per run under ``vmap``), and
    every value its ``K`` entries along the same axis (what a ``lax.scan`` of ``K``
    updates returns stacked). One host callback for the ``K`` steps of every run: the
    callback's round trip, which dominates logging every update, is paid once per ``K``
    (docs/guides/jax.md, "Logging a block of updates"). The runs get the steps in order,
    each as a :func:`log` of it would have logged it."""
    m = _arrays("log_many: metrics", metrics)
    assert m is not None
    a = _arrays("log_many: axes", axes)
    _emit(logger, True)(jnp.asarray(steps), m, reward, a)


if wait not in BEFORE_STOP:  # callbacks in flight and queued arrive before the group drains
    BEFORE_STOP.append(wait)
