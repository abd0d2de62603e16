"""Real-CUDA check: ``log_video``/``log_image`` of a CUDA tensor never synchronise.

Skipped without CUDA. Run on a GPU machine with::

    python -m pytest -q -m gpu tests/gpu/test_media_gpu.py

Under ``torch.cuda.set_sync_debug_mode("error")`` a synchronising call raises: the
frames' copy to pinned memory (``non_blocking=True``, a CUDA event after it) and the
pump's ``Event.query()`` never wait. The tensors are changed on the device right after
each call: what TensorBoard reads back must be the frames at the call.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageSequence

import aoff

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


@pytest.mark.parametrize("pump", ["process", "thread"])
def test_cuda_frames_are_copied_without_a_sync(tmp_path: Path, pump: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    video = torch.zeros(6, 3, 16, 16, dtype=torch.uint8, device="cuda")  # TCHW
    video[1::2] = 255
    image = torch.full((8, 8, 3), 0.5, device="cuda", dtype=torch.float32)
    log = aoff.OffPolicyLogger(
        log_dir=tmp_path, pump=pump, handle_sigterm=False, system_interval=0,  # type: ignore[arg-type]
        display=aoff.NullDisplay(),
    )  # fmt: skip
    torch.cuda.set_sync_debug_mode("error")
    try:
        for step in range(3):
            log.log_video("v", video, step=step, dataformats="TCHW")
            video.add_(1)  # on the device, after the call: not in what was logged
            log.log_image("i", image, step=step)
            image.mul_(0.5)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    report = log.close()
    assert report.media_written == 6 and report.complete
    acc = EventAccumulator(os.fspath(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    vids, imgs = acc.Images("v"), acc.Images("i")
    assert [v.step for v in vids] == [0, 1, 2]
    for s, v in enumerate(vids):
        frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(
            Image.open(io.BytesIO(v.encoded_image_string)))]  # fmt: skip
        assert len(frames) == 6
        assert (frames[0] == s).all() and (frames[1] == (255 + s) % 256).all()
    for s, i in enumerate(imgs):
        px = np.asarray(Image.open(io.BytesIO(i.encoded_image_string)))
        assert (px == int(0.5 ** (s + 1) * 255)).all()
