"""A media call's encoding options are a typed field of its ``MEDIA`` event
(``_media/_encoding.py``), not spellings packed into ``dataformats``: checked when built,
carried as they are, and what the encoder acts on."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aoff._adapters._writer_media import torch_image
from aoff._core import _events as ev
from aoff._media._calls import MediaBudget, MediaCalls
from aoff._media._encoder import MediaEncoder
from aoff._media._encoding import PLAIN, TORCH, Encoding


class Calls(MediaCalls[None]):
    """The media calls, putting their events in a list."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []
        self._put = self.events.append
        self._clock = lambda: 1.0
        self._media_budget = MediaBudget(1 << 30)


def test_a_bad_option_is_a_value_error_when_built() -> None:
    with pytest.raises(ValueError, match=r"Encoding\.palette must be one of"):
        Encoding(palette="per-frame")
    with pytest.raises(ValueError, match=r"Encoding\.torch must be a bool"):
        Encoding(torch=1)  # type: ignore[arg-type]


def test_the_options_travel_in_their_own_field_and_drive_the_encoder() -> None:
    calls = Calls()
    calls.log_video("v", np.zeros((2, 4, 4, 3), np.uint8), step=1, palette="frame")
    grey = np.zeros((1, 4, 4), np.uint8)
    torch_image(calls, "add_image", "t", grey, 2, None, "CHW")  # type: ignore[arg-type]
    calls.log_image("i", grey, step=3, dataformats="CHW")
    fields = ev.KINDS[ev.MEDIA].fields
    got = [dict(zip(fields, e[2:], strict=True)) for e in calls.events]
    assert [(g["dataformats"], g["encoding"]) for g in got] == [
        ("THWC", Encoding(palette="frame")),
        ("CHW", TORCH),  # the layout stays a layout
        ("CHW", PLAIN),
    ]
    encoder = MediaEncoder(say=lambda _: None)
    encoder.formats["image"].add("png")
    shapes: list[Any] = []
    for g in got[1:]:
        job = ("k", 0, 1.0, "image", g["frames"], "CHW", 0.0, 0, g["encoding"])
        rec, _ = encoder._encode(job)
        shapes.append(rec.shape)
    assert shapes == [(1, 4, 4, 3), (1, 4, 4, 1)]  # torch's grey image is RGB, aoff's grey
