"""What a columnar wire frame would cost the training process, next to today's pickle.

The agent spends ~2-3 µs an iteration unpickling its frames and ~2 µs more reading the
unpickled dicts back as columns (``bench_agent_stages.py``). A frame the agent reads
straight into columns (the steps' values as one float64 block beside a header) would save
it most of that, but the training process would have to build it: the sync face packs a
slice of ``INLINE_SLICE`` events on the caller's own thread (``_faces/_cadence.py``), the
shipper thread shares the training loop's GIL. This times, by this thread's CPU time (best
of ``--rounds``), per iteration of the standard workload and of one 32-metric
``log_step``, on the events the recorder makes, in slices of 32 events (the sync face's
inline slice) and 512 (a shipper's frame):

* pickle: today's frame payload (``pack_events``);
* columns: the least a columnar frame needs from the sender for the agent to skip its
  checks: the kinds, and for the steps every dict's key sequence compared with the
  first's, its values joined and their types checked (an int or a NumPy scalar among
  them must stay per event: the fold converts and reports it) and packed as float64;
  the steps' scalar fields as arrays; every other event still pickled. It is written
  to be cheap, not complete (no axes, no rewards' history): a floor, not a design;
* agent: what the agent saves, today's ``unpack_events`` of the pickle against
  ``np.frombuffer`` of the column block.

    python benchmarks/bench_frame_pack.py [--iterations 4096] [--rounds 7]
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import time
from collections.abc import Callable
from itertools import chain, compress, repeat
from operator import eq, itemgetter
from typing import Any

from bench_columnar import standard, wide

from aoff._core import _events as ev
from aoff._transport._batches import pack_events, unpack_events

_FLOATS = {float}
_kind = itemgetter(0)


def _dict_block(col: list[dict[str, Any]]) -> tuple[tuple[str, ...], bytes] | None:
    """One step field's dicts as (keys, float64 bytes); None where they differ in keys
    or hold a value that is not a float (that slice would go as a pickle)."""
    import numpy as np

    keys = tuple(col[0])
    if list(chain.from_iterable(col)) != list(keys) * len(col):
        return None
    values = list(chain.from_iterable(map(dict.values, col)))
    if not _FLOATS.issuperset(map(type, values)):
        return None
    return keys, np.array(values, np.float64).tobytes()


def pack_columns(events: list[ev.Event]) -> bytes:
    """A columnar frame's floor (see the module's docstring)."""
    import numpy as np

    kinds = list(map(_kind, events))
    at = list(compress(range(len(kinds)), map(eq, kinds, repeat(ev.STEP))))
    if len(at) < 2:
        return pack_events(events)
    steps = itemgetter(*at)(events)
    cols = list(zip(*steps, strict=True))
    blocks = [_dict_block(c) if c[0] is not None else None for c in (cols[3], cols[5], cols[6])]
    head = np.array(cols[1], np.float64).tobytes() + np.array(cols[2], np.int64).tobytes()
    times = np.array(cols[7:11], np.float64).tobytes()
    rest = [e for e, k in zip(events, kinds, strict=True) if k != ev.STEP]
    return pickle.dumps((bytes(kinds), head, times, blocks, rest), protocol=5)


def check(events: list[ev.Event]) -> None:
    """The column frame holds the steps' metrics as the events do, bit for bit, and
    every other event as it was (so the figures time a frame that carries the data)."""
    import numpy as np

    _, head, _, blocks, rest = pickle.loads(pack_columns(events))
    steps = [e for e in events if e[0] == ev.STEP]
    keys, block = blocks[0]
    got = np.frombuffer(block, np.float64).reshape(len(steps), len(keys))
    want = np.array([list(e[3].values()) for e in steps], np.float64)
    assert got.tobytes() == want.tobytes() and keys == tuple(steps[0][3]), "metrics differ"
    walls = np.frombuffer(head, np.float64, len(steps))
    assert walls.tolist() == [e[1] for e in steps], "wall times differ"
    assert rest == [e for e in events if e[0] != ev.STEP], "other events differ"


def per_iteration(job: Callable[[], object], n: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.thread_time()
        job()
        best = min(best, time.thread_time() - t)
    return best / n * 1e6


def main() -> None:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    n = args.iterations
    gc.freeze()
    print(f"load {os.getloadavg()[0]:.1f}; µs an iteration, best of {args.rounds}, n={n:,}")
    for name, make in (("standard", standard), ("log_step_32", wide)):
        events = make(n)
        per = len(events) // n
        for size in (32, 512):
            step = max(size // per * per, per)
            slices = [events[k : k + step] for k in range(0, len(events), step)]
            check(slices[0])
            pickles = [pack_events(s) for s in slices]
            blocks = [np.array(range(len(s) * 8), np.float64).tobytes() for s in slices]
            jobs: dict[str, Callable[[], object]] = {
                "pickle": lambda s=slices: [pack_events(x) for x in s],
                "columns": lambda s=slices: [pack_columns(x) for x in s],
            }
            got = dict.fromkeys(jobs, float("inf"))
            for _ in range(args.rounds):  # alternated round by round, the best of each
                for k, job in jobs.items():
                    got[k] = min(got[k], per_iteration(job, n, 1))
            unpickle = per_iteration(
                lambda p=pickles: [unpack_events(x) for x in p], n, args.rounds
            )
            frombuf = per_iteration(
                lambda b=blocks: [np.frombuffer(x, np.float64) for x in b], n, args.rounds
            )
            print(
                f"  {name:<12} slices of {size:>3} events: sender pickle {got['pickle']:.2f}, "
                f"columns {got['columns']:.2f} (x{got['columns'] / got['pickle']:.2f}); "
                f"agent unpickle {unpickle:.2f}, frombuffer {frombuf:.2f}"
            )


if __name__ == "__main__":
    main()
