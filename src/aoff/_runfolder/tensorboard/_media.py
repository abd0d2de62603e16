"""Images and videos as TensorBoard image summaries, as torch's ``SummaryWriter`` writes them.

An image is a ``Summary.Value(tag, image=Summary.Image(height, width, colorspace,
encoded_image_string=<PNG>))``; a video is the same with an animated GIF as the encoded
string (``add_video``'s format; TensorBoard's Images tab plays it). ``colorspace`` is the
channel count (1 grey, 3 RGB, 4 RGBA; a GIF says 3 or 1, its alpha dropped). Built with
TensorBoard's protobuf classes: media are rare, so the hand-written scalar encoder is not
worth extending for them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._core._records import MediaRecord

__all__ = ["MEDIA_FORMATS", "media_events"]

#: what the TensorBoard backend asks the media encoder for
MEDIA_FORMATS = {"image": "png", "video": "gif"}


def media_events(items: Sequence[MediaRecord]) -> list[bytes]:
    """One serialised ``Event`` per item."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    out: list[bytes] = []
    for rec in items:
        fmt = MEDIA_FORMATS[rec.what]
        _, h, w, c = rec.shape
        if fmt == "gif" and c == 4:
            c = 3
        image = summary_pb2.Summary.Image(
            height=h, width=w, colorspace=c, encoded_image_string=rec.encoded[fmt]
        )
        value = summary_pb2.Summary.Value(tag=rec.key, image=image)
        event = event_pb2.Event(wall_time=rec.wall_time, step=rec.step)
        event.summary.value.append(value)
        out.append(bytes(event.SerializeToString()))
    return out
