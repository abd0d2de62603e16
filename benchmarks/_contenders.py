"""One contender of ``compare.py``, run in a fresh process.

    python benchmarks/_contenders.py NAME --iterations N --dir DIR --result FILE [--no-torch]

Runs the shared workload (``_workload.py``) ``N`` times through contender ``NAME``,
timing each iteration's logging calls with ``perf_counter_ns``, then closes the logger
(which must flush everything to ``DIR``) and writes a JSON result to ``FILE``: the
per-iteration samples, setup time, wall and CPU time of loop + close, peak RSS. The
parent (``compare.py``) reads ``DIR`` back to check that every scalar arrived.

Every worker imports torch before anything is measured (a training process has it
imported; for aoff this also switches its tensor-capturing call path on), unless
``--no-torch`` is given to a contender that does not need it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from _workload import (
    BUFFER_SIZE,
    COMPONENTS,
    EXTRA,
    METRICS,
    REWARD,
    TERMINATED_RATE,
    TIMEOUT_RATE,
    TIMING,
    TRAIN_TIME,
    WAIT_TIME,
    iterate,
    seed_scalars,
    step_of,
    total_steps,
)

ALGO, ENV = "SAC", "HalfCheetah-v4"
CONSOLE_WIDTH, CONSOLE_HEIGHT = 120, 40


def devnull_console() -> Any:
    """A Rich console that behaves like a colour terminal but writes to /dev/null.

    ``Live`` then redraws the full panel every frame (cursor codes and all), which is the
    costly case, without a real terminal's speed or blocking in the measurement.
    """
    from rich.console import Console

    return Console(
        file=open(os.devnull, "w", encoding="utf-8"),  # lives as long as the process
        force_terminal=True,
        color_system="truecolor",
        width=CONSOLE_WIDTH,
        height=CONSOLE_HEIGHT,
    )


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


class Meter:
    """Setup / loop+close wall and CPU time of one contender run."""

    def __init__(self) -> None:
        self.t_setup = time.perf_counter()
        self.t0 = 0.0
        self.cpu0 = 0.0
        self.setup_s = 0.0
        self.wall_s = 0.0
        self.cpu_s = 0.0
        self.loop_s = 0.0
        self.helper_cpu_s = 0.0

    def begin(self) -> None:
        gc.collect()
        self.t0 = time.perf_counter()
        self.setup_s = self.t0 - self.t_setup
        self.cpu0 = _cpu()

    def loop_done(self) -> None:
        self.loop_s = time.perf_counter() - self.t0

    def end(self) -> None:
        self.wall_s = time.perf_counter() - self.t0
        self.cpu_s = _cpu() - self.cpu0


# -- contenders --------------------------------------------------------------------------
def aoff_display() -> dict[str, Any]:
    """How the aoff contenders show their dashboard: into a Console on /dev/null (which
    keeps the pump in this process: thread mode), or with ``AOFF_COMPARE_PUMP=process``
    (``compare.py --aoff-pump process``) none at all, so that the pump runs in the agent
    process (process mode, the default a training script gets)."""
    if os.environ.get("AOFF_COMPARE_PUMP") == "process":
        return {"display": "none"}
    return {"console": devnull_console()}


def frames_drawn(log: Any) -> int | None:
    """Dashboard frames the in-process pump drew (None in process mode: no pump here)."""
    core = getattr(log, "_core", None)
    return None if core is None else int(core.pump._screen.frames)


def run_aoff_sync(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    from aoff import OffPolicyLogger

    log = OffPolicyLogger(
        algo_name=ALGO,
        env_name=ENV,
        max_iterations=n,
        log_dir=d,
        backends=("jsonl",),
        handle_sigterm=False,
        **aoff_display(),
    )
    log.start()
    log.flush()  # backends opened and dashboard up before the loop (setup, not timed)
    out: list[int] = []
    m.begin()
    iterate(log, 0, n, out)
    m.loop_done()
    rep = log.finish()
    m.end()
    info["frames"] = frames_drawn(log)
    info["report"] = {
        "steps": rep.steps,
        "dropped_events": rep.dropped_events,
        "backend_written": rep.backend_written,
        "backend_lost": rep.backend_lost,
    }
    return out


def run_aoff_async(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    import anyio
    import anyio.lowlevel

    from aoff import AsyncOffPolicyLogger

    out = [0] * n

    async def main() -> None:
        log = AsyncOffPolicyLogger(
            algo_name=ALGO,
            env_name=ENV,
            max_iterations=n,
            log_dir=d,
            backends=("jsonl",),
            **aoff_display(),
        )
        clock = time.perf_counter_ns
        checkpoint = anyio.lowlevel.checkpoint
        async with log:
            await log.aflush()  # backends opened and dashboard up (setup, not timed)
            m.begin()
            for i in range(n):
                t0 = clock()
                await log.update_collector_timing(TIMING)
                await log.update_done_rates(TIMEOUT_RATE, TERMINATED_RATE)
                await log.log_collector(total_steps(i), BUFFER_SIZE, REWARD)
                await log.log_step(
                    i,
                    METRICS,
                    reward=REWARD,
                    reward_components=COMPONENTS,
                    train_time=TRAIN_TIME,
                    wait_time=WAIT_TIME,
                    extra_info=EXTRA,
                )
                out[i] = clock() - t0
                # an async training loop awaits something every iteration (env step,
                # learner); this is where the pump gets the loop. Not timed.
                await checkpoint()
            m.loop_done()
            rep = await log.afinish()
        m.end()
        info["frames"] = frames_drawn(log)
        info["report"] = {
            "steps": rep.steps,
            "dropped_events": rep.dropped_events,
            "backend_written": rep.backend_written,
            "backend_lost": rep.backend_lost,
        }

    anyio.run(main, backend="asyncio")
    return out


def run_seedlike(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    from _seedlike import SeedLikeLogger

    log = SeedLikeLogger(
        algo_name=ALGO, env_name=ENV, max_iterations=n, log_dir=d, console=devnull_console()
    )
    log.start()
    out: list[int] = []
    m.begin()
    iterate(log, 0, n, out)  # the same timed loop as aoff's sync face
    m.loop_done()
    log.finish()
    m.end()
    info["frames"] = log.frames
    return out


def run_tb_writer(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(d)
    add = writer.add_scalar
    out = [0] * n
    clock = time.perf_counter_ns
    m.begin()
    for i in range(n):
        t0 = clock()
        step = step_of(i)
        for tag, value in seed_scalars(i):
            add(tag, value, step)
        out[i] = clock() - t0
    m.loop_done()
    writer.close()
    m.end()
    return out


def _helper_cpu() -> float:
    """CPU seconds of this process's live child processes (wandb's service)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dev/bench dependency
        return 0.0
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def run_wandb(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    import wandb

    run = wandb.init(
        project="aoff-bench",
        name=f"{ALGO}_{ENV}",
        dir=d,
        mode="offline",
        config={"algo": ALGO, "env": ENV, "max_iterations": n},
    )
    out = [0] * n
    clock = time.perf_counter_ns
    helper0 = _helper_cpu()
    m.begin()
    for i in range(n):
        t0 = clock()
        row = dict(seed_scalars(i))
        row["iteration"] = i
        wandb.log(row, step=step_of(i))
        out[i] = clock() - t0
    m.loop_done()
    run.finish()
    m.end()
    m.helper_cpu_s = _helper_cpu() - helper0
    info["wandb_version"] = wandb.__version__
    wandb.teardown()
    return out


def _timed_dict_calls(log: Callable[[dict[str, float], int], Any], n: int, m: Meter) -> list[int]:
    """The loop of the contenders that take one finished dict a step."""
    out = [0] * n
    clock = time.perf_counter_ns
    m.begin()
    for i in range(n):
        t0 = clock()
        log(dict(seed_scalars(i)), step_of(i))
        out[i] = clock() - t0
    m.loop_done()
    return out


def _torchrl(n: int, d: str, m: Meter, info: dict[str, Any], **service: Any) -> list[int]:
    """TorchRL's ``TensorboardLogger`` (``log_dir/tb``), one ``log_metrics`` a step: in
    this process, or behind ``service_backend="process"`` (its ``ProcessLogger``, whose
    every call waits for the logger process to answer)."""
    import torchrl
    from torchrl.record.loggers import TensorboardLogger

    logger = TensorboardLogger("tb", d, **service)
    info["torchrl_version"] = torchrl.__version__
    info["logger_type"] = type(logger).__name__

    def log(row: dict[str, float], step: int) -> None:
        logger.log_metrics(row, step=step)

    out = _timed_dict_calls(log, n, m)
    logger.close()
    m.end()
    return out


def run_torchrl_tb(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    return _torchrl(n, d, m, info)


def run_torchrl_process(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    return _torchrl(n, d, m, info, service_backend="process")


def run_trackio(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    """trackio's local logging: ``trackio.log(dict, step=)`` into its SQLite store under
    ``d`` (its own thread sends a batch every 0.5 s; ``finish`` drains it)."""
    os.environ["TRACKIO_DIR"] = d  # read when trackio is imported
    import trackio

    trackio.init(
        project="aoff-bench",
        name=f"{ALGO}_{ENV}",
        config={"algo": ALGO, "env": ENV, "max_iterations": n},
        embed=False,
        auto_log_gpu=False,
        auto_log_cpu=False,
    )
    info["trackio_version"] = trackio.__version__
    out = _timed_dict_calls(lambda row, step: trackio.log(row, step=step), n, m)
    trackio.finish()
    m.end()
    return out


def _tianshou_calls(logger: Any, n: int, m: Meter) -> list[int]:
    """One ``log_update_data`` a step (the trainer's call after a gradient step), the
    workload's record as its statistics; ``finalize`` closes."""
    out = _timed_dict_calls(lambda row, step: logger.log_update_data(row, step), n, m)
    logger.finalize()
    m.end()
    return out


def run_tianshou_tb(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    """Tianshou's ``TensorboardLogger`` over torch's writer (its defaults: a flush after
    every ``write``)."""
    import tianshou
    from tianshou.utils import TensorboardLogger
    from torch.utils.tensorboard import SummaryWriter

    info["tianshou_version"] = tianshou.__version__
    return _tianshou_calls(TensorboardLogger(SummaryWriter(d), update_interval=1), n, m)


def run_aoff_tianshou(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    """``aoff.tianshou.Logger``, the same calls."""
    from aoff.tianshou import Logger

    return _tianshou_calls(Logger(d, update_interval=1), n, m)


class _BenchTrial:
    """What Tune's logger callbacks read of a trial (``Trial`` needs a registered
    trainable): the same object handed to both callbacks."""

    def __init__(self, d: str) -> None:
        self.trial_id = "bench_00000"
        self.local_path = d
        self.config = {"algo": ALGO, "env": ENV}
        self.evaluated_params = dict(self.config)

    def init_local_path(self) -> None:
        os.makedirs(self.local_path, exist_ok=True)


def _tune_calls(callback: Any, d: str, n: int, m: Meter) -> list[int]:
    """Tune's driver loop's calls: one ``log_trial_result`` a training iteration, the
    workload's record as the result (``timesteps_total`` its step), then the trial's end."""
    trial = _BenchTrial(d)
    callback.log_trial_start(trial)

    def result(row: dict[str, float], step: int) -> None:
        row["timesteps_total"] = step
        row["training_iteration"] = step
        callback.log_trial_result(step, trial, row)

    out = _timed_dict_calls(result, n, m)
    callback.log_trial_end(trial)
    callback.on_experiment_end([trial])
    m.end()
    return out


def run_tune_tbx(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    """Ray Tune's ``TBXLoggerCallback`` (tensorboardX, a flush a result)."""
    import ray
    from ray.tune.logger import TBXLoggerCallback

    info["ray_version"] = ray.__version__
    return _tune_calls(TBXLoggerCallback(), d, n, m)


def run_aoff_tune(n: int, d: str, m: Meter, info: dict[str, Any]) -> list[int]:
    """``aoff.ray.TuneCallback``, the same calls (the sweep in ``d``, the trial's run in
    its one folder)."""
    from aoff.ray import TuneCallback

    return _tune_calls(TuneCallback(d), d, n, m)


CONTENDERS: dict[str, Callable[[int, str, Meter, dict[str, Any]], list[int]]] = {
    "aoff-sync": run_aoff_sync,
    "aoff-async": run_aoff_async,
    "seedlike": run_seedlike,
    "tb-writer": run_tb_writer,
    "wandb": run_wandb,
    "torchrl-tb": run_torchrl_tb,
    "torchrl-process": run_torchrl_process,
    "trackio": run_trackio,
    "tianshou-tb": run_tianshou_tb,
    "aoff-tianshou": run_aoff_tianshou,
    "tune-tbx": run_tune_tbx,
    "aoff-tune": run_aoff_tune,
}
NEEDS_TORCH = {"seedlike", "tb-writer", "torchrl-tb", "torchrl-process", "tianshou-tb"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=sorted(CONTENDERS))
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()

    torch_imported = False
    if not args.no_torch or args.name in NEEDS_TORCH:
        import torch  # noqa: F401 - the training process's import, before any measurement

        torch_imported = True
    os.makedirs(args.dir, exist_ok=True)
    rss_base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    info: dict[str, Any] = {}
    meter = Meter()
    samples = CONTENDERS[args.name](args.iterations, args.dir, meter, info)
    result = {
        "name": args.name,
        "iterations": args.iterations,
        "torch_imported": torch_imported,
        "python": sys.version.split()[0],
        "setup_s": meter.setup_s,
        "loop_s": meter.loop_s,
        "wall_s": meter.wall_s,
        "cpu_s": meter.cpu_s + meter.helper_cpu_s,
        "helper_cpu_s": meter.helper_cpu_s,
        "rss_base_kb": rss_base_kb,
        "rss_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "info": info,
        "samples_ns": samples,
    }
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
