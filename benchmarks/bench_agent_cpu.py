"""The agent's CPU per iteration, measured in the running agent, and throughput to disk.

``bench_pump_cost.py`` times each stage alone; this one reads the agent process's own
CPU time (``/proc/<pid>/stat``: every thread, user + system) around a run of the
standard workload (``_workload.iterate``: 4 calls, 32 scalars an iteration), with the
defaults a headless run gets: TensorBoard + JSONL, no dashboard (``NullDisplay()``, as
``display="none"``; it runs on older versions too, for a before/after), system metrics
on. The agent's start-up (imports) is left out: the count starts after a warm-up and a
``flush()``, and ends at a ``flush()`` (everything on disk).

* paced: one iteration every ``--pace-ms`` (a training loop's rhythm): agent CPU per
  iteration, wake-ups included;
* flat out: the loop as fast as it goes: agent CPU per iteration, and the loop plus
  ``finish()`` as iterations/s and scalars/s on disk, with the events dropped; of the
  agent's CPU, its system part and its minor page faults an iteration;
* flat out from the first line: the same loop right after the constructor, while the
  agent still imports (loop + ``finish()``, the events dropped);
* 4 threads flat out, a quarter of the iterations each: the same, with the events
  from several threads at once (the training process's GIL shared by 5 threads);
* flat out, one ``log_step`` of 32 metrics a step (the issue's other unit): agent CPU
  a step, and steps/s and metric scalars/s on disk, the events dropped;
* an 8-run group (``RunGroup``, one agent) paced at 1 ms an iteration, 32 float32
  metrics a run: the agent's CPU an iteration and its share of a core (the issue's
  "8 runs at 1 kHz under 50 % of a core");
* flat out, 8 metrics a step (``log_step`` alone): scalars/s on disk, the issue's
  throughput figure (each step also gets aoff's own scalars: counted too).

    python benchmarks/bench_agent_cpu.py [--iterations 20000] [--pace-ms 0.5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _workload import iterate, run_threads

from aoff import NullDisplay, OffPolicyLogger

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid``, all its threads (tick resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def system_and_faults(pid: int) -> tuple[float, int]:
    """Process ``pid``'s system CPU (tick resolution) and minor page faults so far: the
    part of its CPU the kernel spends for it, of which faulting pages in is one."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[12]) / TICK, int(fields[7])


def logger(run: Path) -> OffPolicyLogger:
    log = OffPolicyLogger(
        log_dir=run, backends=("jsonl",), display=NullDisplay(), handle_sigterm=False
    )
    assert type(log._driver).__name__ == "AgentSide", "the pump is not in the agent"
    return log


def agent_pid(log: OffPolicyLogger) -> int:
    host: Any = log._driver
    return int(host.proc.pid)


def rows(run: Path) -> int:
    with open(run / "metrics.jsonl", "rb") as f:
        return sum(1 for _ in f)


#: the issue's one 32-metric ``log_step``
WIDE = {f"train/metric_{k}": 0.5 + k for k in range(32)}


def wide(log: OffPolicyLogger, start: int, n: int) -> None:
    """``n`` steps of ``log_step`` with 32 metrics alone, from iteration ``start``."""
    for i in range(start, start + n):
        log.log_step(i, WIDE)


def standard(
    run: Path, n: int, pace_s: float, body: Callable[[Any, int, int], None] = iterate
) -> dict[str, float]:
    """``n`` iterations of ``body`` (the standard one, or one 32-metric ``log_step``:
    32 scalars either way; paced, or flat out with ``pace_s == 0``) after a warm-up."""
    log = logger(run)
    pid = agent_pid(log)
    warm = max(n // 10, 100)
    body(log, 1, warm)
    log.flush()
    sys0, faults0 = system_and_faults(pid)
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    if pace_s:
        due = time.perf_counter()
        for i in range(warm + 1, warm + n + 1):
            body(log, i, 1)
            due += pace_s
            while (left := due - time.perf_counter()) > 0:
                time.sleep(left if left > 0.002 else 0)
    else:
        body(log, warm + 1, n)
    loop_s = time.perf_counter() - t0
    log.flush()
    flushed_s = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    sys1, faults1 = system_and_faults(pid)
    report = log.finish()
    total_s = time.perf_counter() - t0
    assert rows(run) == report.backend_written["jsonl"]
    return {
        "agent_us_per_iteration": cpu / n * 1e6,
        "agent_cpu_share": cpu / flushed_s,
        "agent_system_us_per_iteration": (sys1 - sys0) / n * 1e6,
        "agent_faults_per_iteration": (faults1 - faults0) / n,
        "loop_s": loop_s,
        "iterations_per_s": n / total_s,
        "scalars_per_s": 32 * n / total_s,
        "dropped": report.dropped_events,
        "written": report.backend_written["jsonl"] - warm,
    }


def group(run: Path, n: int, pace_s: float, runs: int = 8) -> dict[str, float]:
    """A run group of ``runs`` runs (one agent, ``pump="process"``), ``RunGroup.log_step``
    with 32 float32 metrics a run, ``n`` iterations paced at ``pace_s`` after a warm-up:
    the agent's CPU an iteration (all runs) and its share of a core."""
    import numpy as np
    import psutil

    from aoff import RunGroup

    log = RunGroup(runs, run, backends=("jsonl",), display="none")
    agents = [
        p for p in psutil.Process().children() if any("aoff._agent" in part for part in p.cmdline())
    ]
    assert len(agents) == 1, "the group's agent is not this process's only agent child"
    pid = agents[0].pid
    metrics = {f"train/metric_{k}": np.full(runs, 0.5 + k, np.float32) for k in range(32)}
    warm = max(n // 10, 100)
    for i in range(warm):
        log.log_step(i, metrics)
    log.flush()
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    due = t0
    for i in range(warm, warm + n):
        log.log_step(i, metrics)
        due += pace_s
        while (left := due - time.perf_counter()) > 0:
            time.sleep(left if left > 0.002 else 0)
    log.flush()
    took = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    reports = log.finish()
    return {
        "agent_us_per_iteration": cpu / n * 1e6,
        "agent_cpu_share": cpu / took,
        "iterations_per_s": n / took,
        "dropped": sum(r.dropped_events for r in reports),
        "written": sum(r.backend_written["jsonl"] for r in reports) - runs * warm,
    }


def cold(run: Path, n: int) -> dict[str, float]:
    """``n`` standard iterations flat out from the constructor on (no warm-up: the agent
    is still importing when the burst starts), loop + ``finish()``."""
    t0 = time.perf_counter()
    log = logger(run)
    iterate(log, 1, n)
    report = log.finish()
    took = time.perf_counter() - t0
    assert rows(run) == report.backend_written["jsonl"]
    return {
        "iterations_per_s": n / took,
        "scalars_per_s": 32 * n / took,
        "dropped": report.dropped_events,
        "written": report.backend_written["jsonl"],
    }


def threads(run: Path, n: int, k: int = 4) -> dict[str, float]:
    """``k`` threads flat out, ``n // k`` standard iterations each, loop + ``finish()``."""
    log = logger(run)
    iterate(log, 0, 10)
    log.flush()
    per = n // k
    ts = [threading.Thread(target=iterate, args=(log, 10 + t * per, per)) for t in range(k)]
    t0 = time.perf_counter()
    run_threads(ts)
    report = log.finish()
    took = time.perf_counter() - t0
    assert rows(run) == report.backend_written["jsonl"]
    return {
        "iterations_per_s": k * per / took,
        "scalars_per_s": 32 * k * per / took,
        "dropped": report.dropped_events,
        "written": report.backend_written["jsonl"] - 10,
    }


def eight_metrics(run: Path, n: int) -> dict[str, float]:
    """One producer flat out: ``log_step`` with 8 metrics, loop + ``finish()``."""
    metrics = {f"m{k}": float(k) for k in range(8)}
    log = logger(run)
    log.log_step(0, metrics)
    log.flush()
    t0 = time.perf_counter()
    for i in range(1, n + 1):
        log.log_step(i, metrics)
    report = log.finish()
    took = time.perf_counter() - t0
    return {
        "steps_per_s": n / took,
        "metric_scalars_per_s": 8 * n / took,
        "dropped": report.dropped_events,
        "written": report.backend_written["jsonl"] - 1,
    }


def _kernel(got: dict[str, float]) -> str:
    return (
        f"system {got['agent_system_us_per_iteration']:.1f} us, "
        f"{got['agent_faults_per_iteration']:.2f} page faults"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=20_000)
    ap.add_argument("--pace-ms", type=float, default=0.5)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    n = 300 if args.quick else args.iterations
    with tempfile.TemporaryDirectory() as tmp:
        # --quick: 1,000 paced iterations, not 300: the agent's CPU is read in 10 ms ticks
        # and 300 (~15 ms of it) could read as 0
        paced = standard(Path(tmp) / "paced", max(n, 1000), args.pace_ms / 1e3)
        flat = standard(Path(tmp) / "flat", n * 5, 0.0)
        flat32 = standard(Path(tmp) / "flat32", n * 5, 0.0, wide)
        eight_runs = group(Path(tmp) / "group", max(n, 1000), 0.001)
        first = cold(Path(tmp) / "cold", n * 5)
        four = threads(Path(tmp) / "threads", n * 5)
        eight = eight_metrics(Path(tmp) / "eight", n * 5)
    print(f"agent CPU, standard workload (4 calls, 32 scalars an iteration), n={n:,}:")
    print(
        f"  paced, {args.pace_ms:g} ms an iteration  {paced['agent_us_per_iteration']:7.1f} us "
        f"an iteration ({paced['agent_cpu_share'] * 100:.0f} % of a core)"
    )
    print(
        f"  flat out                    {flat['agent_us_per_iteration']:7.1f} us an iteration "
        f"({flat['agent_cpu_share'] * 100:.0f} % of a core; {_kernel(flat)})"
    )
    print(
        f"  one 32-metric log_step, flat out {flat32['agent_us_per_iteration']:7.1f} us a step "
        f"({flat32['agent_cpu_share'] * 100:.0f} % of a core; {_kernel(flat32)})"
    )
    print(
        f"  8-run group, 32 metrics a run, paced 1 ms {eight_runs['agent_us_per_iteration']:7.1f} "
        f"us an iteration ({eight_runs['agent_cpu_share'] * 100:.0f} % of a core at "
        f"{eight_runs['iterations_per_s']:,.0f} iterations/s)"
    )
    print(f"throughput to disk (loop + finish), n={n * 5:,}:")
    print(
        f"  standard workload   {flat['iterations_per_s']:10,.0f} iterations/s "
        f"{flat['scalars_per_s']:12,.0f} scalars/s  dropped {flat['dropped']:,.0f}, "
        f"written {flat['written']:,.0f}"
    )
    print(
        f"  log_step, 32 metrics{flat32['iterations_per_s']:10,.0f} steps/s      "
        f"{flat32['scalars_per_s']:12,.0f} metric scalars/s  dropped {flat32['dropped']:,.0f}, "
        f"written {flat32['written']:,.0f}"
    )
    print(
        f"  from the first line {first['iterations_per_s']:10,.0f} iterations/s "
        f"{first['scalars_per_s']:12,.0f} scalars/s  dropped {first['dropped']:,.0f}, "
        f"written {first['written']:,.0f}"
    )
    print(
        f"  4 threads, standard {four['iterations_per_s']:10,.0f} iterations/s "
        f"{four['scalars_per_s']:12,.0f} scalars/s  dropped {four['dropped']:,.0f}, "
        f"written {four['written']:,.0f}"
    )
    print(
        f"  log_step, 8 metrics {eight['steps_per_s']:10,.0f} steps/s      "
        f"{eight['metric_scalars_per_s']:12,.0f} metric scalars/s  "
        f"dropped {eight['dropped']:,.0f}, written {eight['written']:,.0f}"
    )
    if args.out is not None:
        got = {
            "paced": paced,
            "flat": flat,
            "flat32": flat32,
            "group": eight_runs,
            "cold": first,
            "threads": four,
            "eight": eight,
        }
        args.out.write_text(json.dumps(got))


if __name__ == "__main__":
    main()
