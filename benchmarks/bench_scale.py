"""Thousands of runs: ``aoff ls --where``, ``read_scalars`` of one tag for every run and
``aoff compare``, each beside TensorBoard's reader (``EventAccumulator``) on the same files.

The folder: ``--runs`` runs (``{env}/{env}-seed{s}``) of ``--steps`` steps x ``--tags`` tags,
each run one event file of torch ``SummaryWriter``'s framing (one record per
``add_scalar``) and the ``config.json`` aoff's JSONL backend writes (``env``, ``seed``:
what ``--where`` reads). Writing 5 x 10^7 records through torch's writer (or encoding
each in Python) takes over half an hour, so each run's file is built in bulk with NumPy
(``_eventbulk``: ~30 ms for a run of 10,000 steps), each run's values its own (a seeded
curve); every run of the benchmark first checks, on a small file (200 steps: every
record layout the builder makes), that these bytes are record for record what torch's
``SummaryWriter`` writes for the same calls. The default is a reduced size that runs in
minutes on a shared 2-core machine; ``--full`` is the issue's 1,000 runs x 10,000 steps
x 5 tags (~2.8 GB), with TensorBoard timed on 20 runs (``--tb-runs``) and its times for
all runs extrapolated from them (said in the output), and each worker count once.

Timed, each on the folder in the page cache (the load average printed beside):

* ``aoff ls ROOT --where FILTER``, a fresh process: the first look (it builds the run
  index: every run's files read) and a warm one (the index checked by stats); beside it,
  what TensorBoard has to show the same runs: ``EventAccumulator.Reload()`` of each run,
  the filter applied to its ``config.json``;
* ``read_scalars(ROOT, tags=[TAG])`` with ``workers=1``, ``2`` and one a core (the
  scaling), the tables checked equal; beside it, ``EventAccumulator`` reading each run
  and taking that tag (``size_guidance`` 0: every point);
* ``aoff compare ROOT --metric TAG --json``, a fresh process (groups, IQM, bootstrap
  intervals over every run); beside it, ``EventAccumulator`` reading the tag of each
  run (the reading alone, no statistics).

TensorBoard's figures are on the first ``--tb-runs`` runs (all by default) and given per
run; the ratios are per run, side by side in one sitting.

    python benchmarks/bench_scale.py            # 200 runs x 2,000 steps x 5 tags
    python benchmarks/bench_scale.py --quick    # seconds: 24 runs x 200 steps
    python benchmarks/bench_scale.py --full     # the issue's size: build ~1 min, 2.8 GB
    python benchmarks/bench_scale.py --scaling  # only workers 1, 2, 4: the 1-vs-2 ratio
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from _eventbulk import event_file  # noqa: E402  # benchmarks/ is on sys.path
from _participants import participants_cpu  # noqa: E402
from _torchbytes import check_same_records  # noqa: E402

TAGS = (
    "charts/episodic_return",
    "losses/qf1_loss",
    "losses/qf2_loss",
    "losses/actor_loss",
    "losses/alpha",
)
ENVS = ("Hopper-v4", "Ant-v4", "Walker2d-v4", "HalfCheetah-v4")
START = 1_733_380_000.0
FILTER = 'config.env == "Hopper-v4" and config.seed < 5'


def _load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def curves(run: int, steps: int, tags: int) -> tuple[Any, Any]:
    """One run's wall times (``steps``) and values (``steps`` x ``tags``): a seeded curve."""
    import numpy as np

    step = np.arange(steps, dtype=np.float64)
    walls = START + step * 0.01
    t = np.arange(tags, dtype=np.float64)
    values = np.sin(step[:, None] * 0.01 + t + run) * (t + 1) + run * 0.01
    return walls, values


def _file_version() -> bytes:
    """The first record: ``Event(wall_time, file_version="brain.Event:2")``."""
    version = b"brain.Event:2"
    return b"\x09" + struct.pack("<d", START) + b"\x1a" + bytes([len(version)]) + version


def run_bytes(run: int, steps: int, tags: tuple[str, ...]) -> bytes:
    """One run's event file: the file version, then ``add_scalar(tag, v, step, wall)``
    per step and tag, as torch writes them (one record each), built in bulk."""
    walls, values = curves(run, steps, len(tags))
    return event_file(_file_version(), tags, walls, values)


def check_against_torch(folder: Path) -> None:
    """torch's ``SummaryWriter`` and this script on the same calls: equal records after
    the first (the file version, stamped with the time of the writer's start). 200 steps:
    every layout the builder makes for 10,000 (a step of no, one and two varint bytes)."""
    from torch.utils.tensorboard import SummaryWriter

    steps, run = 200, 3
    walls, values = curves(run, steps, len(TAGS))
    writer = SummaryWriter(str(folder / "torch"))
    for step in range(steps):
        for t, tag in enumerate(TAGS):
            writer.add_scalar(tag, values[step, t].item(), step, walltime=walls[step].item())
    writer.close()
    (theirs,) = (folder / "torch").iterdir()

    check_same_records(run_bytes(run, steps, TAGS), theirs.read_bytes(), steps * len(TAGS))


def build(root: Path, runs: int, steps: int) -> int:
    """The folder of runs; its bytes of event files."""
    total = 0
    for r in range(runs):
        env = ENVS[r % len(ENVS)]  # compare groups the seeds of each env
        folder = root / env / f"{env}-seed{r // len(ENVS):04d}"
        folder.mkdir(parents=True)
        data = run_bytes(r, steps, TAGS)
        (folder / f"events.out.tfevents.{int(START)}.bench.{r}.0").write_bytes(data)
        config = {"env": ENVS[r % len(ENVS)], "seed": r // len(ENVS), "lr": 3e-4}
        (folder / "config.json").write_text(json.dumps(config))
        total += len(data)
    return total


def _cpu() -> float:
    """CPU seconds of this process and its workers, together."""
    return sum(participants_cpu())


def _aoff(*args: str) -> tuple[float, str]:
    """Wall time of ``aoff ARGS`` in a fresh process, and its output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    got = subprocess.run(
        [sys.executable, "-m", "aoff", *args], capture_output=True, text=True, env=env, check=False
    )
    took = time.perf_counter() - t0
    if got.returncode != 0:
        raise SystemExit(f"aoff {' '.join(args)} failed: {got.stderr}")
    return took, got.stdout


def _tb_runs(root: Path, n: int) -> list[Path]:
    """``n`` runs spread over the folder (every k-th), so a sample holds every env."""
    from aoff._runfolder.reading._runfind import find_runs

    runs = find_runs(str(root))
    return [Path(p) for p in runs[:: max(1, len(runs) // n)][:n]]


def _accumulate(run: Path) -> object:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def tb_ls(root: Path, n: int) -> tuple[float, set[str]]:
    """TensorBoard's way to the same list: every run loaded, the filter on its config;
    the runs it keeps (their paths under ``root``)."""
    from aoff._runfolder.reading._where import compile_where

    test = compile_where(FILTER)
    t0 = time.perf_counter()
    kept = set()
    for run in _tb_runs(root, n):
        acc = _accumulate(run)
        config = json.loads((run / "config.json").read_text())
        fields = {"config": config, "tags": acc.Tags()["scalars"]}  # type: ignore[attr-defined]
        if test(fields):
            kept.add(run.relative_to(root).as_posix())
    return time.perf_counter() - t0, kept


def tb_tag(root: Path, n: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    points = 0
    for run in _tb_runs(root, n):
        points += len(_accumulate(run).Scalars(TAGS[0]))  # type: ignore[attr-defined]
    return time.perf_counter() - t0, points


_HALF = """
import sys, time
import aoff
from aoff._runfolder.reading._runfind import runs_in
runs = runs_in(sys.argv[1], [])[int(sys.argv[2]) :: 2]
aoff.read_scalars(runs[0], tags=[sys.argv[3]])
c0 = time.process_time()
aoff.read_scalars(runs, tags=[sys.argv[3]])
print(time.process_time() - c0)
"""


def halves(root: Path) -> float:
    """The control: two independent processes, each reading every other run with
    ``workers=1`` at the same time; their reading's CPU summed (no split, no transfer:
    what running two readers at once costs on this machine by itself)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _HALF, str(root), str(k), TAGS[0]],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for k in (0, 1)
    ]
    return sum(float(p.communicate()[0]) for p in procs)


def scaling(root: Path, points: int, repeats: int) -> tuple[dict[int, float], dict[int, float]]:
    """``read_scalars(root, tags=[TAG], workers=N)`` for N = 1, 2, 4 (and one a core):
    each N's wall and CPU time (its workers included) the median of ``repeats`` calls, the
    Ns taken in turn within each repeat (so a change of load hits them alike); every
    table checked equal to ``workers=1``'s. The first call with workers starts the
    forkserver (once a process): it is timed apart, before."""
    import aoff

    counts = sorted({1, 2, 4, os.cpu_count() or 1})
    aoff.read_scalars(root / ENVS[0] / f"{ENVS[0]}-seed0000", tags=[TAGS[0]])  # imports
    c0, t0 = _cpu(), time.perf_counter()
    aoff.read_scalars(root / ENVS[0], tags=[TAGS[0]], workers=2)  # starts the forkserver
    start_wall, start_cpu = time.perf_counter() - t0, _cpu() - c0
    walls: dict[int, list[float]] = {w: [] for w in counts}
    cpus: dict[int, list[float]] = {w: [] for w in counts}
    control: list[float] = []
    one = None
    for _ in range(repeats):
        for workers in counts:
            c0, t0 = _cpu(), time.perf_counter()
            df = aoff.read_scalars(root, tags=[TAGS[0]], workers=workers)
            walls[workers].append(time.perf_counter() - t0)
            cpus[workers].append(_cpu() - c0)
            if one is None:
                one = df
                if len(one) != points:
                    raise SystemExit(f"read_scalars gave {len(one)} points, not {points}")
            elif not df.equals(one):
                raise SystemExit(f"workers={workers} gave another table than workers=1")
        control.append(halves(root))
    wall = {w: sorted(v)[len(v) // 2] for w, v in walls.items()}
    cpu = {w: sorted(v)[len(v) // 2] for w, v in cpus.items()}
    print(
        f"first call with workers=2 (on {ENVS[0]}'s runs) started the forkserver: "
        f"{start_wall:.2f} s wall, {start_cpu:.2f} s CPU; {_load()}"
    )
    print(f"medians of {repeats} calls, the worker counts in turn; cores: {os.cpu_count()}")
    print("| workers | wall s | CPU s (workers included) | wall speed-up | CPU / workers=1 |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for w in counts:
        print(
            f"| {w} | {wall[w]:.2f} | {cpu[w]:.2f} | {wall[1] / wall[w]:.2f}x "
            f"| {cpu[w] / cpu[1]:.2f}x |"
        )
    scale = ", ".join(f"{w}: {wall[1] / t:.2f}x" for w, t in wall.items())
    print(f"workers scaling (workers=1 time / workers=N time): {scale}; {_load()}")
    split = ", ".join(f"{w}: {(c / cpu[1] - 1) * 100:+.0f} %" for w, c in cpu.items() if w > 1)
    print(
        f"CPU overhead of the split (total CPU of workers=N over workers=1): {split} (on a "
        "busy machine the wall-time scaling is the share of the cores this job got; "
        "this is the work)"
    )
    half = sorted(control)[len(control) // 2]
    print(
        f"control: two independent processes reading half the runs each at once spent "
        f"{half:.2f} s CPU on the reading ({(half / cpu[1] - 1) * 100:+.0f} % over one "
        f"process reading all): that much of workers=2's is the machine, not the split"
    )
    print(f"workers=2 vs workers=1 wall ratio: {wall[1] / wall[2]:.2f}x; {_load()}")
    return wall, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--full", action="store_true", help="1,000 runs x 10,000 steps x 5 tags")
    p.add_argument("--quick", action="store_true", help="24 runs x 200 steps (a smoke test)")
    p.add_argument("--tb-runs", type=int, default=None, help="time TensorBoard on these many runs")
    p.add_argument("--dir", default=None, help="build the folder here (kept); default: a temp one")
    p.add_argument(
        "--scaling",
        action="store_true",
        help="only read_scalars with workers 1, 2, 4: wall and CPU, the 1-vs-2 wall ratio",
    )
    p.add_argument("--repeats", type=int, default=None, help="calls per worker count (median)")
    ns = p.parse_args()
    if ns.full:  # TensorBoard on a sample (minutes a run at this size), each count once
        ns.runs, ns.steps = 1000, 10_000
        ns.tb_runs = 20 if ns.tb_runs is None else ns.tb_runs
        ns.repeats = 1 if ns.repeats is None else ns.repeats
    ns.repeats = 3 if ns.repeats is None else ns.repeats
    if ns.quick:
        ns.runs, ns.steps, ns.repeats = 24, 200, 1
    tb_n = ns.runs if ns.tb_runs is None else min(ns.tb_runs, ns.runs)

    base = Path(ns.dir) if ns.dir else Path(tempfile.mkdtemp(prefix="aoff-scale-"))
    try:
        check_against_torch(base / "check")
        root = base / "runs"
        t0 = time.perf_counter()
        size = build(root, ns.runs, ns.steps)
        print(
            f"{ns.runs:,} runs x {ns.steps:,} steps x {len(TAGS)} tags: {size / 1e6:,.1f} MB of "
            f"event files, built in {time.perf_counter() - t0:.1f} s; {_load()}"
        )
        for f in root.rglob("*tfevents*"):  # the folder into the page cache, for every reader
            f.read_bytes()
        if ns.scaling:
            scaling(root, ns.runs * ns.steps, ns.repeats)
            return
        print(f"cores: {os.cpu_count()}; TensorBoard timed on {tb_n:,} runs of {ns.runs:,}")
        if tb_n < ns.runs:
            print(
                f"TensorBoard's times for all {ns.runs:,} runs are extrapolated from those "
                f"{tb_n:,} (x{ns.runs / tb_n:g}): its cost per run is the same for every run"
            )
        print(
            "| what | aoff s | aoff ms/run | TensorBoard s | TensorBoard ms/run "
            "| ratio (per run) | load |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")

        def row(what: str, ours: float, theirs: float | None) -> None:
            per = ours / ns.runs * 1e3
            if theirs is None:
                print(f"| {what} | {ours:.2f} | {per:.2f} | | | | {_load()} |")
                return
            tper = theirs / tb_n * 1e3
            all_runs = theirs / tb_n * ns.runs
            said = f"{all_runs:.2f}" if tb_n == ns.runs else f"{all_runs:.1f} (extrapolated)"
            print(
                f"| {what} | {ours:.2f} | {per:.2f} | {said} | {tper:.2f} | "
                f"{tper / per:.1f}x | {_load()} |"
            )

        tb_ls_s, tb_kept = tb_ls(root, tb_n)
        cold, out = _aoff("ls", str(root), "--where", FILTER, "--json")
        kept = {row["run"] for row in json.loads(out)}
        sample = {run.relative_to(root).as_posix() for run in _tb_runs(root, tb_n)}
        warm, _ = _aoff("ls", str(root), "--where", FILTER, "--json")
        warm2, _ = _aoff("ls", str(root), "--where", FILTER, "--json")
        start, _ = _aoff("--version")
        row("aoff ls --where, first look (builds the index)", cold, tb_ls_s)
        row("aoff ls --where, warm (index checked by stats)", min(warm, warm2), tb_ls_s)
        row("  of which: starting python -m aoff", start, None)
        print(
            f"ls --where kept {len(kept)} runs, {len(kept & sample)} of them among the "
            f"{tb_n:,} TensorBoard read, which its way kept {len(tb_kept)} of"
        )
        if kept & sample != tb_kept:
            raise SystemExit("ls --where and TensorBoard's way kept different runs")

        tb_tag_s, tb_points = tb_tag(root, tb_n)
        if tb_points != tb_n * ns.steps:
            raise SystemExit(f"EventAccumulator gave {tb_points} points, not {tb_n * ns.steps}")
        times, _ = scaling(root, ns.runs * ns.steps, ns.repeats)
        for workers, took in times.items():
            row(f"read_scalars of one tag, workers={workers}", took, tb_tag_s)

        took, out = _aoff("compare", str(root), "--metric", TAGS[0], "--json", "--reps", "2000")
        groups = json.loads(out)["groups"]
        row("aoff compare (read + IQM, bootstrap)", took, tb_tag_s)
        print(f"compare: {len(groups)} groups over {sum(g['runs'] for g in groups)} runs")
    finally:
        if not ns.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
