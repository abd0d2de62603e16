"""Memory: what aoff adds to the training process, and what its agent holds (issue #26).

Each scenario runs in a fresh process (this script, ``--child``), logs ``--iterations``
iterations of the standard workload (``_workload.py``: 4 calls, 32 scalars) flat out,
and reads resident memory from ``/proc/<pid>/status``: ``VmRSS`` (now) and ``VmHWM``
(the peak since the process started), of itself and of its agent process (whose RSS is
also read once it has started, before anything is logged):

``no aoff``                 the same loop on a logger whose calls do nothing; aoff not
                            imported (the floor)
``import aoff``             the floor, with ``import aoff`` (what the import alone adds)
``process``                 ``OffPolicyLogger(display="none")``, defaults otherwise
                            (``pump="process"``, ``capacity=100_000``, ``drop_oldest``,
                            TensorBoard); read after ``flush()`` (everything written)
``process, paced``          the same, one iteration every 0.5 ms (a training loop's
                            rhythm: the agent keeps up), for a tenth of the iterations
``thread``                  the same with ``pump="thread"``
``process, hung backend``   plus a backend whose writes wait in a worker thread until the
                            run is over (a hung disk or service: aoff isolates it, the
                            pump goes on); read 1 s after the loop
``process, stalled pump``   plus a backend that holds the pump's event loop until the run
                            is over (nothing is folded: events pile up in the agent's
                            buffer, then its socket, then the training process's
                            buffer, whose ``drop_oldest`` bound applies); read 1 s after
                            the loop
``thread, hung backend`` / ``thread, stalled pump``   the same in thread mode

After the reading the stalled backends are released (a flag file) and the run finishes;
its report's dropped count is shown. The backends are in ``_blocking.py``; the agent
imports them (``benchmarks/`` is put on the ``PYTHONPATH`` it inherits). Figures are
MiB; "adds" is the training process's figure less the ``no aoff`` floor's.

    python benchmarks/bench_memory.py [--iterations 100000] [--torch] [--only NAMES]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

SCENARIOS = (
    "no aoff",
    "import aoff",
    "process",
    "process, paced",
    "thread",
    "process, hung backend",
    "process, stalled pump",
    "thread, hung backend",
    "thread, stalled pump",
)


def status_mib(pid: int | str = "self") -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` of process ``pid``, MiB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0]) / 1024  # kB
    return out


class _Nothing:
    """A logger whose calls do nothing (the floor)."""

    def update_collector_timing(self, *a: Any, **k: Any) -> None:
        pass

    update_done_rates = log_collector = log_step = update_collector_timing


def child(scenario: str, iterations: int, root: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import _workload as w

    if scenario == "no aoff":
        w.iterate(_Nothing(), 0, iterations)
        return {"self": status_mib()}
    from aoff import OffPolicyLogger

    if scenario == "import aoff":
        w.iterate(_Nothing(), 0, iterations)
        return {"self": status_mib()}
    from _blocking import FlagBackend

    mode, _, fault = scenario.partition(", ")
    paced = fault == "paced"
    if paced:
        fault = ""
    flag = root / "release"
    backends: list[Any] = ["tensorboard"]
    if fault:
        backends.append(FlagBackend(str(flag), in_loop=fault == "stalled pump"))
    log = OffPolicyLogger(
        log_dir=root / "run",
        display="none",
        pump=mode,  # type: ignore[arg-type]
        backends=backends,
        handle_sigterm=False,
    )
    host: Any = log._driver
    agent = int(host.proc.pid) if mode == "process" else None
    assert (agent is not None) == (type(host).__name__ == "AgentSide"), "pump misplaced"
    started: dict[str, float] = {}
    if agent is not None and not fault:
        log.flush()  # the agent is up, its backends open, nothing logged yet
        started = status_mib(agent)
    t0 = time.perf_counter()
    if paced:
        due = t0
        for i in range(iterations // 10):
            w.iterate(log, i, 1)
            due += 0.0005
            while (left := due - time.perf_counter()) > 0:
                time.sleep(left if left > 0.002 else 0)
    else:
        w.iterate(log, 0, iterations)
    loop_s = time.perf_counter() - t0
    if fault:
        time.sleep(1.0)  # the shipper's backstop round and the agent's reads happen
    else:
        log.flush()
    got: dict[str, Any] = {"self": status_mib(), "loop_s": loop_s, "buffered": len(log._buffer)}
    if agent is not None:
        got["agent"] = status_mib(agent)
        got["agent_started"] = started
    flag.touch()
    report = log.finish()
    got["dropped"] = report.dropped_events
    got["steps"] = report.steps
    return got


def run_child(scenario: str, iterations: int, torch: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE) + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
    cmd = [sys.executable, __file__, "--child", scenario, "--iterations", str(iterations)]
    if torch:
        cmd.append("--torch")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{scenario}: exit {out.returncode}\n{out.stdout}\n{out.stderr}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=100_000)
    ap.add_argument("--torch", action="store_true", help="import torch in every process first")
    ap.add_argument("--only", default="", help="comma-separated scenario names (default all)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch:
        import torch  # noqa: F401
    if args.child is not None:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(child(args.child, args.iterations, Path(tmp))))
        return
    names = [n.strip() for n in args.only.split(";") if n.strip()] if args.only else SCENARIOS
    got = {}
    for name in names:
        got[name] = run_child(name, args.iterations, args.torch)
        print(f"{name} done", file=sys.stderr)
    floor = got.get("no aoff", {}).get("self", {})
    print(
        f"\n{args.iterations:,} iterations of the standard workload "
        f"({4 * args.iterations:,} events), each scenario a fresh process"
        f"{', torch imported' if args.torch else ''}; MiB\n"
    )
    print(
        "| scenario | training process RSS | peak (VmHWM) | adds (RSS / peak) "
        "| agent RSS at start | agent RSS | agent peak | left in buffer | dropped |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, g in got.items():
        me, agent = g["self"], g.get("agent")
        adds = (
            f"{me['VmRSS'] - floor['VmRSS']:+.1f} / {me['VmHWM'] - floor['VmHWM']:+.1f}"
            if floor and name != "no aoff"
            else "-"
        )
        a_rss = f"{agent['VmRSS']:.1f}" if agent else "-"
        a_start = g.get("agent_started") or {}
        a_0 = f"{a_start['VmRSS']:.1f}" if a_start else "-"
        a_hwm = f"{agent['VmHWM']:.1f}" if agent else "-"
        print(
            f"| {name} | {me['VmRSS']:.1f} | {me['VmHWM']:.1f} | {adds} | {a_0} | {a_rss} "
            f"| {a_hwm} | {g.get('buffered', '-')} | {g.get('dropped', '-')} |"
        )


if __name__ == "__main__":
    main()
