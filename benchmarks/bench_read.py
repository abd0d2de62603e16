"""Reading scalar-only event files: ``aoff.read_scalars`` beside TensorBoard's
``EventAccumulator`` and ``tbparse`` on the same files, in MB/s of event file.

The run is what torch's ``SummaryWriter`` writes for ``add_scalar`` over ``--steps``
steps and ``--tags`` tags: one ``Event`` record per call (wall time, step, a summary of
one ``simple_value``), framed as TFRecords. torch's writer takes ~30 us a call, so the
files are built here with NumPy in the same bytes; ``--quick`` (and every run) first
checks a small file built this way byte for byte against one torch writes for the same
calls, so the bytes timed are torch's.

The readers, one at a time, in a fresh process each (so imports and caches are the
same for all): aoff on the big file (``--steps``, default 1 M steps x 10 tags, ~0.5 GB);
all three, aoff included, on a smaller file (``--small-steps``) that TensorBoard's
Python reader gets through in a reasonable time. Each prints MB/s (file bytes over the
call's wall time, the file in the page cache: a warm-up read first), the same over the
process's CPU time (what the reader costs when the machine is shared and busy: the load
average is printed before and after), and the rows it returned; the ratios are aoff's
MB/s over each other reader's on the same file. aoff's result is checked against
``EventAccumulator``'s on the small file (every point, values bit for bit in float32).

Then (not with ``--quick`` alone; ``--only-shapes`` for these only): the files real
clients write, each written by the client's own writer (torch's ``SummaryWriter``,
tensorboardX's, SB3's logger), read by all three readers, aoff's result checked equal
to ``EventAccumulator``'s first: CleanRL's SAC and PPO logging patterns (episode
returns at variable steps between periodic losses), torch ``new_style`` tensor scalars
(float and double), both kinds in one file, scalars among histograms, images and text,
tensorboardX, SB3, and a file of many tags each appearing rarely (2,000 tags; as simple
values, and as ``new_style`` tensors, whose metadata is in every record).

    python benchmarks/bench_read.py            # 1 M steps x 10 tags, and 20 k for all
    python benchmarks/bench_read.py --quick    # seconds: tiny files, every check
    python benchmarks/bench_read.py --only-shapes [--quick]   # the client shapes table
    python benchmarks/bench_read.py --only-files [--files 5000]  # many files, fixed cost
    python benchmarks/bench_read.py --warm sb3 cleanrl-ppo --shape-steps 300000
        # aoff's warm reads (best of 5 in each of 3 processes) of those shapes only

``--only-files``: 5,000 event files of one record each in one folder, read by aoff and by
``EventAccumulator`` (each in a fresh process), and the fixed cost of a call: importing
aoff and reading a one-record file in a process that has imported pandas.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from _torchbytes import check_same_records  # noqa: E402  # benchmarks/ is on sys.path

from aoff._runfolder.tensorboard._tfrecord import frame_many  # noqa: E402

START = 1_733_380_000.0
_FILE_NAME = "events.out.tfevents.1733380000.bench.1.0"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tags(n: int) -> list[str]:
    names = ["losses/qf1_loss", "losses/qf2_loss", "losses/actor_loss", "losses/alpha"]
    names += ["charts/episodic_return", "charts/episodic_length", "charts/SPS"]
    names += [f"losses/extra_{i}" for i in range(max(0, n - len(names)))]
    return names[:n]


def _value(step: np.ndarray, t: int) -> np.ndarray:
    return (np.sin(step * 0.001 + t) * (t + 1)).astype(np.float32)


def _wall(step: np.ndarray, t: int) -> np.ndarray:
    return START + step * 0.01 + t * 1e-4


def _header_event() -> bytes:
    version = b"brain.Event:2"
    return b"\x09" + struct.pack("<d", START) + b"\x1a" + _varint(len(version)) + version


def build_events(path: Path, steps: int, ntags: int, first_step: int = 0) -> int:
    """Write torch's bytes for ``add_scalar(tag, value, step, walltime)`` over the steps
    and tags (tags in order within a step); the file's size."""
    tags = _tags(ntags)
    with open(path, "wb") as f:
        f.write(frame_many([_header_event()]))
        lo = first_step
        hi = first_step + steps
        while lo < hi:  # one group per width of the step's varint
            width = len(_varint(lo)) if lo else 0
            top = 1 if lo == 0 else min(hi, 1 << (7 * width))
            step = np.arange(lo, top, dtype=np.int64)
            payloads = []
            for t, tag in enumerate(tags):
                raw = tag.encode()
                value = b"\x0a" + _varint(len(raw)) + raw + b"\x15"
                inner = b"\x0a" + _varint(len(value) + 4) + value
                head_len = 1 + 8 + (1 + width if width else 0)
                rec_len = head_len + 2 + len(inner) + 4
                rows = np.zeros((len(step), rec_len), np.uint8)
                rows[:, 0] = 0x09
                rows[:, 1:9] = _wall(step, t).view(np.uint8).reshape(-1, 8)
                if width:
                    rows[:, 9] = 0x10
                    for i in range(width):
                        b = (step >> (7 * i)) & 0x7F
                        rows[:, 10 + i] = b | (0x80 if i < width - 1 else 0)
                at = head_len
                rows[:, at] = 0x2A
                rows[:, at + 1] = len(inner) + 4
                rows[:, at + 2 : at + 2 + len(inner)] = np.frombuffer(inner, np.uint8)
                rows[:, -4:] = _value(step, t).view(np.uint8).reshape(-1, 4)
                payloads.append(rows)
            cycle = np.concatenate(payloads, axis=1)
            widths = [p.shape[1] for p in payloads]
            for block in range(0, len(step), 65536):
                part = cycle[block : block + 65536].tobytes()
                row = sum(widths)
                records = []
                for r in range(len(part) // row):
                    at = r * row
                    for w in widths:
                        records.append(part[at : at + w])
                        at += w
                f.write(frame_many(records))
            lo = top
    return path.stat().st_size


def check_against_torch(folder: Path) -> None:
    """Build a small file here and have torch's ``SummaryWriter`` write the same calls:
    every record after the first (the file version, stamped with the time) is equal."""
    from torch.utils.tensorboard import SummaryWriter

    steps, ntags = 300, 3
    ours = folder / "ours"
    ours.mkdir(parents=True)
    build_events(ours / _FILE_NAME, steps, ntags)
    writer = SummaryWriter(str(folder / "torch"))
    tags = _tags(ntags)
    for s in range(steps):
        step = np.array([s])
        for t, tag in enumerate(tags):
            writer.add_scalar(tag, float(_value(step, t)[0]), s, walltime=float(_wall(step, t)[0]))
    writer.close()
    (theirs,) = (folder / "torch").iterdir()

    check_same_records((ours / _FILE_NAME).read_bytes(), theirs.read_bytes(), steps * ntags)


_READERS = {
    "aoff": """
import pandas
from aoff import read_scalars
df = read_scalars(FOLDER)
rows = len(df)
""",
    "EventAccumulator": """
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(FOLDER, size_guidance={"scalars": 0})
acc.Reload()
rows = sum(len(acc.Scalars(t)) for t in acc.Tags()["scalars"])
""",
    "tbparse": """
from tbparse import SummaryReader
rows = len(SummaryReader(FOLDER, pivot=False).scalars)
""",
}


def _env() -> dict[str, str]:
    """The readers' environment: aoff's source first, and Python's bytecode written and
    used (as an installed package has it): with ``PYTHONDONTWRITEBYTECODE`` set, every
    process would compile the reading modules again, ~30 ms of a first call that no
    user pays."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def time_reader(name: str, folder: Path, repeat: int) -> tuple[float, float, int]:
    """Best wall time and best CPU time of ``repeat`` reads (each in a fresh process,
    after its imports); the rows it returned."""
    code = (
        "import json, sys, time\nFOLDER = sys.argv[1]\n"
        + "\n".join(
            line for line in _READERS[name].splitlines() if line.startswith(("import", "from"))
        )
        + "\nt0, c0 = time.perf_counter(), time.process_time()\n"
        + "\n".join(
            line
            for line in _READERS[name].splitlines()
            if line and not line.startswith(("import", "from"))
        )
        + "\nprint(json.dumps([time.perf_counter() - t0, time.process_time() - c0, rows]))\n"
    )
    env = _env()
    best, best_cpu, rows = float("inf"), float("inf"), 0
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", code, str(folder)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        seconds, cpu, rows = json.loads(out.stdout.strip().splitlines()[-1])
        best, best_cpu = min(best, seconds), min(best_cpu, cpu)
    return best, best_cpu, rows


def time_warm(folder: Path, repeat: int) -> float:
    """aoff's best CPU time of ``repeat`` reads of ``folder`` in one process, after a
    first read: the read alone, without the first call's imports and tables."""
    code = (
        "import sys, time\nimport pandas\nfrom aoff import read_scalars\n"
        "read_scalars(sys.argv[1])\nbest = float('inf')\n"
        f"for _ in range({repeat}):\n"
        "    c0 = time.process_time()\n    read_scalars(sys.argv[1])\n"
        "    best = min(best, time.process_time() - c0)\nprint(best)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
    )
    return float(out.stdout.strip().splitlines()[-1])


def bench_warm(root: Path, steps: int, repeat: int, names: list[str]) -> None:
    """Each shape of ``names``: written, checked equal, then aoff's warm reads (best of
    ``repeat`` in each of three processes), in MB/s of CPU time."""
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    print("| shape | MB | aoff MB/s of CPU, warm (three processes) |")
    print("| --- | ---: | ---: |")
    for name in names:
        folder = root / name.replace("+", "-")
        folder.mkdir()
        _shape(name, folder, steps)
        size = sum(f.stat().st_size for f in folder.rglob("*tfevents*")) / 1e6
        check_equal(folder, quiet=True)
        speeds = sorted(size / time_warm(folder, repeat) for _ in range(3))
        print(f"| {name} | {size:.2f} | {' '.join(f'{v:.3g}' for v in speeds)} |")
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")


def check_equal(folder: Path, quiet: bool = False) -> None:
    """aoff's rows equal ``EventAccumulator``'s: steps, wall times, float32 values (its
    scalars, and its ``scalars``-plugin tensors), every tag of each."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    import aoff

    df = aoff.read_scalars(folder)
    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    n = 0
    for tag in acc.Tags()["scalars"] + acc.Tags()["tensors"]:
        if tag in acc.Tags()["scalars"]:
            ev = acc.Scalars(tag)
            values = [e.value for e in ev]
        elif acc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars":
            ev = acc.Tensors(tag)
            values = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in ev]
        else:
            continue
        sub = df[df["tag"] == tag]
        assert sub["step"].tolist() == [e.step for e in ev], tag
        assert sub["wall_time"].tolist() == [e.wall_time for e in ev], tag
        want = np.asarray(values, np.float32)
        assert sub["value"].to_numpy(np.float32).tobytes() == want.tobytes(), tag
        n += len(ev)
    assert n == len(df), (n, len(df))
    if not quiet:
        print(f"aoff == EventAccumulator on the small file ({len(df):,} points)")


def _sac(writer: Any, steps: int, rng: Any, new_style: bool = False) -> None:
    """CleanRL ``sac_continuous_action.py``: an episode's return and length at its end,
    the losses every 10 steps (CleanRL's default is 100; more records per MB timed)."""
    end = rng.randint(20, 1000)
    for g in range(1, steps + 1):
        if g == end:
            ret = rng.gauss(0, 100)
            if new_style:
                writer.add_scalar("charts/episodic_return", ret, g, new_style=True)
            else:  # tensorboardX's add_scalar has no new_style
                writer.add_scalar("charts/episodic_return", ret, g)
            writer.add_scalar("charts/episodic_length", end - g + 1, g)
            end = g + rng.randint(20, 1000)
        if g % 10 == 0:
            for tag in _SAC_TAGS:
                if new_style:
                    writer.add_scalar(tag, rng.random(), g, new_style=True)
                else:
                    writer.add_scalar(tag, rng.random(), g)


_SAC_TAGS = (
    "losses/qf1_values", "losses/qf2_values", "losses/qf1_loss", "losses/qf2_loss",
    "losses/qf_loss", "losses/actor_loss", "losses/alpha", "charts/SPS", "losses/alpha_loss",
)  # fmt: skip
_PPO_TAGS = (
    "charts/learning_rate", "losses/value_loss", "losses/policy_loss", "losses/entropy",
    "losses/old_approx_kl", "losses/approx_kl", "losses/clipfrac",
    "losses/explained_variance", "charts/SPS",
)  # fmt: skip


def _ppo(writer: Any, steps: int, rng: Any) -> None:
    """CleanRL ``ppo.py``: 4 envs' episodes as they end in a 128-step rollout (8
    minibatch epochs' worth of losses once an iteration)."""
    ends = [rng.randint(5, 500) for _ in range(4)]
    g = 0
    for _ in range(max(steps // 512, 1)):
        for _ in range(128):
            g += 4
            for env in range(4):
                ends[env] -= 1
                if ends[env] == 0:
                    writer.add_scalar("charts/episodic_return", rng.random(), g)
                    writer.add_scalar("charts/episodic_length", rng.randint(5, 500), g)
                    ends[env] = rng.randint(5, 500)
        for tag in _PPO_TAGS:
            writer.add_scalar(tag, rng.random(), g)


def _shape(name: str, folder: Path, steps: int) -> None:
    """Write shape ``name`` into ``folder`` with the client's own writer."""
    import random

    rng = random.Random(1)
    if name == "tensorboardX":
        from tensorboardX import SummaryWriter as XWriter

        xw = XWriter(str(folder))
        _sac(xw, steps, rng)
        xw.close()
        return
    if name == "sb3":
        from stable_baselines3.common.logger import configure

        log = configure(str(folder), ["tensorboard"])
        for it in range(steps // 100):
            for tag in ("rollout/ep_rew_mean", "rollout/ep_len_mean", "time/fps",
                        "train/actor_loss", "train/critic_loss", "train/ent_coef",
                        "train/learning_rate", "train/n_updates"):  # fmt: skip
                log.record(tag, rng.random())
            log.dump(step=it * 100)
        log.close()
        return
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder))
    if name == "cleanrl-sac":
        _sac(writer, steps, rng)
    elif name == "cleanrl-ppo":
        _ppo(writer, steps * 4, rng)
    elif name == "tensor-float":
        _sac(writer, steps, rng, new_style=True)
    elif name == "tensor-double":
        for g in range(steps // 2):
            for tag in _SAC_TAGS:
                writer.add_scalar(tag, rng.random(), g, new_style=True, double_precision=True)
    elif name == "simple+tensor":
        for g in range(steps // 2):
            for i, tag in enumerate(_SAC_TAGS):
                writer.add_scalar(tag, rng.random(), g, new_style=i % 2 == 1)
    elif name == "among-media":
        nrng = np.random.default_rng(1)
        for g in range(steps // 2):
            for tag in _SAC_TAGS:
                writer.add_scalar(tag, rng.random(), g)
            if g % 200 == 0:
                writer.add_histogram("actor/weights", nrng.normal(size=1000), g)
                writer.add_image("frame", nrng.random((3, 32, 32)), g)
                writer.add_text("note", f"iteration {g}", g)
    elif name in ("many-rare-tags", "rare-tags-tensor"):
        for g in range(steps * 5):
            tag = f"per_env/{rng.randrange(2000)}/return"
            writer.add_scalar(tag, rng.random(), g, new_style=name == "rare-tags-tensor")
    else:
        raise ValueError(name)
    writer.close()


SHAPES = (
    "cleanrl-sac", "cleanrl-ppo", "tensor-float", "tensor-double", "simple+tensor",
    "among-media", "tensorboardX", "sb3", "many-rare-tags", "rare-tags-tensor",
)  # fmt: skip


def bench_shapes(root: Path, steps: int, repeat: int) -> None:
    """Each shape: written, checked equal, then read by the three readers."""
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    print("| shape | MB | aoff MB/s | aoff MB/s of CPU | EventAccumulator MB/s | tbparse MB/s "
          "| aoff / EA | aoff / tbparse |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in SHAPES:
        folder = root / name.replace("+", "-")
        folder.mkdir()
        _shape(name, folder, steps)
        size = sum(f.stat().st_size for f in folder.rglob("*tfevents*"))
        check_equal(folder, quiet=True)
        mb = size / 1e6
        speed = {}
        cpu_speed = 0.0
        for reader in _READERS:
            seconds, cpu, _rows = time_reader(reader, folder, repeat)
            speed[reader] = mb / seconds
            if reader == "aoff":
                cpu_speed = mb / cpu
        print(
            f"| {name} | {mb:.1f} | {speed['aoff']:.0f} | {cpu_speed:.0f} "
            f"| {speed['EventAccumulator']:.1f} | {speed['tbparse']:.1f} "
            f"| {speed['aoff'] / speed['EventAccumulator']:.0f}x "
            f"| {speed['aoff'] / speed['tbparse']:.0f}x |"
        )
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")


def build_small_files(folder: Path, count: int) -> int:
    """``count`` event files of one scalar record each (after the file version), torch's
    framing, in one folder (the shape of many short runs' files, or a writer that opens a
    new file often); their total size."""
    total = 0
    tag = b"charts/episodic_return"
    for i in range(count):
        value = b"\x0a" + _varint(len(tag)) + tag + b"\x15" + struct.pack("<f", i * 0.5)
        inner = b"\x0a" + _varint(len(value)) + value
        event = b"\x09" + struct.pack("<d", START + i) + b"\x10" + _varint(i + 1)
        event += b"\x2a" + _varint(len(inner)) + inner
        path = folder / f"events.out.tfevents.{1733380000 + i:010d}.bench.{i}.0"
        path.write_bytes(frame_many([_header_event(), event]))
        total += path.stat().st_size
    return total


_FIXED_COST = """
import json, sys, time
import pandas
t0, c0 = time.perf_counter(), time.process_time()
import aoff
t1, c1 = time.perf_counter(), time.process_time()
df = aoff.read_scalars(sys.argv[1])
t2, c2 = time.perf_counter(), time.process_time()
aoff.read_scalars(sys.argv[1])
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps([t1 - t0, c1 - c0, t2 - t1, c2 - c1, t3 - t2, c3 - c2, len(df)]))
"""


def bench_files(root: Path, count: int, repeat: int) -> None:
    """Many one-record files in one folder, aoff beside ``EventAccumulator`` (each a fresh
    process); then the fixed cost of a call: importing aoff and reading a one-record file,
    in a process that has imported pandas already (best of ``repeat``), and a second call."""
    folder = root / "small-files"
    folder.mkdir()
    size = build_small_files(folder, count)
    check_equal(folder, quiet=True)
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    print(f"| {count:,} one-record files ({size / 1e6:.2f} MB) | seconds | CPU seconds | rows |")
    print("| --- | ---: | ---: | ---: |")
    seconds = {}
    for reader in ("aoff", "EventAccumulator"):
        wall, cpu, rows = time_reader(reader, folder, repeat)
        seconds[reader] = wall
        print(f"| {reader} | {wall:.2f} | {cpu:.2f} | {rows:,} |")
    print(f"aoff / EventAccumulator on {count:,} files: "
          f"{seconds['EventAccumulator'] / seconds['aoff']:.1f}x as fast")  # fmt: skip
    one = root / "one-file"
    one.mkdir()
    build_small_files(one, 1)
    env = _env()
    best = [float("inf")] * 6
    for _ in range(max(repeat, 3)):
        out = subprocess.run(
            [sys.executable, "-c", _FIXED_COST, str(one)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        best = [min(a, b) for a, b in zip(best, got[:6], strict=True)]
    ms = [f"{b * 1e3:.1f}" for b in best]
    print(
        f"fixed cost of a first read_scalars call of a one-record file, pandas imported: "
        f"{ms[2]} ms ({ms[3]} ms of CPU); importing aoff before it {ms[0]} ms ({ms[1]} ms "
        f"of CPU); a second call {ms[4]} ms ({ms[5]} ms of CPU)"
    )
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--small-steps", type=int, default=20_000)
    parser.add_argument("--tags", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny files: seconds")
    parser.add_argument("--shape-steps", type=int, default=30_000, help="steps a shape")
    parser.add_argument("--only-shapes", action="store_true", help="the shapes table only")
    parser.add_argument("--files", type=int, default=5_000, help="one-record files")
    parser.add_argument(
        "--only-files", action="store_true", help="the many files and fixed cost only"
    )
    parser.add_argument(
        "--warm", nargs="*", metavar="SHAPE",
        help="aoff's warm reads of these shapes (all when none named) only",
    )  # fmt: skip
    args = parser.parse_args()
    if args.warm is not None:
        if args.quick:
            args.shape_steps = 1_000
        with tempfile.TemporaryDirectory(prefix="aoff-bench-read-") as tmp:
            bench_warm(Path(tmp), args.shape_steps, max(args.repeat, 5), args.warm or list(SHAPES))
        return
    if args.quick:
        args.steps, args.small_steps, args.repeat, args.shape_steps = 20_000, 1_000, 1, 1_000
        args.files = 50
    if args.only_files:
        with tempfile.TemporaryDirectory(prefix="aoff-bench-read-") as tmp:
            bench_files(Path(tmp), args.files, args.repeat)
        return
    if args.only_shapes:
        with tempfile.TemporaryDirectory(prefix="aoff-bench-read-") as tmp:
            bench_shapes(Path(tmp), args.shape_steps, args.repeat)
        return
    with tempfile.TemporaryDirectory(prefix="aoff-bench-read-") as tmp:
        root = Path(tmp)
        check_against_torch(root / "torch-check")
        small, big = root / "small", root / "big"
        small.mkdir()
        big.mkdir()
        t0 = time.perf_counter()
        small_size = build_events(small / _FILE_NAME, args.small_steps, args.tags)
        big_size = build_events(big / _FILE_NAME, args.steps, args.tags)
        print(
            f"built {args.steps:,} steps x {args.tags} tags ({big_size / 1e6:.1f} MB) and "
            f"{args.small_steps:,} steps ({small_size / 1e6:.1f} MB) "
            f"in {time.perf_counter() - t0:.1f} s"
        )
        check_equal(small)
        (small / _FILE_NAME).read_bytes()  # into the page cache
        (big / _FILE_NAME).read_bytes()
        print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
        print("| reader | file | seconds | MB/s | CPU seconds | MB/s of CPU | rows |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        speeds: dict[str, float] = {}
        for name in _READERS:
            seconds, cpu, rows = time_reader(name, small, args.repeat)
            speeds[name] = small_size / 1e6 / seconds
            mb = small_size / 1e6
            print(
                f"| {name} | small | {seconds:.3f} | {speeds[name]:.1f} | {cpu:.3f} "
                f"| {mb / cpu:.1f} | {rows:,} |"
            )
        seconds, cpu, rows = time_reader("aoff", big, args.repeat)
        big_speed = big_size / 1e6 / seconds
        print(
            f"| aoff | big | {seconds:.3f} | {big_speed:.1f} | {cpu:.3f} "
            f"| {big_size / 1e6 / cpu:.1f} | {rows:,} |"
        )
        for name in ("EventAccumulator", "tbparse"):
            print(f"aoff / {name} on the small file: {speeds['aoff'] / speeds[name]:.0f}x")
        print(
            f"aoff on the big file: {big_speed:.0f} MB/s "
            f"({big_size / 1e6 / cpu:.0f} MB/s of its CPU time)"
        )
        print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")
        if not args.quick:  # the smoke test stays short: --only-shapes --quick runs them
            shapes = root / "shapes"
            shapes.mkdir()
            bench_shapes(shapes, args.shape_steps, args.repeat)
            bench_files(root, args.files, args.repeat)


if __name__ == "__main__":
    main()
