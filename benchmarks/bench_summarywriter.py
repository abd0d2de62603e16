"""``aoff.tensorboard.SummaryWriter.add_scalar`` next to torch's, in one run.

Two figures, same calls for both writers (``--tags`` tags cycling, a float value, a
growing ``global_step``, the way CleanRL logs):

* **per call**: the caller's cost of ``add_scalar``. Calls are timed in chunks of
  ``--chunk``; the two writers take turns chunk by chunk (so load on the machine hits
  both alike) and the median and p99 of the per-call mean over chunks are printed.
  aoff's figure includes the shipping rounds its calls make now and then (one in
  ``INLINE_CHECK_EVERY`` calls, ``_faces/_cadence.py``, looks at the clock); what its
  agent process spends is not the training thread's.
* **to disk**: ``--scalars`` calls in a tight loop, then ``close()``; wall time from the
  first call to ``close()`` returning, when every scalar is in the event file (aoff's
  ``close()`` waits for its agent to write and fsync). ``--verify`` reads both back
  with TensorBoard's reader and checks the counts.

Run: ``python benchmarks/bench_summarywriter.py`` (defaults: 30 tags, 200,000 timed
calls per writer, 240,000 scalars to disk).
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from typing import Any

from torch.utils.tensorboard import SummaryWriter as TorchWriter

from aoff.tensorboard import SummaryWriter


def per_call(
    writers: dict[str, Any], tags: list[str], calls: int, chunk: int
) -> dict[str, list[float]]:
    """Per-call mean (µs) of each chunk, per writer; writers alternate chunk by chunk."""
    out: dict[str, list[float]] = {name: [] for name in writers}
    step = {name: 0 for name in writers}
    clock = time.perf_counter
    n_tags = len(tags)
    for _ in range(calls // chunk):
        for name, w in writers.items():
            add = w.add_scalar
            s = step[name]
            t0 = clock()
            for i in range(s, s + chunk):
                add(tags[i % n_tags], 0.5, i // n_tags)
            out[name].append((clock() - t0) / chunk * 1e6)
            step[name] = s + chunk
    return out


def to_disk(make: Any, tags: list[str], scalars: int) -> float:
    w = make()
    add = w.add_scalar
    n_tags = len(tags)
    t0 = time.perf_counter()
    for i in range(scalars):
        add(tags[i % n_tags], math.sin(i), i // n_tags)
    w.close()
    return time.perf_counter() - t0


def count(log_dir: str) -> int:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(log_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return sum(len(acc.Scalars(t)) for t in acc.Tags()["scalars"])


def p99(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, int(len(xs) * 0.99))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tags", type=int, default=30)
    ap.add_argument("--calls", type=int, default=200_000, help="timed calls per writer")
    ap.add_argument("--chunk", type=int, default=1_000)
    ap.add_argument("--scalars", type=int, default=240_000, help="scalars to disk")
    ap.add_argument("--verify", action="store_true", help="read both back and count")
    args = ap.parse_args()
    tags = [f"group_{j % 5}/scalar_{j}" for j in range(args.tags)]
    root = tempfile.mkdtemp(prefix="bench-summarywriter-")

    writers = {
        "torch": TorchWriter(f"{root}/torch-calls"),
        "aoff": SummaryWriter(f"{root}/aoff-calls"),
    }
    got = per_call(writers, tags, args.calls, args.chunk)
    for w in writers.values():
        w.close()
    print(
        f"add_scalar per call, µs ({args.calls:,} calls each, {args.tags} tags, "
        f"chunks of {args.chunk}):"
    )
    med = {name: statistics.median(xs) for name, xs in got.items()}
    for name, xs in got.items():
        print(f"  {name:6s} median {med[name]:7.2f}   p99 {p99(xs):7.2f}")
    print(f"  aoff / torch (median): {med['aoff'] / med['torch']:.3f}  (target <= 0.25)")

    n = args.scalars
    t_torch = to_disk(lambda: TorchWriter(f"{root}/torch-disk"), tags, n)
    t_aoff = to_disk(lambda: SummaryWriter(f"{root}/aoff-disk"), tags, n)
    print(f"{n:,} scalars, first call to close() returned (all on disk):")
    print(f"  torch  {t_torch:6.2f} s   ({n / t_torch:,.0f} scalars/s)")
    print(f"  aoff   {t_aoff:6.2f} s   ({n / t_aoff:,.0f} scalars/s)")
    if args.verify:
        print(
            f"  read back: torch {count(f'{root}/torch-disk'):,}, "
            f"aoff {count(f'{root}/aoff-disk'):,}"
        )


if __name__ == "__main__":
    main()
