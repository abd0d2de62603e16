"""``python -m aoff demo``: a simulated off-policy run, to see the dashboard and the files.

Nothing is trained. :class:`Simulation` produces the numbers a SAC run on a vectorised
``Pendulum-v1`` would report — a replay-buffer warm-up, then losses that decay with noise,
a temperature ``alpha`` annealing towards its target entropy, Q values, an episode return
rising from about -1400 towards -200, reward components, collector timings (with nested
sub-timings), done rates, a staging pool, throughput — and the driver feeds them to a real
logger (:class:`~aoff.OffPolicyLogger`, or :class:`~aoff.AsyncOffPolicyLogger` under
asyncio with ``--async``) while sleeping ``--iter-ms`` per iteration in place of training.

The logger writes TensorBoard files to ``<logdir>/<name>`` (``runs/demo-<time>`` by
default); the demo ends by printing how to open them, as commands that run as printed
(the scripts next to ``sys.executable``: after the README's install they are only in
``.venv/bin``, not on ``PATH``). The checkpoints it "saves" are marked ``(simulated)``:
no file is written.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import math
import os
import shlex
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from .._faces._async import AsyncOffPolicyLogger
from .._faces._sync import OffPolicyLogger
from ._demo_sim import (
    ACTION_DIM,
    ALGO,
    BUFFER_CAPACITY,
    ENV,
    KNOWN_BACKENDS,
    NUM_ENVS,
    OBS_DIM,
    STAGING_MAX,
    STEPS_PER_ENV,
    Fill,
    Iteration,
    Simulation,
)

__all__ = ["DemoConfig", "Fill", "Iteration", "Simulation", "add_arguments", "run"]


@dataclass
class DemoConfig:
    iterations: int = 300
    refresh: float = 4.0
    backends: tuple[str, ...] = ("tensorboard",)
    logdir: str = "runs"
    name: str = ""
    iter_ms: float = 75.0
    seed: int = 0
    use_async: bool = False

    @property
    def run_dir(self) -> str:
        return os.path.join(self.logdir, self.name)

    def logger_kwargs(self) -> dict[str, Any]:
        backends = list(self.backends)
        tensorboard = "tensorboard" in backends
        if tensorboard:
            backends.remove("tensorboard")
        return {
            "algo_name": ALGO,
            "max_iterations": self.iterations,
            "num_envs": NUM_ENVS,
            "env_name": ENV,
            "obs_dim": OBS_DIM,
            "action_dim": ACTION_DIM,
            "refresh_per_second": self.refresh,
            "log_dir": self.run_dir if self.backends else "",
            # the seed's way: log_backend="tensorboard" + log_dir; others as extras
            "log_backend": "tensorboard" if tensorboard else "none",
            "backends": tuple(backends),
            "wandb_name": self.name,
            # so a newcomer's TensorBoard shows the HParams tab (W&B: the run's config)
            "config": self.hparams(),
        }

    def hparams(self) -> dict[str, Any]:
        """The simulated run's hyperparameters (what a real SAC script would pass)."""
        return {
            "algo": ALGO,
            "env": ENV,
            "num_envs": NUM_ENVS,
            "steps_per_env": STEPS_PER_ENV,
            "iterations": self.iterations,
            "buffer_capacity": BUFFER_CAPACITY,
            "lr": 3e-4,
            "seed": self.seed,
            "simulated": True,
        }


def _checkpoint(cfg: DemoConfig, i: int) -> str:
    # a path only, marked as such: the demo has no model to save and writes no file
    return "(simulated) " + os.path.join(cfg.run_dir, "checkpoints", f"model_{i:06d}.pt")


#: one step of the demo script: ``(logger method, args)``, or ``(None, (ms,))`` to sleep
Action = tuple[Callable[..., Any] | None, tuple[Any, ...]]


class _Calls:
    """The demo's sequence of logging calls, shared by the sync and async drivers.

    The sync driver calls each method and sleeps with ``time.sleep``; the async one awaits
    each call and sleeps with ``asyncio.sleep``. One sequence guarantees that both faces
    see the same events.
    """

    def __init__(self, cfg: DemoConfig) -> None:
        self.cfg = cfg
        self.sim = Simulation(cfg.iterations, cfg.seed, cfg.iter_ms)
        self.checkpoint_every = max(1, cfg.iterations // 3)

    def warmup(self, log: Any) -> Iterator[Action]:
        yield log.set_collection_sync, (True, STEPS_PER_ENV)
        yield log.update_ep_length, (0.0,)
        for f in self.sim.fill():
            yield log.update_collector_timing, (f.collector_timing_ms,)
            yield log.log_collector, (f.total_steps, f.buffer_size)
            yield log.log_buffer_fill, (f.buffer_size, f.target)
            yield log.update_buffer_utilization, (f.buffer_size / BUFFER_CAPACITY,)
            yield None, (self.cfg.iter_ms * 0.5,)
        yield log.start_training_timer, ()

    def training(self, log: Any) -> Iterator[Action]:
        for i in range(1, self.cfg.iterations + 1):
            it = self.sim.step(i)
            yield log.update_collector_timing, (it.collector_timing_ms,)
            yield log.update_done_rates, (it.timeout_rate, it.terminated_rate)
            yield log.log_collector, (it.total_steps, it.buffer_size)
            yield log.update_buffer_utilization, (it.buffer_size / BUFFER_CAPACITY,)
            yield log.update_staging_pool, (it.staging_len, STAGING_MAX)
            yield log.update_ep_length, (it.ep_length,)
            yield None, (self.cfg.iter_ms,)
            yield (
                log.log_step,
                (
                    it.iteration,
                    it.metrics,
                    it.reward,
                    it.reward_metrics,
                    it.reward_components,
                    it.train_time,
                    it.wait_time,
                    it.h2d_time,
                    it.weight_sync_time,
                    {"throughput_steps": it.throughput_steps},
                ),
            )
            if i % self.checkpoint_every == 0 or i == self.cfg.iterations:
                yield log.log_save, (_checkpoint(self.cfg, i),)

    def summary(self) -> str:
        return f"Simulated run (seed {self.cfg.seed}); nothing was trained"


def run_sync(cfg: DemoConfig) -> None:
    calls = _Calls(cfg)
    with OffPolicyLogger(**cfg.logger_kwargs()) as log:
        log.log_status("Collecting random-action transitions...")
        for part in (calls.warmup(log), calls.training(log)):
            for fn, args in part:
                if fn is None:
                    time.sleep(args[0] / 1000.0)
                else:
                    fn(*args)
        log.finish(extra_summary=calls.summary())


async def run_async(cfg: DemoConfig) -> None:
    calls = _Calls(cfg)
    async with AsyncOffPolicyLogger(**cfg.logger_kwargs()) as log:
        await log.log_status("Collecting random-action transitions...")
        for part in (calls.warmup(log), calls.training(log)):
            for fn, args in part:
                if fn is None:
                    await asyncio.sleep(args[0] / 1000.0)
                else:
                    awaitable: Awaitable[None] = fn(*args)
                    await awaitable
        await log.afinish(extra_summary=calls.summary())


def _parse_backends(text: str) -> tuple[str, ...]:
    names = [b.strip().lower() for b in text.split(",") if b.strip()]
    if names == ["none"]:
        return ()
    for b in names:
        if b not in KNOWN_BACKENDS:
            raise argparse.ArgumentTypeError(
                f"unknown backend {b!r}: choose from {', '.join(KNOWN_BACKENDS)} or 'none'"
            )
    return tuple(dict.fromkeys(names))


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--iterations", type=_positive(int), default=300, help="learner iterations to simulate"
    )
    p.add_argument(
        "--refresh", type=_positive(float), default=4.0, help="dashboard refreshes per second"
    )
    p.add_argument(
        "--backends",
        type=_parse_backends,
        default="tensorboard",
        help=f"comma-separated, from {', '.join(KNOWN_BACKENDS)}; or none "
        "(wandb: set WANDB_MODE=offline to keep it local)",
    )
    p.add_argument("--logdir", default="runs", help="parent folder of the run's files")
    p.add_argument(
        "--name",
        default="",
        # "%(default)s" (empty) keeps the formatter from appending "(default: )"
        help="run name (default: demo-YYYYmmdd-HHMMSS, the time now)%(default)s",
    )
    p.add_argument(
        "--iter-ms",
        type=_non_negative_float,
        default=75.0,
        help="simulated learner work per iteration, in milliseconds",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated numbers")
    p.add_argument(
        "--async",
        dest="use_async",
        action="store_true",
        help="drive AsyncOffPolicyLogger under asyncio instead of the sync logger",
    )


def config_from_args(ns: argparse.Namespace) -> DemoConfig:
    return DemoConfig(
        iterations=ns.iterations,
        refresh=ns.refresh,
        backends=tuple(ns.backends),
        logdir=ns.logdir,
        name=ns.name or time.strftime("demo-%Y%m%d-%H%M%S"),
        iter_ms=ns.iter_ms,
        seed=ns.seed,
        use_async=ns.use_async,
    )


def run(cfg: DemoConfig, out: TextIO | None = None) -> int:
    """Run the demo; print where its files are. Returns the exit status."""
    out = out if out is not None else sys.stdout
    try:
        if cfg.use_async:
            asyncio.run(run_async(cfg))
        else:
            run_sync(cfg)
    except KeyboardInterrupt:
        print("demo interrupted", file=out)
        return 130
    _print_outro(cfg, out)
    return 0


def _script(name: str) -> str | None:
    """The console script ``name`` next to ``sys.executable``, as a command prefix.

    Shown relative to the current folder when it is inside it (``.venv/bin/tensorboard``),
    else absolute; ``None`` when there is no such script.
    """
    folder = os.path.dirname(sys.executable)
    for candidate in (name, name + ".exe"):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            cwd = os.getcwd()
            absolute = os.path.abspath(path)
            if os.path.commonpath([cwd, absolute]) == cwd:
                rel = os.path.relpath(absolute, cwd)
                path = rel if os.sep in rel else os.path.join(".", rel)
            return shlex.quote(path)
    return None


def _command(script: str, module: str) -> str:
    """How to run ``script`` as printed: the script itself, else ``python -m module``."""
    found = _script(script)
    return found if found is not None else f"{shlex.quote(sys.executable)} -m {module}"


def _wandb_run_folder(cfg: DemoConfig) -> str | None:
    """The newest ``offline-run-*``/``run-*`` folder wandb left under ``<run_dir>/wandb``."""
    root = glob.escape(os.path.join(cfg.run_dir, "wandb"))
    found = [
        p
        for pattern in ("offline-run-*", "run-*")
        for p in glob.glob(os.path.join(root, pattern))
        if os.path.isdir(p)
    ]
    return max(found, key=os.path.getmtime) if found else None


#: what each file backend writes, and the label the closing lines give it
FILE_LINES = (
    ("tensorboard", "TensorBoard files", ""),
    ("jsonl", "JSON Lines", "metrics.jsonl"),
    ("csv", "CSV", "progress.csv"),
)


def closing_lines(run_dir: str, backends: Sequence[str]) -> list[str]:
    """Where a run's files are and how to open them, as commands that run as printed.

    ``examples/_sac.py`` prints the same lines (a test compares them): every file written,
    TensorBoard opened on the run's parent folder (so runs side by side compare), and
    ``aoff show`` on the run."""
    lines: list[str] = []
    for name, label, file in FILE_LINES:
        if name in backends:
            lines.append(f"{label + ':':<19}{os.path.join(run_dir, file) if file else run_dir}")
    for file, label in (("config.json", "Config"), ("aoff-summary.json", "Run summary")):
        if os.path.isfile(os.path.join(run_dir, file)):  # aoff's own files, when written
            lines.append(f"{label + ':':<19}{os.path.join(run_dir, file)}")
    if "tensorboard" in backends:
        parent = shlex.quote(os.path.dirname(os.path.normpath(run_dir)) or ".")
        tb = _command("tensorboard", "tensorboard.main")
        lines.append(f"{'Open them with:':<19}{tb} --logdir {parent}")
    if any(name in backends for name, _, _ in FILE_LINES):
        lines.append(f"{'Summary:':<19}{_command('aoff', 'aoff')} show {shlex.quote(run_dir)}")
    return lines


def _print_outro(cfg: DemoConfig, out: TextIO) -> None:
    lines = closing_lines(cfg.run_dir, cfg.backends)
    if "wandb" in cfg.backends:
        folder = _wandb_run_folder(cfg)
        if folder is None:
            where = os.path.join(cfg.run_dir, "wandb")
            lines.append(f"W&B:               no run folder under {where}; see the output above")
        else:
            lines.append(f"W&B run folder:    {folder}")
            sync = _command("wandb", "wandb")
            lines.append(f"Upload it with:    {sync} sync {shlex.quote(folder)}")
    if not lines:
        lines.append("No backend was chosen (--backends none): nothing was written.")
    print("\n".join(lines), file=out)
