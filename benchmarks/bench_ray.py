"""What a Ray collector pays to log into the run (``aoff.ray``), and how much gets through.

A real two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: the head,
where the learner and its hub run, and a second node where every collector actor is
pinned). Two measurements:

1. **Hot path, in the actor.** The standard iteration (``_workload.py``: 4 calls, ~30
   scalars) timed call by call (``perf_counter_ns`` around the 4 calls) in one actor on
   the second node, on ``link.remote(name)`` and, side by side in the same process and
   rounds interleaved, on ``log.remote(name)`` (the one-host producer, which reaches the
   run's socket here because both nodes share this machine). Both only append to a
   buffer; a thread ships it.
2. **Throughput.** ``--actors`` actors on the second node each log ``--iterations``
   iterations as fast as they can (bare ``log_step(i, {"x": ...})`` calls, or the
   standard 4-call iteration with ``--standard``); the time runs from the moment all are
   ready until the last ``close()`` returns (the run has confirmed every event). The
   learner's logger uses ``overflow="block"``, so nothing is dropped: a collector that
   gets ahead of the run waits. Also timed: when the hub had taken every event (its
   answers back in the actor). Then the same actors do the same through
   ``log.remote(name)`` (the one-host path, into a fresh run), side by side. Afterwards
   every JSONL row of both runs is read back: each actor's iterations complete and in
   order.

    python benchmarks/bench_ray.py [--actors 4] [--iterations 50000] [--standard]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _workload import iterate, percentiles_us  # benchmarks/ is on sys.path

import aoff
import aoff.ray
from aoff import NullDisplay, OffPolicyLogger

EVENTS_PER_ITERATION = 4


def make_logger(log_dir: str, **kw: Any) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=log_dir,
        log_backend="none",
        backends=("jsonl",),
        handle_sigterm=False,
        finish_timeout=120.0,
        display=NullDisplay(),
        **kw,
    )


class Collector:
    """One collector actor (``ray.remote`` is applied in :func:`main`)."""

    def __init__(self, link: Any, name: str) -> None:
        self.rlog = link.remote(name)
        self.name = name

    def node(self) -> str:
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def hot(self, local: Any, n: int, rounds: int) -> dict[str, dict[str, float]]:
        """Rounds of ``n`` timed iterations on the Ray producer and on ``local``
        (a ``log.remote()``), interleaved; both closed at the end, nothing dropped."""
        ray_ns: list[int] = []
        local_ns: list[int] = []
        iterate(self.rlog, 1, 100, None)  # the first call starts the thread: not timed
        iterate(local, 1, 100, None)
        done = 100
        for _ in range(rounds):
            iterate(self.rlog, done + 1, n, ray_ns)
            self.rlog.flush()
            iterate(local, done + 1, n, local_ns)
            local.flush()
            done += n
        for r in (self.rlog.close(), local.close()):
            assert r.complete, r
        return {"ray": percentiles_us(ray_ns), "local": percentiles_us(local_ns)}

    def warm(self, local: Any = None) -> None:
        self.out = local if local is not None else self.rlog
        self.out.log_step(0, {"x": 0.0})
        self.out.flush()

    def run(self, n: int, standard: bool) -> tuple[float, float, float, float, Any]:
        out = self.out
        t0 = time.monotonic()  # one clock for every process on this machine
        if standard:
            iterate(out, 1, n, None)
        else:
            log_step = out.log_step
            for i in range(1, n + 1):
                log_step(i, {"x": 1.0})
        t_logged = time.monotonic()
        t_handed = float("nan")
        pusher = getattr(out, "_pusher", None)
        if pusher is not None:  # handed over: the hub has taken every event
            want = (EVENTS_PER_ITERATION if standard else 1) * n + 1
            while pusher.sent < want and not pusher.gone:
                time.sleep(0.001)
            t_handed = time.monotonic()
        report = out.close()
        return t0, t_logged, t_handed, time.monotonic(), report


def throughput(actor: Any, run: str, args: argparse.Namespace, via_ray: bool) -> dict[str, float]:
    """``--actors`` far actors log into a fresh run, through ``aoff.ray`` or through
    ``log.remote()``; the times (s) from the first start to the last logged / handed over
    / confirmed, every row read back."""
    import ray

    log = make_logger(run, overflow="block")
    link = aoff.ray.serve(log, timeout=300.0)
    names = [f"collector{k}" for k in range(args.actors)]
    actors = [actor.remote(link, n) for n in names]
    ray.get(
        [
            x.warm.remote(None if via_ray else log.remote(n, timeout=300.0))
            for x, n in zip(actors, names, strict=True)
        ]
    )
    got = ray.get([x.run.remote(args.iterations, args.standard) for x in actors])
    start = min(g[0] for g in got)
    per = EVENTS_PER_ITERATION if args.standard else 1
    for name, (*_, rep) in zip(names, got, strict=True):
        want = per * args.iterations + 1
        assert rep.dropped == 0 and rep.received == rep.sent == want, (name, rep)
    rep = log.finish()
    assert rep.dropped_events == 0, rep
    rows: dict[str | None, list[int]] = {}
    with open(os.path.join(run, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            rows.setdefault(row.get("producer"), []).append(row["iteration"])
    for name in names:
        assert rows.get(name) == list(range(args.iterations + 1)), name
    return {
        what: max(g[k] for g in got) - start
        for k, what in ((1, "logged"), (2, "handed"), (3, "confirmed"))
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--actors", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=50_000, help="per actor (throughput)")
    ap.add_argument("--standard", action="store_true", help="the 4-call iteration, not log_step")
    ap.add_argument("--hot-iterations", type=int, default=20_000, help="per round (hot path)")
    ap.add_argument("--rounds", type=int, default=3, help="hot-path rounds")
    args = ap.parse_args(argv)
    import ray
    from ray.cluster_utils import Cluster

    # the cluster's workers import aoff and this folder's modules as this process does
    paths = [str(Path(aoff.__file__).resolve().parent.parent), str(Path(__file__).parent)]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])
    t_up = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1, resources={"far": 1000})
        ray.init(address=cluster.address, logging_level="warning", log_to_driver=False)
        up = time.monotonic() - t_up
        actor = ray.remote(num_cpus=0, resources={"far": 1})(Collector)
        with tempfile.TemporaryDirectory() as d:
            # 1. the hot path, in one far actor
            log = make_logger(os.path.join(d, "hot"), overflow="block", capacity=10**7)
            link = aoff.ray.serve(log, timeout=120.0)
            a = actor.remote(link, "hot")
            far = ray.get(a.node.remote()) != ray.get_runtime_context().get_node_id()
            hot = ray.get(
                a.hot.remote(log.remote("local", timeout=120.0), args.hot_iterations, args.rounds)
            )
            log.finish()

            # 2. throughput from N far actors: through aoff.ray, then through log.remote()
            tp = {
                "ray": throughput(actor, os.path.join(d, "ray"), args, True),
                "local": throughput(actor, os.path.join(d, "local"), args, False),
            }
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]

    print(f"Python {sys.version.split()[0]}, Ray {ray.__version__}, {os.cpu_count()} CPUs")
    print(f"two-node cluster up in {up:.1f} s; the collector actors on the second node: {far}")
    print()
    print("| hot path in the actor: one iteration (4 calls, ~30 scalars) | median | p99 | p99.9 |")
    print("| --- | ---: | ---: | ---: |")
    for label, key in (("`link.remote(name)` (aoff.ray)", "ray"), ("`log.remote(name)`", "local")):
        h = hot[key]
        print(
            f"| {label} | {h['median_us']:.2f} us | {h['p99_us']:.2f} us | {h['p999_us']:.2f} us |"
        )
    print()
    what = "standard 4-call iterations" if args.standard else "bare log_step calls"
    per = EVENTS_PER_ITERATION if args.standard else 1
    events = per * args.iterations * args.actors
    print(
        f"| throughput: {args.actors} actors on the second node, {what} "
        "| events | events/s | wall |"
    )
    print("| --- | ---: | ---: | ---: |")
    for label, t in (
        ("`aoff.ray`: logged (the actors' calls returned)", tp["ray"]["logged"]),
        ("`aoff.ray`: handed over (the hub took them)", tp["ray"]["handed"]),
        ("`aoff.ray`: into the run, confirmed (JSONL written)", tp["ray"]["confirmed"]),
        ("`log.remote()`: logged", tp["local"]["logged"]),
        ("`log.remote()`: into the run, confirmed (JSONL written)", tp["local"]["confirmed"]),
    ):
        print(f"| {label} | {events:,} | {events / t:,.0f} | {t:.2f} s |")
    print()
    print(f"read back: each actor's {args.iterations:,} iterations complete and in order")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
