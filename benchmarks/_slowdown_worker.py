"""One configuration of ``slowdown.py``, run in a fresh process whose stdout is a pty.

    python benchmarks/_slowdown_worker.py CONFIG --iterations N --inner K --dir DIR \
        --result FILE [--no-torch]

A training loop whose every iteration does ``busy(K)`` — a fixed amount of pure-Python
work that holds the GIL, calibrated by the parent to ~1 ms (``--work native``: hashing in
C, which releases the GIL, like torch kernels do) — and then, unless CONFIG is
``none``, the workload's 4 logging calls. Each whole iteration (work + logging) is timed
with ``perf_counter_ns``; the CPU time of the work itself is summed from the thread's CPU
clock around ``busy(K)``, so that the process's other CPU over the loop is the logger's
(measured in one process, this split is unaffected by other processes' load). The
dashboards draw to this process's stdout (a pseudo-terminal
the parent drains). Results go to ``FILE`` as JSON, not to stdout.

CONFIG: ``none`` (no logger), ``aoff`` (``OffPolicyLogger``, TensorBoard + JSONL, live
dashboard), ``seedlike`` (the synchronous reference), and for attributing aoff's overhead
``aoff-nodash`` (TensorBoard + JSONL, no dashboard) and ``aoff-dashonly`` (dashboard, no
backend); the newest designs, each logging the iteration's 32 scalars as one finished dict
at ``log_step`` (``compare.py``'s contenders of the same names, which read the output
back): ``torchrl-tb`` (TorchRL's ``TensorboardLogger.log_metrics``), ``torchrl-process``
(the same behind its ``ProcessLogger``) and ``trackio`` (``trackio.log``, local store).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import time
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
    seed_scalars,
    step_of,
    total_steps,
)

CONFIGS = ("none", "aoff", "aoff-thread", "seedlike", "aoff-nodash", "aoff-dashonly")
NEWEST = ("torchrl-tb", "torchrl-process", "trackio")


class DictCalls:
    """The workload's 4 calls over a logger that takes one finished dict a step: the
    first three carry nothing of their own here (their values are in the step's dict),
    ``log_step`` logs the 32 scalars at the step."""

    def __init__(self, log: Any, close: Any) -> None:
        self._log, self._close, self.calls = log, close, 0

    def start(self) -> None:
        return None

    def update_collector_timing(self, timing: Any) -> None:
        return None

    def update_done_rates(self, timeout: float, terminated: float) -> None:
        return None

    def log_collector(self, steps: int, buffer: int, reward: float) -> None:
        return None

    def log_step(self, i: int, *args: Any, **kwargs: Any) -> None:
        self._log(dict(seed_scalars(i)), step_of(i))
        self.calls += 1

    def finish(self) -> None:
        self._close()


def newest_logger(config: str, n: int, d: str) -> DictCalls:
    if config == "trackio":
        os.environ["TRACKIO_DIR"] = d  # read when trackio is imported
        import trackio

        trackio.init(project="aoff-bench", name="SAC_HalfCheetah-v4", embed=False)
        return DictCalls(lambda row, step: trackio.log(row, step=step), trackio.finish)
    from torchrl.record.loggers import TensorboardLogger

    service = {"service_backend": "process"} if config == "torchrl-process" else {}
    tb = TensorboardLogger("tb", d, **service)
    return DictCalls(lambda row, step: tb.log_metrics(row, step=step), tb.close)


def busy(k: int) -> int:
    """Pure-Python work that holds the GIL (no sleep, no C call that releases it)."""
    x = 0
    for j in range(k):
        x += j
    return x


_CHUNK = bytes(16384)


def busy_native(k: int) -> int:
    """CPU work in C that releases the GIL (hashlib does above 2 KiB), like a torch kernel."""
    from hashlib import sha256

    n = 0
    for _ in range(k):
        n += len(sha256(_CHUNK).digest())
    return n


WORKS = {"python": busy, "native": busy_native}


def _cpu() -> float:
    """Process CPU seconds, all threads (the pump's included)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def make_logger(config: str, n: int, d: str) -> Any:
    if config == "none":
        return None
    if config in NEWEST:
        return newest_logger(config, n, d)
    if config == "seedlike":
        from _seedlike import SeedLikeLogger

        return SeedLikeLogger(
            algo_name="SAC", env_name="HalfCheetah-v4", max_iterations=n, log_dir=d
        )
    from aoff import OffPolicyLogger

    kw: dict[str, Any] = {}
    if config == "aoff":
        kw = {"log_dir": d, "backends": ("jsonl",), "pump": "process"}
    elif config == "aoff-thread":
        kw = {"log_dir": d, "backends": ("jsonl",), "pump": "thread"}
    elif config == "aoff-nodash":
        from aoff._display._api import NullDisplay

        kw = {"log_dir": d, "backends": ("jsonl",), "display": NullDisplay(), "pump": "thread"}
    elif config == "aoff-dashonly":
        kw = {"log_backend": "none", "pump": "thread"}
    else:
        raise ValueError(config)
    return OffPolicyLogger(
        algo_name="SAC", env_name="HalfCheetah-v4", max_iterations=n, handle_sigterm=False, **kw
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config", choices=CONFIGS + NEWEST)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--inner", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--work", choices=sorted(WORKS), default="python")
    args = ap.parse_args()
    busy = WORKS[args.work]
    if not args.no_torch or args.config == "seedlike":
        import torch  # noqa: F401 - a training process has it imported

    n, k = args.iterations, args.inner
    os.makedirs(args.dir, exist_ok=True)
    log = make_logger(args.config, n, args.dir)
    if log is not None:
        log.start()
        if hasattr(log, "flush"):
            # aoff opens its backends and dashboard in the background: let that finish
            # first, as the seed-like logger's constructor does before the loop too
            log.flush()
    busy(k)  # warm the loop's code path once
    # Start every configuration with no garbage-collection debt: importing torch leaves
    # a full (generation 2) collection due, ~80 ms here, and whichever loop allocates
    # first pays it (a real training loop would, logger or not). Collected here, before
    # the clock starts, in every configuration alike.
    gc.collect()
    out = [0] * n
    clock = time.perf_counter_ns
    thread_cpu = time.thread_time_ns
    work_ns = 0
    t_loop = time.perf_counter()
    cpu0 = _cpu()
    if log is None:
        for i in range(n):
            t0 = clock()
            c0 = thread_cpu()
            busy(k)
            work_ns += thread_cpu() - c0
            out[i] = clock() - t0
    else:
        for i in range(n):
            t0 = clock()
            c0 = thread_cpu()
            busy(k)
            work_ns += thread_cpu() - c0
            log.update_collector_timing(TIMING)
            log.update_done_rates(TIMEOUT_RATE, TERMINATED_RATE)
            log.log_collector(total_steps(i), BUFFER_SIZE, REWARD)
            log.log_step(
                i,
                METRICS,
                reward=REWARD,
                reward_components=COMPONENTS,
                train_time=TRAIN_TIME,
                wait_time=WAIT_TIME,
                extra_info=EXTRA,
            )
            out[i] = clock() - t0
    loop_s = time.perf_counter() - t_loop
    loop_cpu_s = _cpu() - cpu0
    t_close = time.perf_counter()
    check = "-"
    info: dict[str, Any] = {}
    if log is not None:
        rep = log.finish()
        if isinstance(log, DictCalls):
            check = "ok" if log.calls == n else f"{log.calls}/{n} steps logged"
        elif args.config.startswith("aoff"):
            info = {
                "frames": log._core.pump._screen.frames
                if hasattr(log, "_core")
                else "in the agent",
                "dropped_events": rep.dropped_events,
                "backend_written": rep.backend_written,
                "backend_lost": rep.backend_lost,
            }
            want = {} if args.config == "aoff-dashonly" else {"tensorboard": n, "jsonl": n}
            written_ok = rep.backend_written == want and not any(rep.backend_lost.values())
            rows = 0
            jsonl = os.path.join(args.dir, "metrics.jsonl")
            if os.path.exists(jsonl):
                with open(jsonl, "rb") as f:
                    rows = sum(1 for _ in f)
            rows_ok = rows == (n if "jsonl" in want else 0)
            check = (
                "ok"
                if written_ok and rows_ok and not rep.dropped_events
                else f"written {rep.backend_written}, lost {rep.backend_lost}, "
                f"dropped {rep.dropped_events}, jsonl rows {rows}"
            )
        else:
            info = {"frames": log.frames}
            check = "ok" if log.state.steps_logged == n else f"{log.state.steps_logged}/{n} steps"
    close_s = time.perf_counter() - t_close
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump(
            {
                "config": args.config,
                "iterations": n,
                "inner": k,
                "work": args.work,
                "loop_s": loop_s,
                "loop_cpu_s": loop_cpu_s,
                "work_cpu_s": work_ns / 1e9,
                "close_s": close_s,
                "check": check,
                "info": info,
                "samples_ns": out,
            },
            f,
        )


if __name__ == "__main__":
    main()
