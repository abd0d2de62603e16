"""``aoff.torchrl.Logger`` is a TorchRL logger: the same calls through TorchRL's own
``TensorboardLogger`` and through aoff's read back the same with TensorBoard's reader,
and a TorchRL SAC script (``examples/torchrl_sac.py``) run with its logger swapped
writes the same series, wall-clock ones apart."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torchrl")
pytest.importorskip("gymnasium")

import torch
from tensorboard.backend.event_processing import event_accumulator as ea
from torchrl.record.loggers import Logger as TorchRLLogger
from torchrl.record.loggers import TensorboardLogger

import aoff.torchrl

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


def test_videos_take_torchrls_layout_and_fps(tmp_path: Path) -> None:
    from PIL import Image

    logger = aoff.torchrl.Logger("vid", str(tmp_path), pump="thread")
    # TorchRL's VideoRecorder hands (1, T, C, H, W) uint8 and its fps= as a keyword
    video = torch.randint(0, 255, (1, 6, 3, 16, 24), dtype=torch.uint8)
    logger.log_video("pixels", video, step=3, fps=10)
    with pytest.raises(ValueError, match=r"\(N, T, C, H, W\) with C 1 or 3"):
        logger.log_video("bad", video[0], step=3)
    with pytest.raises(TypeError, match="a dict or an OmegaConf config, got list"):
        logger.log_hparams([("lr", 0.1)])
    logger.close()
    acc = ea.EventAccumulator(str(tmp_path / "vid"), size_guidance={ea.IMAGES: 0})
    acc.Reload()
    [event] = acc.Images("pixels")
    assert (event.step, event.width, event.height) == (3, 24, 16)
    import io

    gif = Image.open(io.BytesIO(event.encoded_image_string))
    assert getattr(gif, "n_frames", 1) == 6 and gif.info["duration"] == 100  # 10 fps


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
