"""Layouts learnt ahead (``_evahead.Ahead``): a read of a file whose layouts an earlier
read in this process learnt learns them at their first record without decoding it, and
may start its first sweep where the general decoder read records one by one. What comes
back must be what a read that learns them one by one returns, the order of rows and tags
included, and a corrupted first record of such a layout is still skipped and counted."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import aoff
from aoff._runfolder.tensorboard import _evahead, _evfast
from aoff._runfolder.tensorboard._evfolder import EventFolder

from .test_read_scalars import _record_ends, _same_as_accumulator, lost_points, read_broken

_PPO_TAGS = (
    "charts/learning_rate", "losses/value_loss", "losses/policy_loss", "losses/entropy",
    "losses/old_approx_kl", "losses/approx_kl", "losses/clipfrac",
    "losses/explained_variance", "charts/SPS",
)  # fmt: skip


def _ppo(w: Any, rng: random.Random, iterations: int) -> None:
    """CleanRL's PPO pattern: episodes' returns and lengths as they end, the losses once an
    iteration (steps from 4 to past 16,384: three varint widths, learnt in a first sweep)."""
    ends = [rng.randint(5, 100) for _ in range(4)]
    g = 0
    for _ in range(iterations):
        for _ in range(128):
            g += 4
            for env in range(4):
                ends[env] -= 1
                if ends[env] == 0:
                    w.add_scalar("charts/episodic_return", rng.random(), g)
                    w.add_scalar("charts/episodic_length", rng.randint(5, 500), g)
                    ends[env] = rng.randint(5, 100)
        for tag in _PPO_TAGS:
            w.add_scalar(tag, rng.random(), g)


def _write(folder: Path, body: Callable[[Any, random.Random], None]) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(folder))
    body(w, random.Random(7))
    w.close()
    (path,) = folder.iterdir()
    return path


def _many_tags_later(w: Any, rng: random.Random) -> None:
    """Ten tags for a while, then one more tag every few steps up to 90 (a file that
    reaches 64 tags after its first sweep: its later tags are learnt as layouts of any
    tag, numbered window by window)."""
    for g in range(1, 6000):
        w.add_scalar(f"a/{g % 10}", rng.random(), g)
        if g > 1500 and g % 40 == 0:
            for k in range(10, min(10 + (g - 1500) // 40, 90)):
                w.add_scalar(f"late/{k}", rng.random(), g)


def _among_media(w: Any, rng: random.Random) -> None:
    """Scalars among histograms, images and text, and a ``new_style`` tensor tag."""
    nrng = np.random.default_rng(1)
    for g in range(1, 3000):
        w.add_scalar("loss", rng.random(), g)
        w.add_scalar("tensor", rng.random(), g, new_style=True)
        if g % 97 == 0:
            w.add_scalar("charts/episodic_return", rng.random(), g)
        if g % 200 == 0:
            w.add_histogram("weights", nrng.normal(size=100), g)
            w.add_image("frame", nrng.random((3, 8, 8)), g)
            w.add_text("note", f"iteration {g}", g)


def _sb3(w: Any, rng: random.Random) -> None:
    """SB3's logger: the same tags every dump, the first at step 0 (a record without a
    step: another layout, read by the general decoder)."""
    for g in range(0, 40_000, 16):
        for tag in ("rollout/ep_rew_mean", "time/fps", "train/loss", "train/entropy_loss"):
            w.add_scalar(tag, rng.random(), g)


SHAPES: dict[str, Callable[[Any, random.Random], None]] = {
    "ppo": lambda w, rng: _ppo(w, rng, 80),
    "sb3": _sb3,
    "many-tags-later": _many_tags_later,
    "among-media": _among_media,
}


@pytest.fixture
def unforeseen() -> Iterator[Callable[[], None]]:
    """Forgets what reads in this process learnt ahead (as a fresh process knows none)."""
    _evahead.FORESEEN.clear()
    yield _evahead.FORESEEN.clear
    _evahead.FORESEEN.clear()


def _general_records(path: Path) -> tuple[int, int, pd.DataFrame]:
    """``(records the general decoder read, records read in bulk)`` of one read of
    ``path``, and its points."""
    folder = EventFolder()
    seen = []
    event = folder.event

    def counted(buf: Any, start: int, end: int) -> None:
        seen.append(start)
        event(buf, start, end)

    folder.event = counted  # type: ignore[method-assign]
    folder.read([str(path)])
    cols = [(tag, *s.take()) for tag, s in folder.series.items()]
    frame = pd.DataFrame(
        [(tag, st, w, v) for tag, s, w, vs in cols for st, w, v in zip(s, w, vs, strict=True)],
        columns=["tag", "step", "wall_time", "value"],
    )
    return len(seen), folder.bulk_records, frame


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_read_that_learns_ahead_returns_what_one_that_learns_one_by_one_does(
    tmp_path: Path, shape: str, unforeseen: Callable[[], None]
) -> None:
    """Each file read in a process that has read it before (its layouts learnt ahead) and
    in one that has not: the same frame, rows and tags in the same order, and what
    ``EventAccumulator`` reads."""
    path = _write(tmp_path / "run", SHAPES[shape])
    fresh = aoff.read_scalars(tmp_path / "run")
    again = aoff.read_scalars(tmp_path / "run")
    pd.testing.assert_frame_equal(fresh, again)
    unforeseen()
    pd.testing.assert_frame_equal(aoff.read_scalars(tmp_path / "run"), fresh)
    assert _same_as_accumulator(again, str(tmp_path / "run"), tmp_path / "run") > 0
    if shape == "ppo":  # the first sweep starts after the file version: nothing read one by one
        unforeseen()
        general, _bulk, first = _general_records(path)
        general_again, bulk_again, second = _general_records(path)
        assert general > 2 and general_again == 1, (general, general_again)
        assert bulk_again == len(_record_ends(path.read_bytes())) - 1
        pd.testing.assert_frame_equal(first, second)


@pytest.mark.parametrize("where", ["general", "first sweep", "wider step", "all"])
def test_a_corrupted_first_record_of_a_layout_learnt_ahead_is_skipped_and_counted(
    tmp_path: Path, where: str, unforeseen: Callable[[], None]
) -> None:
    """CleanRL's PPO pattern read intact (its layouts learnt ahead), then a copy with a
    value byte flipped in the first record of a layout: one the general decoder reads
    first when nothing is learnt ahead (the second scalar record), the first record of
    a tag that a first sweep learns (the first loss: the other losses follow it, so a
    layout learnt from it would number its tag before theirs), the first record of a
    3-byte step, or all three. Each is skipped and counted, no other point lost, and the
    frame is the one a process that learnt nothing ahead reads (the same rows, and tags,
    in the same order)."""
    path = _write(tmp_path / "intact", SHAPES["ppo"])
    intact = aoff.read_scalars(tmp_path / "intact")
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    starts = [0, *ends[:-1]]
    steps = [_step(data, start) for start in starts]
    wide = next(r for r, s in enumerate(steps) if s is not None and s >= 1 << 14)
    loss = next(r for r, s in enumerate(starts) if b"losses/value_loss" in data[s : ends[r]])
    hit = {"general": [2], "first sweep": [loss], "wider step": [wide], "all": [2, loss, wide]}
    hit = hit[where]
    for r in hit:
        data[ends[r] - 6] ^= 0x10  # a byte of the record's value: its data checksum fails
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.problems == [f"{broken / path.name}: {len(hit)} corrupt record(s) skipped"]
    lost = lost_points(intact, df)
    assert sorted(lost["step"]) == sorted(steps[r] for r in hit)
    unforeseen()
    with pytest.warns(aoff.AoffWarning, match="corrupt record"):
        pd.testing.assert_frame_equal(aoff.read_scalars(broken), df)


def _step(data: bytearray, start: int) -> int | None:
    """The step of the scalar record at ``start`` (torch's layout: the step's varint at
    byte 22), None for another record."""
    if data[start + 12] != 0x09 or data[start + 21] != 0x10:
        return None
    step, shift, at = 0, 0, start + 22
    while True:
        step |= (data[at] & 0x7F) << shift
        if data[at] < 0x80:
            return step
        shift += 7
        at += 1


def test_a_record_of_an_image_histogram_or_text_is_told_without_decoding_it() -> None:
    """``_no_scalar`` says True only for an event of one value that gives no point and
    nothing to note: an image or histogram without metadata, a tensor of a tag whose
    plugin is known and not ``scalars`` (a text after its first), a tensor without metadata
    of a tag of no plugin; a value with its tag's first metadata, a ``scalars`` tensor, a
    second value that is a scalar, a scalar alone, a file version and a record cut short
    are read by the general path (False)."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary

    def told(
        *values: Summary.Value, plugins: dict[str, str | None] | None = None, **kw: Any
    ) -> bool:
        data = Event(wall_time=1.5, step=70_000, **kw)
        if values:
            data.summary.value.extend(values)
        raw = data.SerializeToString()
        return _evfast._no_scalar(raw, 0, len(raw), plugins or {})

    histo = Summary.Value(tag="w", histo=HistogramProto(min=0.0, max=1.0, num=3.0))
    image = Summary.Value(
        tag="frame", image=Summary.Image(height=2, width=2, encoded_image_string=b"x" * 300)
    )
    text_meta = {"plugin_data": {"plugin_name": "text"}}
    text = Summary.Value(tag="note", tensor={"dtype": 7, "string_val": [b"hi"]}, metadata=text_meta)
    bare = Summary.Value(tag="note", tensor={"dtype": 1, "float_val": [0.5]})
    assert told(histo) and told(image)
    assert told(text, plugins={"note": "text"}) and told(text, plugins={"note": None})
    assert told(bare) and told(bare, plugins={"note": "text"})
    assert not told(text)  # the tag's first metadata: noted by the general decoder
    assert not told(bare, plugins={"note": "scalars"}) and not told(
        text, plugins={"note": "scalars"}
    )
    assert not told(Summary.Value(tag="w", histo=histo.histo, metadata=text_meta))
    assert not told(Summary.Value(tag="", histo=histo.histo))
    assert not told(histo, Summary.Value(tag="loss", simple_value=0.5))
    assert not told(Summary.Value(tag="loss", simple_value=0.5))
    assert not told(file_version="brain.Event:2")
    for value in (histo, text):
        raw = Event(wall_time=1.5, step=3, summary=Summary(value=[value])).SerializeToString()
        assert not any(_evfast._no_scalar(raw, 0, n, {"note": "text"}) for n in range(len(raw)))
