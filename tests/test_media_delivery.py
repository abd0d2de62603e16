"""Media delivery: every video accepted is written, or counted and named.

The GIF encoding (one palette per video by default, per frame as an option), the wait
of ``finish()`` for an encoder that makes progress, the count of what was not written,
and the shared-memory blocks (reserved when made, named for their run, swept when stale).
Videos are read back with TensorBoard's reader and decoded with Pillow.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageSequence

import aoff
from aoff import OffPolicyLogger
from aoff._media._encode import gif_bytes

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


@pytest.mark.parametrize("pump", MODES)
def test_log_video_palette_option_is_checked_and_written(tmp_path: Path, pump: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    v = smooth_scene(6, 10, 12)
    with _logger(tmp_path, pump) as log:
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
    from aoff.testing import hold_media_encoder

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
