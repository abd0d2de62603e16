"""What ``axes=`` costs a ``log_step``, side by side (issue #50: 3 integer axes <= 0.3 us more).

One timed call is the standard workload's ``log_step`` (``_workload.py``: 12 metrics, a
reward, 4 reward components, the learner's times, ``extra_info``), alone, on a real
``OffPolicyLogger`` (the default ``pump="process"``, ``display="none"``, TensorBoard into
a temporary folder). Two contenders run in one process, in interleaved blocks (each round
runs both, in a rotated order, so that the machine's drift hits them alike), the logger
flushed between blocks (untimed):

``log_step``
    the call as the seed's users make it, without ``axes=``
``log_step + axes (3 ints)``
    the same call with ``axes={"grad_steps": g, "policy_version": v, "updates": u}``

``--recorder`` times the recorder alone instead (the logger's hot-path code with
``list.append`` as its hand-off: no pump, no shipping), each block's mean per call, and
prints the fastest block of each contender: on a loaded machine the fastest block is
the one least disturbed, so it is the steadier figure for a difference of ~0.1 us.

With ``--base SRC`` (a checkout's ``src`` folder, e.g. the tree before ``axes=`` came),
the plain call also runs under that source tree: each round runs this tree's, ``SRC``'s
and this tree's again plain call in three child processes, in a rotated order, so that
"without ``axes=`` the hot path is unchanged" is a ratio measured in one sitting and set
against the same sitting's A/A ratio (this tree against itself: the machine's noise).

``--instructions`` counts instead of timing: the recorder's plain call, its call with
``axes=`` and the standard workload's 4-call iteration each run in a child under
Valgrind's ``cachegrind`` (the machine instructions the interpreter executes: the same
count on a loaded machine and a quiet one), twice at two sizes so that the difference over
the extra calls is the count per call, without start-up; with ``--base`` the base tree's
too. A change of 1-3 % in a ~0.5 us call, under
the noise of any timing on a shared machine, is a plain difference of counts here.

    python benchmarks/bench_axes.py [--iterations 20000] [--blocks 10] [--base ../main/src]
    python benchmarks/bench_axes.py --instructions [--base ../main/src]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _workload as w

from aoff import OffPolicyLogger

Run = Callable[[int, int, list[int]], None]


def timed(log: OffPolicyLogger, axes: bool) -> Run:
    metrics, components, extra = w.METRICS, w.COMPONENTS, w.EXTRA
    reward, tt, wt = w.REWARD, w.TRAIN_TIME, w.WAIT_TIME

    def run(start: int, n: int, out: list[int]) -> None:
        clock = time.perf_counter_ns
        step = log.log_step
        if axes:
            for i in range(start, start + n):
                t0 = clock()
                step(
                    i,
                    metrics,
                    reward=reward,
                    reward_components=components,
                    train_time=tt,
                    wait_time=wt,
                    extra_info=extra,
                    axes={"grad_steps": 4 * i, "policy_version": i // 10, "updates": i},
                )
                out.append(clock() - t0)
        else:
            for i in range(start, start + n):
                t0 = clock()
                step(
                    i,
                    metrics,
                    reward=reward,
                    reward_components=components,
                    train_time=tt,
                    wait_time=wt,
                    extra_info=extra,
                )
                out.append(clock() - t0)
        log.flush()  # untimed: the next block starts with nothing waiting

    return run


def recorder_blocks(iterations: int, blocks: int, names: list[str]) -> dict[str, list[float]]:
    """The recorder alone (``list.append`` as its put): each block's mean per call (us)."""
    from aoff._core._recorder import Recorder

    rec: Recorder[None] = Recorder()
    sink: list[object] = []
    rec._init_recorder(sink.append, time.time)
    step = rec.log_step
    metrics, components, extra = w.METRICS, w.COMPONENTS, w.EXTRA
    reward, tt, wt = w.REWARD, w.TRAIN_TIME, w.WAIT_TIME

    def plain(n: int) -> float:
        t0 = time.perf_counter_ns()
        for i in range(n):
            step(i, metrics, reward, None, components, tt, wt, extra_info=extra)
        spent = time.perf_counter_ns() - t0
        sink.clear()
        return spent / n / 1000

    def with_axes(n: int) -> float:
        t0 = time.perf_counter_ns()
        for i in range(n):
            step(
                i,
                metrics,
                reward,
                None,
                components,
                tt,
                wt,
                extra_info=extra,
                axes={"grad_steps": 4 * i, "policy_version": i // 10, "updates": i},
            )
        spent = time.perf_counter_ns() - t0
        sink.clear()
        return spent / n / 1000

    runs = {"plain": plain, "axes": with_axes}
    out: dict[str, list[float]] = {n: [] for n in names}
    for b in range(blocks):
        for n in names[b % len(names) :] + names[: b % len(names)]:
            gc.collect()  # untimed: each block starts from the same collector state
            out[n].append(runs[n](iterations))
    return out


def median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1000


def measure(iterations: int, blocks: int, root: Path, names: list[str]) -> dict[str, list[int]]:
    """Each contender in ``names`` (``plain``, ``axes``) over ``blocks`` interleaved blocks."""
    log = OffPolicyLogger(log_dir=root, display="none", handle_sigterm=False)
    runs = {"plain": timed(log, False), "axes": timed(log, True)}
    samples: dict[str, list[int]] = {n: [] for n in names}
    start = 0
    for n in names:  # warm-up: the agent started, both paths run (steps never go back)
        runs[n](start, 1000, [])
        start += 1000
    for b in range(blocks):
        for n in names[b % len(names) :] + names[: b % len(names)]:
            runs[n](start, iterations, samples[n])
            start += iterations
    rep = log.finish()
    calls = len(names) * (1000 + blocks * iterations)
    assert rep.dropped_events == 0 and rep.steps == calls, rep
    return samples


def count_loop(mode: str, n: int) -> None:
    """``n`` recorder calls, plain or with ``axes=`` (a child run under cachegrind)."""
    from aoff._core._recorder import Recorder

    rec: Recorder[None] = Recorder()
    sink: list[object] = []
    rec._init_recorder(sink.append, time.time)
    step = rec.log_step
    metrics, components, extra = w.METRICS, w.COMPONENTS, w.EXTRA
    reward, tt, wt = w.REWARD, w.TRAIN_TIME, w.WAIT_TIME
    gc.disable()  # the collector's passes depend on what came before: not the call's
    if mode == "axes":
        for i in range(n):
            step(i, metrics, reward=reward, reward_components=components, train_time=tt,
                 wait_time=wt, extra_info=extra,
                 axes={"grad_steps": 4 * i, "policy_version": i // 10, "updates": i})  # fmt: skip
            sink.clear()
    elif mode == "iteration":  # the standard workload's 4 calls
        timing, size = w.TIMING, w.BUFFER_SIZE
        for i in range(n):
            rec.update_collector_timing(timing)
            rec.update_done_rates(w.TIMEOUT_RATE, w.TERMINATED_RATE)
            rec.log_collector(w.total_steps(i), size, reward)
            step(i, metrics, reward=reward, reward_components=components, train_time=tt,
                 wait_time=wt, extra_info=extra)  # fmt: skip
            sink.clear()
    else:
        for i in range(n):
            step(i, metrics, reward=reward, reward_components=components, train_time=tt,
                 wait_time=wt, extra_info=extra)  # fmt: skip
            sink.clear()


def instructions(src: str, mode: str, n: int) -> int:
    """Machine instructions per recorder call under source tree ``src`` (cachegrind)."""
    env = {**os.environ, "PYTHONPATH": src, "PYTHONHASHSEED": "0"}  # the same dicts each run

    grind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]

    def total(calls: int) -> int:
        out = subprocess.run(
            [*grind, sys.executable, __file__, "--child-count", mode, str(calls)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        line = next(x for x in out.stderr.splitlines() if "I" in x and "refs:" in x)
        return int(line.split("refs:")[1].replace(",", ""))

    return (total(n + n // 10) - total(n // 10)) // n


def count_instructions(base: str | None, n: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (cachegrind) on the PATH")
    here = str(Path(__file__).resolve().parent.parent / "src")
    print(f"recorder alone, machine instructions a call (cachegrind, {n:,} calls)")
    got = {m: instructions(here, m, n) for m in ("plain", "axes", "iteration")}
    print(f"  this tree: log_step {got['plain']:,}, + axes (3 ints) {got['axes']:,}, "
          f"the 4-call iteration {got['iteration']:,}")  # fmt: skip
    if base:
        b = {m: instructions(os.path.abspath(base), m, n) for m in ("plain", "iteration")}
        print(f"  base ({base}): log_step {b['plain']:,}, the 4-call iteration {b['iteration']:,}")
        for m, what in (("plain", "log_step without axes="), ("iteration", "the iteration")):
            print(f"  this tree / base, {what}: {got[m] / b[m]:.3f}x "
                  f"({got[m] - b[m]:+,} instructions)")  # fmt: skip


def child_block(src: str, iterations: int, recorder: bool) -> float:
    """One block of the plain call under source tree ``src``, in a child: its median (us),
    or with ``recorder`` its fastest of 20 recorder blocks."""
    env = {**os.environ, "PYTHONPATH": src}
    mode = ["--recorder"] if recorder else []
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--iterations", str(iterations), *mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["median_us"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=20_000, help="calls a block")
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--base", metavar="SRC", help="also time the plain call under this src")
    ap.add_argument("--recorder", action="store_true", help="time the recorder alone")
    ap.add_argument("--instructions", action="store_true", help="count, under cachegrind")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-count", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_count:
        count_loop(args.child_count[0], int(args.child_count[1]))
        return
    if args.instructions:
        count_instructions(args.base, args.iterations)
        return
    if args.recorder:
        if args.child:
            got_r = recorder_blocks(args.iterations, 20, ["plain"])
            print(json.dumps({"median_us": min(got_r["plain"])}))
            return
        got_r = recorder_blocks(args.iterations, args.blocks, ["plain", "axes"])
        best = {n: min(v) for n, v in got_r.items()}
        print(f"recorder alone, {args.iterations:,} calls x {args.blocks} interleaved blocks")
        print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"fastest block: log_step {best['plain']:.3f} us, + axes {best['axes']:.3f} us")
        extra_r = best["axes"] - best["plain"]
        print(f"axes= costs {extra_r:+.3f} us a call (target <= 0.3 us):", end=" ")
        print("met" if extra_r <= 0.3 else "NOT met")
        if args.base:
            compare_trees(args.base, args.blocks, args.iterations, recorder=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.child:
            got = measure(args.iterations, 1, Path(tmp), ["plain"])
            print(json.dumps({"median_us": median_us(got["plain"])}))
            return
        got = measure(args.iterations, args.blocks, Path(tmp), ["plain", "axes"])
    plain, axes = median_us(got["plain"]), median_us(got["axes"])
    print(f"log_step alone, {args.iterations:,} calls x {args.blocks} interleaved blocks")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}\n")
    print("| contender | median | p99 |")
    print("| --- | ---: | ---: |")
    for name, s in (("log_step", got["plain"]), ("log_step + axes (3 ints)", got["axes"])):
        p99 = sorted(s)[int(len(s) * 0.99)] / 1000
        print(f"| {name} | {median_us(s):.3f} us | {p99:.2f} us |")
    extra = axes - plain
    print(f"\naxes= costs {extra:+.3f} us a call (target <= 0.3 us):", end=" ")
    print("met" if extra <= 0.3 else "NOT met")
    if args.base:
        compare_trees(args.base, args.blocks, args.iterations, recorder=False)


def compare_trees(base: str, rounds: int, iterations: int, *, recorder: bool) -> None:
    """The plain call under this tree, under ``base`` and under this tree again (A/B/A'),
    in children, in an order rotated each round. The A/A' ratio is the machine's own
    noise in that sitting: "no change without ``axes=``" holds when this tree's ratio to
    the base sits inside it (a ratio alone, on a loaded machine, proves nothing)."""
    here = str(Path(__file__).resolve().parent.parent / "src")
    trees = {"this tree": here, "base": os.path.abspath(base), "this tree again": here}
    med: dict[str, list[float]] = {k: [] for k in trees}
    order = list(trees)
    for b in range(rounds):
        for k in order[b % 3 :] + order[: b % 3]:
            med[k].append(child_block(trees[k], iterations, recorder))
    what = "recorder alone (fastest of 20 blocks)" if recorder else "log_step (median)"
    print(f"plain {what}, this tree vs base ({trees['base']}), {rounds} rounds")
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for k, v in med.items():
        print(f"  {k}: median {statistics.median(v):.3f} us (rounds: "
              + " ".join(f"{x:.3f}" for x in v) + ")")  # fmt: skip
    ab = [a / b for a, b in zip(med["this tree"], med["base"], strict=True)]
    aa = [a / b for a, b in zip(med["this tree"], med["this tree again"], strict=True)]
    for name, r in (("this tree / base", ab), ("this tree / itself (noise)", aa)):
        q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
        print(
            f"  {name}: median {statistics.median(r):.3f}x, middle half "
            f"{q[0]:.3f}-{q[2]:.3f}x, range {min(r):.3f}-{max(r):.3f}x"
        )
    # the A/A ratios' middle half is the sitting's noise band (its extremes are one
    # disturbed child each); the base's median ratio inside it: no change measured
    lo, _, hi = statistics.quantiles(aa, n=4) if len(aa) > 1 else [aa[0]] * 3
    mid = statistics.median(ab)
    verdict = "inside" if lo <= mid <= hi else "OUTSIDE"
    print(
        f"  this tree / base median {mid:.3f}x is {verdict} the A/A middle half "
        f"({lo:.3f}-{hi:.3f}x): {'no change measured' if verdict == 'inside' else 'a change'}"
    )


if __name__ == "__main__":
    main()
