"""The bulk path (``_evfast``) on a file of many tags, each appearing rarely: records of
every tag of one tag length share one layout (the tag read as a slice), what comes back is
what TensorBoard's ``EventAccumulator`` reads, and a record whose tag bytes were changed
fails its own checksum however many are changed alike."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import aoff
from aoff._runfolder.tensorboard._evfolder import EventFolder

from .test_read_scalars import _record_ends, _same_as_accumulator, lost_points, read_broken

TAGS = 400


def _rare_tags_run(folder: Path, records: int, *, new_style: bool) -> Path:
    """torch's ``SummaryWriter``: ``records`` scalars, each of one of ``TAGS`` tags at
    random (a per-environment metric: each tag seen a few times), one step each."""
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(5)
    w = SummaryWriter(str(folder))
    for g in range(records):
        w.add_scalar(f"per_env/{rng.randrange(TAGS)}/return", rng.random(), g, new_style=new_style)
    w.close()
    (path,) = folder.iterdir()
    return path


@pytest.mark.parametrize("new_style", [False, True], ids=["simple_value", "tensor"])
def test_many_rare_tags_are_read_in_bulk_from_a_few_layouts(
    tmp_path: Path, new_style: bool
) -> None:
    """400 tags over 2,500 records (torch's ``new_style`` tensors carry their metadata in
    every record; a tag's first one says it is a scalar): nearly every record is read in
    bulk, from a few layouts (one per tag length and step width, not one per tag), and
    every point is what ``EventAccumulator`` reads."""
    path = _rare_tags_run(tmp_path, 2500, new_style=new_style)
    folder = EventFolder()
    folder.read([str(path)])
    # 400 tags, the first 64 learnt one by one (a file that repeats its few tags in order
    # keeps a layout per tag, for the cycle path), the rest from a few layouts of any tag
    assert len(folder.fast.by_id) < TAGS // 4, len(folder.fast.by_id)
    assert folder.bulk_records > 0.8 * 2500, folder.bulk_records
    assert _same_as_accumulator(aoff.read_scalars(tmp_path), str(tmp_path), tmp_path) == 2500


@pytest.mark.parametrize("new_style", [False, True], ids=["simple_value", "tensor"])
@pytest.mark.parametrize("any_first", [False, True])
def test_records_told_the_layouts_of_any_tag_first_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_style: bool, any_first: bool
) -> None:
    """The first 64 tags (layouts of one tag each) written often among 400 rare ones:
    whether a window's records are told the layouts of any tag first (``any_first``:
    after the first window of enough records, as for a file whose records are nearly
    all of rare tags) or last (never), the records of both kinds read what
    ``EventAccumulator`` reads, the same table, tag order included."""
    from torch.utils.tensorboard import SummaryWriter

    from aoff._runfolder.tensorboard import _evfast

    monkeypatch.setattr(_evfast, "_ANY_FIRST_SHARE", 1.0 if any_first else 0.0)
    monkeypatch.setattr(_evfast, "_ANY_FIRST_AFTER", 256)
    rng = random.Random(11)
    w = SummaryWriter(str(tmp_path))
    for g in range(6000):
        often = g < 64 or rng.random() < 0.5
        tag = f"per_env/{g % 64 if g < 64 else rng.randrange(64 if often else TAGS)}/return"
        w.add_scalar(tag, rng.random(), g, new_style=new_style)
    w.close()
    (path,) = tmp_path.iterdir()
    folder = EventFolder()
    folder.read([str(path)])
    assert folder.fast.any_first == any_first
    assert folder.bulk_records > 0.8 * 6000, folder.bulk_records
    df = aoff.read_scalars(tmp_path)
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) == 6000
    monkeypatch.setattr(_evfast, "_ANY_FIRST_SHARE", 0.0 if any_first else 1.0)
    assert df.equals(aoff.read_scalars(tmp_path))


def test_a_window_of_records_of_neither_kind_keeps_the_order(tmp_path: Path) -> None:
    """160 tags met once among a loss's records (layouts of any tag learnt), then the loss
    a step among eight texts (no layout of either kind): its windows have few records of
    a layout of one tag, but none of a layout of any tag, so the loss stays told its own
    layout first (``any_first`` is not set by records that have neither); every point as
    ``EventAccumulator`` reads it."""
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(13)
    w = SummaryWriter(str(tmp_path))
    for g in range(200, 1000):  # (the tags met in the sweeps: after 64, of any tag)
        w.add_scalar("losses/qf", rng.random(), g)
        if g % 5 == 0:
            w.add_scalar(f"per_env/{g}/return", rng.random(), g)
    for g in range(1000, 2500):
        w.add_scalar("losses/qf", rng.random(), g)
        for k in range(8):
            w.add_text(f"notes/{k}", "x", g)
    w.close()
    (path,) = tmp_path.iterdir()
    folder = EventFolder()
    folder.read([str(path)])
    assert folder.fast.any_tag.sizes and not folder.fast.any_first
    df = aoff.read_scalars(tmp_path)
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) == 2300 + 160


@pytest.mark.parametrize("corrupted", [2, 10])
def test_tags_changed_alike_are_each_caught_in_bulk(tmp_path: Path, corrupted: int) -> None:
    """The same bit flipped in the tag of ``corrupted`` records (each becomes a record of
    another tag that exists, of the same length): each record's tag bytes count in its own
    checksum, so every one is skipped and counted, and no point comes back under a wrong
    tag. The broken file is read after the intact one in this process: its layouts'
    checksum tables are the ones kept from that read (``Layout.crc_tables``)."""
    intact_dir = tmp_path / "intact"
    path = _rare_tags_run(intact_dir, 2500, new_style=False)
    intact = aoff.read_scalars(intact_dir)
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    hit = [1500 + 5 * k for k in range(corrupted)]
    for r in hit:
        at = data.rindex(b"/return", ends[r - 1], ends[r]) - 1
        data[at] ^= 0x01  # the tag's last digit: per_env/12/return -> per_env/13/return
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.bulk_records > 1800
    assert reader.problems == [f"{broken / path.name}: {corrupted} corrupt record(s) skipped"]
    merged = intact.merge(df, on=["tag", "step", "wall_time", "value"], how="outer", indicator=True)
    assert (merged["_merge"] == "right_only").sum() == 0  # nothing under a wrong tag
    lost = merged.loc[merged["_merge"] == "left_only", "step"]
    assert sorted(lost) == [r - 1 for r in hit]  # record 0 is the file version


@pytest.mark.parametrize(
    ("new_style", "field"),
    [(False, "wall"), (False, "step"), (False, "value"), (True, "wall"), (True, "step")],
)
def test_fields_changed_alike_in_records_of_any_tag_are_each_caught(
    tmp_path: Path, new_style: bool, field: str
) -> None:
    """A bit flipped alike in the wall time, the step or the value of ten records of
    layouts of any tag (read as an ``_evlayout.Tail`` reads its records: the fields as gathered,
    a byte alike in every record once, their tag's share of the checksum taken per
    tag): each record fails its own checksum, so each is skipped and counted and no
    changed point comes back."""
    intact_dir = tmp_path / "intact"
    path = _rare_tags_run(intact_dir, 2500, new_style=new_style)
    intact = aoff.read_scalars(intact_dir)
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    hit = [1500 + 7 * k for k in range(10)]
    for r in hit:  # (record r starts at ends[r - 1]; its data at 12, a wall time at 13)
        at = {"wall": ends[r - 1] + 15, "step": ends[r - 1] + 22, "value": ends[r] - 7}[field]
        data[at] ^= 0x01
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.bulk_records > 1800
    assert reader.problems == [f"{broken / path.name}: 10 corrupt record(s) skipped"]
    lost = lost_points(intact, df)
    assert sorted(lost["step"]) == [r - 1 for r in hit]  # record 0 is the file version


@pytest.mark.parametrize("more_sizes", [False, True])
def test_a_byte_fixed_in_one_layout_of_a_size_and_not_another_is_still_checked(
    tmp_path: Path, more_sizes: bool
) -> None:
    """Two layouts of one record size that fix different bytes (tag ``abc`` at a 2-byte
    step, ``ab`` at a 3-byte step), in no repeating order (the sweep reads them): a bit
    flipped in ``abc`` records where ``ab``'s step has its third byte (a byte ``abc``
    fixes, outside a hash of the bytes both fix) fails each of those records, as
    TensorBoard's reader fails them: they are skipped and counted, every other point
    read. ``more_sizes``: five more tags of other lengths among them, so that the
    records of every size are told their layouts at once (``_evindex.Flat``), whose
    hash of a size's common bytes leaves that byte to a comparison of its own."""
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(3)
    w = SummaryWriter(str(tmp_path / "intact"))
    others = ["e", "dddd", "eeeee", "ffffff", "ggggggg"] if more_sizes else []
    for i in range(3000):
        pick = rng.random()
        if others and pick < 0.25:
            w.add_scalar(others[int(pick * 20)], rng.random(), 200 + i)  # other sizes
        elif pick < (0.625 if others else 0.5):
            w.add_scalar("abc", rng.random(), 200 + i)  # a 2-byte step
        else:
            w.add_scalar("ab", rng.random(), 20_000 + i)  # a 3-byte step
    w.close()
    (path,) = (tmp_path / "intact").iterdir()
    data = bytearray(path.read_bytes())
    ends = [0, *_record_ends(bytes(data))]
    abc = [
        r
        for r in range(1, len(ends) - 1)
        if data[ends[r + 1] - 13 : ends[r + 1] - 8] == b"\x03abc\x15"
    ]
    assert data[ends[abc[0]] + 24] == 0x2A and ends[abc[0] + 1] - ends[abc[0]] in {
        ends[r + 1] - ends[r] for r in range(1, len(ends) - 1) if r not in abc
    }  # the records are of one size; the byte flipped is a key in abc's layout
    hit = abc[len(abc) // 2 : len(abc) // 2 + 3]
    for r in hit:
        data[ends[r] + 24] ^= 0x01
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.bulk_records > 2500
    assert reader.problems == [f"{broken / path.name}: 3 corrupt record(s) skipped"]
    intact = aoff.read_scalars(tmp_path / "intact")
    assert _same_as_accumulator(intact, str(tmp_path / "intact"), tmp_path / "intact") == 3000
    lost = lost_points(intact, df)
    assert sorted(lost["step"]) == sorted(200 + r - 1 for r in hit)  # record 0: the version


def test_a_file_without_a_version_is_swept_up_to_a_step_that_goes_back(tmp_path: Path) -> None:
    """A file older than ``brain.Event:2`` (no version record), its tags in no order the
    cycle path follows: the sweeps read its records in bulk up to a step that goes back,
    where the general decoder purges (``EventAccumulator``'s rule for such files), and on
    after it; the points are the accumulator's."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from aoff._runfolder.tensorboard._tfrecord import frame_many

    rng = random.Random(7)

    def event(step: int) -> bytes:
        tag = rng.choice(["loss/a", "loss/bb", "charts/ccc", "charts/dddd"])
        value = summary_pb2.Summary.Value(tag=tag, simple_value=rng.random())
        ev = event_pb2.Event(
            wall_time=1e9 + step + rng.random(), step=step,
            summary=summary_pb2.Summary(value=[value]),
        )  # fmt: skip
        return bytes(ev.SerializeToString())

    steps = [*range(4000), *range(2500, 2600), *range(4000, 6000)]  # back at 2,500
    (tmp_path / "events.out.tfevents.1.old").write_bytes(frame_many([event(s) for s in steps]))
    folder = EventFolder()
    folder.read([str(tmp_path / "events.out.tfevents.1.old")])
    assert folder.file_version is None and folder.bulk_records > 5000
    df = aoff.read_scalars(tmp_path)
    # (each tag purged from its own step back on: a few of the others' points stay)
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) == len(df) > 4600
    assert df["step"].max() == 5999


@pytest.mark.parametrize("keep_most", [None, 500])
def test_points_kept_across_windows_are_handed_over_before_a_purge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep_most: int | None
) -> None:
    """The sweeps keep their points until the buffer's end (``FastPath.flush``: one sort
    and one block a tag for every window): a ``SessionLog.START`` read by the general
    decoder between two sweeps purges the points the sweeps before it read (at a step
    from it on), and the points after it come after those, each tag's in file order, as
    ``EventAccumulator`` reads them; and reading the file in small chunks (a flush at
    each) gives each tag the same points. ``keep_most``: the points handed over whenever
    that many are kept (a bound on a read's memory), not only at the buffer's end."""
    from aoff._runfolder.tensorboard import _evfast

    if keep_most is not None:
        monkeypatch.setattr(_evfast, "_KEEP_MOST", keep_most)
    from tensorboard.compat.proto import event_pb2
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(7)
    w = SummaryWriter(str(tmp_path))
    for g in range(6000):  # ~300 KB: a few windows of growing size
        w.add_scalar(f"per_env/{rng.randrange(TAGS)}/return", rng.random(), g)
    assert w.file_writer is not None
    start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
    w.file_writer.add_event(event_pb2.Event(step=4000, session_log=start))
    for g in range(4000, 7000):
        w.add_scalar(f"per_env/{rng.randrange(TAGS)}/return", rng.random(), g)
    w.close()
    (path,) = tmp_path.iterdir()
    folder = EventFolder()
    folder.read([str(path)])
    assert folder.bulk_records > 8000 and not folder.fast.pending
    assert _same_as_accumulator(aoff.read_scalars(tmp_path), str(tmp_path), tmp_path) == 7000
    chunked = EventFolder(chunk=16 << 10)
    chunked.read([str(path)])
    assert set(chunked.series) == set(folder.series)
    for tag, series in folder.series.items():
        ours, theirs = series.take(), chunked.series[tag].take()
        assert all((a == b).all() for a, b in zip(ours, theirs, strict=True)), tag


def test_a_tensor_tag_whose_first_metadata_names_another_plugin_stays_out(
    tmp_path: Path,
) -> None:
    """Many rare tags as ``new_style`` tensors (their records of a layout of any tag; the
    first record of each tag read from its layout, its metadata noted in file order, as
    the general decoder notes it): a tag whose first record's metadata names another
    plugin (``scalarz``, a record of the same size) is no scalar, as to
    ``EventAccumulator``, though its later records name ``scalars``; every other tag
    reads as ``EventAccumulator`` reads it."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(9)
    w = SummaryWriter(str(tmp_path))
    assert w.file_writer is not None
    other = "per_env/999/return"  # (no tag drawn at random: 0-399)
    for g in range(3000):
        if g == 1000:  # the tag's first record, once the sweep reads layouts of any tag
            meta = summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalarz")
            )
            value = summary_pb2.Summary.Value(
                tag=other, tensor=tensor_util.make_tensor_proto(1.5, dtype="float32"), metadata=meta
            )
            ev = event_pb2.Event(wall_time=1e9, step=g, summary=summary_pb2.Summary(value=[value]))
            w.file_writer.add_event(ev)
        tag = other if g > 1000 and g % 50 == 0 else f"per_env/{rng.randrange(TAGS)}/return"
        w.add_scalar(tag, rng.random(), g, new_style=True)
    w.close()
    df = aoff.read_scalars(tmp_path)
    assert other not in set(df["tag"])
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) > 2900


@pytest.mark.parametrize("twice", [0, 1, 50])
def test_the_order_of_a_windows_records_is_a_stable_sorts(twice: int) -> None:
    """``_record_order``: the records of a window's groups (each group's in order, the
    groups one after another), with ``twice`` records named twice (a record of two
    values): the order a stable sort gives, scattered where no record is named twice."""
    from aoff._runfolder.tensorboard import _evfast

    rng = np.random.default_rng(twice)
    n = 5000
    named = rng.permutation(n)[: n - 300]  # (some records give no point)
    rec = np.concatenate([named, named[rng.choice(len(named), twice, replace=False)]])
    groups = np.array_split(rec, 7)
    rec = np.concatenate([np.sort(g) for g in groups])
    order = _evfast._record_order(rec, n)
    assert order.tolist() == np.argsort(rec, kind="stable").tolist()


def test_tags_apart_tells_a_tag_in_two_groups() -> None:
    """``_tags_apart``: true where each tag id is in one group at most (a record that
    gives no point, -1, in any), false where one is in two."""
    from aoff._runfolder.tensorboard import _evfast

    a, b = np.array([0, 2, 2, -1]), np.array([1, 3, -1])
    assert _evfast._tags_apart([a, b], 4)
    assert _evfast._tags_apart([a], 4)
    assert not _evfast._tags_apart([a, b, np.array([3])], 4)
    assert not _evfast._tags_apart([a, np.array([1, 0])], 4)


@pytest.mark.parametrize("new_style", [False, True], ids=["simple_value", "tensor"])
def test_a_tag_whose_records_a_window_reads_in_two_groups_keeps_its_order(
    tmp_path: Path, new_style: bool
) -> None:
    """400 rare tags whose steps pass 16,384 (a step's varint one byte wider: each tag's
    records of two layouts of any tag, two groups, in one window): each tag's points in
    file order, as ``EventAccumulator`` reads them (a window whose tags each lie in one
    group is handed over in the groups' order, no sort into record order)."""
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(17)
    w = SummaryWriter(str(tmp_path))
    for g in range(16384 - 3000, 16384 + 3000):
        w.add_scalar(f"per_env/{rng.randrange(TAGS)}/return", rng.random(), g, new_style=new_style)
    w.close()
    df = aoff.read_scalars(tmp_path)
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) == 6000
