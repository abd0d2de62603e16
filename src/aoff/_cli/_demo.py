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

This module is the command line (the options, their checks, the exit status); the
settings are ``_demo_config``'s, the run ``_demo_drive``'s (numbers from ``_demo_sim``),
the closing lines ``_demo_outro``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from .._pump import _registry
from ._demo_config import DemoConfig
from ._demo_drive import run_async, run_sync
from ._demo_outro import print_outro

__all__ = ["add_arguments", "config_from_args", "run"]


def _known() -> tuple[str, ...]:
    """The backends the demo offers: the registered ones that need no extra installed."""
    return tuple(n for n in _registry.names() if _registry.entry(n).requires is None)


def _parse_backends(text: str) -> tuple[str, ...]:
    names = [b.strip().lower() for b in text.split(",") if b.strip()]
    if names == ["none"]:
        return ()
    for b in names:
        if b not in _known():
            raise argparse.ArgumentTypeError(
                f"unknown backend {b!r}: choose from {', '.join(_known())} or 'none'"
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
        help=f"comma-separated, from {', '.join(_known())}; or none "
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
    print_outro(cfg, out)
    return 0
