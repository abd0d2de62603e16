"""A jitted, vmapped training loop with no logging, with ``aoff.jax.log``, and with what
users write today, side by side in one run.

The program: ``jax.jit(jax.vmap(train))(keys)`` over ``--seeds`` seeds, ``train`` a
``lax.scan`` of ``--updates`` updates, each a few ``--width``-wide matrix products (the
stand-in for a learner's update) that yield four float32 metrics. Four variants of the
same program, each compiled once before timing:

* ``none``: no logging (the floor);
* ``aoff``: ``aoff.jax.log(i, metrics)`` every update into a :class:`aoff.RunGroup`
  (one host callback per update for all seeds; TensorBoard files, one folder per seed);
* ``torch-tb``: ``jax.debug.callback`` every update into torch's ``SummaryWriter``, one
  writer per seed (under ``vmap`` the callback runs once per seed, which passes its
  index in);
* ``wandb``: the same callback into one W&B run in offline mode, a key prefix per seed;
* ``aoff-block``: ``aoff.jax.log_many`` once per block of ``--block`` updates (the scan
  is a scan of blocks, each a scan of ``--block`` updates returning its metrics
  stacked): every update is still logged, one host callback per block for all seeds;
  ``none-block`` is the same blocked program with no logging, its floor;
* ``null-block``: ``aoff.jax.log_many`` as ``aoff-block``, into a target whose
  ``log_step`` does nothing: the blocked callbacks' own cost, without aoff's work (a
  target that is not a group gets the block step by step: a view and a reshape a value
  a step, which a group's whole block is spared);
* ``empty-ordered`` / ``empty-unordered``: the round trip alone, one callback per update
  for all seeds (a ``custom_vmap`` as ``aoff.jax.log``'s) into a host function that does
  nothing, ordered as ``aoff.jax.log`` is, and unordered (what giving up the order
  would save, before any reordering on the host).

Each round runs every variant once, in turn (load on the machine hits all alike); the
medians over ``--rounds`` are printed (and ``min/min``: the fastest round's time over
``none``'s fastest, the figure least moved by other work on a loaded machine): the
program's wall time (until its results and every callback are in:
``block_until_ready`` + ``jax.effects_barrier``), its ratio to ``none``, the time
to close the logger afterwards (everything on disk), and the CPU
time the logging took beside the program: this process's CPU during the program less
``none``'s, the host callback's own time per call (inside aoff's host function, or the
user's sink), and the group agent's CPU per run-step (one step of one seed): its CPU
from the group's start (the agent up) until everything logged is folded and written
(a ``flush`` after the program), from ``/proc/<pid>/stat``, so its start-up (the
interpreter, the imports) and its closing are left out; its whole life is the last
column (``RUSAGE_CHILDREN`` after the close). On a machine whose cores the program
leaves idle that CPU runs beside it; on a loaded 2-core machine it comes out of the
program's wall time. The whole callback's cost per call, round trip included, is
``(variant - none) / updates``.

Two programs (``--program``, both by default, one table each):

* ``toy``: the loop above, an update of about 0.3 ms for the 8 seeds on the loaded
  2-core machine (28 us quiet): far shorter than any real RL update, so the callback's
  round trip weighs the most here. The worst case, not the typical one.
* ``ppo``: the PureJaxRL-shaped PPO of ``examples/jax_ppo.py`` on gymnax's CartPole-v1
  with PureJaxRL's default sizes (4 environments, 128 steps a rollout, 4 epochs of 4
  minibatches, 64-wide actor and critic, ``--ppo-updates`` updates, 5 metrics logged
  every update as PureJaxRL does), 8 seeds in ``jax.jit(jax.vmap(train))``: ``none``,
  ``aoff``, ``none-block``/``aoff-block`` (blocks of ``--ppo-block`` updates),
  ``torch-tb``, ``wandb`` and ``empty-ordered`` as above. Its compilation takes ~20 s a
  variant here.

The host columns (medians of a call's mean a round; a single wait for the interpreter
lock inside the callback shows in them): ``in-cb us`` is the time inside the host
function the callback runs (what the compiled program waits for, the round trip
aside), ``deliver us`` the time of
aoff's delivery of one call (``_deliver``: its conversion, checks and queueing into the
group), wherever it runs: inside the callback for a single run's logger and before the
"aoff-jax" thread, in that thread for a group since. The line under each table is the
host function's own cost, without the program's threads competing for the lock: the last
call's host function called again ``--replay`` times in a row with the arrays JAX handed
it, into a fresh group (the same steps again: the runs say their records came late).

``--single-thread`` runs XLA's CPU ops on one thread. On the shared 2-core machine at
load 6 to 9, the PPO program with no callback came out 1.2 to 2x SLOWER than the same
program with a callback every update (medians and fastest rounds alike, before and
after the courier): without a callback in the loop, XLA's CPU runtime spreads the ops
over its thread pool, which on two loaded cores costs more than it gains. On one thread
both take the same time; that is the fair floor on such a machine.

Run: ``python benchmarks/bench_jax.py`` (``--quick`` for a smoke run; ``--only aoff-block
none-block`` for fewer variants, so more rounds fit).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("WANDB_SILENT", "true")

import jax
import jax.numpy as jnp

import aoff
import aoff.jax


def make_train(
    updates: int,
    width: int,
    log: Callable[[Any, Any, dict[str, Any]], None] | None,
    block: int = 0,
    log_block: Callable[[Any, dict[str, Any]], None] | None = None,
):
    """The program; with ``block``, a scan of ``updates // block`` blocks, each a scan of
    ``block`` updates whose stacked metrics go to ``log_block`` once."""

    def train(seed: jax.Array, key: jax.Array) -> jax.Array:
        w = jax.random.normal(key, (width, width)) / width**0.5
        x = jnp.ones((width, width))

        def update(x: jax.Array, i: jax.Array) -> tuple[jax.Array, Any]:
            for _ in range(4):
                x = jnp.tanh(x @ w)
            m = {"loss": x.mean(), "q": x.max(), "entropy": x.std(), "grad_norm": jnp.abs(x).sum()}
            if log is not None:
                log(seed, i, m)
            return x, m

        if not block:
            return jax.lax.scan(update, x, jnp.arange(updates))[1]["loss"]

        def run_block(x: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
            steps = b * block + jnp.arange(block)
            x, m = jax.lax.scan(update, x, steps)
            if log_block is not None:
                log_block(steps, m)
            return x, m["loss"]

        return jax.lax.scan(run_block, x, jnp.arange(updates // block))[1].reshape(-1)

    return jax.jit(jax.vmap(train))


class _Null:
    """A target that takes each step and does nothing with it."""

    def log_step(self, step: Any, metrics: Any = None, reward: Any = None, **kw: Any) -> None:
        pass


def _empty_callback(ordered: bool) -> Any:
    """One callback per call for the whole batch (a ``custom_vmap``, as aoff.jax.log
    does) into a host function that does nothing: the round trip alone."""
    from jax import custom_batching

    @custom_batching.custom_vmap
    def emit(step: Any, m: dict[str, Any]) -> Any:
        jax.debug.callback(lambda s, mm: None, step, m, ordered=ordered)
        return step

    @emit.def_vmap
    def _batched(axis_size: int, in_batched: Any, step: Any, m: Any) -> Any:
        def full(v: Any, batched: bool) -> Any:
            return v if batched else jnp.broadcast_to(v, (axis_size, *jnp.shape(v)))

        sb, mb = in_batched
        return emit(full(step, sb), jax.tree.map(full, m, mb)), True

    def log(seed: Any, i: Any, m: dict[str, Any]) -> None:
        emit(i, m)

    return log


def _aoff_log(seed: Any, i: Any, m: dict[str, Any]) -> None:
    aoff.jax.log(i, m)


def _callback_into(sink: Callable[[int, int, dict[str, Any]], None]) -> Any:
    def log(seed: Any, i: Any, m: dict[str, Any]) -> None:
        jax.debug.callback(lambda s, step, mm: sink(int(s), int(step), mm), seed, i, m)

    return log


def _cpu_of(pid: int) -> float:
    """A process's user + system CPU seconds so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _HostClock:
    """Time spent inside host callbacks, summed: ``wrap`` a host function to count it."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.last: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None = None

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kw: Any) -> Any:
            self.last = (fn, args, kw)  # what a replay calls again (``--replay``)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed


def _example() -> Any:
    """``examples/jax_ppo.py``, the PureJaxRL-shaped PPO the tests run."""
    import importlib.util
    import sys

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "jax_ppo.py")
    spec = importlib.util.spec_from_file_location("jax_ppo", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its NamedTuples look their module up
    spec.loader.exec_module(mod)
    return mod


def make_ppo(
    updates: int,
    log: Callable[[Any, Any, dict[str, Any]], None] | None,
    block: int = 0,
    log_block: Callable[[Any, dict[str, Any]], None] | None = None,
) -> Any:
    """PureJaxRL's PPO at its default sizes, vmapped over (seed index, key): the seed
    index is what a ``jax.debug.callback`` user passes to pick a seed's writer."""
    ex = _example()
    config = {
        **ex.CONFIG,
        "NUM_ENVS": 4,
        "NUM_STEPS": 128,
        "EPOCHS": 4,
        "NUM_MINIBATCHES": 4,
        "HIDDEN": 64,
        "LR": 2.5e-4,
        "TOTAL_TIMESTEPS": 4 * 128 * updates,
        "LOG_BLOCK": block,
    }

    def train(seed: jax.Array, key: jax.Array) -> jax.Array:
        hook = None if log is None else (lambda i, m: log(seed, i, m))
        return ex.make_train(config, log=hook, log_many=log_block)(key)["metrics"]["total_loss"]

    return jax.jit(jax.vmap(train))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--program", nargs="+", choices=("toy", "ppo"), default=["toy", "ppo"])
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--updates", type=int, default=500)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--ppo-updates", type=int, default=40)
    p.add_argument("--ppo-block", type=int, default=10, help="PPO updates per log_many call")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument(
        "--replay",
        type=int,
        default=300,
        help="calls of aoff's host function replayed alone, timed (0: none)",
    )
    p.add_argument("--no-wandb", action="store_true")
    p.add_argument("--pump", choices=("process", "thread"), default="process")
    p.add_argument("--nice", type=int, default=0, help="the group agent's agent_nice")
    p.add_argument("--block", type=int, default=50, help="updates per log_many call")
    p.add_argument(
        "--only", nargs="+", default=None, help="the variants to run (none is always run)"
    )
    p.add_argument(
        "--single-thread",
        action="store_true",
        help="XLA's CPU ops on one thread: on a loaded machine its thread pool makes the "
        "program without callbacks the slowest (see the docstring)",
    )
    a = p.parse_args()
    if a.single_thread:  # read when the backend starts: before the first JAX operation
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "")
            + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        )
    if a.quick:
        a.updates, a.rounds, a.ppo_updates, a.ppo_block = 50, 1, 4, 2
    if a.updates % a.block:
        p.error(f"--updates ({a.updates}) must be a multiple of --block ({a.block})")
    if a.ppo_updates % a.ppo_block:
        p.error(f"--ppo-updates ({a.ppo_updates}) must be a multiple of --ppo-block")
    from torch.utils.tensorboard import SummaryWriter

    seeds = jnp.arange(a.seeds)
    keys = jax.random.split(jax.random.PRNGKey(0), a.seeds)
    tmp = tempfile.mkdtemp(prefix="bench_jax-")
    sinks: dict[str, Any] = {}
    in_cb, deliver = _HostClock(), _HostClock()
    from aoff._adapters import _jax as jax_impl

    jax_impl._deliver = deliver.wrap(jax_impl._deliver)  # type: ignore[assignment]
    real_callback = jax.debug.callback

    def timed_callback(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return real_callback(in_cb.wrap(fn), *args, **kw)

    jax.debug.callback = timed_callback  # every host function traced from here is timed
    wait_all = getattr(aoff.jax, "wait", jax.effects_barrier)  # before it: the barrier
    steady: list[float] = []  # the last close's agent CPU, start-up and closing left out

    def torch_sink(s: int, step: int, m: dict[str, Any]) -> None:
        w = sinks["torch-tb"][s]
        for k, v in m.items():
            w.add_scalar(f"train/{k}", float(v), step)

    def wandb_sink(s: int, step: int, m: dict[str, Any]) -> None:
        sinks["wandb"].log({f"seed{s}/{k}": float(v) for k, v in m.items()}, step=step)

    def many(steps: Any, m: dict[str, Any]) -> None:
        aoff.jax.log_many(steps, m)

    def toy_variants() -> dict[str, Any]:
        u, w, b = a.updates, a.width, a.block
        v = {
            "none": make_train(u, w, None),
            "aoff": make_train(u, w, _aoff_log),
            "torch-tb": make_train(u, w, _callback_into(torch_sink)),
        }
        if not a.no_wandb:
            v["wandb"] = make_train(u, w, _callback_into(wandb_sink))
        v["none-block"] = make_train(u, w, None, b)
        v["aoff-block"] = make_train(u, w, None, b, many)
        v["null-block"] = v["aoff-block"]
        v["empty-ordered"] = make_train(u, w, _empty_callback(True))
        v["empty-unordered"] = make_train(u, w, _empty_callback(False))
        return v

    def ppo_variants() -> dict[str, Any]:
        u, b = a.ppo_updates, a.ppo_block
        v = {
            "none": make_ppo(u, None),
            "aoff": make_ppo(u, _aoff_log),
            "torch-tb": make_ppo(u, _callback_into(torch_sink)),
        }
        if not a.no_wandb:
            v["wandb"] = make_ppo(u, _callback_into(wandb_sink))
        v["none-block"] = make_ppo(u, None, b)
        v["aoff-block"] = make_ppo(u, None, b, many)
        v["empty-ordered"] = make_ppo(u, _empty_callback(True))
        return v

    n = [0]

    def open_sink(name: str) -> Callable[[], object]:
        n[0] += 1
        d = os.path.join(tmp, f"{name}-{n[0]}")
        if name in ("aoff", "aoff-block"):
            g = aoff.RunGroup(
                a.seeds, d, name="bench", system_interval=0, pump=a.pump, agent_nice=a.nice
            )
            g.flush()  # its agent has started: the timing is the logging, not a start-up
            proc = getattr(g._driver, "proc", None)  # pump="thread": none
            c0 = 0.0 if proc is None else _cpu_of(proc.pid)
            sinks["aoff-use"] = aoff.jax.use(g)
            sinks["aoff-use"].__enter__()

            def close_aoff() -> object:
                wait_all()  # every call delivered into the group
                sinks["aoff-use"].__exit__(None, None, None)
                g.flush()  # every step folded and written: the agent's CPU for them
                steady[:] = [0.0 if proc is None else _cpu_of(proc.pid) - c0]
                return g.finish()

            return close_aoff
        if name == "torch-tb":
            ws = sinks["torch-tb"] = [
                SummaryWriter(os.path.join(d, f"seed{k}")) for k in range(a.seeds)
            ]
            return lambda: [w.close() for w in ws]
        if name == "null-block":
            sinks["null-use"] = aoff.jax.use(_Null())
            sinks["null-use"].__enter__()
            return lambda: sinks["null-use"].__exit__(None, None, None)
        if name == "wandb":
            import wandb

            run = sinks["wandb"] = wandb.init(mode="offline", dir=d, project="bench-jax")
            return run.finish
        return lambda: None

    def children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def sitting(label: str, variants: dict[str, Any], updates: int) -> None:
        if a.only is not None:
            unknown = set(a.only) - set(variants) - {"toy", "ppo"}
            if unknown:
                p.error(f"--only: no variant {sorted(unknown)}; there are {list(variants)}")
            variants = {k: v for k, v in variants.items() if k == "none" or k in a.only}
        t0 = time.perf_counter()
        for name, fn in variants.items():  # compile (and a first run) outside the timing
            close = open_sink(name)
            jax.block_until_ready(fn(seeds, keys))
            wait_all()
            close()
        compiled = time.perf_counter() - t0
        cols = ("times", "closes", "cpus", "agents", "in_cb", "deliver", "per_step")
        got: dict[str, dict[str, list[float]]] = {c: {k: [] for k in variants} for c in cols}
        for _ in range(a.rounds):
            for name, fn in variants.items():
                close = open_sink(name)
                steady[:] = [0.0]
                in_cb.seconds, in_cb.calls, deliver.seconds, deliver.calls = 0.0, 0, 0.0, 0
                c0, k0 = time.process_time(), children_cpu()
                t0 = time.perf_counter()
                jax.block_until_ready(fn(seeds, keys))
                jax.effects_barrier()
                t1 = time.perf_counter()
                c1 = time.process_time()
                close()
                t2 = time.perf_counter()
                got["times"][name].append(t1 - t0)
                got["closes"][name].append(t2 - t1)
                got["cpus"][name].append(c1 - c0)
                got["agents"][name].append(children_cpu() - k0)
                got["in_cb"][name].append(in_cb.seconds / max(in_cb.calls, 1) * 1e6)
                got["deliver"][name].append(deliver.seconds / max(deliver.calls, 1) * 1e6)
                got["per_step"][name].append(steady[0] / (a.seeds * updates) * 1e6)

        replay: dict[str, float] = {}
        for name, fn in variants.items():
            if name not in ("aoff", "aoff-block") or not a.replay:
                continue
            close = open_sink(name)
            jax.block_until_ready(fn(seeds, keys))
            wait_all()
            assert in_cb.last is not None
            host_fn, args, kw = in_cb.last  # the host function and the arrays JAX gave it
            t0 = time.perf_counter()
            for _ in range(a.replay):
                host_fn(*args, **kw)
            replay[name] = (time.perf_counter() - t0) / a.replay * 1e6
            close()

        def med(col: str, name: str) -> float:
            return statistics.median(got[col][name])

        base = med("times", "none")
        print(f"\n== {label} (compiled in {compiled:.0f} s)")
        print(f"load (uptime): {os.getloadavg()}; jax {jax.__version__} on {jax.devices()[0]}")
        print(
            f"{'variant':16} {'program s':>10} {'vs none':>8} {'min/min':>8} {'per update us':>14}"
            f" {'close s':>8}"
            f" {'+cpu s':>7} {'in-cb us':>9} {'deliver us':>10} {'agent us/run-step':>17}"
            f" {'agent life s':>12}"
        )
        for name in variants:
            t = med("times", name)
            best = min(got["times"][name]) / min(got["times"]["none"])
            print(
                f"{name:16} {t:10.3f} {t / base:8.3f} {best:8.3f}"
                f" {(t - base) / updates * 1e6:14.1f}"
                f" {med('closes', name):8.3f} {med('cpus', name) - med('cpus', 'none'):7.3f}"
                f" {med('in_cb', name):9.1f} {med('deliver', name):10.1f}"
                f" {med('per_step', name):17.2f} {med('agents', name):12.3f}"
            )
        for name, us in replay.items():
            print(
                f"{name}: its host function called again {a.replay} times outside the program,"
                f" with the arrays JAX handed it: {us:.1f} us a call"
            )

    print(
        f"{a.seeds} seeds, {a.rounds} rounds, group pump {a.pump}, agent_nice {a.nice}, "
        f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}; aoff from {os.path.dirname(aoff.__file__)}"
    )
    if "toy" in a.program:
        label = f"toy: {a.updates} updates, width {a.width}, blocks of {a.block} (the worst case)"
        sitting(label, toy_variants(), a.updates)
    if "ppo" in a.program:
        label = f"PureJaxRL PPO, CartPole-v1: {a.ppo_updates} updates, blocks of {a.ppo_block}"
        sitting(label, ppo_variants(), a.ppo_updates)


if __name__ == "__main__":
    main()
