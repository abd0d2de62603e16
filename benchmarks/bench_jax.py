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
* ``wandb``: the same callback into one W&B run in offline mode, a key prefix per seed.

Each round runs every variant once, in turn (load on the machine hits all alike); the
medians over ``--rounds`` are printed: the program's wall time (until its results and
every callback are in: ``block_until_ready`` + ``jax.effects_barrier``), its ratio to
``none``, and the time to close the logger afterwards (everything on disk). The
callback's cost per call is ``(variant - none) / updates``.

Run: ``python benchmarks/bench_jax.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
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


def make_train(updates: int, width: int, log: Callable[[Any, Any, dict[str, Any]], None] | None):
    def train(seed: jax.Array, key: jax.Array) -> jax.Array:
        w = jax.random.normal(key, (width, width)) / width**0.5
        x = jnp.ones((width, width))

        def update(x: jax.Array, i: jax.Array) -> tuple[jax.Array, jax.Array]:
            for _ in range(4):
                x = jnp.tanh(x @ w)
            m = {"loss": x.mean(), "q": x.max(), "entropy": x.std(), "grad_norm": jnp.abs(x).sum()}
            if log is not None:
                log(seed, i, m)
            return x, m["loss"]

        return jax.lax.scan(update, x, jnp.arange(updates))[1]

    return jax.jit(jax.vmap(train))


def _aoff_log(seed: Any, i: Any, m: dict[str, Any]) -> None:
    aoff.jax.log(i, m)


def _callback_into(sink: Callable[[int, int, dict[str, Any]], None]) -> Any:
    def log(seed: Any, i: Any, m: dict[str, Any]) -> None:
        jax.debug.callback(lambda s, step, mm: sink(int(s), int(step), mm), seed, i, m)

    return log


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--updates", type=int, default=500)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-wandb", action="store_true")
    a = p.parse_args()
    if a.quick:
        a.updates, a.rounds = 50, 1
    from torch.utils.tensorboard import SummaryWriter

    seeds = jnp.arange(a.seeds)
    keys = jax.random.split(jax.random.PRNGKey(0), a.seeds)
    tmp = tempfile.mkdtemp(prefix="bench_jax-")
    sinks: dict[str, Any] = {}

    def torch_sink(s: int, step: int, m: dict[str, Any]) -> None:
        w = sinks["torch-tb"][s]
        for k, v in m.items():
            w.add_scalar(f"train/{k}", float(v), step)

    def wandb_sink(s: int, step: int, m: dict[str, Any]) -> None:
        sinks["wandb"].log({f"seed{s}/{k}": float(v) for k, v in m.items()}, step=step)

    variants = {
        "none": make_train(a.updates, a.width, None),
        "aoff": make_train(a.updates, a.width, _aoff_log),
        "torch-tb": make_train(a.updates, a.width, _callback_into(torch_sink)),
    }
    if not a.no_wandb:
        variants["wandb"] = make_train(a.updates, a.width, _callback_into(wandb_sink))
    n = [0]

    def open_sink(name: str) -> Callable[[], object]:
        n[0] += 1
        d = os.path.join(tmp, f"{name}-{n[0]}")
        if name == "aoff":
            g = aoff.RunGroup(a.seeds, d, name="bench", system_interval=0)
            sinks["aoff-use"] = aoff.jax.use(g)
            sinks["aoff-use"].__enter__()

            def close_aoff() -> object:
                sinks["aoff-use"].__exit__(None, None, None)
                return g.finish()

            return close_aoff
        if name == "torch-tb":
            ws = sinks["torch-tb"] = [
                SummaryWriter(os.path.join(d, f"seed{k}")) for k in range(a.seeds)
            ]
            return lambda: [w.close() for w in ws]
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
    for _ in range(a.rounds):
        for name, fn in variants.items():
            close = open_sink(name)
            t0 = time.perf_counter()
            jax.block_until_ready(fn(seeds, keys))
            jax.effects_barrier()
            t1 = time.perf_counter()
            close()
            t2 = time.perf_counter()
            times[name].append(t1 - t0)
            closes[name].append(t2 - t1)
    base = statistics.median(times["none"])
    print(f"load (uptime): {os.getloadavg()}; jax {jax.__version__} on {jax.devices()[0]}")
    print(f"{a.seeds} seeds x {a.updates} updates, width {a.width}, {a.rounds} rounds")
    print(f"{'variant':10} {'program s':>10} {'vs none':>8} {'per call us':>12} {'close s':>8}")
    for name in variants:
        t = statistics.median(times[name])
        per = (t - base) / a.updates * 1e6
        c = statistics.median(closes[name])
        print(f"{name:10} {t:10.3f} {t / base:8.3f} {per:12.1f} {c:8.3f}")


if __name__ == "__main__":
    main()
