"""Does watching a run with ``aoff attach`` slow its training loop? 0 vs 2 viewers.

    python benchmarks/bench_attach.py [--iterations 4000] [--work-ms 1.0] [--rounds 3]

The training loop of ``slowdown.py`` (``_slowdown_worker.py``: ~1 ms of calibrated
pure-Python work an iteration, then the workload's 4 logging calls; aoff's sync face with
the default ``pump="process"``, JSONL + live dashboard, on a 120x40 pty) runs three ways,
interleaved, ``--rounds`` times: no logger; aoff with no viewer; aoff with two
``aoff attach --refresh 10`` viewers, each on its own 100x30 pty (drained, so they draw
real frames). The viewers start before the run, with their modules loaded, and attach
within milliseconds of the run's socket appearing, before its loop starts; each must end
by printing the run's summary (exit 0).

Reported per configuration: the median over rounds of the mean and p99 iteration time,
their ratio to no logger (median of per-round ratios), and the round-to-round spread of
the no-viewer runs: the noise a difference must exceed to mean anything.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from slowdown import WORKER, _drain, calibrate, load_line, stats  # noqa: E402

CONFIGS = ("none", "0 viewers", "2 viewers")
VIEWERS = 2
REFRESH = 10.0
# a viewer that waits for the socket with its modules loaded, then runs `aoff attach`
VIEWER = (
    "import os, sys, time\n"
    "from rich.console import Console\n"
    "import aoff.__main__ as m\n"
    "m._parser(); Console()\n"
    "sock = os.path.join(sys.argv[1], 'aoff.sock')\n"
    "while not os.path.exists(sock):\n"
    "    time.sleep(0.002)\n"
    "sys.exit(m.main(['attach', sys.argv[1], '--refresh', sys.argv[2]]))\n"
)


def _pty(rows: int, cols: int) -> tuple[int, int]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return master, slave


def _spawn(cmd: list[str], rows: int, cols: int) -> tuple[subprocess.Popen[bytes], int, Any]:
    master, slave = _pty(rows, cols)
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows), PYTHONHASHSEED="0")
    counter = [0]
    drainer = threading.Thread(target=_drain, args=(master, counter), daemon=True)
    drainer.start()
    try:
        proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env)
    finally:
        os.close(slave)
    return proc, master, (drainer, counter)


def _finish(
    proc: subprocess.Popen[bytes], master: int, drain: Any, timeout: float
) -> tuple[int, float]:
    """Wait for ``proc``: (its pty bytes, or -(exit status) - 1 if it failed; its CPU s)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc
    drain[0].join(10)
    os.close(master)
    cpu = usage.ru_utime + usage.ru_stime
    return (int(drain[1][0]) if rc == 0 else -abs(rc) - 1), cpu


def run_one(config: str, n: int, k: int, work: str, idx: int, torch: bool) -> dict[str, Any]:
    run_dir = os.path.join(work, f"{config.replace(' ', '-')}-{idx}")
    result = run_dir + ".json"
    viewers = []
    if config == "2 viewers":
        os.makedirs(run_dir, exist_ok=True)
        for _ in range(VIEWERS):
            cmd = [sys.executable, "-c", VIEWER, run_dir, str(REFRESH)]
            viewers.append(_spawn(cmd, 30, 100))
    worker = "none" if config == "none" else "aoff"
    cmd = [sys.executable, WORKER, worker, "--iterations", str(n), "--inner", str(k)]
    cmd += ["--dir", run_dir, "--result", result, "--work", "python"]
    if not torch:
        cmd.append("--no-torch")
    proc, master, drain = _spawn(cmd, 40, 120)
    rc, _ = _finish(proc, master, drain, 600)
    if rc < 0 or not os.path.exists(result):
        for v in viewers:
            v[0].kill()
        raise RuntimeError(f"worker {config} failed (exit {-rc - 1})")
    # each viewer exits 0 once it has shown the run's summary; its pty bytes = its frames
    ended = [_finish(*v, timeout=30) for v in viewers]
    with open(result, encoding="utf-8") as f:
        res: dict[str, Any] = json.load(f)
    res.update(stats(res.pop("samples_ns")))
    res["viewer_bytes"] = [b for b, _ in ended]
    # CPU the viewers used per second of the loop (their start-up included)
    res["viewer_cpu_pct"] = sum(c for _, c in ended) / res["loop_s"] * 100
    # CPU the training process spent beyond the work itself (all its threads)
    res["logger_cpu_us"] = (res["loop_cpu_s"] - res["work_cpu_s"]) / n * 1e6
    shutil.rmtree(run_dir, ignore_errors=True)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=4000)
    ap.add_argument("--work-ms", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch", action="store_true", help="import torch in the worker first")
    ap.add_argument("--out", default="bench-out")
    args = ap.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {load_line()}")
    k = calibrate(args.work_ms)
    print(
        f"work: {k:,} pure-Python additions ≈ {args.work_ms} ms; {args.iterations:,} "
        f"iterations, {args.rounds} round(s); viewers: {VIEWERS} x aoff attach "
        f"--refresh {REFRESH:g}",
        flush=True,
    )
    work = tempfile.mkdtemp(prefix="aoff-attach-bench-")
    per: dict[str, list[dict[str, Any]]] = {c: [] for c in CONFIGS}
    t0 = time.perf_counter()
    try:
        for r in range(args.rounds):
            order = CONFIGS[r % 3 :] + CONFIGS[: r % 3]
            for c in order:
                res = run_one(c, args.iterations, k, work, r, args.torch)
                per[c].append(res)
                print(
                    f"  round {r + 1} {c:<9} mean {res['mean_ms']:.3f} ms  "
                    f"p99 {res['p99_ms']:.3f} ms  other CPU {res['logger_cpu_us']:.0f} us/iter  "
                    f"check {res['check']}"
                    + (f"  viewer pty bytes {res['viewer_bytes']}" if res["viewer_bytes"] else ""),
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = per["none"]
    rows = []
    for c in CONFIGS:
        runs = per[c]
        pairs = list(zip(runs, base, strict=True))
        ratios = [x["mean_ms"] / b["mean_ms"] for x, b in pairs]
        rows.append(
            {
                "config": c,
                "mean_ms": statistics.median(x["mean_ms"] for x in runs),
                "p99_ms": statistics.median(x["p99_ms"] for x in runs),
                "mean_ratio": statistics.median(ratios),
                "ratio_range": (min(ratios), max(ratios)),
                "p99_ratio": statistics.median(x["p99_ms"] / b["p99_ms"] for x, b in pairs),
                "logger_cpu_us": statistics.median(x["logger_cpu_us"] for x in runs),
                "viewer_cpu_pct": statistics.median(x["viewer_cpu_pct"] for x in runs),
                "check": "; ".join(sorted({x["check"] for x in runs})),
                "viewers_ok": all(all(b > 0 for b in x["viewer_bytes"]) for x in runs),
            }
        )
    table = (
        "| viewers | mean iteration ms | p99 iteration ms | mean vs no logger "
        "| (per-round range) | p99 vs no logger | training process CPU beyond the work, "
        "µs / iteration | viewers' CPU, % of a core | output check |\n"
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |\n"
    )
    for row in rows:
        lo, hi = row["ratio_range"]
        table += (
            f"| {row['config']} | {row['mean_ms']:.3f} | {row['p99_ms']:.3f} "
            f"| {row['mean_ratio']:.3f}x | {lo:.3f}-{hi:.3f} | {row['p99_ratio']:.3f}x "
            f"| {row['logger_cpu_us']:,.0f} | {row['viewer_cpu_pct']:.0f} | {row['check']} |\n"
        )
    print()
    print(table)
    zero, two = rows[1], rows[2]
    lo, hi = zero["ratio_range"]
    diff = two["mean_ratio"] - zero["mean_ratio"]
    print(
        f"2 viewers vs 0: mean {diff * 100:+.1f} points of slowdown; the 0-viewer runs' own "
        f"round-to-round range is {(hi - lo) * 100:.1f} points"
        + (" (within it)" if abs(diff) <= hi - lo else " (beyond it)")
        + ("; every viewer showed the run's summary" if two["viewers_ok"] else "; A VIEWER FAILED")
    )
    print(f"({time.perf_counter() - t0:.0f} s; {load_line()})")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_attach.json"), "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "inner": k, "rounds": per}, f, indent=2, default=str)
    return 0 if two["viewers_ok"] and all(r["check"] in ("ok", "-") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
