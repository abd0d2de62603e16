"""The run index (``_runfolder/reading/_runindex.py``): the same runs and fields as reading every
run, kept current as runs change under it (size, mtime, a change in the same clock tick),
in a folder aoff cannot write to, and brought up to date by a run at its finish; and
``--where`` on ``aoff ls``, ``compare``, ``export`` and ``read_scalars``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

import aoff
from aoff.__main__ import main
from aoff._runfolder._replace import replaced as real_replaced
from aoff._runfolder.reading import _runindex
from aoff._runfolder.reading._runfind import find_runs
from aoff._runfolder.reading._runindex import (
    INDEX_NAME,
    JOURNAL_NAME,
    RunIndex,
    fields_of,
    select_runs,
)
from aoff._runfolder.reading._where import compile_where

ENVS = ("Hopper-v4", "Ant-v4", "Walker2d-v4")


def _real_run(path: Path, backends: tuple[str, ...], config: dict[str, Any]) -> None:
    with aoff.OffPolicyLogger(
        log_dir=path, backends=backends, display="none", pump="thread", config=config
    ) as log:
        for step in range(1, 21):
            log.log_step(step * 10, {"loss": 1.0 / step}, reward=float(config["seed"]))


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real aoff runs (TensorBoard with its HParams file; JSONL with config.json)."""
    root = tmp_path_factory.mktemp("seeds")
    _real_run(root / "tb", ("tensorboard",), {"env": "Hopper-v4", "seed": 0})
    _real_run(root / "jsonl", ("jsonl",), {"env": "Ant-v4", "seed": 1})
    return root


def _many(seeds: Path, root: Path, n: int) -> list[Path]:
    """``n`` runs cheaply: copies of the two real ones, every third with a config.json
    of its own (the others keep the config their files hold)."""
    made = []
    for i in range(n):
        src = seeds / ("tb" if i % 2 else "jsonl")
        dst = root / ENVS[i % 3] / f"run{i:03d}"
        shutil.copytree(src, dst)
        if i % 3 == 0:
            (dst / "config.json").write_text(json.dumps({"env": ENVS[i % 3], "seed": i}))
        made.append(dst)
    return made


FILTERS = (
    'config.env == "Hopper-v4" and config.seed < 40',
    "config.seed >= 30 or last.reward/mean > 0.5",
    '"train/loss" in tags and summary.state == "finished"',
    'not config.env in ["Ant-v4"]',
)


def _brute(root: Path, text: str) -> list[str]:
    """What the filter keeps, reading every run's files."""
    test = compile_where(text)
    return [r for r in find_runs(str(root)) if test(fields_of(r, os.path.relpath(r, root)))]


def test_the_index_answers_as_reading_every_run(seeds: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    made = _many(seeds, root, 60)
    for text in FILTERS:
        assert select_runs(str(root), compile_where(text)) == _brute(root, text), text
    assert len(_brute(root, FILTERS[0])) > 0 and (root / INDEX_NAME).is_file()
    index = RunIndex(str(root))
    assert [p for p, _ in index.runs()] == find_runs(str(root))
    # config from aoff's HParams file (TensorBoard only) and from config.json
    fields = dict(index.runs())
    hparams = fields[str(made[1])]["config"]  # a TensorBoard copy: its HParams file
    assert (hparams["env"], hparams["seed"], hparams["num_envs"]) == ("Hopper-v4", 0, 4096)
    assert fields[str(made[2])]["config"]["env"] == "Ant-v4"  # a JSONL copy: config.json
    assert fields[str(made[0])]["config"] == {"env": "Hopper-v4", "seed": 0}
    # a run given itself is tested alone, without an index in it
    assert select_runs(str(made[0]), compile_where("config.seed == 0")) == [str(made[0])]
    assert select_runs(str(made[0]), compile_where("config.seed == 5")) == []
    assert not (made[0] / INDEX_NAME).exists()


def test_a_run_that_changes_is_read_again(seeds: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    made = _many(seeds, root, 12)
    old = os.stat(made[0]).st_mtime_ns - 10_000_000_000  # not racy: indexed long after
    for path in [*made, *(p.parent for p in made)]:
        for f in [path, *(path.iterdir() if path in made else [])]:
            os.utime(f, ns=(old, old))
    index = RunIndex(str(root))
    index.runs()
    index.save()
    index = RunIndex(str(root))
    index.runs()
    assert index.reread == 0 and not index.changed  # a warm look only stats
    # a longer file (an append does not touch the folder's mtime), a new run, a gone run
    cfg = made[3] / "config.json"
    cfg.write_text(json.dumps({"env": ENVS[0], "seed": 1000}))
    os.utime(made[3], ns=(old, old))
    shutil.rmtree(made[5])
    shutil.copytree(made[4], root / "late" / "new")
    test = compile_where("config.seed == 1000")
    assert select_runs(str(root), test) == [str(made[3])]
    index = RunIndex(str(root))
    got = [p for p, _ in index.runs()]
    assert got == find_runs(str(root)) and str(made[5]) not in got
    assert str(root / "late" / "new") in got


def test_a_change_in_the_same_clock_tick_is_seen(seeds: Path, tmp_path: Path) -> None:
    """A file rewritten in place with the same size and the same mtime: the index was
    made within RACY_NS of the file's mtime, so it does not trust it."""
    root = tmp_path / "runs"
    made = _many(seeds, root, 3)
    cfg = made[0] / "config.json"
    test = compile_where("config.seed == 7")
    cfg.write_text(json.dumps({"env": "Hopper-v4", "seed": 1}))
    assert select_runs(str(root), test) == []
    st = os.stat(cfg)
    with open(cfg, "r+b") as f:  # same size, in place: the folder's mtime stays
        f.write(json.dumps({"env": "Hopper-v4", "seed": 7}).encode())
    os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(cfg).st_size == st.st_size
    assert select_runs(str(root), test) == [str(made[0])]


def test_a_folder_aoff_cannot_write_to(
    seeds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "runs"
    _many(seeds, root, 6)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real = real_replaced
    refused: set[str] = {str(root / INDEX_NAME)}

    def replaced(path: str, **kw: Any) -> Any:
        if path in refused:  # as a read-only folder (root ignores mode bits)
            raise PermissionError(13, "Permission denied", path)
        return real(path, **kw)

    monkeypatch.setattr(_runindex, "replaced", replaced)
    test = compile_where("config.seed < 100")
    first = select_runs(str(root), test)
    assert not (root / INDEX_NAME).exists()
    cached = list((tmp_path / "cache" / "aoff" / "index").iterdir())
    assert len(cached) == 1
    index = RunIndex(str(root))
    assert index.runs() and index.cache == str(cached[0])
    # neither the folder nor the cache: in memory, said in one line
    refused.add(index.cache)
    os.unlink(index.cache)
    notes: list[str] = []
    assert select_runs(str(root), test, notes=notes) == first
    assert len(notes) == 1 and "kept in memory only" in notes[0] and INDEX_NAME in notes[0]
    pytest.importorskip("pandas")
    with pytest.warns(aoff.AoffWarning, match="kept in memory only"):
        aoff.read_scalars(root, where="config.seed < 100")


def test_a_damaged_index_is_rebuilt(seeds: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _many(seeds, root, 6)
    text = FILTERS[0]
    (root / INDEX_NAME).write_bytes(b"\x93not an index")
    assert select_runs(str(root), compile_where(text)) == _brute(root, text)
    # an entry whose fields are not what aoff wrote
    raw = msgspec.msgpack.decode((root / INDEX_NAME).read_bytes())
    for entry in raw["runs"].values():
        entry[5] = msgspec.msgpack.encode([1, 2])  # config: a list
    (root / INDEX_NAME).write_bytes(msgspec.msgpack.encode(raw))
    assert select_runs(str(root), compile_where(text)) == _brute(root, text)


def test_a_finishing_run_updates_the_index_above_it(seeds: Path, tmp_path: Path) -> None:
    """At its finish a run appends its entry to the journal of each index above it (one
    small write, whatever the index's size); the next reader folds it in."""
    root = tmp_path / "runs"
    _many(seeds, root, 3)
    select_runs(str(root), compile_where("config.seed > 0"))
    _real_run(root / "Hopper-v4" / "fresh", ("tensorboard",), {"env": "Hopper-v4", "seed": 99})
    journal = root / JOURNAL_NAME
    assert journal.stat().st_size > 0
    index = RunIndex(str(root))
    entry = index._runs[os.path.join("Hopper-v4", "fresh")]
    config = msgspec.msgpack.decode(entry.config)
    assert (config["env"], config["seed"]) == ("Hopper-v4", 99)
    assert msgspec.msgpack.decode(entry.summary)["state"] == "finished"
    assert str(root / "Hopper-v4" / "fresh") in [p for p, _ in index.runs()]
    index.save()
    assert journal.stat().st_size == 0  # folded into the index
    # a torn record (a run killed mid-write) ends what is taken, nothing else
    with open(journal, "ab") as f:
        f.write(b"\x40\x00\x00\x00garbage")
    assert select_runs(str(root), compile_where("config.seed == 99")) == [
        str(root / "Hopper-v4" / "fresh")
    ]


def test_where_on_the_commands(
    seeds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    root = tmp_path / "runs"
    _many(seeds, root, 9)
    text = 'config.env == "Hopper-v4" and config.seed < 5'
    want = _brute(root, text)
    assert 0 < len(want) < 9
    assert main(["ls", str(root), "--json", "--where", text]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [os.path.join(root, r["run"]) for r in rows] == want
    assert main(["ls", str(root), "--where", "config.seed = 1"]) == 2
    assert "use == to compare" in capsys.readouterr().err
    assert main(["ls", str(root), "--where", "config.seed > 1000"]) == 1
    assert "no run" in capsys.readouterr().err
    assert main(["compare", str(root), "--metric", "train/loss", "--json", "--where", text]) == 0
    got = json.loads(capsys.readouterr().out)
    assert sorted(r for g in got["groups"] for r in g["run_dirs"]) == want
    out = tmp_path / "t.csv"
    assert main(["export", str(root), "-o", str(out), "--where", text]) == 0
    assert sorted(set(pd.read_csv(out)["run"])) == want
    assert main(["export", str(root), "-o", str(out), "--where", "(x"]) == 2
    df = aoff.read_scalars(root, where=text)
    assert list(df["run"].cat.categories) == want
    with pytest.raises(ValueError, match="column 1"):
        aoff.read_scalars(root, where="nope == 1")
