"""``aoff.rsl_rl.LogWriter`` (``_adapters/_rsl_rl.py``) in rsl_rl's own ``OnPolicyRunner``:
PPO trains a batched pendulum from one seed with rsl_rl's TensorBoard writer, with aoff's
(selected by ``cfg["logger"]["class_name"]``), and with aoff's plus ``track_episodes``
(the episode bookkeeping on the device), and TensorBoard's own reader sees the same
tags, steps and values; aoff's run also holds the config, the
checkpoints and files rsl_rl names, and the video it hands over."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from .gifs import gif_frames

# rsl_rl (and aoff.rsl_rl, which imports it) is imported by the tests that use it: every
# xdist worker collects every module, and only the one that runs these needs it

#: scalars that are clocks (their values differ run to run) and tags whose *step* is one
_TIMED_VALUES = ("Perf/total_fps", "Perf/collection_time", "Perf/learning_time")
_TIMED_STEPS = ("Train/mean_reward/time", "Train/mean_episode_length/time")


def train(log_dir: Path, logger: Any, iterations: int = 2, track: bool = False) -> None:
    from rsl_rl.runners import OnPolicyRunner

    from aoff.rsl_rl import track_episodes

    from .rsl_rl_env import BatchedPendulum, train_cfg

    torch.manual_seed(0)
    runner = OnPolicyRunner(BatchedPendulum(256), train_cfg(logger), log_dir=str(log_dir))
    if track:
        track_episodes(runner)
    runner.learn(iterations, init_at_random_ep_len=True)
    # rsl_rl's own host-side buffers were fed, or not, as the run says
    assert (len(runner.logger.rewbuffer) == 0) == track


def test_track_episodes_needs_aoff_s_writer_and_no_rnd(tmp_path: Path) -> None:
    from rsl_rl.runners import OnPolicyRunner

    from aoff.rsl_rl import track_episodes

    from .rsl_rl_env import BatchedPendulum, train_cfg

    torch.manual_seed(0)
    cfg = train_cfg("tensorboard")
    runner = OnPolicyRunner(BatchedPendulum(8), cfg, log_dir=str(tmp_path))
    track_episodes(runner)
    runner.logger.init_logging_writer()
    try:
        with pytest.raises(TypeError, match=r"aoff\.rsl_rl:LogWriter"):
            runner.logger.log(it=0)
    finally:
        runner.logger.writer.close()
    runner.logger.cfg["algorithm"]["rnd_cfg"] = {"weight": 1.0}
    with pytest.raises(NotImplementedError, match="RND"):
        track_episodes(runner)


def scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def write_mp4(path: Path, frames: int = 6) -> None:
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 24, "yuv420p"
        for i in range(frames):
            img = np.full((24, 32, 3), 40 * i, dtype=np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


@pytest.mark.slow  # three short PPO runs and aoff's agent: ~15 s on 2 cores
def test_on_policy_runner_through_rsl_rl_and_aoff_reads_back_the_same(tmp_path: Path) -> None:
    torch_run, aoff_run = tmp_path / "torch", tmp_path / "aoff"
    aoff_run.mkdir()
    write_mp4(aoff_run / "rollout.mp4")  # rsl_rl hands every MP4 under log_dir to save_video
    aoff_writer = {"class_name": "aoff.rsl_rl:LogWriter", "dashboard": False}
    train(torch_run, "tensorboard")
    train(aoff_run, aoff_writer)
    # the episode bookkeeping on the device (track_episodes): the same series again
    train(tmp_path / "tracked", aoff_writer, track=True)

    want = scalars(torch_run)
    assert {"Train/mean_reward", "Train/mean_episode_length", "/pendulum/cost"} <= set(want)
    for got in (scalars(aoff_run), scalars(tmp_path / "tracked")):
        assert sorted(got) == sorted(want)
        for tag, points in want.items():
            steps, values = [s for s, _ in points], [v for _, v in points]
            if tag not in _TIMED_STEPS:
                assert [s for s, _ in got[tag]] == steps, tag
            if tag not in _TIMED_VALUES:
                assert [v for _, v in got[tag]] == values, tag

    acc = EventAccumulator(str(aoff_run), size_guidance={"images": 0, "tensors": 0})
    acc.Reload()
    (table,) = acc.Tensors("hyperparameters")
    text = table.tensor_proto.string_val[0].decode()
    assert "train_cfg/num_steps_per_env" in text and "env_cfg/task" in text
    models = [
        e.tensor_proto.string_val[0].decode() for e in acc.Tensors("rsl_rl/models/text_summary")
    ]
    assert models[-1].endswith("model_1.pt") and Path(models[-1]).is_file()
    files = [
        e.tensor_proto.string_val[0].decode() for e in acc.Tensors("rsl_rl/files/text_summary")
    ]
    assert all(f.endswith(".diff") for f in files)  # rsl_rl's git state, if it found a repo
    (video,) = acc.Images("video")  # once, though rsl_rl offered it every iteration
    frames, _ = gif_frames(video.encoded_image_string)
    assert video.step == 0 and frames.shape == (6, 24, 32, 3)
    assert np.abs(frames[:, :, :, 0].mean(axis=(1, 2)) - 40 * np.arange(6)).max() < 8


def test_env_config_takes_each_shape_rsl_rl_hands_over() -> None:
    from aoff.rsl_rl import env_config

    @dataclasses.dataclass
    class Cfg:
        episode_length_s: float = 20.0

    class IsaacLike:
        def to_dict(self) -> dict[str, Any]:
            return {"sim": {"dt": 0.005}}

    class Plain:
        def __init__(self) -> None:
            self.decimation = 4

    assert env_config({"a": 1}) == {"a": 1}
    assert env_config(Cfg()) == {"episode_length_s": 20.0}
    assert env_config(IsaacLike()) == {"sim": {"dt": 0.005}}
    assert env_config(Plain()) == {"decimation": 4}


def test_a_writer_is_rsl_rl_s_log_writer_and_stop_finishes(tmp_path: Path) -> None:
    from rsl_rl.utils.log_writer import LogWriter as RslLogWriter

    from aoff.rsl_rl import LogWriter

    w = LogWriter(str(tmp_path), dashboard=False, pump="thread")
    assert isinstance(w, RslLogWriter)
    w.add_scalar("Loss/value", torch.tensor(2.5), 3)
    w.save_model(str(tmp_path / "model_3.pt"), 3)
    w.stop()
    assert w.report is not None and w.report.complete
    assert scalars(tmp_path)["Loss/value"] == [(3, 2.5)]
    with pytest.raises(Exception, match=r"no video frames|Invalid data"):
        w2 = LogWriter(str(tmp_path / "b"), dashboard=False, pump="thread")
        try:
            (tmp_path / "b" / "empty.mp4").write_bytes(b"")
            w2.save_video(tmp_path / "b" / "empty.mp4", 0)
        finally:
            w2.stop()


def test_a_mean_over_no_episode_is_not_written_nor_counted_bad(tmp_path: Path) -> None:
    """Before any episode ended rsl_rl writes no Train/mean_reward; neither does aoff."""
    from aoff._adapters._rsl_rl import _IterationMeans, _Mean, _Window
    from aoff._core import _events as ev
    from aoff._core._pending import PendingEvent
    from aoff.rsl_rl import LogWriter
    from aoff.torch import EpisodeStats

    stats = EpisodeStats(4)
    window = _Window()
    w = LogWriter(str(tmp_path), dashboard=False, pump="thread")
    for it, done in enumerate((False, True)):
        stats.update(torch.ones(4), torch.full((4,), done))
        mean = _Mean(_IterationMeans(stats.take(), window), 0)
        w._engine._put(
            PendingEvent((ev.W_SCALAR, 0.0, "", "Train/mean_reward", mean, it, 0), (mean,))
        )
    w.stop()
    assert w.report is not None and w.report.invalid_values == 0
    assert scalars(tmp_path)["Train/mean_reward"] == [(1, 2.0)]
