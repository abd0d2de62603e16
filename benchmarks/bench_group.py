"""The caller's cost of one group ``log_step`` next to one single-run ``log_step``.

A group's call checks and copies each value once and queues one item, whatever the
number of runs; the split into one step per run happens beside the pumps. This prints,
side by side in one sitting (the loggers take turns chunk by chunk, so load on the
machine hits all alike), the median per-call time of:

* ``single``: ``OffPolicyLogger.log_step(i, metrics)`` with ``--keys`` floats (the
  sync face in process mode, its default);
* ``group N <pump>``: ``RunGroup(N, pump=...).log_step(i, metrics)`` with ``--keys``
  float32 arrays of N values each, for each N of ``--runs`` and each pump mode of
  ``--pumps``: ``process`` (the default: the N runs pumped in one agent process) and
  ``thread`` (in one thread of this process, whose folding and writing take turns with
  the caller for the interpreter lock);

and each group's ratio to ``single``. Run: ``python benchmarks/bench_group.py``.

``--pace HZ`` measures the other side instead: the group's agent process. Each group
of ``--runs`` (pump ``process``) gets ``log_step`` calls of ``--keys`` float32 arrays
paced at ``HZ`` calls a second for ``--seconds``, as a training loop at that rate would
make them; it prints the agent's CPU (from ``/proc/<pid>/stat``, between a flush before
the first call and one after the last, so every step is folded and written) as a share
of one core over the time the calls took, and per run-step (one step of one run).
Issue #54's line: ``--pace 1000 --runs 8 --keys 32``, the agent under 50 % of a core.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

import numpy as np

import aoff


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keys", type=int, default=4)
    p.add_argument("--runs", type=int, nargs="+", default=[8, 64])
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--chunk", type=int, default=500)
    p.add_argument("--pumps", nargs="+", default=["process", "thread"])
    p.add_argument("--pace", type=float, default=0.0, help="calls a second (agent CPU mode)")
    p.add_argument("--seconds", type=float, default=5.0, help="how long each paced run lasts")
    a = p.parse_args()
    if a.pace:
        paced(a)
        return
    tmp = tempfile.mkdtemp(prefix="bench_group-")
    keys = [f"m{k}" for k in range(a.keys)]
    loggers: dict[str, Any] = {
        "single": aoff.OffPolicyLogger(
            log_dir=os.path.join(tmp, "single"), display="none", system_interval=0
        )
    }
    values: dict[str, dict[str, Any]] = {"single": dict.fromkeys(keys, 0.5)}
    for n in a.runs:
        for pump in a.pumps:
            name = f"group {n} {pump}"
            folder = os.path.join(tmp, f"g{n}-{pump}")
            loggers[name] = aoff.RunGroup(n, folder, system_interval=0, pump=pump)
            values[name] = {k: np.full(n, 0.5, dtype=np.float32) for k in keys}
    per: dict[str, list[float]] = {k: [] for k in loggers}
    step = 0
    for _ in range(a.calls // a.chunk):
        for name, log in loggers.items():
            m, call = values[name], log.log_step
            t0 = time.perf_counter()
            for i in range(step, step + a.chunk):
                call(i, m)
            per[name].append((time.perf_counter() - t0) / a.chunk * 1e6)
        step += a.chunk
    for log in loggers.values():
        log.finish()
    base = statistics.median(per["single"])
    print(f"load (uptime): {os.getloadavg()}; {a.keys} keys, {a.calls} calls each")
    print(f"{'logger':20} {'us/call':>8} {'vs single':>10}")
    for name, xs in per.items():
        med = statistics.median(xs)
        print(f"{name:20} {med:8.2f} {med / base:10.2f}")


def _cpu_of(pid: int) -> float:
    """A process's user + system CPU seconds so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def paced(a: argparse.Namespace) -> None:
    """The ``--pace`` mode (see the module's docstring)."""
    tmp = tempfile.mkdtemp(prefix="bench_group-")
    keys = [f"m{k}" for k in range(a.keys)]
    rng = np.random.default_rng(0)
    print(f"load (uptime): {os.getloadavg()}; {a.keys} keys, {a.pace:g} calls/s, {a.seconds}s")
    print(f"{'runs':>5} {'calls':>7} {'achieved/s':>10} {'agent % core':>12} {'us/run-step':>11}")
    for n in a.runs:
        g = aoff.RunGroup(n, os.path.join(tmp, f"g{n}"), system_interval=0)
        pid = g._driver.proc.pid  # type: ignore[attr-defined]
        pool = [{k: rng.standard_normal(n).astype(np.float32) for k in keys} for _ in range(64)]
        g.flush()
        c0, t0 = _cpu_of(pid), time.perf_counter()
        period = 1.0 / a.pace
        calls = int(a.pace * a.seconds)
        for i in range(calls):
            g.log_step(i, pool[i % 64])
            wait = t0 + (i + 1) * period - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        t1 = time.perf_counter()
        g.flush()
        cpu = _cpu_of(pid) - c0
        g.finish()
        # the CPU for every call (folded and written by the flush) over the time the
        # calls took: the share of a core the agent needs at this rate
        print(
            f"{n:5d} {calls:7d} {calls / (t1 - t0):10.0f} {cpu / (t1 - t0) * 100:12.1f}"
            f" {cpu / (calls * n) * 1e6:11.1f}"
        )


if __name__ == "__main__":
    main()
