"""``aoff.read_scalars`` and ``aoff.ScalarReader`` read back what other tools' own writers
wrote, exactly as TensorBoard's ``EventAccumulator`` reads it.

Each proof writes with the real writer (torch's ``SummaryWriter``, tensorboardX, SB3,
TensorBoard's own ``EventFileWriter`` and protobufs for TF2's tensor scalars) and
compares every point with ``EventAccumulator`` (values bit for bit in float32, steps and
wall times exactly).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aoff

from .tbruns import CLEANRL_SAC_TAGS, write_cleanrl_runs


def _points(df: Any, run: str, tag: str) -> tuple[list[int], list[float], Any]:
    sub = df[(df["run"] == run) & (df["tag"] == tag)]
    return sub["step"].tolist(), sub["wall_time"].tolist(), sub["value"].to_numpy(np.float32)


def _same_as_accumulator(df: Any, run: str, folder: Path, prefix: str = "") -> int:
    """Assert every scalar (simple values, and ``scalars``-plugin tensors) that
    ``EventAccumulator`` reads in ``folder`` is in ``df`` under ``run`` and ``prefix +
    tag``, and nothing else of that prefix; the points compared."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    acc = EventAccumulator(os.fspath(folder), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()  # every point kept (no reservoir sampling)
    expected: dict[str, tuple[list[int], list[float], Any]] = {}
    for tag in acc.Tags()["scalars"]:
        ev = acc.Scalars(tag)
        expected[tag] = ([e.step for e in ev], [e.wall_time for e in ev], [e.value for e in ev])
    for tag in acc.Tags()["tensors"]:
        meta = acc.SummaryMetadata(tag)
        if meta.plugin_data.plugin_name == "scalars":
            ev = acc.Tensors(tag)
            values = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in ev]
            expected[tag] = ([e.step for e in ev], [e.wall_time for e in ev], values)
    tags = df.loc[df["run"] == run, "tag"].unique()
    got_tags = {t[len(prefix) :] for t in tags if t.startswith(prefix)}
    assert set(expected) <= got_tags, (set(expected), got_tags)
    n = 0
    for tag, (steps, walls, values) in expected.items():
        s, w, v = _points(df, run, prefix + tag)
        assert s == steps, tag
        assert w == walls, tag
        assert v.tobytes() == np.asarray(values, np.float32).tobytes(), tag
        n += len(steps)
    assert n
    return n


def test_cleanrl_runs_by_torch_read_back_as_event_accumulator_does(tmp_path: Path) -> None:
    runs = write_cleanrl_runs(tmp_path, total_timesteps=1000)
    given = [str(r) for r in runs]
    df = aoff.read_scalars(given)
    assert list(df.columns) == ["run", "tag", "step", "wall_time", "value"]
    assert list(df["run"].unique()) == given  # each run named as given, in that order
    for run in runs:
        _same_as_accumulator(df, str(run), run)
        assert set(df.loc[df["run"] == str(run), "tag"]) == set(CLEANRL_SAC_TAGS)
    only = aoff.read_scalars(runs[0], tags=["charts/episodic_return"])
    assert set(only["tag"]) == {"charts/episodic_return"} and len(only) == 5


def _tf2_scalar_events(path: Path) -> None:
    """What TF2's ``tf.summary.scalar`` writes, by hand with TensorBoard's protobufs: a
    0-d tensor per value, the ``scalars`` plugin named in the first event's metadata
    only; float_val, tensor_content and a double, as TF's writers produce."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(path))
    scalars = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
    )
    for step in range(20):
        values = []
        for tag, dtype, how in (("loss", 1, "val"), ("reward", 1, "content"), ("lr", 2, "val")):
            x = 1.0 / (step + 1) + (0.1 if tag == "reward" else 0.0)
            tensor = tensor_pb2.TensorProto(
                dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto()
            )
            if how == "content":
                tensor.tensor_content = np.float32(x).tobytes()
            elif dtype == 1:
                tensor.float_val.append(x)
            else:
                tensor.double_val.append(x)
            value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
            if step == 0:
                value.metadata.CopyFrom(scalars)
            values.append(value)
        event = event_pb2.Event(
            wall_time=1_733_380_000.0 + step / 3,
            step=step * 10,
            summary=summary_pb2.Summary(value=values),
        )
        writer.add_event(event)
    writer.close()


def test_tf2_tensor_scalars_read_back_as_event_accumulator_does(tmp_path: Path) -> None:
    _tf2_scalar_events(tmp_path)
    df = aoff.read_scalars(tmp_path)
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) == 60
    assert set(df["tag"]) == {"loss", "reward", "lr"}


def read_broken(tmp_path: Path, name: str, data: bytes) -> tuple[aoff.ScalarReader, Any, Path]:
    """A file's corrupted bytes written alone into ``tmp_path / "broken"`` and read back:
    the reader (its problems and counts), its table and the folder."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / name).write_bytes(data)
    reader = aoff.ScalarReader(broken)
    return reader, reader.read(), broken


def lost_points(intact: Any, df: Any) -> Any:
    """The points of ``intact`` that ``df`` lacks, once it is checked that ``df`` has no
    point of its own (a corrupted value that came back would be one)."""
    merged = intact.drop(columns="run").merge(
        df.drop(columns="run"), on=["tag", "step", "wall_time", "value"], how="outer",
        indicator=True,
    )  # fmt: skip
    assert (merged["_merge"] == "right_only").sum() == 0  # no corrupted value came back
    return merged[merged["_merge"] == "left_only"]


def _record_ends(data: bytes) -> list[int]:
    ends, pos = [], 0
    while pos + 12 <= len(data):
        pos += 16 + int.from_bytes(data[pos : pos + 8], "little")
        ends.append(pos)
    return ends


def test_a_torn_end_and_a_corrupt_record_are_read_around_and_said_once(tmp_path: Path) -> None:
    (run,) = write_cleanrl_runs(tmp_path / "src", configs=("sac",), seeds=(1,), total_timesteps=600)
    (name,) = os.listdir(run)
    intact = aoff.read_scalars(run)
    data = bytearray((run / name).read_bytes())
    ends = _record_ends(bytes(data))
    middle = len(ends) // 2
    data[ends[middle] - 6] ^= 0xFF  # a byte of the record's value: its checksum fails
    cut = bytes(data[: ends[-1] - 5])  # the last record torn
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / name).write_bytes(cut)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = aoff.read_scalars(broken)
    said = [str(w.message) for w in caught if issubclass(w.category, aoff.AoffWarning)]
    assert len(said) == 1, said
    assert "1 corrupt record(s) skipped" in said[0] and "the last record is torn" in said[0]
    # everything else is read: the intact run's points but the two lost records' ones
    assert len(df) == len(intact) - 2
    merged = intact.merge(df, on=["tag", "step", "wall_time", "value"], how="left", indicator=True)
    assert (merged["_merge"] == "left_only").sum() == 2


def test_a_growing_file_is_read_again_from_where_the_last_read_stopped(tmp_path: Path) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from aoff._runfolder.tensorboard._tfrecord import frame_many

    def event(step: int) -> bytes:
        value = summary_pb2.Summary.Value(tag="x", simple_value=step / 7)
        ev = event_pb2.Event(
            wall_time=1e9 + step, step=step, summary=summary_pb2.Summary(value=[value])
        )
        return bytes(ev.SerializeToString())

    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(
        frame_many(
            [event_pb2.Event(file_version="brain.Event:2").SerializeToString()]
            + [event(s) for s in range(100)]
        )
    )
    reader = aoff.ScalarReader(tmp_path)
    first = reader.read()
    assert first["step"].tolist() == list(range(100))
    more = frame_many([event(s) for s in range(100, 150)])
    with open(path, "ab") as f:
        f.write(more[:-7])  # the writer is mid-record
    second = reader.read()
    assert second["step"].tolist() == list(range(100, 149))
    assert reader.bytes_read == path.stat().st_size  # each byte read once
    with open(path, "ab") as f:
        f.write(more[-7:])
    third = reader.read()
    assert third["step"].tolist() == [149]
    assert np.float32(third["value"].iloc[0]) == np.float32(149 / 7)
    assert reader.problems == []


def test_aoffs_own_runs_read_the_same_from_events_jsonl_and_csv(tmp_path: Path) -> None:
    """One aoff run written to all three formats: the folder reads its event files, the
    JSONL and CSV files read the same points (float64, exact), the event files' values
    are their float32."""
    from aoff import OffPolicyLogger

    with OffPolicyLogger(
        log_dir=tmp_path,
        backends=("tensorboard", "jsonl", "csv"),
        display="none",
        handle_sigterm=False,
        system_interval=0,
    ) as log:
        for i in range(60):
            log.log_step(i * 8, {"loss": 1 / (i + 1), "q": float(i) / 3})
    events = aoff.read_scalars(tmp_path)
    jsonl = aoff.read_scalars(tmp_path / "metrics.jsonl")
    csv = aoff.read_scalars(tmp_path / "progress.csv")
    for df in (events, jsonl, csv):
        loss = df[df["tag"] == "train/loss"]
        assert loss["step"].tolist() == [i * 8 for i in range(60)]
    key = ["tag", "step"]
    jsonl, csv = jsonl.sort_values(key, kind="stable"), csv.sort_values(key, kind="stable")
    cols = [*key, "value"]
    assert jsonl[cols].values.tolist() == csv[cols].values.tolist()
    assert jsonl["wall_time"].tolist() == csv["wall_time"].tolist()
    both = events.merge(jsonl, on=key, suffixes=("_tb", "_jsonl"))
    assert len(both) == len(jsonl) == len(events)
    assert (both["value_tb"].to_numpy(np.float32) == both["value_jsonl"].to_numpy(np.float32)).all()
    loss = jsonl[jsonl["tag"] == "train/loss"]
    assert loss["value"].tolist() == [1 / (i + 1) for i in range(60)]  # float64, exact


def test_import_aoff_stays_light_until_read_scalars_is_called() -> None:
    code = (
        "import sys, aoff; aoff.read_scalars; "
        "print('pandas' in sys.modules, 'aoff._runfolder.reading._scalars' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
    code = "import sys, aoff; print('pandas' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


#: what a first call loads only for a line file, a filter or workers (issue #49: the
#: first call's fixed cost was mostly these imports)
_LAZY = (
    "msgspec",
    "multiprocessing.connection",
    "aoff._runfolder.lines._jsonl",
    "aoff._runfolder.lines._csv",
    "aoff._runfolder.reading._where",
)


def _loaded_after_reading(path: Path) -> list[str]:
    """The modules of :data:`_LAZY` a fresh process has loaded after reading ``path``."""
    code = (
        "import sys, aoff; df = aoff.read_scalars(sys.argv[1]); assert len(df); "
        f"print(*[m for m in {_LAZY!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_a_first_call_loads_only_what_its_format_needs(tmp_path: Path) -> None:
    """A TensorBoard run's first read loads no line format's codec (msgspec), no where=
    parser, no worker pool; a metrics.jsonl run's loads its codec (the check bites)."""
    _torch_run(tmp_path / "tb", 3)
    assert _loaded_after_reading(tmp_path / "tb") == []
    (tmp_path / "jsonl").mkdir()
    (tmp_path / "jsonl" / "metrics.jsonl").write_text('{"step":1,"loss":0.5}\n')
    assert _loaded_after_reading(tmp_path / "jsonl") == ["msgspec", "aoff._runfolder.lines._jsonl"]


def test_a_missing_or_empty_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such run"):
        aoff.read_scalars(tmp_path / "nope")
    with pytest.raises(ValueError, match="no TensorBoard event files"):
        aoff.read_scalars(tmp_path)


def _torch_run(folder: Path, steps: int, tags: int = 3) -> Path:
    """torch's ``SummaryWriter``: ``tags`` scalars a step; its one event file."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder))
    for step in range(steps):
        for t in range(tags):
            writer.add_scalar(f"losses/l{t}", np.sin(step / 50 + t), step)
    writer.close()
    (path,) = folder.iterdir()
    return path


def test_bulk_path_skips_corrupt_records_and_agrees_with_event_accumulator(
    tmp_path: Path,
) -> None:
    """A long regular file goes through the bulk path; a record with a flipped value byte
    (its data checksum fails), one with a flipped tag byte (its layout breaks) and one
    with a flipped length (its header's checksum fails: the reader finds the next
    record) in the middle are each skipped and counted, every other point read as
    TensorBoard does."""
    path = _torch_run(tmp_path / "intact", 3000)
    intact = aoff.read_scalars(path.parent)
    _same_as_accumulator(intact, str(path.parent), path.parent)
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    data[ends[4000] - 6] ^= 0x01  # a value byte
    data[ends[6000] - 10] ^= 0x01  # the tag's last byte
    data[ends[7000]] ^= 0x04  # a length: its header's checksum fails, the next is found
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.bulk_records > 8000  # of 9,001
    assert reader.problems == [f"{broken / path.name}: 3 corrupt record(s) skipped"]
    assert len(df) == len(intact) - 3
    merged = intact.merge(df, on=["tag", "step", "wall_time", "value"], how="left", indicator=True)
    lost = merged[merged["_merge"] == "left_only"]
    assert sorted(lost["step"].tolist()) == [1333, 1999, 2333]


@pytest.mark.parametrize("corrupted", [2, 10])
def test_records_corrupted_alike_are_each_caught_in_bulk(tmp_path: Path, corrupted: int) -> None:
    """The same bit flipped in the value of ``corrupted`` records of one tag, close
    together (one bulk block): errors that are equal would cancel in a check over a
    block's XOR; each record's own checksum is checked, so every one is skipped and
    counted, and every other point is read."""
    path = _torch_run(tmp_path / "intact", 3000)
    intact = aoff.read_scalars(path.parent)
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    hit = [4500 + 3 * k for k in range(corrupted)]  # one tag's records, cycles in a row
    for r in hit:
        data[ends[r] - 6] ^= 0x10  # a value byte
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.bulk_records > 8000  # of 9,001: the bulk path saw them
    assert reader.problems == [f"{broken / path.name}: {corrupted} corrupt record(s) skipped"]
    merged = intact.merge(df, on=["tag", "step", "wall_time", "value"], how="outer", indicator=True)
    assert (merged["_merge"] == "right_only").sum() == 0  # no corrupted value came back
    lost = merged[merged["_merge"] == "left_only"]
    assert len(lost) == corrupted and lost["tag"].nunique() == 1


def test_purge_rules_hold_across_the_bulk_path(tmp_path: Path) -> None:
    """TensorBoard's two purge rules, as ``EventAccumulator`` applies them: a
    ``SessionLog.START`` in a ``brain.Event:2`` file (a resumed torch run), and an
    out-of-order step in a file without a version."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from torch.utils.tensorboard import SummaryWriter

    from aoff._runfolder.tensorboard._tfrecord import frame_many

    resumed = tmp_path / "resumed"
    writer = SummaryWriter(str(resumed))
    for step in range(600):
        writer.add_scalar("a", step * 0.5, step)
        writer.add_scalar("b", -step, step)
    start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
    assert writer.file_writer is not None
    writer.file_writer.add_event(event_pb2.Event(step=400, session_log=start))
    for step in range(400, 500):
        writer.add_scalar("a", step * 0.25, step)
        writer.add_scalar("b", step, step)
    writer.close()
    df = aoff.read_scalars(resumed)
    assert _same_as_accumulator(df, str(resumed), resumed) == 1000

    old = tmp_path / "old"
    old.mkdir()

    def event(step: int, tag: str) -> bytes:
        value = summary_pb2.Summary.Value(tag=tag, simple_value=step / 3)
        ev = event_pb2.Event(
            wall_time=1e9 + step, step=step, summary=summary_pb2.Summary(value=[value])
        )
        return bytes(ev.SerializeToString())

    records = [event(s, t) for s in range(500) for t in ("a", "b")]
    records += [event(s, "a") for s in range(300, 350)]  # "a" goes back: only "a" purged
    (old / "events.out.tfevents.1.old").write_bytes(frame_many(records))
    df = aoff.read_scalars(old)
    assert _same_as_accumulator(df, str(old), old) == 350 + 500


def test_tensorboardx_runs_with_sub_folders_read_back_as_event_accumulator_does(
    tmp_path: Path,
) -> None:
    """tensorboardX: scalars (one with a display name: metadata beside the value), a
    histogram between them, and ``add_scalars``' sub-folders (each a run of its own to
    TensorBoard: here its folder and ``/`` before its tags)."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for step in range(300):
        writer.add_scalar("train/loss", 1 / (step + 1), step)
        writer.add_scalar("train/lr", 1e-3, step, display_name="learning rate")
        if step % 50 == 0:
            writer.add_histogram("weights", np.arange(10) * step, step)
        writer.add_scalars("q", {"q1": step * 0.1, "q2": step * 0.2}, step)
    writer.close()
    df = aoff.read_scalars(tmp_path)
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) == 600
    subs = sorted(Path(here) for here, _, files in os.walk(tmp_path / "q") if files)
    assert [p.relative_to(tmp_path).as_posix() for p in subs] == ["q/q1", "q/q2"]
    for sub in subs:
        rel = sub.relative_to(tmp_path).as_posix()
        assert _same_as_accumulator(df, str(tmp_path), sub, prefix=f"{rel}/") == 300
    assert set(df["tag"]) == {"train/loss", "train/lr", "q/q1/q", "q/q2/q"}


def test_sb3_runs_read_back_as_event_accumulator_does(tmp_path: Path) -> None:
    """Stable-Baselines3's own TensorBoard output (a PPO run on CPU)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    model = PPO(
        "MlpPolicy",
        "CartPole-v1",
        n_steps=64,
        batch_size=32,
        n_epochs=1,
        seed=0,
        tensorboard_log=str(tmp_path),
        device="cpu",
    )
    model.learn(256)
    (run,) = tmp_path.iterdir()
    df = aoff.read_scalars(run)
    assert _same_as_accumulator(df, str(run), run) > 10
    assert {"train/loss", "time/fps"} <= set(df["tag"])


def _split_at_record(path: Path, record: int) -> tuple[bytes, bytes]:
    data = path.read_bytes()
    cut = _record_ends(data)[record]
    return data[:cut], data[cut:]


def test_a_zero_filled_region_is_jumped_over_and_counted_once(tmp_path: Path) -> None:
    """A MiB of zeros between records (a preallocated or crashed writer's file): the
    records after it are found, every point read, the region one corrupt place, also
    when it spans many of the reader's chunks."""
    from aoff._runfolder.tensorboard._evfolder import EventFolder

    path = _torch_run(tmp_path / "intact", 400)
    intact = aoff.read_scalars(path.parent)
    head, tail = _split_at_record(path, 600)
    holed = tmp_path / "holed"
    holed.mkdir()
    (holed / path.name).write_bytes(head + bytes(1 << 20) + tail)
    reader = aoff.ScalarReader(holed)
    df = reader.read()
    assert reader.problems == [f"{holed / path.name}: 1 corrupt record(s) skipped"]
    assert df.drop(columns="run").equals(intact.drop(columns="run"))
    folder = EventFolder(chunk=64 << 10)  # the zeros span 16 chunks
    folder.read([str(holed / path.name)])
    (cur,) = folder.cursors.values()
    assert cur.corrupt == 1 and cur.torn == 0
    assert sum(len(s) for s in folder.series.values()) == len(intact)


def test_a_small_file_takes_memory_by_its_size(tmp_path: Path) -> None:
    """Reading a run of one short file allocates about what the file holds, not a whole
    read chunk (31 MiB) per file."""
    import tracemalloc

    from aoff._runfolder.tensorboard._evfolder import CHUNK

    path = _torch_run(tmp_path / "tiny", 2)
    aoff.read_scalars(path.parent)  # imports and caches first
    tracemalloc.start()
    try:
        for _ in range(3):
            aoff.ScalarReader(path.parent).read_columns()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20 < CHUNK


def test_a_chunk_is_freed_before_the_next_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read in many chunks holds one chunk's buffer at a time: the last one is
    freed before the next is made (two at once, and a sweep's temporaries, outgrew the
    heap glibc keeps: every read's chunks faulted in again), and the points are the
    file's, as read in one chunk."""
    import weakref

    from aoff._runfolder.tensorboard import _evfolder
    from aoff._runfolder.tensorboard._evfolder import EventFolder

    path = _torch_run(tmp_path / "run", 3000)
    whole = EventFolder()
    whole.read([str(path)])
    made: list[weakref.ref[bytearray]] = []
    alive_at_make: list[int] = []

    class Chunk(bytearray):
        def __init__(self, size: int) -> None:
            super().__init__(size)
            alive_at_make.append(sum(ref() is not None for ref in made))
            made.append(weakref.ref(self))

    monkeypatch.setattr(_evfolder, "bytearray", Chunk, raising=False)
    folder = EventFolder(chunk=16 << 10)
    folder.read([str(path)])
    assert len(alive_at_make) > 5 and alive_at_make == [0] * len(alive_at_make)
    assert folder.series.keys() == whole.series.keys()
    for tag, series in whole.series.items():
        got, want = folder.series[tag].take(), series.take()
        assert len(want[0]) == 3000
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_an_unchanged_file_is_read_again_with_a_stat_not_an_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follow over idle runs: a read that finds a file's size, mtime and inode as the
    last read left them does not open it; once it grows, the new points are read."""

    path = _torch_run(tmp_path / "run", 50)
    whole = path.read_bytes()
    head, _ = _split_at_record(path, 60)
    path.write_bytes(head)
    opened: list[str] = []
    real_open = os.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)  # what _evfolder opens files with
    reader = aoff.ScalarReader(path.parent)
    first = reader.read()
    for _ in range(3):
        assert len(reader.read()) == 0
    assert opened.count(str(path)) == 1
    path.write_bytes(whole)
    more = reader.read()
    assert opened.count(str(path)) == 2
    assert len(first) + len(more) == 150


SAC_LOSSES = (
    "losses/qf1_values",
    "losses/qf2_values",
    "losses/qf1_loss",
    "losses/qf2_loss",
    "losses/qf_loss",
    "losses/actor_loss",
    "losses/alpha",
    "charts/SPS",
    "losses/alpha_loss",
)
PPO_LOSSES = (
    "charts/learning_rate",
    "losses/value_loss",
    "losses/policy_loss",
    "losses/entropy",
    "losses/old_approx_kl",
    "losses/approx_kl",
    "losses/clipfrac",
    "losses/explained_variance",
    "charts/SPS",
)


def write_irregular_runs(root: Path, steps: int, *, new_style: bool = False) -> list[Path]:
    """CleanRL's two logging patterns through torch's ``SummaryWriter``: SAC
    (``sac_continuous_action.py``: an episode's return and length whenever one ends, at
    its variable ``global_step``, the losses every ``log_every`` steps) and PPO
    (``ppo.py``: 4 envs' episodes as they end during a rollout of 128 steps, then the
    update's losses once an iteration)."""
    import random

    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(7)
    sac, ppo = root / "sac", root / "ppo"
    w = SummaryWriter(str(sac))
    end = rng.randint(5, 200)
    for g in range(1, steps + 1):
        if g == end:
            w.add_scalar("charts/episodic_return", rng.gauss(0, 100), g, new_style=new_style)
            w.add_scalar("charts/episodic_length", end, g, new_style=new_style)
            end = g + rng.randint(5, 200)
        if g % 10 == 0:
            for tag in SAC_LOSSES:
                w.add_scalar(tag, rng.random(), g, new_style=new_style)
    w.close()
    w = SummaryWriter(str(ppo))
    ends = [rng.randint(5, 100) for _ in range(4)]
    g = 0
    for _ in range(steps // 128):
        for _ in range(128):
            g += 4
            for env in range(4):
                ends[env] -= 1
                if ends[env] == 0:
                    w.add_scalar("charts/episodic_return", rng.random(), g, new_style=new_style)
                    w.add_scalar("charts/episodic_length", rng.randint(5, 100), g)
                    ends[env] = rng.randint(5, 100)
        for tag in PPO_LOSSES:
            w.add_scalar(tag, rng.random(), g, new_style=new_style)
    w.close()
    return [sac, ppo]


def _records(folder: Path) -> int:
    (path,) = folder.iterdir()
    return len(_record_ends(path.read_bytes()))


@pytest.mark.parametrize("new_style", [False, True], ids=["simple_value", "tensor"])
def test_cleanrl_sac_and_ppo_logging_reads_in_bulk_as_event_accumulator_does(
    tmp_path: Path, new_style: bool
) -> None:
    """Episode returns at variable steps between periodic losses (records in no
    repeating order), as simple values and as torch's ``new_style`` tensors (no
    ``tensor_shape``), the episode lengths simple values beside them: nearly every
    record goes through the bulk path, and what comes back is what TensorBoard reads."""
    runs = write_irregular_runs(tmp_path, 3000, new_style=new_style)
    reader = aoff.ScalarReader(runs)
    df = reader.read()
    for run in runs:
        _same_as_accumulator(df, str(run), run)
    records = sum(_records(run) for run in runs)
    assert reader.bulk_records > 0.9 * records, (reader.bulk_records, records)


def test_scalars_among_histograms_images_and_text_read_as_event_accumulator_does(
    tmp_path: Path,
) -> None:
    """torch's histograms, images and text between the scalars: skipped, every scalar
    read as TensorBoard reads it, the scalars still in bulk."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path))
    rng = np.random.default_rng(3)
    for step in range(600):
        w.add_scalar("loss", float(rng.random()), step)
        w.add_scalar("q", float(rng.random()), step, new_style=True, double_precision=True)
        if step % 50 == 0:
            w.add_histogram("weights", rng.normal(size=100), step)
            w.add_image("frame", rng.random((3, 8, 8)), step)
            w.add_text("note", f"step {step}", step)
    w.close()
    reader = aoff.ScalarReader(tmp_path)
    df = reader.read()
    assert _same_as_accumulator(df, str(tmp_path), tmp_path) == 1200
    assert reader.bulk_records > 1000


def test_categorical_dtypes_are_kept_by_their_categories_in_order() -> None:
    """A frame's run and tag dtypes are made once a process for the same categories in
    the same order (a run read again); other categories, or another order, get their
    own."""
    from aoff._runfolder.reading._scalars import _categories

    first = _categories(("a/x", "a/y"))
    assert _categories(("a/x", "a/y")) is first
    assert list(first.categories) == ["a/x", "a/y"]
    assert list(_categories(("a/y", "a/x")).categories) == ["a/y", "a/x"]
    assert list(_categories(("a/x",)).categories) == ["a/x"]
