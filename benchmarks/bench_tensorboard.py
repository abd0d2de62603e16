"""How fast aoff's TensorBoard backend drains scalars to disk, next to torch's SummaryWriter.

Both get the same data: ``--steps`` steps of 30 scalars each, built before timing.

* aoff: ``TensorBoardBackend.write`` in batches of ``--batch`` records, then ``flush`` and
  ``close`` (which fsyncs), on an asyncio loop; wall time from the first write to the end
  of close. Opening the file is not timed.
* torch: ``SummaryWriter.add_scalar`` for every scalar, then ``close`` (which drains its
  writer thread and flushes); wall time from the first add_scalar to the end of close.
  Constructing the writer is not timed.

Prints scalars/s for both and the ratio (the project's target is >= 20x).
Run: ``python benchmarks/bench_tensorboard.py --steps 4000``.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import anyio

from aoff._backends._base import BackendContext
from aoff._backends._tensorboard import TensorBoardBackend
from aoff._core._records import StepRecord

N_TAGS = 30
TAGS = [f"group_{j % 5}/scalar_{j}" for j in range(N_TAGS)]


def make_records(steps: int) -> list[StepRecord]:
    return [
        StepRecord(
            step=s,
            iteration=s,
            wall_time=1_700_000_000.0 + s * 0.01,
            scalars=tuple((t, math.sin(s * 0.001 + j) * 100.0) for j, t in enumerate(TAGS)),
        )
        for s in range(steps)
    ]


def bench_aoff(records: list[StepRecord], batch: int, log_dir: str) -> tuple[float, int]:
    async def main() -> tuple[float, str]:
        backend = TensorBoardBackend(log_dir)
        await backend.open(BackendContext())
        t0 = time.perf_counter()
        for i in range(0, len(records), batch):
            await backend.write(records[i : i + batch])
        await backend.flush()
        await backend.close()
        elapsed = time.perf_counter() - t0
        assert backend.path is not None
        return elapsed, backend.path

    elapsed, path = anyio.run(main)
    return elapsed, os.path.getsize(path)


def bench_torch(records: list[StepRecord], log_dir: str) -> tuple[float, int]:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir)
    t0 = time.perf_counter()
    for rec in records:
        for tag, value in rec.scalars:
            writer.add_scalar(tag, value, rec.step, walltime=rec.wall_time)
    writer.close()
    elapsed = time.perf_counter() - t0
    size = sum(os.path.getsize(os.path.join(log_dir, f)) for f in os.listdir(log_dir))
    return elapsed, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4000, help="steps (30 scalars each)")
    parser.add_argument("--batch", type=int, default=1000, help="records per aoff write()")
    args = parser.parse_args()

    records = make_records(args.steps)
    n_scalars = args.steps * N_TAGS
    with tempfile.TemporaryDirectory(prefix="aoff-bench-") as tmp:
        bench_aoff(make_records(200), args.batch, os.path.join(tmp, "warmup"))
        aoff_s, aoff_bytes = bench_aoff(records, args.batch, os.path.join(tmp, "aoff"))
        torch_s, torch_bytes = bench_torch(records, os.path.join(tmp, "torch"))

    aoff_rate = n_scalars / aoff_s
    torch_rate = n_scalars / torch_s
    print(f"{args.steps:,} steps x {N_TAGS} scalars = {n_scalars:,} scalars")
    print(
        f"aoff TensorBoardBackend: {aoff_s:8.3f} s  {aoff_rate:14,.0f} scalars/s  "
        f"({aoff_s / n_scalars * 1e6:.2f} us/scalar, {aoff_bytes / 1e6:.1f} MB)"
    )
    print(
        f"torch SummaryWriter:     {torch_s:8.3f} s  {torch_rate:14,.0f} scalars/s  "
        f"({torch_s / n_scalars * 1e6:.2f} us/scalar, {torch_bytes / 1e6:.1f} MB)"
    )
    ratio = aoff_rate / torch_rate
    print(f"ratio: {ratio:.1f}x  (target >= 20x: {'met' if ratio >= 20 else 'NOT met'})")


if __name__ == "__main__":
    main()
