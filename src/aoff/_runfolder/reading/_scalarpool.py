"""Reading many runs across processes: ``read_scalars(..., workers=N)``.

Why a module of its own: decoding event files is CPU work in Python and NumPy, so one
process reads one core's worth; a folder of many runs is split across worker processes
(started by ``forkserver``: no fork of a caller that holds threads or a CUDA context)
and the results joined in the runs' order, the same output as one worker. The runs are
dealt out round-robin into a few more chunks than workers, so a slow run does not keep
the others waiting on one core; the work a chunk does is a function of the caller's
(:func:`aoff._runfolder.reading._scalars.read_runs`), passed in, so this module knows nothing of
what a run is.

Like any ``multiprocessing`` program, a script that calls it with ``workers > 1`` keeps
its top-level work under ``if __name__ == "__main__":`` (the workers import it).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

__all__ = ["CHUNKS_PER_WORKER", "check_workers", "in_workers"]

T = TypeVar("T")
A = TypeVar("A")
#: chunks a worker gets on average: later chunks go to whichever worker is free
CHUNKS_PER_WORKER = 4


def check_workers(workers: object) -> int:
    """``workers`` as a count of processes (``ValueError``/``TypeError`` otherwise);
    ``0`` means one per core."""
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers: an int (0: one per core), not {type(workers).__name__}")
    if workers < 0:
        raise ValueError(f"workers={workers}: 1 or more (0: one per core)")
    return workers or (os.cpu_count() or 1)


def in_workers(
    fn: Callable[[list[str], A], list[T]], items: Sequence[str], arg: A, workers: int
) -> list[T]:
    """``fn(items, arg)`` computed by ``workers`` processes over chunks of ``items``:
    the results in the order of ``items`` (``fn`` returns one result per item)."""
    n = min(len(items), workers * CHUNKS_PER_WORKER)
    chunks = [list(range(k, len(items), n)) for k in range(n)]
    out: list[T | None] = [None] * len(items)
    ctx = multiprocessing.get_context("forkserver")
    # no forkserver preload: the server would import the reader from its own sys.path,
    # not from the caller's (each worker imports it after taking the caller's path)
    with ProcessPoolExecutor(max_workers=min(workers, n), mp_context=ctx) as pool:
        futures = [pool.submit(fn, [items[i] for i in chunk], arg) for chunk in chunks]
        for chunk, fut in zip(chunks, futures, strict=True):
            try:
                got = fut.result()
            except BrokenProcessPool as exc:  # killed (out of memory?) or failed to start
                raise RuntimeError(
                    f"a worker process reading {len(items)} runs ended abruptly ({exc}); "
                    "workers=1 reads them in this process"
                ) from exc
            if len(got) != len(chunk):
                raise RuntimeError(f"a worker returned {len(got)} results for {len(chunk)} runs")
            for i, r in zip(chunk, got, strict=True):
                out[i] = r
    return [r for r in out if r is not None]
