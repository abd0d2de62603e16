"""The demo's run: one sequence of logging calls, played on the sync or the async face.

Why a module of its own: the sequence (a replay-buffer warm-up, then one iteration of
calls after another, checkpoints on the way) is what the demo shows; both drivers replay
it, so both faces see the same events. The numbers come from ``_demo_sim``; the command
line around it is ``_demo``'s.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from .._faces._async import AsyncOffPolicyLogger
from .._faces._sync import OffPolicyLogger
from ._demo_config import DemoConfig, checkpoint_path
from ._demo_sim import BUFFER_CAPACITY, STAGING_MAX, STEPS_PER_ENV, Simulation
from ._pipes import output_closed

__all__ = ["run_async", "run_sync"]


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
                yield log.log_save, (checkpoint_path(self.cfg, i),)

    def summary(self) -> str:
        return f"Simulated run (seed {self.cfg.seed}); nothing was trained"


def _go_on() -> None:
    """Between iterations: a reader that closed our stdout (``aoff demo | head``) ends
    the demo now (the run is finished and its files written; ``aoff`` exits 0)."""
    if output_closed(sys.stdout):
        raise BrokenPipeError


def run_sync(cfg: DemoConfig) -> None:
    calls = _Calls(cfg)
    with OffPolicyLogger(**cfg.logger_kwargs()) as log:
        log.log_status("Collecting random-action transitions...")
        for part in (calls.warmup(log), calls.training(log)):
            for fn, args in part:
                if fn is None:
                    _go_on()
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
                    _go_on()
                    await asyncio.sleep(args[0] / 1000.0)
                else:
                    awaitable: Awaitable[None] = fn(*args)
                    await awaitable
        await log.afinish(extra_summary=calls.summary())
