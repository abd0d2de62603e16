"""One meaning of "a folder of runs": ``aoff ls``, ``show``, ``compare``, ``export`` and
``aoff.read_scalars`` on one tree of runs written by aoff, torch's ``SummaryWriter``,
Stable-Baselines3's own logger (trained for real) and aoff's JSONL and CSV backends
alone; and steps beyond int64 refused with one line naming the file."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

import aoff
from aoff import AoffWarning
from aoff.__main__ import main

pd = pytest.importorskip("pandas")


def _aoff_run(path: Path, backends: tuple[str, ...]) -> None:
    log = aoff.OffPolicyLogger(
        log_dir=path, backends=backends, display="none", pump="thread", handle_sigterm=False
    )
    for step in range(1, 6):
        log.log_step(step * 10, {"q_loss": 1.0 / step})
    log.finish()


def _sb3_run(path: Path, formats: list[str]) -> None:
    sb3 = pytest.importorskip("stable_baselines3")
    torch = pytest.importorskip("torch")
    from stable_baselines3.common import logger as sb3_logger

    torch.set_num_threads(1)
    model = sb3.PPO(
        "MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, seed=1, device="cpu"
    )
    model.set_logger(sb3_logger.configure(str(path), formats))
    model.learn(total_timesteps=128)
    model.logger.close()


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    root = tmp_path_factory.mktemp("mixed")
    _aoff_run(root / "aoff" / "sac-seed1", ("tensorboard", "jsonl"))
    _aoff_run(root / "aoff" / "jsonl-only", ("jsonl",))
    _aoff_run(root / "deep" / "er" / "csv-only", ("csv",))
    for name in ("a", "b"):
        w = torch_tb.SummaryWriter(str(root / "torch" / name))
        for step in range(3):
            w.add_scalar("loss", float(step), step)
            w.add_scalars("q", {"q1": 1.0, "q2": 2.0}, step)  # sub-folders of this run
        w.close()
    _sb3_run(root / "sb3" / "csv_and_tb", ["csv", "tensorboard"])
    _sb3_run(root / "sb3" / "csv_only", ["csv"])
    return root


RUNS = [
    "aoff/jsonl-only",
    "aoff/sac-seed1",
    "deep/er/csv-only",
    "sb3/csv_and_tb",
    "sb3/csv_only",
    "torch/a",
    "torch/b",
]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    got = capsys.readouterr()
    return rc, got.out, got.err


@pytest.mark.slow  # the tree: two short SB3 trainings, aoff and torch runs (~15 s)
def test_every_command_sees_the_same_runs_in_a_tree_of_mixed_runs(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = [str(tree / r) for r in RUNS]
    rc, out, err = _cli(capsys, "ls", str(tree), "--json")
    assert rc == 0, err
    assert sorted(str(tree / row["run"]) for row in json.loads(out)) == want
    # compare: the runs it read, each named with what it lacks (none has this tag)
    rc, out, err = _cli(capsys, "compare", str(tree), "--metric", "no/such")
    assert rc == 1
    lacking = [
        line.split(" has no ")[0].removeprefix("aoff compare: ") for line in err.splitlines()
    ]
    assert sorted(x for x in lacking if not x.startswith("no run")) == want
    with warnings.catch_warnings():
        warnings.simplefilter("error", AoffWarning)  # nothing to say about these files
        long = aoff.read_scalars(tree)
    assert sorted(long["run"].unique()) == want
    rc, _, err = _cli(capsys, "export", str(tree), "-o", str(tmp_path / "all.csv"))
    assert rc == 0, err
    exported = pd.read_csv(tmp_path / "all.csv")
    assert sorted(exported["run"].unique()) == want and len(exported) == len(long)
    for run in want:  # a run read alone reads the same as in its folder of runs
        alone = aoff.read_scalars(run)
        mine = long[long["run"] == run]
        assert len(alone) == len(mine) > 0
        assert set(alone["tag"]) == set(mine["tag"])
        rc, out, err = _cli(capsys, "show", run, "--json")
        assert rc == 0, (run, err)
    rc, _, err = _cli(capsys, "show", str(tree / "sb3"))  # show takes one run: it says so
    assert rc == 1 and "is a folder of 2 runs (csv_and_tb, csv_only)" in err
    # a run's own sub-folders (add_scalars) are its tags, not runs of their own
    assert {"q_q1/q", "q_q2/q", "loss"} <= set(long[long["run"] == want[-1]]["tag"])


@pytest.mark.slow  # the same tree
def test_sb3s_own_progress_csv_reads_as_sb3_wrote_it(tree: Path) -> None:
    """Step: SB3's ``time/total_timesteps`` (what its TensorBoard files have as the step);
    every other column a tag, each value as in the file."""
    path = tree / "sb3" / "csv_only"
    theirs = pd.read_csv(path / "progress.csv")
    ours = aoff.read_scalars(path)
    assert len(ours) > 0
    step = theirs["time/total_timesteps"]
    for tag in theirs.columns:
        present = theirs[tag].notna()
        got = ours[ours["tag"] == tag]
        assert list(got["step"]) == [int(s) for s in step[present]], tag
        assert got["value"].tolist() == pytest.approx(theirs[tag][present].tolist()), tag
    # the same steps as the TensorBoard files SB3 wrote beside its CSV (which hold the
    # keys SB3 does not exclude from TensorBoard: time/iterations, ... are CSV-only)
    both = aoff.read_scalars(tree / "sb3" / "csv_and_tb")
    from_csv = aoff.read_scalars(str(tree / "sb3" / "csv_and_tb" / "progress.csv"))
    assert set(both["tag"]) < set(from_csv["tag"])
    loss = "train/value_loss"
    assert list(both[both["tag"] == loss]["step"]) == list(
        from_csv[from_csv["tag"] == loss]["step"]
    )


def test_a_step_beyond_int64_is_refused_with_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "huge-seed1"
    run.mkdir()
    rows = [{"step": s, "wall_time": 1.0, "r": 1.0} for s in (1, 2, 2**63, 2**64 + 5, 3)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    csv_run = tmp_path / "huge-seed2"
    csv_run.mkdir()
    (csv_run / "progress.csv").write_text("step,wall_time,r\n1,1.0,1.0\n-9223372036854775809,1,1\n")
    with pytest.warns(AoffWarning) as said:
        long = aoff.read_scalars(tmp_path)
    lines = sorted(str(w.message) for w in said)
    assert lines == [
        f"{run / 'metrics.jsonl'}: 2 row(s) with a step beyond int64 refused (the first: "
        f"step {2**63}); steps must fit in int64",
        f"{csv_run / 'progress.csv'}: 1 row(s) with a step beyond int64 refused (the first: "
        "step -9223372036854775809); steps must fit in int64",
    ]
    assert sorted(long["step"].tolist()) == [1, 1, 2, 3]
    rc, _, err = _cli(capsys, "export", str(tmp_path), "-o", str(tmp_path / "x.csv"))
    assert rc == 0 and err.count("beyond int64") == 2 and "Traceback" not in err
    rc, out, err = _cli(capsys, "compare", str(tmp_path), "--metric", "r", "--json")
    assert rc == 0 and err.count("beyond int64") == 2
    assert json.loads(out)["groups"][0]["runs"] == 2
    rc, out, err = _cli(capsys, "ls", str(tmp_path), "--json")
    assert rc == 0 and [row["steps"] for row in json.loads(out)] == [3, 1]
    rc, out, err = _cli(capsys, "show", str(run), "--json")
    assert rc == 0 and "2 row(s) with a step beyond int64 refused" in err
    assert os.path.exists(run / "metrics.jsonl")  # read, never changed


def test_each_real_folder_is_found_once_and_glob_characters_are_names(tmp_path: Path) -> None:
    from aoff._runfolder.reading._runfind import find_runs
    from aoff._runfolder.tensorboard._files import event_files, event_folders, hparams_name

    root = tmp_path / "runs"
    run = root / "a[1]*"  # glob's characters, taken as a name
    run.mkdir(parents=True)
    events = run / "events.out.tfevents.1.host"
    events.write_bytes(b"")
    (run / hparams_name(0)).write_bytes(b"")
    (run / "not.events").write_bytes(b"")
    (root / "b-link").symlink_to(run, target_is_directory=True)  # the same run again
    (run / "loop").symlink_to(root, target_is_directory=True)  # walked once, not forever
    assert find_runs(str(root)) == [str(run)]
    assert event_files(str(run)) == [str(events)]
    assert len(event_files(str(run), hparams=True)) == 2
    assert event_files(str(events)) == event_files(str(tmp_path / "gone")) == []
    assert event_folders(str(root)) == {"a[1]*": [str(events)]}
