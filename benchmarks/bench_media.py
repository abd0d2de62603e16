"""What ``log_video`` costs the training loop, whether the scalars around it slow down,
and what encoding one episode as a GIF costs the agent.

Part 0, the GIF encoding of one 200x84x84x3 episode, side by side: aoff's default (one
palette for the whole video, ``palette="video"``), per-frame palettes
(``palette="frame"``, Pillow's own default, as aoff did before), and torch's
``SummaryWriter.add_video`` path (``torch.utils.tensorboard.summary.make_video``, which
needs moviepy; skipped where either is missing). Three episodes: a rendered scene with
smooth moving gradients (thousands of colours), noise, and an Atari-like one (few
colours). Best of ``--repeat`` runs each, in this process.

Part 1b, the issue's burst: a fresh logger (no warm-up, no flush) logs a video every 20
iterations of ``--work`` us for 300 iterations (15 videos), ``np.copy`` and ``log_video``
timed alternately; medians. A slow encoder still holds the earlier blocks (until every
backend wrote their items); the pool keeps two spare blocks of the size made ahead, so
the calls copy into blocks already faulted (docs/guides/media.md, "What the call costs").

Part 1, the caller's cost of one ``log_video`` of a 200x84x84x3 uint8 episode (4.2 MB),
side by side with a plain ``np.copy`` of the same frames (each call right after its
copy; medians over every call), for ``pump="process"`` (frames copied into a
shared-memory block; the agent encodes) and ``pump="thread"`` (a NumPy copy; the
encoder thread runs in this process).
The run writes TensorBoard, so every accepted episode is encoded as a GIF while the loop
goes on; ``media_budget`` is large enough that none is refused (the refused count is
printed: a refused call costs nothing and would flatter the figure). One unmeasured
round first: in process mode it makes the pool's shared-memory blocks (a new block costs
its page faults once, ~5 ms for 4.2 MB; later calls reuse it). Target: <= 3x the copy.

Part 2, the scalar stream: a loop of ``--work`` microseconds of busy work (a training
step stand-in) then ``log_step`` with 30 scalars, without media and with one
``log_video`` every 20 iterations, interleaved in one run: what the logging calls of
an iteration cost the loop (median, p99, and the mean, video calls included), while
the encoder works on the videos already logged.

    python benchmarks/bench_media.py [--calls 20] [--rounds 5] [--iters 1000]
        [--work 1000] [--repeat 3] [--only gif|burst|caller|stream] [--quick]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

import numpy as np

from aoff import NullDisplay, OffPolicyLogger

T, H, W = 200, 84, 84


def episode() -> Any:
    """An Atari-like episode: a flat background, a few moving sprites (few colours)."""
    v = np.zeros((T, H, W, 3), np.uint8)
    v[:] = (40, 40, 60)
    for i in range(T):
        x = (i * 3) % (W - 10)
        v[i, 60:70, x : x + 10] = (200, 70, 70)
        v[i, 10:14, :] = (90, 200, 90)
        y = (i % 70) + 5
        v[i, y : y + 3, 40:43] = 255
    return v


def smooth_episode() -> Any:
    """A rendered scene with smooth gradients that move (thousands of colours)."""
    y, x = np.mgrid[0:H, 0:W]
    v = np.empty((T, H, W, 3), np.uint8)
    for i in range(T):
        v[i, :, :, 0] = (x * 3 + i) % 256
        v[i, :, :, 1] = (y * 3 + 2 * i) % 256
        v[i, :, :, 2] = (x + y + i // 2) % 256
    return v


def noise_episode() -> Any:
    return np.random.default_rng(0).integers(0, 256, (T, H, W, 3), np.uint8)


def _torch_gif() -> Any:
    """torch's ``add_video`` encoder (``summary.make_video``: moviepy's ``write_gif``
    through imageio), or None where torch or moviepy is missing. It is imported and run
    once here, unmeasured: its first call imports ``moviepy.editor`` (seconds)."""
    try:
        import moviepy.editor  # noqa: F401
        from torch.utils.tensorboard.summary import make_video
    except ImportError:
        return None
    make_video(np.zeros((2, 4, 4, 3), np.uint8), 30)
    return lambda frames, fps: make_video(frames, fps).encoded_image_string


def colour_error(got: list[Any], frames: Any) -> float:
    """Mean absolute error (0-255) of each decoded frame against the frame it shows: the
    one at its index, or a later one where the encoder skipped frames before it (torch's
    path through moviepy 1.x samples the clip at ``fps`` again and loses some: 9 of 200
    at 30 fps, 52 at 10 fps)."""
    skipped = len(frames) - len(got)
    errs = [
        min(float(np.abs(g - frames[j]).mean()) for j in range(i, i + skipped + 1))
        for i, g in enumerate(got)
    ]
    return float(np.mean(errs))


def gif_encoding(repeat: int) -> list[dict[str, Any]]:
    """Best-of-``repeat`` ms to encode one episode, per encoder, and the mean absolute
    error of the decoded frames (0-255 scale) and the file size. Every encoder gets the
    same ``(T, H, W, 3)`` uint8 frames: torch's ``add_video`` hands ``make_video``
    exactly these for a ``(1, T, 3, H, W)`` uint8 video (its ``_prepare_video`` and
    scaling give the frames back unchanged), so its column is the encoder alone. The
    frames column counts what Pillow decodes (these episodes have no two equal frames
    in a row, which a GIF would store once)."""
    import io

    from PIL import Image, ImageSequence

    from aoff._media._encode import gif_bytes

    encoders: dict[str, Any] = {
        "one palette (default)": lambda f, fps: gif_bytes(f, fps, "video"),
        "per-frame palettes": lambda f, fps: gif_bytes(f, fps, "frame"),
    }
    torch_gif = _torch_gif()
    if torch_gif is not None:
        encoders["torch add_video"] = torch_gif
    rows = []
    for name, frames in (
        ("smooth scene", smooth_episode()),
        ("noise", noise_episode()),
        ("atari-like", episode()),
    ):
        row: dict[str, Any] = {"episode": name}
        for enc, fn in encoders.items():
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                data = fn(frames, 30)
                best = min(best, time.perf_counter() - t0)
            got = [
                np.asarray(f.convert("RGB")).astype(np.int16)
                for f in ImageSequence.Iterator(Image.open(io.BytesIO(data)))
            ]
            row[f"{enc} ms"] = round(best * 1e3, 1)
            row[f"{enc} err"] = round(colour_error(got, frames), 2)
            row[f"{enc} KB"] = len(data) // 1024
            row[f"{enc} frames"] = len(got)
        row["speed-up"] = round(row["per-frame palettes ms"] / row["one palette (default) ms"], 1)
        if torch_gif is None:
            row["torch add_video ms"] = "n/a (needs torch and moviepy)"
        else:
            row["vs torch"] = round(row["torch add_video ms"] / row["one palette (default) ms"], 1)
        rows.append(row)
    return rows


def _call_against_copy(pump: str, copies: list[float], videos: list[float]) -> dict[str, Any]:
    """The medians of ``log_video`` and ``np.copy`` timed alternately (ms), and their ratio."""
    copy_ms, video_ms = statistics.median(copies) * 1e3, statistics.median(videos) * 1e3
    return {
        "pump": pump,
        "np.copy ms": round(copy_ms, 3),
        "log_video ms": round(video_ms, 3),
        "ratio": round(video_ms / copy_ms, 2),
    }


def issue_burst(pump: str, work: float) -> dict[str, Any]:
    """15 videos, one every 20 iterations of ``work`` us, into a fresh logger: the call
    against ``np.copy``, timed alternately (medians)."""
    frames = episode()
    copies: list[float] = []
    videos: list[float] = []
    clock = time.perf_counter
    with tempfile.TemporaryDirectory() as d:
        log = make_logger(d, pump)
        for it in range(300):
            busy(work)
            log.log_step(it, {"x": float(it)})
            if it % 20 == 0:
                t0 = clock()
                np.copy(frames)
                t1 = clock()
                log.log_video("episode", frames, step=it)
                t2 = clock()
                copies.append(t1 - t0)
                videos.append(t2 - t1)
        report = log.close()
    return {
        **_call_against_copy(pump, copies, videos),
        "written": report.media_written,
        "lost": sum(getattr(report, "media_lost", {}).values()),
    }


def make_logger(log_dir: str, pump: str) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=log_dir,
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
        system_interval=0,
        display=NullDisplay(),
        media_budget=4 << 30,
    )


def busy(us: float) -> None:
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def caller_cost(pump: str, calls: int, rounds: int) -> dict[str, Any]:
    """Per call, side by side: one ``np.copy`` of the episode, then one ``log_video`` of
    it (so both see the same load); medians over every call of every round."""
    frames = episode()
    copies: list[float] = []
    videos: list[float] = []
    clock = time.perf_counter
    with tempfile.TemporaryDirectory() as d:
        log = make_logger(d, pump)
        log.log_step(0, {"x": 0.0})
        for i in range(calls):  # one unmeasured round: the pool's blocks exist from now on
            log.log_video("warmup", frames, step=i)
        log.flush()
        for r in range(rounds):
            for i in range(calls):
                t0 = clock()
                np.copy(frames)
                t1 = clock()
                log.log_video("episode", frames, step=r * calls + i)
                t2 = clock()
                copies.append(t1 - t0)
                videos.append(t2 - t1)
            log.flush()  # the encoder catches up between rounds (not measured)
        report = log.close()
    return {
        **_call_against_copy(pump, copies, videos),
        "log_video p90 ms": round(sorted(videos)[int(len(videos) * 0.9)] * 1e3, 3),
        "written": report.media_written,
        "refused": report.media_refused,
    }


def scalar_stream(pump: str, iters: int, rounds: int, work: float) -> dict[str, Any]:
    """Interleaved loops, with and without one video every 20 iterations: what
    ``log_step`` (30 scalars) costs in each (median, p99: is it slowed while the encoder
    works?), what the ``log_video`` calls cost, and the mean logging cost per iteration
    (video calls included)."""
    frames = episode()
    metrics = {f"m{i}": float(i) for i in range(30)}
    steps: dict[int, list[float]] = {0: [], 20: []}
    videos: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        log = make_logger(d, pump)
        for _ in range(3):  # the pool's blocks exist from now on (see caller_cost)
            log.log_video("warmup", frames, step=0)
        log.flush()
        it = 0
        clock = time.perf_counter
        for _ in range(rounds):
            for every, costs in steps.items():
                for i in range(iters):
                    it += 1
                    busy(work)
                    t0 = clock()
                    log.log_step(it, metrics)
                    t1 = clock()
                    costs.append(t1 - t0)
                    if every and i % every == 0:
                        log.log_video("episode", frames)
                        videos.append(clock() - t1)
            log.flush()
        report = log.close()
    out: dict[str, Any] = {"pump": pump}
    for every, costs in steps.items():
        c = sorted(costs)
        name = "with videos" if every else "no video"
        out[f"log_step {name}: median us"] = round(c[len(c) // 2] * 1e6, 1)
        out[f"p99 us ({name})"] = round(c[int(len(c) * 0.99)] * 1e6, 1)
    out["log_video mean ms"] = round(statistics.fmean(videos) * 1e3, 2)
    per_it = (sum(steps[20]) + sum(videos)) / len(steps[20])
    out["logging per it, with videos: mean us"] = round(per_it * 1e6, 1)
    out["videos written"] = report.media_written
    out["refused"] = report.media_refused
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--work", type=float, default=1000.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", choices=("gif", "burst", "caller", "stream"), action="append")
    p.add_argument("--json")
    a = p.parse_args()
    if a.quick:
        a.calls, a.rounds, a.iters, a.repeat = 3, 2, 100, 1
    parts = set(a.only or ("gif", "burst", "caller", "stream"))
    out: dict[str, list[dict[str, Any]]] = {"gif": [], "burst": [], "caller": [], "stream": []}
    if "gif" in parts:
        out["gif"] = gif_encoding(a.repeat)
    for pump in ("process", "thread") if "burst" in parts else ():
        out["burst"].append(issue_burst(pump, a.work))
    for pump in ("process", "thread") if "caller" in parts else ():
        out["caller"].append(caller_cost(pump, a.calls, a.rounds))
    for pump in ("process", "thread") if "stream" in parts else ():
        out["stream"].append(scalar_stream(pump, a.iters, a.rounds, a.work))
    for name, rows in out.items():
        if not rows:
            continue
        print(f"\n{name}:")
        keys = list(rows[0])
        print(" | ".join(keys))
        for row in rows:
            print(" | ".join(str(row[k]) for k in keys))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
