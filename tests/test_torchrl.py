"""``aoff.torchrl.Logger`` is a TorchRL logger: the same calls through TorchRL's own
``TensorboardLogger`` and through aoff's read back the same with TensorBoard's reader,
and a TorchRL SAC script (``examples/torchrl_sac.py``) run with its logger swapped
writes the same series, wall-clock ones apart.

TorchRL (and aoff.torchrl, which imports it) is imported by the tests, not at the
module's import: every xdist worker imports every test module to collect it, and TorchRL
with TensorDict is ~1.5 s of CPU beyond torch, paid for nothing on the workers that run
none of these tests."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("torchrl") is None:
    pytest.skip("needs torchrl (the aoff[torchrl] extra)", allow_module_level=True)
pytest.importorskip("gymnasium")

import torch
from tensorboard.backend.event_processing import event_accumulator as ea

from .test_summarywriter import read

ROOT = Path(__file__).resolve().parent.parent
_TIMESTAMP = re.compile(r"(?<=/)\d+\.\d+$")


def same_runs(root: Path) -> dict[str, dict[str, Any]]:
    """What TensorBoard reads under ``root``; ``add_hparams``' sub-run (named by the
    wall clock, by torch's writer and by aoff's) renamed ``hparams``."""
    return {_TIMESTAMP.sub("hparams", run): got for run, got in read(root).items()}


def play(logger: Any) -> None:
    logger.log_hparams({"lr": 0.001, "gamma": 0.99, "algo": "SAC", "frames": 1000})
    for step in range(0, 100, 10):
        logger.log_scalar("train/loss", 1.0 / (step + 1), step=step)
        logger.log_metrics({"reward/mean": float(step), "reward/std": 0.5}, step=step)
    logger.log_histogram("q", torch.linspace(-1.0, 1.0, 101), step=90, bins="tensorflow")
    logger.close()


def test_the_same_calls_read_back_as_torchrls_tensorboard_logger(tmp_path: Path) -> None:
    from torchrl.record.loggers import Logger as TorchRLLogger
    from torchrl.record.loggers import TensorboardLogger

    import aoff.torchrl

    ours = aoff.torchrl.Logger("exp", str(tmp_path / "aoff"), pump="thread")
    assert isinstance(ours, TorchRLLogger)
    assert ours.log_dir == str(tmp_path / "aoff" / "exp")
    play(TensorboardLogger("exp", str(tmp_path / "torchrl")))
    play(ours)
    want, got = same_runs(tmp_path / "torchrl"), same_runs(tmp_path / "aoff")
    assert sorted(got) == sorted(want) == ["exp", "exp/hparams"]
    for run in want:
        assert got[run]["tags"] == want[run]["tags"], run
        for key in want[run]:
            if not key.startswith("w:"):  # wall times: "now" in each
                assert got[run][key] == want[run][key], (run, key)
    assert len(want["exp"]["s:train/loss"]) == 10 and want["exp"]["h:q"]
    assert want["exp/hparams"]["hparams"]


def test_points_carry_their_axes_through_log_scalar_and_add_scalar(tmp_path: Path) -> None:
    """``log_scalar(..., step=frames, axes={"grad_steps": g})`` (aoff's keyword, passed to
    ``SummaryWriter.add_scalar(axes=)``): each axis is written in the point's own event
    (same step, same wall time), read back by TensorBoard's ``EventAccumulator`` and as a
    column of ``read_scalars(axes=True)``; a bad axis is skipped and said, the point kept.
    """
    import aoff.torchrl
    from aoff import read_scalars

    logger = aoff.torchrl.Logger("exp", str(tmp_path), pump="thread")
    for k in range(1, 5):
        logger.log_scalar("train/loss", 1.0 / k, step=1000 * k, axes={"grad_steps": 64 * k})
    logger.experiment.add_scalar("eval/return", 5.0, 4000, axes={"step": 1, "env_steps": 4e3})
    logger.close()
    report = logger.experiment.report
    acc = ea.EventAccumulator(str(tmp_path / "exp"))
    acc.Reload()
    loss, grad = acc.Scalars("train/loss"), acc.Scalars("axis/grad_steps")
    assert [(e.step, e.value) for e in grad] == [(1000 * k, 64.0 * k) for k in range(1, 5)]
    assert [e.wall_time for e in grad] == [e.wall_time for e in loss]  # one event each
    assert [(e.step, e.value) for e in acc.Scalars("axis/env_steps")] == [(4000, 4000.0)]
    df = read_scalars(str(tmp_path / "exp"), axes=True)
    rows = df[df["tag"] == "train/loss"]
    assert rows["grad_steps"].tolist() == [64.0 * k for k in range(1, 5)]
    assert df.loc[df["tag"] == "eval/return", "env_steps"].tolist() == [4000.0]
    assert report is not None and report.invalid_values == 1  # axes={"step": ...}: refused


def test_log_metrics_takes_axes_and_writes_what_torchrls_writes(tmp_path: Path) -> None:
    """``log_metrics(..., axes=)`` (aoff's keyword): the same calls through TorchRL's own
    ``TensorboardLogger`` (without it) read back the same with ``EventAccumulator``, tag
    for tag (a dict with a tensor, a nested TensorDict); each point also carries its axes,
    as ``axis/<name>`` in TensorBoard and as columns of ``read_scalars(axes=True)``."""
    from tensordict import TensorDict
    from torchrl.record.loggers import TensorboardLogger

    import aoff.torchrl
    from aoff import read_scalars

    def calls(k: int) -> list[Any]:
        nested = TensorDict({"q": {"min": torch.tensor(-1.0 * k), "max": torch.tensor(2.0)}})
        return [{"loss": 1.0 / k, "alpha": torch.tensor(0.25 * k)}, nested]

    theirs, ours = (
        TensorboardLogger("exp", str(tmp_path / "t")),
        aoff.torchrl.Logger("exp", str(tmp_path / "a"), pump="thread"),
    )
    for k in range(1, 4):
        for want_in, got_in in zip(calls(k), calls(k), strict=True):
            want = theirs.log_metrics(want_in, step=100 * k, keys_sep=".")
            axes = {"grad_steps": 8 * k, "policy_version": k}
            assert ours.log_metrics(got_in, step=100 * k, keys_sep=".", axes=axes) == want
    theirs.close()
    ours.close()
    t, a = (ea.EventAccumulator(str(tmp_path / d / "exp")) for d in ("t", "a"))
    t.Reload()
    a.Reload()
    tags = ["alpha", "loss", "q.max", "q.min"]
    assert sorted(t.Tags()["scalars"]) == tags
    assert sorted(a.Tags()["scalars"]) == ["alpha", "axis/grad_steps", "axis/policy_version",
                                           *tags[1:]]  # fmt: skip
    for tag in tags:
        assert [(e.step, e.value) for e in a.Scalars(tag)] == [
            (e.step, e.value) for e in t.Scalars(tag)
        ], tag
    df = read_scalars(str(tmp_path / "a" / "exp"), axes=True)
    q = df[df["tag"] == "q.min"]
    assert q["step"].tolist() == [100, 200, 300] and q["value"].tolist() == [-1.0, -2.0, -3.0]
    assert q["grad_steps"].tolist() == [8.0, 16.0, 24.0]
    assert q["policy_version"].tolist() == [1.0, 2.0, 3.0]


def sprites(t: int, h: int, w: int, seed: int) -> torch.Tensor:
    """``(1, T, 3, H, W)`` uint8 frames of few colours (an Atari-like screen: a flat
    background and a moving block), which a GIF's palette holds exactly."""
    v = torch.zeros(t, 3, h, w, dtype=torch.uint8)
    v[:, :] = torch.tensor([40, 40, 60], dtype=torch.uint8)[:, None, None]
    for i in range(t):
        x = (i * 3 + seed) % (w - 4)
        v[i, :, 2:6, x : x + 4] = torch.tensor([200, 70, 70], dtype=torch.uint8)[:, None, None]
    return v[None]


def gradient(t: int, h: int, w: int) -> torch.Tensor:
    """``(1, T, 3, H, W)`` float frames in [0, 1]: smooth gradients that move (a
    rendered scene: more colours than a palette holds)."""
    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    frames = [
        torch.stack([(x * 8 + i) % 256, (y * 8 + 2 * i) % 256, (x + y + i) % 256]) for i in range(t)
    ]
    return (torch.stack(frames).float() / 255)[None]


#: (tag, video, step, kwargs, frame delay in ms, whether the palette holds every colour)
VIDEOS: list[tuple[str, torch.Tensor, int, dict[str, Any], int, bool]] = [
    ("pixels", sprites(6, 16, 24, 0), 0, {"fps": 10}, 100, True),  # VideoRecorder's call
    ("pixels", sprites(6, 16, 24, 5), 5, {"fps": 10}, 100, True),
    ("pixels", gradient(5, 16, 24), 10, {"fps": 15}, 70, False),  # 66.7 ms: nearest 1/100 s
    # three videos side by side: torch's power-of-two grid (1 x 4, one black), fps 4
    ("batch", torch.randint(0, 2, (3, 4, 3, 8, 8), generator=torch.Generator().manual_seed(0),
                            dtype=torch.uint8) * 255, 10, {}, 250, True),
]  # fmt: skip


def test_videos_read_back_as_torchrls_tensorboard_logger(tmp_path: Path) -> None:
    """The same ``log_video`` calls through TorchRL's ``TensorboardLogger`` (torch's
    ``add_video``, moviepy) and aoff's: the same tags, steps, sizes and frames, colours
    within the palette's error of the frames torch prepares, and aoff's frames last
    ``1 / fps`` to the 1/100 s. torch's path writes a delay of 0 whatever ``fps`` (moviepy
    1.x gives imageio seconds where it takes ms), so its are not compared; that and a
    grey video, which torch's GIF writer refuses, are in docs/migrate/torchrl.md."""
    pytest.importorskip("moviepy.editor")
    from torchrl.record.loggers import TensorboardLogger

    import aoff.torchrl

    from .gifs import colour_error, gif_frames, torch_frames

    theirs = TensorboardLogger("vid", str(tmp_path / "torchrl"))
    ours = aoff.torchrl.Logger("vid", str(tmp_path / "aoff"), pump="thread")
    for logger in (theirs, ours):
        for tag, video, step, kw, _, _ in VIDEOS:
            logger.log_video(tag, video, step=step, **kw)
    grey = torch.rand(1, 3, 1, 8, 8)  # torch's GIF writer (imageio) refuses one channel
    ours.log_video("grey", grey, step=1)
    with pytest.raises(ValueError, match=r"\(N, T, C, H, W\) with C 1 or 3"):
        ours.log_video("bad", VIDEOS[0][1][0], step=3)
    theirs.close()
    ours.close()
    want, got = read_videos(tmp_path / "torchrl" / "vid"), read_videos(tmp_path / "aoff" / "vid")
    assert sorted(want) == ["batch", "pixels"] and sorted(got) == ["batch", "grey", "pixels"]
    events = [(t, e) for t in ("pixels", "batch") for e in zip(want[t], got[t], strict=True)]
    assert len(events) == len(VIDEOS)
    for (tag, (t, o)), (_, video, step, _, delay, exact) in zip(events, VIDEOS, strict=True):
        assert (
            (o.step, o.width, o.height)
            == (t.step, t.width, t.height)
            == (step,) + ((32, 8) if tag == "batch" else (24, 16))
        ), tag
        source = torch_frames(video)
        t_frames, _ = gif_frames(t.encoded_image_string)  # torch's delays: see the docstring
        o_frames, o_delays = gif_frames(o.encoded_image_string)
        assert len(t_frames) == len(o_frames) == video.shape[1], tag
        assert o_delays == [delay] * len(o_frames), tag
        for frames in (t_frames, o_frames):
            mean, worst = colour_error(frames, source)
            if exact:
                assert worst == 0, tag
            else:  # 1,920 colours, a palette of 256: a few levels off, < 10 % at worst
                assert mean < 4 and worst <= 24, (tag, mean, worst)
    (g,) = got["grey"]
    mean, worst = colour_error(gif_frames(g.encoded_image_string)[0], torch_frames(grey))
    assert mean < 4 and worst <= 24


def read_videos(run: Path) -> dict[str, list[Any]]:
    acc = ea.EventAccumulator(str(run), size_guidance={ea.IMAGES: 0})
    acc.Reload()
    return {tag: acc.Images(tag) for tag in acc.Tags()["images"]}


def run_sac(kind: str, log_dir: Path) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import torchrl_sac
    finally:
        sys.path.remove(str(ROOT / "examples"))
    args = ["--logger", kind, "--logdir", str(log_dir), "--total-frames", "800"]
    args += ["--init-random-frames", "400", "--updates-per-batch", "4", "--hidden", "16"]
    assert torchrl_sac.main(args) == 0


def test_a_torchrl_sac_script_with_its_logger_swapped(tmp_path: Path) -> None:
    run_sac("tensorboard", tmp_path / "torchrl")
    run_sac("aoff", tmp_path / "aoff")
    want, got = same_runs(tmp_path / "torchrl"), same_runs(tmp_path / "aoff")
    assert sorted(got) == sorted(want) == ["sac", "sac/hparams"]
    for run in want:
        assert got[run]["tags"] == want[run]["tags"], run
        for key in want[run]:
            if not key.startswith("w:") and key != "s:time/update_s":  # wall clock
                assert got[run][key] == want[run][key], (run, key)
    scalars = want["sac"]
    assert len(scalars["s:train/loss_qvalue"]) == 3 and len(scalars["s:eval/reward"]) == 1
    assert len(scalars["s:time/update_s"]) == len(got["sac"]["s:time/update_s"])
