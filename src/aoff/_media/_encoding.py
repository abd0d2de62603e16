"""How the encoder is to treat one call's frames, besides their layout: a typed value.

Why a type of its own: an option spelled into the layout string (a prefix for torch's
conventions, a suffix for the GIF palette) must be parsed apart again by the encoder,
and each new option is one more spelling in it. A frozen value, checked when built,
travels in the ``MEDIA`` event's own field (``_core/_events.py``); the layout stays a
layout.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PALETTES", "PLAIN", "TORCH", "Encoding"]

#: a ``log_video(palette=...)``: one palette for the whole video, or one per frame
PALETTES = ("video", "frame")


@dataclass(frozen=True, slots=True)
class Encoding:
    """One media call's encoding options (a bad one is a ``ValueError`` when built)."""

    #: the frames follow torch's ``add_image``/``add_video`` conventions
    #: (``aoff.tensorboard``, SB3's ``Image``/``Video``): its layouts (``NCHW`` as a
    #: grid, ``NTCHW``), float scaling and grey as RGB
    torch: bool = False
    #: a GIF's colours: ``"video"`` (one palette for the whole video) or ``"frame"``
    palette: str = "video"

    def __post_init__(self) -> None:
        if type(self.torch) is not bool:
            raise ValueError(f"Encoding.torch must be a bool, got {self.torch!r:.60}")
        if self.palette not in PALETTES:
            raise ValueError(f"Encoding.palette must be one of {PALETTES}, got {self.palette!r}")


#: aoff's own calls' defaults
PLAIN = Encoding()
#: torch's calls (``aoff.tensorboard``'s ``add_image``/``add_images``/``add_video``)
TORCH = Encoding(torch=True)
