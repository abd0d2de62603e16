"""Overload soak and memory per event: the figures behind ``DEFAULT_CAPACITY``'s docstring.

``--memory`` measures, with ``tracemalloc``, what a buffered event costs: the standard
off-policy iteration (``_workload.py``'s 4 calls, every value a fresh float as a real
loop makes them) and a bare ``log_step(i)``; and what one folded step record costs in a
backend's outbox.

The soak (default) pushes ``--events`` ``log_step(i)`` calls (unique iterations) from
``--threads`` threads at full speed into a logger with the default capacity whose only
backend sleeps 2 ms per batch in a worker thread, once per overflow policy, each in a
fresh process. It reports the producers' rate, what arrived, what was dropped (and
checks drops == missing), the buffer's peak length (sampled every 2 ms), peak RSS
growth (psutil, every 10 ms) and how long ``finish()`` took. RSS includes the test
backend's own list of received iterations (~35 B each: ~70 MB for 2,000,000 with
``block``).

    python benchmarks/bench_soak.py [--events 2000000] [--threads 4] [--policies ...]
    python benchmarks/bench_soak.py --memory
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any

import _workload as w


def memory() -> None:
    import random

    from aoff._core._buffer import EventBuffer
    from aoff._core._fold import Folder
    from aoff._core._recorder import Recorder
    from aoff._core._state import State

    class Rec(Recorder[None]):
        pass

    def measure(fill: Any, n: int) -> tuple[float, EventBuffer]:
        buf = EventBuffer(10**9)
        r = Rec()
        r._init_recorder(buf.put, time.time)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        fill(r, n)
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return used / len(buf), buf

    def standard(r: Rec, n: int) -> None:
        rnd = random.random
        for i in range(n):
            r.update_collector_timing({k: rnd() for k in w.TIMING})
            r.update_done_rates(rnd(), rnd())
            r.log_collector(w.total_steps(i), w.BUFFER_SIZE, rnd())
            r.log_step(
                i,
                {k: rnd() for k in w.METRICS},
                reward=rnd(),
                reward_components={k: rnd() for k in w.COMPONENTS},
                train_time=rnd(),
                wait_time=rnd(),
                extra_info=w.EXTRA,
            )

    def bare(r: Rec, n: int) -> None:
        for i in range(n):
            r.log_step(i)

    per_event, buf = measure(standard, 25_000)
    print(f"standard iteration: {per_event:,.0f} B/event, {4 * per_event:,.0f} B/iteration")
    print(f"  a full default buffer (100,000 events): {per_event * 1e5 / 2**20:.1f} MiB")
    events = buf.drain()
    folder = Folder(State())
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    records = [x for x in map(folder.apply, events) if x is not None]
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    # the records share the events' float objects; what the outbox adds on top:
    print(
        f"step record ({len(records[0].scalars)} scalars): {used / len(records):,.0f} B "
        f"beyond its event; a full outbox (4,096 + 1,024 in flight): "
        f"{used / len(records) * 5120 / 2**20:.1f} MiB per backend"
    )
    per_bare, _ = measure(bare, 100_000)
    print(f"bare log_step(i): {per_bare:,.0f} B/event ({per_bare * 1e5 / 2**20:.1f} MiB full)")


def soak_child(policy: str, events: int, threads: int) -> dict[str, Any]:
    import anyio.to_thread
    import psutil

    from aoff import BackendContext, OffPolicyLogger, Record
    from aoff._display._api import NullDisplay

    class Slow:
        name = "slow"

        def __init__(self) -> None:
            self.iterations: list[int] = []

        async def open(self, ctx: BackendContext) -> None:
            pass

        async def write(self, records: Sequence[Record]) -> None:
            await anyio.to_thread.run_sync(time.sleep, 0.002, abandon_on_cancel=True)
            self.iterations.extend(r.iteration for r in records)

        async def flush(self) -> None:
            pass

        async def close(self) -> None:
            pass

    proc = psutil.Process()
    gc.collect()
    start_rss = proc.memory_info().rss
    peak = [start_rss]
    peak_len = [0]
    stop = threading.Event()
    slow = Slow()
    log = OffPolicyLogger(
        log_backend="none",
        backends=[slow],
        display=NullDisplay(),
        handle_sigterm=False,
        overflow=policy,  # type: ignore[arg-type]
    )
    buf = log._core.buffer

    def sample() -> None:
        n = 0
        while not stop.wait(0.002):
            peak_len[0] = max(peak_len[0], len(buf))
            n += 1
            if n % 5 == 0:
                peak[0] = max(peak[0], proc.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    per = events // threads

    def work(t: int) -> None:
        log_step = log.log_step
        for i in range(t * per, (t + 1) * per):
            log_step(i)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter()
    t1 = t0 + w.run_threads(ts)
    report = log.finish()
    t2 = time.perf_counter()
    stop.set()
    sampler.join()
    received = len(slow.iterations)
    total = per * threads
    assert len(set(slow.iterations)) == received
    assert report.dropped_events == total - received, (report.dropped_events, total - received)
    return {
        "policy": policy,
        "events": total,
        "produce_s": t1 - t0,
        "events_per_s": total / (t1 - t0),
        "received": received,
        "dropped": report.dropped_events,
        "peak_rss_growth_mib": (peak[0] - start_rss) / 2**20,
        "peak_buffer_len": peak_len[0],
        "finish_s": t2 - t1,
        "received_per_s": received / (t2 - t0),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memory", action="store_true")
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--policies", default="drop_oldest,drop_newest,block")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.memory:
        memory()
        return
    if a.child:
        print(json.dumps(soak_child(a.child, a.events, a.threads)))
        return
    print(
        f"{a.events:,} log_step events from {a.threads} threads, default capacity, "
        "one backend sleeping 2 ms a batch"
    )
    print(
        f"{'policy':<12} {'produced/s':>11} {'received':>10} {'dropped':>10} "
        f"{'peak buffer':>11} {'peak RSS +MiB':>13} {'finish s':>9} {'arrived/s':>10}"
    )
    for policy in a.policies.split(","):
        cmd = [sys.executable, __file__, "--child", policy]
        cmd += ["--events", str(a.events), "--threads", str(a.threads)]
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{policy:<12} {r['events_per_s']:>11,.0f} {r['received']:>10,} "
            f"{r['dropped']:>10,} {r['peak_buffer_len']:>11,} "
            f"{r['peak_rss_growth_mib']:>13.0f} {r['finish_s']:>9.2f} "
            f"{r['received_per_s']:>10,.0f}"
        )


if __name__ == "__main__":
    main()
