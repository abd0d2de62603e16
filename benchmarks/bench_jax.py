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
medians over ``--rounds`` are printed: the program's wall time (until its results and
every callback are in: ``block_until_ready`` + ``jax.effects_barrier``), its ratio to
``none``, the time to close the logger afterwards (everything on disk), and the CPU
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

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--updates", type=int, default=500)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-wandb", action="store_true")
    p.add_argument("--pump", choices=("process", "thread"), default="process")
    p.add_argument("--nice", type=int, default=0, help="the group agent's agent_nice")
    p.add_argument("--block", type=int, default=50, help="updates per log_many call")
    p.add_argument(
        "--only", nargs="+", default=None, help="the variants to run (none is always run)"
    )
    a = p.parse_args()
    if a.quick:
        a.updates, a.rounds = 50, 1
    if a.updates % a.block:
        p.error(f"--updates ({a.updates}) must be a multiple of --block ({a.block})")
    from torch.utils.tensorboard import SummaryWriter

    seeds = jnp.arange(a.seeds)
    keys = jax.random.split(jax.random.PRNGKey(0), a.seeds)
    tmp = tempfile.mkdtemp(prefix="bench_jax-")
    sinks: dict[str, Any] = {}
    host = _HostClock()
    from aoff._adapters import _jax as jax_impl

    jax_impl._deliver = host.wrap(jax_impl._deliver)  # type: ignore[assignment]
    steady: list[float] = []  # the last close's agent CPU, start-up and closing left out

    def torch_sink(s: int, step: int, m: dict[str, Any]) -> None:
        w = sinks["torch-tb"][s]
        for k, v in m.items():
            w.add_scalar(f"train/{k}", float(v), step)

    def wandb_sink(s: int, step: int, m: dict[str, Any]) -> None:
        sinks["wandb"].log({f"seed{s}/{k}": float(v) for k, v in m.items()}, step=step)

    variants = {
        "none": make_train(a.updates, a.width, None),
        "aoff": make_train(a.updates, a.width, _aoff_log),
        "torch-tb": make_train(a.updates, a.width, _callback_into(host.wrap(torch_sink))),
    }
    if not a.no_wandb:
        variants["wandb"] = make_train(a.updates, a.width, _callback_into(host.wrap(wandb_sink)))
    variants["none-block"] = make_train(a.updates, a.width, None, a.block)
    variants["aoff-block"] = make_train(
        a.updates, a.width, None, a.block, lambda steps, m: aoff.jax.log_many(steps, m)
    )
    variants["null-block"] = variants["aoff-block"]
    variants["empty-ordered"] = make_train(a.updates, a.width, _empty_callback(True))
    variants["empty-unordered"] = make_train(a.updates, a.width, _empty_callback(False))
    if a.only is not None:
        unknown = set(a.only) - set(variants)
        if unknown:
            p.error(f"--only: no variant {sorted(unknown)}; there are {list(variants)}")
        variants = {k: v for k, v in variants.items() if k == "none" or k in a.only}
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

    # compile (and a first run) outside the timing
    for name, fn in variants.items():
        close = open_sink(name)
        jax.block_until_ready(fn(seeds, keys))
        jax.effects_barrier()
        close()
    times: dict[str, list[float]] = {k: [] for k in variants}
    closes: dict[str, list[float]] = {k: [] for k in variants}
    cpus: dict[str, list[float]] = {k: [] for k in variants}
    agents: dict[str, list[float]] = {k: [] for k in variants}
    hosts: dict[str, list[float]] = {k: [] for k in variants}
    per_step: dict[str, list[float]] = {k: [] for k in variants}

    def children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    for _ in range(a.rounds):
        for name, fn in variants.items():
            close = open_sink(name)
            steady[:] = [0.0]
            host.seconds, host.calls = 0.0, 0
            c0, k0 = time.process_time(), children_cpu()
            t0 = time.perf_counter()
            jax.block_until_ready(fn(seeds, keys))
            jax.effects_barrier()
            t1 = time.perf_counter()
            c1 = time.process_time()
            close()
            t2 = time.perf_counter()
            times[name].append(t1 - t0)
            closes[name].append(t2 - t1)
            cpus[name].append(c1 - c0)
            agents[name].append(children_cpu() - k0)
            hosts[name].append(host.seconds / host.calls * 1e6 if host.calls else 0.0)
            per_step[name].append(steady[0] / (a.seeds * a.updates) * 1e6)
    base = statistics.median(times["none"])
    print(f"load (uptime): {os.getloadavg()}; jax {jax.__version__} on {jax.devices()[0]}")
    print(
        f"{a.seeds} seeds x {a.updates} updates, width {a.width}, {a.rounds} rounds, "
        f"blocks of {a.block}, group pump {a.pump}, agent_nice {a.nice}"
    )
    print(
        f"{'variant':16} {'program s':>10} {'vs none':>8} {'per update us':>14} {'close s':>8}"
        f" {'+cpu s':>7} {'host us/call':>12} {'agent us/run-step':>17} {'agent life s':>12}"
    )
    base_cpu = statistics.median(cpus["none"])
    for name in variants:
        t = statistics.median(times[name])
        per = (t - base) / a.updates * 1e6
        c = statistics.median(closes[name])
        cpu = statistics.median(cpus[name]) - base_cpu
        agent = statistics.median(agents[name])
        hc, ps = statistics.median(hosts[name]), statistics.median(per_step[name])
        print(
            f"{name:16} {t:10.3f} {t / base:8.3f} {per:14.1f} {c:8.3f} {cpu:7.3f} {hc:12.1f}"
            f" {ps:17.2f} {agent:12.3f}"
        )


if __name__ == "__main__":
    main()
