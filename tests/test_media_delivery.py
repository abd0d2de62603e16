"""Media delivery: every video accepted is written, or counted and named.

The GIF encoding (one palette per video by default, per frame as an option), the wait
of ``finish()`` for an encoder that makes progress, the count of what was not written,
and the shared-memory blocks (reserved when made, named for their run, swept when stale).
Videos are read back with TensorBoard's reader and decoded with Pillow.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageSequence

from aoff import OffPolicyLogger
from aoff._media._encode import gif_bytes

from .conftest import log_until_the_loss_is_seen
from .faulty import HELD_MEDIA, HOLD_MEDIA
from .test_media import MODES, _logger


def frames_of(encoded: bytes) -> list[np.ndarray]:
    img = Image.open(io.BytesIO(encoded))
    return [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(img)]


def smooth_scene(t: int, h: int, w: int) -> np.ndarray:
    """A rendered scene with smooth gradients that move: thousands of colours."""
    y, x = np.mgrid[0:h, 0:w]
    v = np.empty((t, h, w, 3), np.uint8)
    for i in range(t):
        v[i, :, :, 0] = (x * 3 + i) % 256
        v[i, :, :, 1] = (y * 3 + 2 * i) % 256
        v[i, :, :, 2] = (x + y + i) % 256
    return v


def test_one_palette_per_video_by_default_and_per_frame_as_an_option() -> None:
    """Both GIFs decode to every frame at the right size; one palette maps each pixel to
    its nearest of 256 colours (a small error on a smooth scene, none on a flat one), the
    per-frame palettes are closer on colours that change, and a flat scene stays exact."""
    v = smooth_scene(24, 20, 30)
    errors = {}
    for palette in ("video", "frame"):
        frames = frames_of(gif_bytes(v, 30, palette))
        assert len(frames) == 24
        assert all(f.shape == (20, 30, 3) for f in frames)
        err = np.mean([np.abs(f.astype(int) - g).mean() for f, g in zip(frames, v, strict=True)])
        errors[palette] = err
    assert errors["video"] < 16, errors
    assert errors["frame"] < errors["video"], errors
    flat = np.zeros((10, 8, 8, 3), np.uint8)
    for i in range(10):
        flat[i, :, : i % 8 + 1] = (200, 30 * (i % 3), 7)
    for got, exp in zip(frames_of(gif_bytes(flat, 10)), flat, strict=True):
        assert np.array_equal(got, exp)
    grey = frames_of(gif_bytes(flat[:, :, :, :1], 10))
    assert np.array_equal(grey[3], np.repeat(flat[3, :, :, :1], 3, axis=2))


def test_log_video_palette_option_is_checked_and_written(tmp_path: Path) -> None:
    """The option rides on the event to the agent (process mode: the longer way)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    v = smooth_scene(6, 10, 12)
    with _logger(tmp_path, "process") as log:
        with pytest.raises(ValueError, match="palette must be one of"):
            log.log_video("bad", v, palette="per-frame")
        log.log_video("per_frame", v, step=3, palette="frame")
        log.log_video("one", v, step=3)
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    assert set(acc.Tags()["images"]) == {"per_frame", "one"}
    (rec,) = acc.Images("per_frame")
    assert np.array_equal(
        frames_of(rec.encoded_image_string)[0], frames_of(gif_bytes(v, 30, "frame"))[0]
    )


def burst_video(i: int) -> np.ndarray:
    """Video ``i`` of a burst: 4 frames of 16x12, each one flat colour that names it."""
    v = np.empty((4, 12, 16, 3), np.uint8)
    for t in range(4):
        v[t] = (i * 5, t * 60, 255 - i * 5)
    return v


@pytest.mark.parametrize("pump", MODES)
def test_a_burst_of_50_videos_then_finish_writes_all_50_everywhere(
    tmp_path: Path, pump: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 videos logged at once, then finish(): every one in TensorBoard (its reader;
    each GIF decoded with Pillow: frames, size, pixels), a JSONL line and a CSV row each,
    and every one in the W&B offline run; the report counts 50 written, none lost."""
    import csv
    import json

    pytest.importorskip("av")
    pytest.importorskip("wandb")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from aoff.testing import wait_for_wandb_runs

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    backends = ("tensorboard", "jsonl", "csv", "wandb")
    log = _logger(tmp_path, pump, log_backend="none", backends=backends, finish_timeout=30)
    log.log_step(0, {"x": 0.0})
    for i in range(50):
        log.log_video("eval/episode", burst_video(i), step=i, fps=10)
    report = log.finish()
    assert (report.media_written, report.media_lost, report.complete) == (50, {}, True)

    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    videos = acc.Images("eval/episode")
    assert [v.step for v in videos] == list(range(50))
    for v in videos:
        assert (v.width, v.height) == (16, 12)
        frames = frames_of(v.encoded_image_string)
        assert len(frames) == 4
        for got, want in zip(frames, burst_video(v.step), strict=True):
            assert np.array_equal(got, want)  # four flat colours: the palette is exact

    rows = [json.loads(ln) for ln in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    media = [r for r in rows if r.get("media") == "video"]
    assert [r["step"] for r in media] == list(range(50))
    assert all((tmp_path / r["eval/episode"]).is_file() for r in media)
    with open(tmp_path / "progress.csv", newline="") as f:
        assert sum(1 for r in csv.DictReader(f) if r["eval/episode"]) == 50
    (wandb_file,) = wait_for_wandb_runs(tmp_path / "wandb")
    assert len(list(wandb_file.parent.rglob("files/media/videos/**/*.mp4"))) == 50


def test_finish_waits_for_an_encoder_that_makes_progress_past_finish_timeout(
    tmp_path: Path,
) -> None:
    """Each video takes 0.15 s to encode and finish_timeout is 0.4 s: 12 videos take
    longer in all than finish_timeout, yet every one is written, since the encoder
    finishes one well within it (the rule the runners follow: wait while it moves)."""
    import time

    from aoff.testing._parts import _Parts

    log = _logger(tmp_path, "thread", finish_timeout=0.4)
    encoder = _Parts(log).encoder
    encode = encoder._encode

    def slow(job: Any) -> Any:
        time.sleep(0.15)
        return encode(job)

    encoder._encode = slow
    log.log_step(0, {"x": 0.0})
    for i in range(12):
        log.log_video("v", burst_video(i), step=i)
    t0 = time.monotonic()
    report = log.finish()
    assert time.monotonic() - t0 > 0.4 * 2  # it did wait past finish_timeout
    assert (report.media_written, report.media_lost, report.complete) == (12, {}, True)
    assert probe_last_media(log) == ("v", 11)


def probe_last_media(log: OffPolicyLogger) -> Any:
    from aoff.testing._parts import _Parts

    return _Parts(log)._pump._state.last_media


def test_a_stalled_encoder_is_counted_and_the_panel_names_only_what_was_written(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from aoff.testing._faults import hold_media_encoder

    log = _logger(tmp_path, "thread", finish_timeout=0.3)
    log.log_step(1, {"x": 0.0})
    log.log_video("first", burst_video(1))
    log.flush()
    gate = hold_media_encoder(log)
    log.log_video("last", burst_video(2), step=2)
    report = log.finish()
    gate.set()
    assert (report.media_written, report.media_lost) == (1, {"stalled": 1})
    assert not report.complete
    assert probe_last_media(log) == ("first", 1)
    err = capfd.readouterr().err
    assert "1 images/videos were not written: 1 because the encoder finished none" in err
    assert "finish_timeout=0.3s" in err


_SMALL_SHM = """
import os, sys, numpy as np, aoff
log = aoff.OffPolicyLogger(log_dir=sys.argv[1], pump=sys.argv[2], handle_sigterm=False,
                           system_interval=0, display=aoff.NullDisplay(), backends=("tensorboard",),
                           log_backend="none")
for i in range(20):  # 2.1 MB each: 42 MB through a 16 MiB /dev/shm
    v = np.full((100, 84, 84, 3), i * 10, np.uint8)
    log.log_step(i, {"x": float(i)})
    log.log_video("v", v, step=i)
r = log.finish()
print("written", r.media_written, r.steps, r.complete)
"""


def _in_small_shm(code: str, *args: str) -> Any:
    """Run ``code`` with a private 16 MiB tmpfs as /dev/shm (root in a mount namespace);
    skip where that is not allowed."""
    import os
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=16m tmpfs /dev/shm"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("a private tmpfs needs root in a mount namespace")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    script = 'mount -t tmpfs -o size=16m tmpfs /dev/shm && exec "$0" -c "$1" "$2" "$3"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, sys.executable, code, *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


@pytest.mark.parametrize("pump", MODES)
def test_a_small_dev_shm_never_kills_the_run(tmp_path: Path, pump: str) -> None:
    """20 videos of 2.1 MB back to back through a 16 MiB /dev/shm: no SIGBUS (a block's
    pages are reserved when it is made, no block past the free space), every video
    written (those that found no block travelled as a copy)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = _in_small_shm(_SMALL_SHM, str(tmp_path), pump)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "written 20 20 True" in out.stdout, out.stdout + out.stderr[-2000:]
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    videos = acc.Images("v")
    assert [v.step for v in videos] == list(range(20))
    for v in videos[::7]:
        frames = frames_of(v.encoded_image_string)
        assert len(frames) == 1 or len(frames) == 100  # identical frames may be merged
        assert (frames[0] == v.step * 10).all()


_KILLED = """
import sys, time, numpy as np, aoff
log = aoff.OffPolicyLogger(log_dir=sys.argv[1], pump="process", handle_sigterm=False,
                           system_interval=0, display=aoff.NullDisplay())
for i in range(3):
    log.log_video("v", np.full((4, 8, 8, 3), i, np.uint8), step=i)
log.flush()
print("ready", flush=True)
time.sleep(60)
"""


def test_blocks_of_a_run_killed_with_its_group_are_swept_by_the_next_run(tmp_path: Path) -> None:
    """SIGKILL of the training process's whole group (its resource tracker too) leaves
    its blocks, named for it; the next run sweeps them, and leaves /dev/shm as it was."""
    import os
    import signal
    import subprocess
    import sys

    if not os.path.isdir("/dev/shm") or not os.path.exists("/proc/self/stat"):
        pytest.skip("needs /dev/shm and /proc")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(tmp_path / "a")],
        stdout=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    mark = f"_{child.pid:x}_"
    leaked = [n for n in os.listdir("/dev/shm") if n.startswith("aoff_") and mark in n]
    assert leaked  # named for the killed run: the next one can tell them apart
    log = _logger(tmp_path / "b", "process")
    assert not any(os.path.exists(f"/dev/shm/{n}") for n in leaked)
    log.log_video("v", np.zeros((4, 8, 8, 3), np.uint8), step=1)
    assert log.finish().media_written == 1
    mine = f"_{os.getpid():x}_"
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("aoff_") and mine in n]


def test_the_sweep_keeps_live_runs_and_other_namespaces_blocks(tmp_path: Path) -> None:
    """Judged by name: a dead pid's block (or a reused pid's: another start time) goes;
    this process's, another pid namespace's and a foreign name stay."""
    import os
    import subprocess
    import sys

    from aoff._media._shmnames import block_name, pid_namespace, start_time, sweep_stale

    if not os.path.exists("/proc/self/stat"):
        pytest.skip("needs /proc")
    ns, pid = pid_namespace(), os.getpid()
    code = "import os; print(os.getpid())"
    dead = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    names = {
        "live": block_name(),
        "dead": f"aoff_{ns:x}_{int(dead.stdout):x}_{12345:x}_1",
        "reused": f"aoff_{ns:x}_{pid:x}_{(start_time(pid) or 0) + 1:x}_1",
        "other_ns": f"aoff_{ns + 1:x}_{int(dead.stdout):x}_{12345:x}_1",
        "foreign": "psm_1234abcd",
    }
    for n in names.values():
        (tmp_path / n).write_bytes(b"x")
    assert sorted(sweep_stale(str(tmp_path))) == sorted([names["dead"], names["reused"]])
    assert sorted(os.listdir(tmp_path)) == sorted(
        [names[k] for k in ("live", "other_ns", "foreign")]
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "aoff", "sweep-shm"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "stale blocks unlinked" in out.stdout, out.stderr


_SIGTERM_DRAIN = """
import os, signal, sys, time, numpy as np, aoff
from aoff.testing._parts import _Parts
log = aoff.OffPolicyLogger(log_dir=sys.argv[1], pump="thread", system_interval=0,
                           display=aoff.NullDisplay(), finish_timeout=0.4)
encoder = _Parts(log).encoder
# the encoder warm first (its codec imported, ~0.5 s on a loaded machine): the drain's
# window is finish_timeout without progress, and the first encode is not what is timed
log.log_video("warm", np.zeros((1, 8, 8, 3), np.uint8), step=0)
log.flush()
encode = encoder._encode
def slow(job):
    time.sleep(0.15)
    return encode(job)
encoder._encode = slow
log.log_step(0, {"x": 0.0})
for i in range(8):
    log.log_video("v", np.full((3, 8, 8, 3), i * 20, np.uint8), step=i)
os.kill(os.getpid(), signal.SIGTERM)  # the drain on SIGTERM waits for the encoder too
time.sleep(30)
"""


def test_the_sigterm_drain_waits_for_an_encoder_that_makes_progress(tmp_path: Path) -> None:
    """SIGTERM right after 8 videos whose encoding takes 1.2 s in all, finish_timeout
    0.4 s: the exit drain writes all 8 (the encoder, warmed by a first video, finished
    one every 0.15 s)."""
    import os
    import subprocess
    import sys

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", _SIGTERM_DRAIN, str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 143, out.stderr
    assert "not written" not in out.stderr, out.stderr
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    videos = acc.Images("v")
    assert [v.step for v in videos] == list(range(8))
    assert all((frames_of(v.encoded_image_string)[0] == v.step * 20).all() for v in videos)


def test_videos_a_lost_agent_took_are_encoded_again_or_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL of the agent after it was sent 3 videos in shared memory (never read: the
    fallback encodes them from the blocks) and 2 as pickled copies (no block: they died
    with it, and are counted): 3 written, {"agent lost": 2}, one line names them."""
    import signal

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from aoff._media import _shm
    from aoff.testing import probe, wait_until
    from aoff.testing._faults import kill_agent

    log = _logger(tmp_path, "process", backends=("tensorboard",), log_backend="none")
    p = probe(log)
    log.log_step(1, {"x": 1.0})
    log.flush()
    kill_agent(log, signal.SIGSTOP)  # it reads nothing more
    try:
        for i in range(3):
            log.log_video("shm", burst_video(i), step=i)
        # no block, not even a spare made ahead: pickled copies
        monkeypatch.setattr(_shm.ShmPool, "put", lambda self, arr: None)
        for i in range(2):
            log.log_video("copy", burst_video(i), step=i)
        # sent: the socket took all five (a round in progress has drained the buffer
        # before its frame is on the link, so an empty buffer and link do not say it)
        wait_until(lambda: p.shipped_media == 5, what="the five videos sent")
    finally:
        kill_agent(log)
    wait_until(lambda: not p.agent_running, what="the agent to die")
    log_until_the_loss_is_seen(log, p, 1)
    report = log.finish()
    assert (report.media_written, report.media_lost) == (3, {"agent lost": 2})
    assert not report.complete
    err = capfd.readouterr().err
    assert "2 images/videos were not written: 2 because the agent was lost" in err
    assert (  # the one line when the agent is gone speaks of media as well as steps
        "; 3 images/videos it had not written are written by this process from their "
        "frames, 2 images/videos could not be: the agent had them as copies"
    ) in err, err
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    shm = acc.Images("shm")
    assert [v.step for v in shm] == [0, 1, 2]
    assert all(
        np.array_equal(frames_of(v.encoded_image_string)[1], burst_video(v.step)[1]) for v in shm
    )


@pytest.fixture
def held_media() -> Iterator[None]:
    from aoff._pump import _registry

    _registry.register(HELD_MEDIA)
    try:
        yield
    finally:
        _registry.unregister(HELD_MEDIA.name)


def test_videos_the_agent_read_and_had_not_written_are_written_by_the_fallback(
    tmp_path: Path, held_media: None
) -> None:
    """SIGKILL of the agent while one video waits in a backend's write (encoded, read,
    not written) and another is being encoded: the agent frees a block only once every
    media backend wrote its item, so the fallback finds both in use and encodes them
    again from the frames this process still holds. Nothing is lost; TensorBoard's reader
    finds each (the agent's own TensorBoard file may hold the first too: a duplicate)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from aoff.testing import probe, wait_until
    from aoff.testing._faults import kill_agent

    hold = tmp_path / HOLD_MEDIA
    hold.touch()
    log = _logger(tmp_path, "process", backends=("tensorboard", "heldmedia"), log_backend="none")
    p = probe(log)
    log.log_step(1, {"x": 1.0})
    noise = np.random.default_rng(0).integers(0, 256, (40, 48, 48, 3), np.uint8)
    log.log_video("held", burst_video(3), step=0)
    log.log_video("slow", noise, step=1, palette="frame")  # a palette a frame: slow
    wait_until(lambda: (tmp_path / "held-media-waiting").exists(), what="a held write")
    kill_agent(log)
    hold.unlink()  # the fallback's backends write at once
    log_until_the_loss_is_seen(log, p, 1)
    report = log.finish()
    assert (report.media_written, report.media_lost) == (2, {}), report
    lines = (tmp_path / "held-media.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == ["held 0 4", "slow 1 40"]
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    assert {v.step for v in acc.Images("held")} == {0}
    held = acc.Images("held")[-1]
    assert np.array_equal(frames_of(held.encoded_image_string)[2], burst_video(3)[2])
    (slow,) = acc.Images("slow")
    got = frames_of(slow.encoded_image_string)
    assert len(got) == 40 and got[0].shape == (48, 48, 3)
    assert np.abs(got[5].astype(int) - noise[5]).mean() < 16  # a palette a frame: close


class _RefusesMedia:
    """A backend that writes steps and refuses every image (a format it cannot hold)."""

    name = "refuses-media"
    media_formats = {"image": "png"}  # noqa: RUF012 - as the built-in backends spell it

    async def open(self, ctx: Any) -> None:
        pass

    async def write(self, records: Any) -> None:
        pass

    async def write_media(self, items: Any) -> None:
        raise ValueError("no images here")

    async def flush(self) -> None:
        pass

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("pump", MODES)
def test_media_are_counted_written_only_when_a_backend_wrote_them(
    tmp_path: Path, pump: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend that refused every image, or TensorBoard without its library: the images
    are lost and said, never counted written; beside a backend that wrote them, written."""
    image = np.zeros((4, 4, 3), np.uint8)
    log = _logger(tmp_path / "refused", pump, log_backend="none", backends=(_RefusesMedia(),))
    for step in range(3):
        log.log_image("img", image, step=step)
    report = log.close()
    assert (report.media_written, report.media_lost) == (0, {"backend failed": 3})
    log = _logger(
        tmp_path / "beside", pump, log_backend="none", backends=(_RefusesMedia(), "jsonl")
    )
    for step in range(3):
        log.log_image("img", image, step=step)
    report = log.close()
    assert (report.media_written, report.media_lost) == (3, {})
    assert len(list((tmp_path / "beside").rglob("*.png"))) == 3
    if pump == "process":
        return
    from aoff._backends import _tensorboard

    def missing() -> None:
        raise ImportError("no tensorboard")

    monkeypatch.setattr(_tensorboard, "load_event_class", missing)  # as if not installed
    log = _logger(tmp_path / "notb", pump, backends=("tensorboard",))
    log.log_image("img", image, step=0)
    report = log.close()
    assert (report.media_written, report.media_lost) == (0, {"no media backend": 1})
