"""A small training run that tests/test_terminal.py starts in a child process.

Run as ``python terminal_child.py MODE OUT_DIR [options]``:

``timed``
    log for ``--seconds`` and call ``finish()``. Half-way through it prints one line
    to stdout and one to stderr (``MARKER_OUT``/``MARKER_ERR``), as training code does
    while the panel is live. With ``--steered`` the parent sets the pace instead of the
    clock, so a loaded machine cannot cut the run short of what the test must see: the
    markers are printed once ``OUT_DIR/say`` exists and the loop ends once
    ``OUT_DIR/stop`` exists (``--seconds`` is then only a cap); the seconds from the
    logger's construction to ``finish()``'s return go to ``OUT_DIR/elapsed.txt``.
``forever``
    log until a signal ends the process (capped at ``--seconds``).

In both modes, after each ``log_step`` returns, the iteration is appended to
``OUT_DIR/progress.txt`` (one line, flushed), so the parent knows what was logged before
it sent a signal. ``--no-finish`` (sync face) leaves the logger to the exit hook.

``--face`` picks the sync face or the async face on asyncio or trio; ``--backends tb``
logs TensorBoard into OUT_DIR (the default ``log_backend``) plus JSONL.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from typing import Any

MARKER_OUT = "training says hello from print() " + "-" * 40 + " end-of-line-out"
MARKER_ERR = "training says hello on stderr " + "=" * 40 + " end-of-line-err"
MARKER_LOG = "training says hello through logging " + "~" * 30 + " end-of-line-log"


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["timed", "forever"])
    p.add_argument("out")
    p.add_argument("--face", choices=["sync", "asyncio", "trio"], default="sync")
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--refresh", type=float, default=8)
    p.add_argument("--plain-interval", type=float, default=None)
    p.add_argument("--backends", choices=["none", "tb"], default="none")
    p.add_argument("--no-finish", action="store_true")
    p.add_argument("--pump", choices=["process", "thread"], default="process")
    p.add_argument("--log-marker", action="store_true", help="also log through `logging`")
    p.add_argument("--steered", action="store_true", help="OUT/say and OUT/stop set the pace")
    return p.parse_args()


def logger_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "algo_name": "SACTERM",
        "env_name": "PendulumTerm-v1",
        "max_iterations": 100_000,
        "num_envs": 16,
        "refresh_per_second": args.refresh,
        "pump": args.pump,
    }
    if args.backends == "tb":
        kw.update(log_dir=args.out, backends=("jsonl",), flush_secs=0.5)
    else:
        kw.update(log_backend="none")
    if args.plain_interval is not None:
        from aoff import Dashboard

        kw["display"] = Dashboard(plain_interval=args.plain_interval)
    return kw


def step_kwargs(i: int) -> dict[str, Any]:
    return {
        "metrics": {"critic_loss": 1.0 / i, "actor_loss": -2.5, "alpha": 0.125},
        "reward": -100.0 + i * 0.01,
        "train_time": 0.004,
        "extra_info": {"throughput_steps": 4096},
    }


class Pace:
    """When to print the markers and when to stop: half-way and at ``--seconds`` by the
    clock, or when the parent says so (``--steered``)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.seconds, self.steered = float(args.seconds), bool(args.steered)
        self.say_file = os.path.join(args.out, "say")
        self.stop_file = os.path.join(args.out, "stop")
        # the clock starts at the first iteration, not before the logger's start: on a
        # loaded machine starting the agent can take longer than ``--seconds``, and a
        # child that never iterated would say nothing
        self.t0: float | None = None
        self.born = time.monotonic()

    def elapsed(self) -> float:
        if self.t0 is None:
            self.t0 = time.monotonic()
        return time.monotonic() - self.t0

    def lived(self) -> float:
        """Seconds since the logger's construction (its start included)."""
        return time.monotonic() - self.born

    def go_on(self) -> bool:
        if self.elapsed() >= self.seconds:
            return False
        return not (self.steered and os.path.exists(self.stop_file))

    def say_now(self) -> bool:
        if self.steered:
            return os.path.exists(self.say_file)
        return self.elapsed() >= self.seconds / 2


class Progress:
    def __init__(self, args: argparse.Namespace) -> None:
        self.out = args.out
        self.file = open(os.path.join(args.out, "progress.txt"), "a", encoding="utf-8")  # noqa: SIM115

    def logged(self, i: int) -> None:
        self.file.write(f"{i}\n")
        self.file.flush()

    def finished(self, pace: Pace) -> None:
        """finish() returned (written here, not to a terminal that may not take it)."""
        self.file.write("finished\n")
        self.file.flush()
        with open(os.path.join(self.out, "elapsed.txt"), "w", encoding="utf-8") as f:
            f.write(f"{pace.lived():.3f}\n")


def run_sync(args: argparse.Namespace) -> None:
    from aoff import OffPolicyLogger

    progress = Progress(args)
    pace = Pace(args)
    log = OffPolicyLogger(**logger_kwargs(args))
    log.start()
    i = 0
    said = False
    while pace.go_on():
        i += 1
        log.update_collector_timing({"env_step_ms": 1.5})
        log.log_collector(total_steps=i * 4096, buffer_size=i * 16)
        log.log_step(i, **step_kwargs(i))
        progress.logged(i)
        if not said and pace.say_now():
            said = True
            print(MARKER_OUT, flush=True)
            print(MARKER_ERR, file=sys.stderr, flush=True)
            if args.log_marker:
                logging.getLogger("train").warning(MARKER_LOG)
        time.sleep(0.002)  # a training step takes time (a pace, not a wait)
    if not said:  # one iteration outlasted ``--seconds`` (a loaded machine): say it now
        print(MARKER_OUT, flush=True)
        print(MARKER_ERR, file=sys.stderr, flush=True)
        if args.log_marker:
            logging.getLogger("train").warning(MARKER_LOG)
    if not args.no_finish:
        log.finish()
        progress.finished(pace)
    print(f"child finished after {i} iterations", flush=True)


async def run_async(args: argparse.Namespace) -> None:
    import anyio

    from aoff import AsyncOffPolicyLogger

    progress = Progress(args)
    pace = Pace(args)
    async with AsyncOffPolicyLogger(**logger_kwargs(args)) as log:
        i = 0
        while pace.go_on():
            i += 1
            await log.log_collector(total_steps=i * 4096, buffer_size=i * 16)
            await log.log_step(i, **step_kwargs(i))
            progress.logged(i)
            await anyio.sleep(0.002)  # a training step takes time (a pace, not a wait)
    print(f"child finished after {i} iterations", flush=True)


def main() -> None:
    args = parse()
    if args.log_marker:  # a handler made before the logger: it holds the real stderr
        logging.basicConfig(format="%(message)s")
    # as when run from an interactive shell, even if the test runner ignores SIGINT
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.face == "sync":
        run_sync(args)
    else:
        import anyio

        anyio.run(run_async, args, backend=args.face)


if __name__ == "__main__":
    main()
