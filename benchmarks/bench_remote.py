"""What ``log.remote()`` costs a producer, and how much 4 producer processes get through.

Two measurements, each next to the in-process face's figure from the same run:

1. **Hot path.** The standard iteration (``_workload.py``: 4 calls, ~30 scalars) timed
   call by call (``perf_counter_ns`` around the 4 calls) on a ``RemoteLogger`` and on the
   ``OffPolicyLogger`` that made it, in one process, rounds interleaved. Both only put
   events in a buffer; a thread ships them (the remote's to the run's socket, the face's
   to its agent).
2. **Throughput.** 4 processes (``spawn``) each log ``--iterations`` iterations through
   their own ``log.remote(f"producer{k}")`` as fast as they can, into one agent
   (``pump="process"``, JSONL backend, ``overflow="block"``: a producer that gets ahead
   waits, nothing is dropped); the time runs from the moment all 4 are ready until the
   last one's ``close()`` returns (the run has confirmed every event). Next to it, the
   face itself logging 4 × ``--iterations`` iterations then ``flush()``. Afterwards every
   JSONL row is read back: each producer's iterations complete and in order.

    python benchmarks/bench_remote.py [--iterations 10000] [--hot-iterations 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from typing import Any

from _workload import (  # benchmarks/ is on sys.path
    iterate,
    percentiles_us,
)

from aoff import NullDisplay, OffPolicyLogger, RemoteLogger

PRODUCERS = 4
EVENTS_PER_ITERATION = 4


def make_logger(log_dir: str, **kw: Any) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=log_dir,
        log_backend="none",
        backends=("jsonl",),
        **kw,
        handle_sigterm=False,
        finish_timeout=60.0,
        display=NullDisplay(),  # no dashboard: the tables are the output
    )


# -- 1. the hot path ----------------------------------------------------------------------------
def hot_path(log_dir: str, n: int, rounds: int) -> dict[str, dict[str, float]]:
    # room for a whole round (the remotes inherit it), and each round starts once the run
    # has written the last one: a call never waits; "block" so that nothing is ever dropped
    log = make_logger(log_dir, capacity=EVENTS_PER_ITERATION * (n + 200), overflow="block")
    log.start()
    remote_ns: list[int] = []
    face_ns: list[int] = []
    done = 0
    for k in range(rounds):
        r = log.remote(f"hot{k}")
        iterate(r, 1, 100, None)  # its first call starts its thread: not part of the figure
        iterate(r, 101, n, remote_ns)
        report = r.close()
        assert report.complete, report
        log.flush()  # the run has written the remote's round: the face's starts on a quiet agent
        iterate(log, done + 1, n, face_ns)
        done += n
        log.flush()
    rep = log.finish()
    assert rep.dropped_events == 0 and rep.steps == done, rep
    return {
        "remote": percentiles_us(remote_ns),
        "face": percentiles_us(face_ns),
    }


# -- 2. throughput ------------------------------------------------------------------------------
def produce(
    r: RemoteLogger, n: int, ready: Any, go: Any, results: Any
) -> None:  # in a spawned process
    iterate(r, 1, 1, None)  # connect first: the clock starts with every producer ready
    r.flush()
    ready.release()
    go.wait()
    t0 = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process on Linux
    iterate(r, 2, n - 1, None)
    report = r.close()
    results.put((r.name, t0, time.monotonic(), report.sent, report.dropped, report.received))


def throughput(log_dir: str, n: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    # the remotes inherit overflow="block": a producer that gets ahead waits, none drops
    log = make_logger(log_dir, overflow="block")
    log.start()
    ready, go, results = ctx.Semaphore(0), ctx.Event(), ctx.SimpleQueue()
    names = [f"producer{k}" for k in range(PRODUCERS)]
    procs = [
        # close() waits for the run to have every event: a long backlog must not time out
        ctx.Process(target=produce, args=(log.remote(name, timeout=300), n, ready, go, results))
        for name in names
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    go.set()
    got = [results.get() for _ in procs]
    for p in procs:
        p.join()
        assert p.exitcode == 0, (p.name, p.exitcode)
    elapsed = max(g[2] for g in got) - min(g[1] for g in got)
    for name, _t0, _t1, sent, dropped, received in got:
        assert dropped == 0 and received == sent == EVENTS_PER_ITERATION * n, (name, got)

    # the face alone, the same number of iterations, in this process
    t0 = time.monotonic()
    iterate(log, 1, PRODUCERS * n)
    log.flush()
    face_elapsed = time.monotonic() - t0
    rep = log.finish()
    assert rep.dropped_events == 0 and rep.steps == PRODUCERS * n, rep

    rows: dict[str | None, list[int]] = {}
    with open(os.path.join(log_dir, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            rows.setdefault(row.get("producer"), []).append(row["iteration"])
    for name in names:  # every iteration on disk, in the order it was logged
        assert rows.get(name) == list(range(1, n + 1)), f"{name}: {len(rows.get(name, []))} rows"
    assert rows.get(None) == list(range(1, PRODUCERS * n + 1))
    return {
        "remote_s": elapsed,
        "face_s": face_elapsed,
        "rows_checked": sum(map(len, rows.values())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--iterations", type=int, default=10_000, help="per producer (throughput)")
    ap.add_argument("--hot-iterations", type=int, default=20_000, help="per round (hot path)")
    ap.add_argument("--rounds", type=int, default=5, help="hot-path rounds")
    args = ap.parse_args(argv)
    if args.iterations < 2 or args.hot_iterations < 1 or args.rounds < 1:
        ap.error("--iterations must be >= 2, --hot-iterations and --rounds >= 1")
    n = args.iterations
    with tempfile.TemporaryDirectory() as d:
        hot = hot_path(os.path.join(d, "hot"), args.hot_iterations, args.rounds)
        tp = throughput(os.path.join(d, "throughput"), n)

    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print()
    print("| hot path: one iteration (4 calls, ~30 scalars) | median | p99 | p99.9 |")
    print("| --- | ---: | ---: | ---: |")
    for label, key in (
        ("`RemoteLogger`", "remote"),
        ("`OffPolicyLogger` (in-process face)", "face"),
    ):
        h = hot[key]
        print(
            f"| {label} | {h['median_us']:.2f} us | {h['p99_us']:.2f} us | {h['p999_us']:.2f} us |"
        )
    print()
    steps = PRODUCERS * n
    events = EVENTS_PER_ITERATION * steps
    print("| throughput into one agent (JSONL) | iterations | events/s | steps/s | wall |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, key in (
        (f"{PRODUCERS} spawned processes, `log.remote()` each", "remote_s"),
        ("the face alone, in-process", "face_s"),
    ):
        s = tp[key]
        print(f"| {label} | {steps:,} | {events / s:,.0f} | {steps / s:,.0f} | {s:.2f} s |")
    print()
    print(
        f"read back: {tp['rows_checked']:,} JSONL rows, each producer's {n:,} iterations "
        "complete and in order; nothing dropped"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
