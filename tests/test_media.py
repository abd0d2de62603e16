"""Media (``log_image``, ``log_video``, ``log_figure``): encoded in the agent, read back.

Every test reads what the run left with TensorBoard's own reader and decodes the PNG/GIF
with Pillow: pixels for images, frame count, size and frames for videos. Both pump modes
(``process``: frames in shared memory, the agent encodes; ``thread``: the encoder thread
in this process), both faces (the async one on asyncio and trio).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from PIL import Image, ImageSequence

import aoff
from aoff import AoffWarning, AsyncOffPolicyLogger, OffPolicyLogger
from aoff.testing import probe, read_wandb_history, wait_for_wandb_runs
from aoff.testing._faults import hold_media_encoder, kill_agent

MODES = ("process", "thread")


def _logger(tmp_path: Path, pump: str, **kw: Any) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=tmp_path,
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
        system_interval=0,
        display=aoff.NullDisplay(),
        **kw,
    )


def read_images(log_dir: Path) -> dict[str, list[Any]]:
    """Every image summary in ``log_dir``, by tag (TensorBoard's reader)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(os.fspath(log_dir), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    return {t: acc.Images(t) for t in acc.Tags()["images"]}


def frames_of(encoded: bytes) -> list[np.ndarray]:
    img = Image.open(io.BytesIO(encoded))
    return [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(img)]


def png_pixels(encoded: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(encoded))
    assert img.format == "PNG"
    return np.asarray(img)


def solid_video(t: int, h: int, w: int) -> np.ndarray:
    """Frames of one colour each (few colours: the GIF palette keeps them exact)."""
    colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]], np.uint8)
    v = np.empty((t, h, w, 3), np.uint8)
    for i in range(t):
        v[i] = colours[i % len(colours)]
    return v


def _log_all(log: Any) -> dict[str, Any]:
    """The calls every face test makes (sync or async: the caller awaits the results)."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (12, 10, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, (6, 7), dtype=np.uint8)
    rgba_chw = rng.random((4, 5, 6)).astype(np.float32)
    vid = solid_video(6, 8, 10)
    return {
        "calls": [
            ("log_image", ("img", img), {}),
            ("log_image", ("grey", grey), {"dataformats": "HW", "step": 40}),
            ("log_image", ("rgba", rgba_chw), {"dataformats": "CHW"}),
            ("log_video", ("vid", vid), {"fps": 10}),
            (
                "log_video",
                ("vid_tchw", vid.transpose(0, 3, 1, 2).astype(np.float32) / 255),
                {"dataformats": "TCHW", "step": 41},
            ),
        ],
        "img": img,
        "grey": grey,
        "rgba": (np.nan_to_num(rgba_chw.transpose(1, 2, 0)) * 255).clip(0, 255).astype(np.uint8),
        "vid": vid,
    }


def _check(log_dir: Path, want: dict[str, Any], step: int) -> None:
    images = read_images(log_dir)
    assert set(images) == {"img", "grey", "rgba", "vid", "vid_tchw"}
    (img,) = images["img"]
    assert (img.step, img.width, img.height) == (step, 10, 12)
    assert np.array_equal(png_pixels(img.encoded_image_string), want["img"])
    (grey,) = images["grey"]
    assert grey.step == 40
    assert np.array_equal(png_pixels(grey.encoded_image_string), want["grey"])
    (rgba,) = images["rgba"]
    assert np.array_equal(png_pixels(rgba.encoded_image_string), want["rgba"])
    for tag, s in (("vid", step), ("vid_tchw", 41)):
        (vid,) = images[tag]
        assert (vid.step, vid.width, vid.height) == (s, 10, 8)
        assert vid.encoded_image_string[:6] in (b"GIF87a", b"GIF89a")
        frames = frames_of(vid.encoded_image_string)
        assert len(frames) == 6
        for got, exp in zip(frames, want["vid"], strict=True):
            assert np.array_equal(got, exp)


@pytest.mark.parametrize("pump", MODES)
def test_sync_face_writes_images_and_videos_tensorboard_shows(tmp_path: Path, pump: str) -> None:
    with _logger(tmp_path, pump) as log:
        for i in range(3):
            log.log_step(i, {"loss": float(i)})
        want = _log_all(log)
        for name, args, kw in want["calls"]:
            getattr(log, name)(*args, **kw)
        log.log_step(3, {"loss": 3.0})
    report = log.close()
    assert (report.media_written, report.media_refused) == (5, 0)
    _check(tmp_path, want, step=2)  # step=None: the last log_step's step


@pytest.mark.anyio
@pytest.mark.parametrize("pump", MODES)
async def test_async_face_writes_images_and_videos(tmp_path: Path, pump: str) -> None:
    async with AsyncOffPolicyLogger(
        log_dir=tmp_path,
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
        system_interval=0,
        display=aoff.NullDisplay(),
    ) as log:
        await log.log_step(7, {"loss": 1.0})
        want = _log_all(log)
        for name, args, kw in want["calls"]:
            await getattr(log, name)(*args, **kw)
        await log.aflush()
        # flush() waits for the encoder too: everything is on disk now
        assert len(read_images(tmp_path)) == 5
    report = await log.aclose()
    assert report.media_written == 5
    _check(tmp_path, want, step=7)


@pytest.mark.parametrize("pump", MODES)
def test_torch_tensors_and_figures(tmp_path: Path, pump: str) -> None:
    torch = pytest.importorskip("torch")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = torch.arange(2 * 3 * 4 * 5, dtype=torch.uint8).reshape(2, 3, 4, 5)  # TCHW
    fig = plt.figure(figsize=(2, 1.5), dpi=50)
    plt.plot([0, 1], [1, 0])
    with _logger(tmp_path, pump) as log:
        log.log_video("t", t, dataformats="TCHW", step=3)
        t.zero_()  # the call copied the frames: later changes are not logged
        log.log_image("half", torch.full((4, 4, 3), 0.5, dtype=torch.bfloat16), step=3)
        log.log_figure("fig", fig, step=5)
    assert not plt.fignum_exists(fig.number)  # close=True by default
    images = read_images(tmp_path)
    (vid,) = images["t"]
    frames = frames_of(vid.encoded_image_string)
    assert (len(frames), vid.width, vid.height) == (2, 5, 4)
    (half,) = images["half"]
    assert (png_pixels(half.encoded_image_string) == 127).all()  # 0.5 * 255, truncated
    (f,) = images["fig"]
    assert (f.step, f.width, f.height) == (5, 100, 75)


@pytest.mark.parametrize("pump", MODES)
def test_over_budget_the_newest_is_refused_and_counted_never_a_scalar(
    tmp_path: Path, pump: str
) -> None:
    big = np.zeros((10, 32, 32, 3), np.uint8)  # 30,720 bytes
    small = np.zeros((8, 8, 3), np.uint8)  # 192 bytes
    with _logger(tmp_path, pump, media_budget=20_000) as log:
        with pytest.warns(AoffWarning, match=r"log_video\('big'\) refused.*media_budget=20,000"):
            log.log_video("big", big)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the warning is shown once
            log.log_video("big", big)
            with pytest.raises(TypeError, match="dtype int64"):  # bad input: an error first
                log.log_video("big", big.astype(np.int64))
        for i in range(50):
            log.log_step(i, {"x": float(i)})
            log.log_image("small", small, step=i)  # each is freed: never refused
            if i % 10 == 0:
                log.flush()
    report = log.close()
    assert (report.media_refused, report.media_written) == (2, 50)
    assert report.steps == 50 and report.complete
    assert len(read_images(tmp_path)["small"]) == 50
    summary = json.loads((tmp_path / "aoff-summary.json").read_text())
    assert summary["media"] == {"written": 50, "refused": 2, "lost": {}}


def _past_the_budget_while_encoding_waits(log: OffPolicyLogger, frame: Any, budget: int) -> None:
    """The encoder held, 10 frames logged as ``"v"``: some are refused (one warning) and
    what waits stays within ``budget``; then the encoder goes on."""
    gate = hold_media_encoder(log)
    with pytest.warns(AoffWarning, match="refused"):
        for _ in range(10):
            log.log_video("v", frame)
    assert probe(log).media_in_flight <= budget
    gate.set()


def test_in_flight_bytes_are_bounded_while_the_encoder_works(tmp_path: Path) -> None:
    """Thread mode, the encoder held: what waits is bounded by the budget, and what was
    accepted is written at finish()."""
    frame = np.zeros((4, 16, 16, 3), np.uint8)  # 3,072 bytes
    with _logger(tmp_path, "thread", media_budget=10_000) as log:
        _past_the_budget_while_encoding_waits(log, frame, 10_000)
    report = log.close()
    assert (report.media_written, report.media_refused) == (3, 7)
    assert len(read_images(tmp_path)["v"]) == 3


def test_a_producers_frames_never_widen_the_learners_budget(tmp_path: Path) -> None:
    """Thread mode: the run's encoder also encodes the producers' frames; their bytes are
    the producer's budget's, never the learner's (they once joined the encoder's freed
    total, and the learner's budget then took that much more past ``media_budget``)."""
    frame = np.zeros((4, 16, 16, 3), np.uint8)  # 3,072 bytes
    with _logger(tmp_path, "thread", media_budget=10_000) as log:
        producer = log.remote("collector", media_budget=1 << 20)  # refuses none
        for _ in range(10):
            producer.log_video("c", frame)
        assert producer.close().complete
        log.flush()  # the producer's 10 are encoded: 30,720 bytes freed by the encoder
        _past_the_budget_while_encoding_waits(log, frame, 10_000)
    report = log.close()
    assert (report.media_written, report.media_refused) == (13, 7)
    images = read_images(tmp_path)
    assert (len(images["v"]), len(images["c"])) == (3, 10)


@pytest.mark.parametrize(
    ("call", "data", "kw", "error", "match"),
    [
        (
            "log_image",
            np.zeros((4, 4, 3, 1), np.uint8),
            {},
            ValueError,
            r"4 dimensions.*'HWC' needs 3",
        ),
        ("log_image", np.zeros((4, 4, 2), np.uint8), {}, ValueError, r"2 channels.*1 \(grey\), 3"),
        ("log_image", np.zeros((4, 4, 3), np.int64), {}, TypeError, r"dtype int64; expected uint8"),
        ("log_image", np.zeros((4, 4, 3), bool), {}, TypeError, r"dtype bool"),
        ("log_image", np.zeros((0, 4, 3), np.uint8), {}, ValueError, r"is empty"),
        ("log_image", "not an image", {}, TypeError, r"NumPy array or a torch tensor, got str"),
        (
            "log_image",
            np.zeros((4, 4, 3), np.uint8),
            {"dataformats": "WHC"},
            ValueError,
            r"dataformats",
        ),
        ("log_video", np.zeros((0, 4, 4, 3), np.uint8), {}, ValueError, r"is empty"),
        ("log_video", np.zeros((4, 4, 3), np.uint8), {}, ValueError, r"'THWC' needs 4"),
        ("log_video", np.zeros((2, 4, 4, 3), np.uint8), {"fps": 0}, ValueError, r"fps"),
        ("log_video", np.zeros((2, 4, 4, 3), np.uint8), {"step": "one"}, TypeError, r"step"),
    ],
)
def test_bad_input_is_a_specific_error_at_the_call(
    tmp_path: Path, call: str, data: Any, kw: dict[str, Any], error: type[Exception], match: str
) -> None:
    with _logger(tmp_path, "thread") as log:
        with pytest.raises(error, match=match):
            getattr(log, call)("k", data, **kw)
        with pytest.raises(TypeError, match="key must be a str"):
            getattr(log, call)(3, data, **kw)
        log.log_image("ok", np.zeros((2, 2, 3), np.uint8))  # the run goes on
    assert log.close().media_written == 1
    with pytest.raises(TypeError, match="expected a matplotlib Figure"):
        OffPolicyLogger.log_figure(log, "f", object())  # checked before anything else


def test_process_mode_frees_every_shared_memory_block_and_a_fork_keeps_off_them(
    tmp_path: Path,
) -> None:
    """The training process unlinks its blocks at the end; no resource-tracker warning
    at exit. A child forked from the logger must not write into the parent's blocks (the
    pool is the parent's alone): its media go pickled through its ``fork-<pid>`` remote."""
    code = f"""
import multiprocessing as mp, os, numpy as np, aoff
before = set(os.listdir("/dev/shm"))
log = aoff.OffPolicyLogger(log_dir={os.fspath(tmp_path)!r}, handle_sigterm=False,
                           system_interval=0, display=aoff.NullDisplay())
for i in range(20):
    log.log_video("v", np.full((3, 8, 8, 3), i, np.uint8), step=i)
def child():
    log.log_video("child", np.full((2, 8, 8, 3), 99, np.uint8), step=2)
p = mp.get_context("fork").Process(target=child)
p.start(); p.join(60)
assert p.exitcode == 0, p.exitcode
r = log.finish()
assert r.media_written == 21, r
mine = f"_{{os.getpid():x}}_"  # other runs on this machine make blocks meanwhile
left = {{n for n in set(os.listdir("/dev/shm")) - before if n.startswith("aoff_") and mine in n}}
assert not left, left
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
    assert "resource_tracker" not in out.stderr and "leaked" not in out.stderr, out.stderr
    images = read_images(tmp_path)
    assert len(images["v"]) == 20
    for i, v in enumerate(images["v"]):
        assert all((f == v.step).all() for f in frames_of(v.encoded_image_string)), i
    (c,) = images["child"]
    assert all((f == 99).all() for f in frames_of(c.encoded_image_string))


def test_process_mode_reuses_its_shared_memory_blocks(tmp_path: Path) -> None:
    """A block the agent has read is marked free and takes the next call's frames (a new
    block would cost its page faults again); the pool's in-use bytes are the budget's.
    After each call, ``SPARES`` free blocks of its size are kept ready beside it."""
    from aoff._media._shm import SPARES

    frames = np.zeros((20, 32, 32, 3), np.uint8)
    with _logger(tmp_path, "process") as log:
        p = probe(log)
        for i in range(5):
            log.log_video("v", frames, step=i)
            log.flush()  # the agent read it: its block is free again
            assert p.media_blocks_in_use == 0
        names = p.media_blocks
        assert len(names) <= 1 + SPARES  # the one reused, and the spares made ahead of a burst
    assert log.close().media_written == 5
    assert not any(os.path.exists(f"/dev/shm/{n}") for n in names)  # unlinked at the end


def test_import_aoff_stays_light() -> None:
    heavy = "('PIL', 'av', 'matplotlib')"
    code = f"import sys, aoff; print(sorted(m for m in {heavy} if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "[]", out.stderr


def test_summarywriter_media_read_back_like_torchs(tmp_path: Path) -> None:
    """The same calls through torch's ``SummaryWriter`` and aoff's: the same tags, steps,
    wall times, sizes, PNG modes and pixels; for ``add_video`` (torch's needs moviepy)
    the same frame count, the colours of both GIFs within the palette's error of the
    frames torch prepares (``_prepare_video``: its grid, its uint8 scaling), and aoff's
    frames last ``1 / fps`` to the 1/100 s, at least 20 ms (torch's path writes 0)."""
    torch = pytest.importorskip("torch")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pytest.importorskip("moviepy.editor")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from aoff.tensorboard import SummaryWriter

    from .gifs import colour_error, gif_frames, torch_frames

    rng = np.random.default_rng(1)
    y, x = np.mgrid[0:8, 0:10]
    smooth = np.stack(
        [np.stack([x * 0.1 + i * 0.02, y * 0.12, (x + y + i) / 24]) for i in range(4)]
    )
    smooth = smooth[None].astype(np.float32)  # (1, 4, 3, 8, 10) in [0, 1]
    videos = {"vid": 4, "vid_float": 60}  # tag: fps
    fig = plt.figure(figsize=(2, 1), dpi=40)
    plt.plot([0, 1], [0, 1])
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("add_image", ("chw_float", rng.random((3, 8, 10)).astype(np.float32)), {"global_step": 1}),
        ("add_image", ("hwc_u8", rng.integers(0, 256, (8, 10, 3), dtype=np.uint8)),
         {"global_step": 2, "dataformats": "HWC", "walltime": 123.5}),
        ("add_image", ("grey_hw", torch.rand(6, 7)), {"dataformats": "HW"}),
        ("add_image", ("grey_chw", rng.integers(0, 256, (1, 6, 7), dtype=np.uint8)), {}),
        ("add_image", ("rgba", rng.integers(0, 256, (4, 5, 6), dtype=np.uint8)),
         {"global_step": 3}),
        ("add_images", ("batch", rng.random((10, 1, 4, 5))), {"global_step": 4}),
        ("add_images", ("batch_nhwc", rng.random((3, 4, 5, 3))), {"dataformats": "NHWC"}),
        ("add_figure", ("fig", fig), {"global_step": 5, "close": False}),
        # (N, T, C, H, W): three videos of black/white frames (exact in a GIF) in torch's
        # grid; smooth float frames (more colours than a palette) at 60 fps
        ("add_video", ("vid", (rng.integers(0, 2, (3, 5, 3, 4, 6)) * 255).astype(np.uint8)),
         {"global_step": 6, "fps": videos["vid"]}),
        ("add_video", ("vid_float", smooth),
         {"global_step": 7, "fps": videos["vid_float"], "walltime": 124.5}),
    ]  # fmt: skip
    for writer_cls, folder in ((TorchWriter, "torch"), (SummaryWriter, "aoff")):
        w = writer_cls(os.fspath(tmp_path / folder))
        for name, args, kw in calls:
            getattr(w, name)(*args, **kw)
        w.close()
    plt.close(fig)
    theirs, ours = read_images(tmp_path / "torch"), read_images(tmp_path / "aoff")
    assert set(ours) == set(theirs) == {c[1][0] for c in calls}
    for tag, events in theirs.items():
        (t,), (o,) = events, ours[tag]
        assert (o.step, o.width, o.height) == (t.step, t.width, t.height), tag
        if tag in ("hwc_u8", "vid_float"):
            assert o.wall_time == t.wall_time == {"hwc_u8": 123.5, "vid_float": 124.5}[tag]
        if tag.startswith("vid"):
            vid, fps = next(c[1][1] for c in calls if c[1][0] == tag), videos[tag]
            t_frames, _ = gif_frames(t.encoded_image_string)  # torch's delays are 0
            o_frames, o_delays = gif_frames(o.encoded_image_string)
            assert len(t_frames) == len(o_frames) == vid.shape[1], tag
            assert o_delays == [{4: 250, 60: 20}[fps]] * len(o_frames), tag
            for frames in (t_frames, o_frames):
                mean, worst = colour_error(frames, torch_frames(vid))
                if tag == "vid":
                    assert worst == 0, tag
                else:  # 320 colours, a palette of 256: a few levels off, < 10 % at worst
                    assert mean < 4 and worst <= 24, (tag, mean, worst)
            continue
        t_img = Image.open(io.BytesIO(t.encoded_image_string))
        o_img = Image.open(io.BytesIO(o.encoded_image_string))
        assert (o_img.format, o_img.mode, o_img.size) == (t_img.format, t_img.mode, t_img.size)
        assert np.array_equal(np.asarray(o_img), np.asarray(t_img)), tag


@pytest.mark.parametrize("pump", MODES)
def test_jsonl_and_csv_rows_point_to_media_files(tmp_path: Path, pump: str) -> None:
    """PNG and MP4 files under ``log_dir/media/`` (written once for both backends), a
    JSONL line and a CSV row that name them; the MP4 decodes to every frame."""
    av = pytest.importorskip("av")
    vid = solid_video(9, 17, 21)  # odd sizes: padded by one pixel for yuv420p
    img = np.random.default_rng(2).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    with _logger(tmp_path, pump, log_backend="none", backends=("jsonl", "csv")) as log:
        log.log_step(1, {"a": 1.0})
        log.log_video("eval/ep", vid, fps=12)
        log.log_image("img", img, step=4)
    assert log.close().media_written == 2
    lines = [json.loads(ln) for ln in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    media = {r["media"]: r for r in lines if "media" in r}
    assert media["video"]["step"] == 1 and media["image"]["step"] == 4
    video_path = tmp_path / media["video"]["eval/ep"]
    image_path = tmp_path / media["image"]["img"]
    assert video_path.parent == image_path.parent == tmp_path / "media"
    assert sorted(p.name for p in (tmp_path / "media").iterdir()) == sorted(
        [video_path.name, image_path.name]
    )
    assert np.array_equal(np.asarray(Image.open(image_path)), img)
    with av.open(os.fspath(video_path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == 9 and frames[0].shape == (18, 22, 3)
    assert np.abs(frames[0][:17, :21].astype(int) - vid[0]).max() < 16  # lossy H.264
    with open(tmp_path / "progress.csv", newline="") as f:
        rows = list(__import__("csv").DictReader(f))
    assert [r["eval/ep"] for r in rows if r["eval/ep"]] == [media["video"]["eval/ep"]]
    assert [r["img"] for r in rows if r["img"]] == [media["image"]["img"]]
    from aoff._runfolder.reading._runs import read_run

    assert read_run(os.fspath(tmp_path)).records == 1  # aoff show skips media rows


def test_wandb_offline_run_holds_the_media_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    img = np.random.default_rng(3).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    with _logger(tmp_path, "process", log_backend="none", backends=("wandb",)) as log:
        for i in range(3):
            log.log_step(i, {"a": float(i)})
        log.log_video("eval/ep", solid_video(6, 16, 16), fps=10)
        log.log_image("img", img, step=1)  # W&B is past step 1: logged at 2, media_step 1
    assert log.close().media_written == 2
    # the run goes under log_dir; W&B's service process may still be writing its file
    (wandb_file,) = wait_for_wandb_runs(tmp_path / "wandb")
    run = wandb_file.parent
    videos = list(run.rglob("files/media/videos/**/*.mp4"))
    images = list(run.rglob("files/media/images/**/*.png"))
    assert len(videos) == 1 and len(images) == 1
    assert np.array_equal(np.asarray(Image.open(images[0]).convert("RGB")), img)
    (row,) = [r for r in read_wandb_history(wandb_file) if "img/media_step" in r]
    assert (row["_step"], row["img/media_step"], row["eval/ep/media_step"]) == (2, 1, 2)
    assert (row["eval/ep/_type"], row["img/_type"]) == ("video-file", "image-file")
    assert (run / "files" / row["eval/ep/path"]).exists()


def test_a_missing_encoder_is_reported_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL raises ImportError
    with _logger(tmp_path, "thread") as log:
        log.log_image("img", np.zeros((2, 2, 3), np.uint8))
        log.log_step(1, {"a": 1.0})
    report = log.close()
    assert (report.media_written, report.steps) == (0, 1)  # the scalars go on
    assert "could not encode media 'img'" in capfd.readouterr().err
    assert "pip install 'aoff[media]'" in "".join(probe(log).problems)


def test_the_dashboard_shows_the_last_media_and_the_summary_what_was_refused(
    tmp_path: Path,
) -> None:
    from rich.console import Console

    from aoff._display._content import header_fields
    from aoff._display._summary import summary_panel
    from aoff.testing import RecordingDisplay

    display = RecordingDisplay()
    log = OffPolicyLogger(
        log_dir=tmp_path, pump="thread", handle_sigterm=False, system_interval=0,
        display=display, media_budget=100,
    )  # fmt: skip
    with log:
        log.log_step(3, {"a": 1.0})
        log.log_video("eval/episode", np.zeros((2, 4, 4, 3), np.uint8))
        with pytest.warns(AoffWarning, match="refused"):
            log.log_video("too_big", np.zeros((2, 8, 8, 3), np.uint8))
    ((_, state, _),) = display.closed
    assert (state.last_media, state.media_refused) == (("eval/episode", 3), 1)
    header = "".join(t for c in header_fields(state, 0.0) for t, _ in c.spans)
    assert "media eval/episode @3" in header
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(summary_panel(state, 0.0))
    text = console.export_text()
    assert "Last media: eval/episode (step 3)" in text
    assert "Media refused (budget): 1" in text


def test_sb3_video_image_and_figure_go_to_the_media_path(tmp_path: Path) -> None:
    """SB3's ``Video``/``Image``/``Figure`` values at SB3's step, with the pixels SB3's
    own TensorBoard format (torch's writer) would write."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("stable_baselines3")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from stable_baselines3.common.logger import Figure, Video
    from stable_baselines3.common.logger import Image as SB3Image

    import aoff.sb3

    logger = aoff.sb3.configure(
        os.fspath(tmp_path), ["tensorboard"], pump="thread", handle_sigterm=False
    )
    frames = torch.zeros(1, 4, 3, 8, 8, dtype=torch.uint8)
    frames[0, ::2, 0] = 255  # red, black, red, black (Pillow merges identical frames)
    image = np.zeros((6, 5, 3), np.uint8)
    image[..., 2] = 255  # blue, HWC
    fig = plt.figure(figsize=(1, 1), dpi=30)
    logger.record("train/loss", 0.5)
    logger.record("eval/video", Video(frames, fps=8), exclude="stdout")
    logger.record("eval/image", SB3Image(image, "HWC"), exclude="stdout")
    logger.record("eval/figure", Figure(fig, close=True), exclude="stdout")
    logger.dump(1000)
    logger.close()
    assert logger.writer.skipped == {} and logger.writer.report is not None
    assert logger.writer.report.media_written == 3
    images = read_images(tmp_path)
    (v,), (i,), (f,) = images["eval/video"], images["eval/image"], images["eval/figure"]
    assert (v.step, i.step, f.step) == (1000, 1000, 1000)
    gif = frames_of(v.encoded_image_string)
    assert len(gif) == 4 and (gif[0] == [255, 0, 0]).all() and (gif[1] == 0).all()
    assert np.array_equal(png_pixels(i.encoded_image_string), image)
    assert (f.width, f.height) == (30, 30)


@pytest.mark.parametrize("pump", MODES)
def test_a_remote_producer_logs_media_into_the_run(tmp_path: Path, pump: str) -> None:
    """``log.remote()``: the frames travel pickled in the event (documented), the run's
    encoder writes them under the tag as given."""
    code = """
import pickle, sys, warnings, numpy as np
remote, tight = pickle.loads(sys.stdin.buffer.read())
frames = np.zeros((4, 8, 8, 3), np.uint8)
frames[1::2] = 255
remote.log_video("collector/episode", frames, step=11, fps=5)
remote.log_image("collector/frame", frames[1], step=12)
report = remote.close()
assert report.complete, report
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    tight.log_image("tight/frame", frames[1], step=13)  # 192 B over a 100 B budget
assert [str(w.message) for w in caught if "refused" in str(w.message)], caught
tight.log_image("tight/small", frames[1, :2, :2], step=14)  # 12 B: fits
assert tight.close().complete
"""
    with _logger(tmp_path, pump) as log:
        with pytest.raises(ValueError, match="media_budget must be a number of bytes"):
            log.remote("bad", media_budget=-1)
        remote = log.remote("collector")
        tight = log.remote("tight", media_budget=100)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=__import__("pickle").dumps((remote, tight)),
            capture_output=True,
            timeout=120,
            env=env,
        )
        assert out.returncode == 0, out.stderr.decode()
    report = log.close()
    assert (report.media_written, report.media_refused) == (3, 1)
    images = read_images(tmp_path)
    assert "tight/frame" not in images and len(images["tight/small"]) == 1
    (v,), (i,) = images["collector/episode"], images["collector/frame"]
    assert (v.step, i.step) == (11, 12)
    assert len(frames_of(v.encoded_image_string)) == 4
    assert (png_pixels(i.encoded_image_string) == 255).all()


@pytest.mark.slow  # importing mlflow takes seconds on a loaded machine
def test_mlflow_keeps_media_as_artifacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for name in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    img = np.random.default_rng(4).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    with _logger(tmp_path / "run", "thread", log_backend="none", backends=("mlflow",)) as log:
        log.log_step(1, {"a": 1.0})
        log.log_video("eval/ep", solid_video(4, 8, 8), fps=4)
        log.log_image("img", img, step=3)
    report = log.close()
    assert report.media_written == 2 and report.complete
    arts = sorted((tmp_path / "mlruns").rglob("artifacts/media/*"))
    assert [p.suffix for p in arts] == [".mp4", ".png"]
    assert arts[0].name.startswith("eval_ep_s1_") and arts[1].name.startswith("img_s3_")
    assert np.array_equal(np.asarray(Image.open(arts[1])), img)


def test_a_stuck_encoder_costs_finish_its_bound_and_never_the_scalars(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # the encoder's wait is finish_timeout; the backends then get their own (generous
    # enough for 20 records on a loaded machine)
    with _logger(tmp_path, "thread", finish_timeout=1.5) as log:
        gate = hold_media_encoder(log)
        for i in range(20):
            log.log_step(i, {"x": float(i)})
            if i % 5 == 0:
                log.log_video("v", np.zeros((2, 4, 4, 3), np.uint8))
    report = log.close()
    gate.set()
    assert report.steps == 20 and not any(report.backend_lost.values())  # every scalar
    assert report.media_written == 0 and report.media_lost == {"stalled": 4}
    assert not report.complete
    assert (
        "4 images/videos were not written: 4 because the encoder finished none within "
        "finish_timeout=1.5s; raise finish_timeout"
    ) in capfd.readouterr().err
    assert [v for _, v in read_tensorboard_scalars(tmp_path)["train/x"]] == [
        float(i) for i in range(20)
    ]
    # the run summary keeps the counts, and ``aoff show`` says them
    summary = json.loads((tmp_path / "aoff-summary.json").read_text())
    assert summary["media"] == {"written": 0, "refused": 0, "lost": {"stalled": 4}}
    from aoff.__main__ import main

    assert main(["show", str(tmp_path), "--width", "120"]) == 0
    assert "Images/videos: 0 written; 4 not written (4 stalled)" in capfd.readouterr().out


def read_tensorboard_scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(os.fspath(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def test_a_full_pool_hands_frames_over_as_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``MAX_BLOCKS`` blocks all in use, ``put`` says so (the call then sends a
    NumPy copy in the event); a block the reader released takes the next frames."""
    from aoff._media import _shm

    monkeypatch.setattr(_shm, "MAX_BLOCKS", 2)
    pool = _shm.ShmPool(1 << 30)
    try:
        frames = [np.full((4, 4, 3), i, np.uint8) for i in range(3)]
        a, b = pool.put(frames[0]), pool.put(frames[1])
        assert a is not None and b is not None and pool.put(frames[2]) is None
        assert pool.in_use_bytes() == 2 * 48
        block, arr = a.open()  # the agent's side: read, then release
        assert np.array_equal(arr, frames[0])
        del arr
        a.release(block)
        c = pool.put(frames[2])
        assert c is not None and c.name == a.name and pool.in_use_bytes() == 2 * 48
    finally:
        pool.close()
    assert not os.path.exists(f"/dev/shm/{a.name}")


def test_copies_made_past_a_full_pool_count_against_the_budget_until_freed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Process mode, every block in use: a call's frames go as a NumPy copy in the event;
    the copy counts against the budget while it lives (it once did not: a burst of small
    images held any number of copies past ``media_budget``)."""
    from aoff._media import _shm
    from aoff._media._calls import MediaBudget
    from aoff._media._frames import capture_frames

    monkeypatch.setattr(_shm, "MAX_BLOCKS", 2)
    budget = MediaBudget(10_000)
    budget.pool = pool = _shm.ShmPool(1 << 30)
    frame = np.zeros((4, 16, 16, 3), np.uint8)  # 3,072 bytes
    try:
        payloads = []
        for _ in range(3):
            assert budget.take(frame.nbytes)
            payload, _, _, nbytes = capture_frames(frame, pool=pool)
            budget.captured(payload, nbytes)
            payloads.append(payload)
        assert [type(p) for p in payloads] == [_shm.ShmFrames, _shm.ShmFrames, np.ndarray]
        assert budget.in_flight() == 3 * 3072
        assert not budget.take(frame.nbytes)  # a 4th would pass the budget
        del payloads[2], payload  # pickled for the agent (or dropped): the copy is freed
        assert budget.in_flight() == 2 * 3072
        assert budget.take(frame.nbytes)
    finally:
        pool.close()


def test_a_burst_past_a_full_pool_is_bounded_and_what_was_taken_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent frozen (it reads no block), 2 blocks at most: of 40 frames logged at
    once, those over ``media_budget`` are refused and counted; every one accepted is
    written once the agent goes on."""
    from aoff._media import _shm

    monkeypatch.setattr(_shm, "MAX_BLOCKS", 2)
    frame = np.zeros((4, 16, 16, 3), np.uint8)  # 3,072 bytes: 3 fit in 10,000
    with _logger(tmp_path, "process", media_budget=10_000, backends=("tensorboard",)) as log:
        log.log_step(1, {"x": 1.0})
        log.flush()
        kill_agent(log, signal.SIGSTOP)
        try:
            with pytest.warns(AoffWarning, match="refused"):
                for _ in range(40):
                    log.log_video("v", frame)
        finally:
            kill_agent(log, signal.SIGCONT)
    report = log.close()
    assert report.media_refused >= 30  # 37 unless rounds shipped copies in between
    assert report.media_written + report.media_refused == 40
    assert len(read_images(tmp_path)["v"]) == report.media_written


def test_without_a_backend_that_writes_media_none_counts_as_written(
    capfd: pytest.CaptureFixture[str],
) -> None:
    from aoff.testing import MemoryBackend

    mem = MemoryBackend()
    log = OffPolicyLogger(
        log_backend="none", backends=(mem,), handle_sigterm=False, system_interval=0,
        display=aoff.NullDisplay(),
    )  # fmt: skip
    log.log_step(1, {"a": 1.0})
    log.log_image("img", np.zeros((2, 2, 3), np.uint8))
    report = log.close()
    assert (report.media_written, report.steps) == (0, 1) and len(mem.records) == 1
    assert report.media_lost == {"no media backend": 1} and not report.complete
    err = capfd.readouterr().err
    assert "no backend of this run writes images or videos" in err
    assert "1 images/videos were not written: 1 because no backend" in err


def _play_episode(env: Any) -> None:
    """One episode of action 0, from reset to its end."""
    env.reset()
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(0)
        done = term or trunc


def _counter_env_class() -> Any:
    gym = pytest.importorskip("gymnasium")

    class Counter(gym.Env):  # type: ignore[misc]
        """A real Gymnasium env whose frame shows its step count (no pygame needed)."""

        metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 12}

        def __init__(self, render_mode: str | None = "rgb_array", length: int = 4) -> None:
            self.render_mode = render_mode
            self.length = length
            self.t = 0
            self.observation_space = gym.spaces.Discrete(100)
            self.action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            super().reset(seed=seed)
            self.t = 0
            return 0, {}

        def step(self, action: Any) -> Any:
            self.t += 1
            return self.t, 1.0, self.t >= self.length, False, {}

        def render(self) -> Any:
            return np.full((6, 8, 3), self.t * 40, np.uint8)

    return Counter


def test_gymnasium_record_video_logs_every_nth_episode(tmp_path: Path) -> None:
    """Single env: episodes 1 and 3 of 4 (``every=2``), from the reset frame to the last;
    vector env: the wrapped sub-env's episodes."""
    gym = pytest.importorskip("gymnasium")
    import aoff.gymnasium

    counter = _counter_env_class()
    with _logger(tmp_path, "thread") as log:
        env = aoff.gymnasium.record_video(counter(), log, every=2, key="eval/video")
        for ep in range(4):
            _play_episode(env)
            log.log_step(ep, {"a": float(ep)})
        env.close()
        vec = gym.vector.SyncVectorEnv(
            [lambda: aoff.gymnasium.record_video(counter(length=3), log, every=1, key="vec"),
             lambda: counter(length=3)]
        )  # fmt: skip
        vec.reset(seed=0)
        for _ in range(7):  # two episodes of env 0 end (autoreset in between)
            vec.step(np.zeros(2, int))
        vec.close()
    assert log.close().media_written == 4
    images = read_images(tmp_path)
    # step=None: the last log_step's step (episode 2 ended before log_step(2))
    assert [v.step for v in images["eval/video"]] == [0, 1]
    for v in images["eval/video"]:
        frames = frames_of(v.encoded_image_string)
        assert [int(f[0, 0, 0]) for f in frames] == [0, 40, 80, 120, 160]
    assert len(images["vec"]) == 2
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        aoff.gymnasium.record_video(counter(render_mode=None), log)


def test_gymnasium_record_video_on_alert_records_the_episode_after_an_alert(
    tmp_path: Path,
) -> None:
    """``on_alert=True``: besides every ``every``-th episode (here only the first), the
    episode that starts after a rule fired is recorded."""
    import time

    import aoff.gymnasium
    from aoff import rules

    counter = _counter_env_class()
    with _logger(tmp_path, "thread", rules=[rules.above("train/a", 1.5)]) as log:
        env = aoff.gymnasium.record_video(counter(), log, every=100, on_alert=True)
        for ep in range(5):
            _play_episode(env)
            log.log_step(ep, {"a": float(ep)})
            deadline = time.monotonic() + 10
            while ep == 2 and not log.alerts and time.monotonic() < deadline:
                time.sleep(0.01)  # the pump's tick: the alert comes before the next reset
        env.close()
    assert [a.step for a in log.alerts] == [2]
    assert [v.step for v in read_images(tmp_path)["episode/video"]] == [0, 2]
    with pytest.raises(TypeError, match="on_alert must be a bool"):
        aoff.gymnasium.record_video(counter(), log, on_alert="yes")  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest"])
@pytest.mark.parametrize("pump", MODES)
async def test_images_the_buffer_drops_give_their_budget_back(
    tmp_path: Path, pump: str, overflow: str, recwarn: pytest.WarningsRecorder
) -> None:
    """A MEDIA event the overflow policy drops is never encoded: its bytes must still come
    back to the budget (process mode: its shared-memory block marked free), or enough
    drops refuse every later image. Six bursts of 40 images into a buffer of 8, the
    shipper (process) or the pump (thread) held back by a loop that does not yield: each
    burst loses its oldest (trimmed) or newest (refused), and the next is still accepted
    whole within a budget of 40 images."""
    image = np.zeros((16, 16, 3), np.uint8)
    burst, bursts = 40, 6
    async with AsyncOffPolicyLogger(
        log_dir=tmp_path,
        backends=("tensorboard",),
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
        system_interval=0,
        display="none",
        capacity=8,
        overflow=overflow,  # type: ignore[arg-type]
        media_budget=burst * image.nbytes,
    ) as log:
        await log.aflush()  # nothing but the images in the buffer from here on
        for b in range(bursts):
            for i in range(burst):  # no await yields: nothing drains meanwhile
                await log.log_image("img", image, step=b * burst + i)
            await log.aflush()  # what was kept is encoded: its bytes are back
    report = probe(log).report
    assert report is not None
    # before: 8 (process) or 32 (thread) a burst stuck; a refusal's own event may be
    # dropped too (drop_newest), but its warning is not
    assert not [w for w in recwarn if issubclass(w.category, AoffWarning)]
    assert report.media_refused == 0
    assert probe(log).media_in_flight == 0
    assert report.dropped_events > 0  # every burst lost its oldest to the policy
    assert report.media_written + report.dropped_events == burst * bursts
    assert len(read_images(tmp_path)["img"]) == report.media_written
