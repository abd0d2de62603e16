"""``aoff.jax.log``: log from inside ``jax.jit``, ``lax.scan``/``fori_loop`` and ``vmap``.

Why a ``custom_vmap`` around one ``jax.debug.callback``: a plain debug callback under
``vmap`` runs once per mapped element, which is one host call per seed per step. Here the
batching rule does not map the callback: it calls the same function again with the whole
batch (an unbatched argument broadcast to it), so a ``vmap`` over N seeds lowers to ONE
host callback per call with arrays of leading axis N. Nested ``vmap``s nest the same way:
the callback gets the axes outermost first, and they are flattened into runs in that
(row-major) order. So the seed axis is the mapped axis of the outermost ``vmap``, and
with nested ones run ``i * inner + j`` is outer index ``i``, inner index ``j``.

The callback only copies the batch (``tolist`` in :meth:`RunGroup.log_step`) and queues
it: the compiled program does not wait for the logger's work. It is an ordered effect
(``ordered=True``), which a mapped callback could not be: unordered, XLA may run a call
outside a ``scan`` (rejax's first evaluation) after the calls inside it, and a run's
steps would reach its files out of order. Because the batching rule never maps the
callback, the order holds under ``vmap`` too.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_batching

from .._core._warning import AoffWarning
from .._faces._group import BEFORE_STOP

__all__ = ["Target", "counts", "log", "use"]


class Target(Protocol):
    """What ``log`` delivers to: a :class:`~aoff.RunGroup`, or a single run's logger
    (``OffPolicyLogger``: one run, no ``vmap``)."""

    def log_step(
        self, step: Any, metrics: Mapping[str, Any] | None = ..., reward: Any = ...
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
    each failure also warns once with why."""
    return dict(_counts)


def _resolve(logger: Target | None) -> Target | None:
    if logger is not None:
        return logger
    with _lock:
        return _default[-1] if _default else None


def _deliver(logger: Target | None, step: Any, metrics: dict[str, Any], reward: Any) -> None:
    """The host side: one call per ``log`` call, the whole batch at once."""
    target = _resolve(logger)
    try:
        if target is None:
            raise RuntimeError("no logger: pass logger= or run inside aoff.jax.use(group)")
        # NumPy views first: the callback may be handed jax.Arrays, and every reshape
        # of one would be a JAX dispatch (~0.1 ms each) inside the program's callback
        s = np.asarray(step)
        host = {k: np.asarray(v) for k, v in metrics.items()}
        r = None if reward is None else np.asarray(reward)
        n = s.size
        if s.ndim == 0:
            target.log_step(int(s), host, r)
        else:
            flat = {k: v.reshape((n, *v.shape[s.ndim :])) for k, v in host.items()}
            target.log_step(s.reshape(n), flat, None if r is None else r.reshape(n))
    except Exception as exc:
        _fail(str(exc))
        return
    _counts["delivered"] += 1


def _fail(why: str) -> None:
    """A callback not delivered: counted, and said once a reason."""
    _counts["failed"] += 1
    if why not in _said:
        _said.add(why)
        warnings.warn(f"aoff.jax.log: not delivered: {why}", AoffWarning, stacklevel=3)


def _emit_for(ref: Callable[[], Target | None] | None) -> Any:
    """The ``custom_vmap`` function that logs to the logger ``ref`` points to (None: the
    target of ``use``). A weak reference: a finished group is not kept alive by the
    programs that logged into it (its calls then count as failed, with the reason)."""

    def host(s: Any, m: dict[str, Any], r: Any) -> None:
        if ref is None:
            _deliver(None, s, m, r)
            return
        target = ref()
        if target is None:
            _fail("the logger passed as logger= no longer exists")
            return
        _deliver(target, s, m, r)

    @custom_batching.custom_vmap
    def emit(step: Any, metrics: dict[str, Any], reward: Any) -> Any:
        jax.debug.callback(host, step, metrics, reward, ordered=True)
        return step

    @emit.def_vmap
    def _batched(axis_size: int, in_batched: Any, step: Any, metrics: Any, reward: Any) -> Any:
        def full(v: Any, batched: bool) -> Any:
            return v if batched else jnp.broadcast_to(v, (axis_size, *jnp.shape(v)))

        sb, mb, rb = in_batched
        step = full(step, sb)
        metrics = jax.tree.map(full, metrics, mb)
        reward = None if reward is None else full(reward, rb)
        return emit(step, metrics, reward), True

    return emit


#: per logger (by id; 0: ``use``'s target), its weak reference and its function
_EMITS: dict[int, tuple[Any, Any]] = {}


def log(
    step: Any,
    metrics: Mapping[str, Any],
    *,
    reward: Any = None,
    logger: Target | None = None,
) -> None:
    """Log one step from inside ``jit``/``scan``/``vmap`` (or eagerly).

    ``step``: an integer (each run's step under ``vmap``); ``metrics``: a flat dict of
    numbers (scalars per run); ``reward``: the step's mean reward, optional. Goes to
    ``logger`` (a :class:`~aoff.RunGroup` under ``vmap``, one run per seed), or to the
    target of the innermost ``aoff.jax.use``. One host callback per call for the whole
    batch; see the module's docstring for the seed axis.
    """
    if not isinstance(metrics, Mapping):
        raise TypeError(f"aoff.jax.log: metrics must be a dict, got {type(metrics).__name__}")
    key = id(logger) if logger is not None else 0
    got = _EMITS.get(key)
    if got is None or (got[0] is not None and got[0]() is not logger):
        ref = None if logger is None else weakref.ref(logger)
        got = _EMITS[key] = (ref, _emit_for(ref))
    emit = got[1]
    emit(jnp.asarray(step), {str(k): jnp.asarray(v) for k, v in metrics.items()}, reward)


def _barrier() -> None:
    jax.effects_barrier()  # type: ignore[no-untyped-call]  # callbacks still in flight run before the group drains


if _barrier not in BEFORE_STOP:
    BEFORE_STOP.append(_barrier)
