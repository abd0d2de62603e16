"""rsl_rl's per-env-step episode bookkeeping next to ``aoff.torch.EpisodeStats``, and
rsl_rl's TensorBoard writer next to ``aoff.rsl_rl.LogWriter``, in one run.

Two figures, the same inputs for both sides, the sides taking turns round by round (so
load on the machine hits both alike); medians over rounds and their ratio are printed:

* **per env step** (``--envs`` environments, default 4,096, on ``--device``): rsl_rl's
  own ``Logger.process_env_step`` (a real ``rsl_rl.utils.logger.Logger``; it finds the
  finished episodes with ``nonzero`` and copies them to the host with ``.cpu()``) vs
  ``EpisodeStats.update``; and ``update`` with its share of one ``log_to`` every
  ``--steps-per-iter`` steps (into an aoff logger with no backend), which is what an
  iteration costs. Rewards and done flags are made before the timing (episodes of
  about ``--episode`` steps).
* **per iteration**: the ``add_scalar`` calls rsl_rl's ``Logger.log`` makes each
  iteration (its 13 tags, values as tensors and floats as rsl_rl passes them), through
  torch's ``SummaryWriter`` (rsl_rl's default) vs ``aoff.rsl_rl.LogWriter``: the
  training thread's cost.

On CPU tensors a ``.cpu()`` is no sync, so the per-step row measures the bookkeeping's
own work; on CUDA (``--device cuda``, when a GPU is lent) rsl_rl's row also waits for
the device every step, aoff's never does.

Run: ``python benchmarks/bench_episode_stats.py [--quick] [--device cuda]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

import torch

from aoff import NullDisplay, OffPolicyLogger
from aoff.rsl_rl import LogWriter
from aoff.torch import EpisodeStats

#: the tags rsl_rl's Logger.log writes each iteration (PPO, no RND, one extras key)
RSL_TAGS = (
    "/pendulum/cost",
    "Loss/value",
    "Loss/surrogate",
    "Loss/entropy",
    "Loss/learning_rate",
    "Policy/mean_std",
    "Perf/total_fps",
    "Perf/collection_time",
    "Perf/learning_time",
    "Train/mean_reward",
    "Train/mean_episode_length",
    "Train/mean_reward/time",
    "Train/mean_episode_length/time",
)


def inputs(n_envs: int, n_steps: int, episode: int, device: str) -> list[tuple[Any, Any]]:
    g = torch.Generator(device=device).manual_seed(0)
    out = []
    for _ in range(n_steps):
        r = torch.rand(n_envs, device=device, generator=g)
        done = torch.rand(n_envs, device=device, generator=g) < 1.0 / episode
        out.append((r, done.long()))  # rsl_rl's dones are numbers
    return out


def rsl_logger(n_envs: int, device: str) -> Any:
    from rsl_rl.utils.logger import Logger

    cfg = {"algorithm": {}, "num_steps_per_env": 24}
    log = Logger(None, cfg, {}, n_envs, False, 1, 0, device)
    log.writer = object()  # process_env_step keeps books only while a writer is set
    return log


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def per_step(args: argparse.Namespace) -> dict[str, list[float]]:
    """Per-env-step mean (µs) of each round, per side."""
    steps = inputs(args.envs, args.steps, args.episode, args.device)
    rsl = rsl_logger(args.envs, args.device)
    stats = EpisodeStats(args.envs, args.device)
    sink = OffPolicyLogger(
        log_backend="none", display=NullDisplay(), handle_sigterm=False, system_interval=0
    )
    every = args.steps_per_iter
    clock = time.perf_counter

    def run_rsl() -> None:
        for r, d in steps:
            rsl.process_env_step(r, d, {})

    def run_update() -> None:
        for i, (r, d) in enumerate(steps, 1):
            stats.update(r, d)
            if i % every == 0:
                stats._k = 0  # the rows log_to would hand over: not part of this row
        stats._k = 0

    def run_iterations() -> None:
        for i, (r, d) in enumerate(steps, 1):
            stats.update(r, d)
            if i % every == 0:
                stats.log_to(sink)
                sink.log_step(i)
        stats.log_to(sink)

    sides = {
        "rsl_rl process_env_step": run_rsl,
        "EpisodeStats.update": run_update,
        f"update + log_to every {every}": run_iterations,
    }
    out: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, run in sides.items():
            sync(args.device)
            t0 = clock()
            run()
            sync(args.device)  # the device work queued counts too
            out[name].append((clock() - t0) / len(steps) * 1e6)
    sink.finish()
    return out


def per_iteration(args: argparse.Namespace) -> dict[str, list[float]]:
    """Per-iteration mean (µs) of rsl_rl's add_scalar calls, per writer, each round."""
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    values = [torch.tensor(0.5), 1.25, -0.5, 1.4, 1e-3, 0.99, 5000, 0.5, 0.3, -80.0, 20.0]
    values += [-80.0, 20.0]
    with tempfile.TemporaryDirectory() as tmp:
        writers: dict[str, Any] = {
            "torch SummaryWriter (rsl_rl's)": TorchWriter(os.path.join(tmp, "t"), flush_secs=10),
            "aoff.rsl_rl.LogWriter": LogWriter(os.path.join(tmp, "a"), dashboard=False),
        }
        out: dict[str, list[float]] = {name: [] for name in writers}
        it = {name: 0 for name in writers}
        clock = time.perf_counter
        for _ in range(args.rounds):
            for name, w in writers.items():
                add = w.add_scalar
                start = it[name]
                t0 = clock()
                for i in range(start, start + args.iters):
                    for tag, v in zip(RSL_TAGS, values, strict=True):
                        add(tag, v, i)
                out[name].append((clock() - t0) / args.iters * 1e6)
                it[name] = start + args.iters
        for w in writers.values():
            w.close()
    return out


def show(title: str, rows: dict[str, list[float]]) -> None:
    names = list(rows)
    base = statistics.median(rows[names[0]])
    print(f"\n{title}")
    for name in names:
        med = statistics.median(rows[name])
        print(f"  {name:<34} {med:10.1f} us   ({base / med:5.2f}x of the first row's speed)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=480, help="env steps a round")
    ap.add_argument("--steps-per-iter", type=int, default=24)
    ap.add_argument("--episode", type=int, default=200, help="mean episode length")
    ap.add_argument("--iters", type=int, default=200, help="iterations a round (writers)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--threads", type=int, default=1, help="torch's intra-op threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)  # a loaded 2-core machine: threads add only noise
    if args.quick:
        args.steps, args.iters, args.rounds = 48, 20, 2
    load = os.getloadavg()
    print(
        f"device {args.device}, {args.envs} envs, {args.threads} torch thread(s); "
        f"torch {torch.__version__}; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    show(f"per env step ({args.steps} steps a round, median of {args.rounds})", per_step(args))
    show(
        f"per iteration: rsl_rl's {len(RSL_TAGS)} add_scalar calls "
        f"({args.iters} iterations a round, median of {args.rounds})",
        per_iteration(args),
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
