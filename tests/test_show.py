"""``aoff show`` and ``aoff ls`` on runs the demo wrote, intact and damaged, and the demo's hint.

One demo run (20 iterations, no sleeping) is written once per module; each test copies
it before cutting anything, and reads the values it expects back from the run's own
``metrics.jsonl``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from io import StringIO
from pathlib import Path

import pytest

from aoff.__main__ import main
from aoff._cli._demo import run
from aoff._cli._demo_config import DemoConfig, checkpoint_path
from aoff._cli._tagtable import ASCII_BARS, UNICODE_BARS, sparkline

ITERATIONS = 20


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished demo run (TensorBoard + JSONL) and the demo's closing text."""
    logdir = tmp_path_factory.mktemp("runs")
    cfg = DemoConfig(
        iterations=ITERATIONS,
        iter_ms=0.0,
        logdir=str(logdir),
        name="r1",
        backends=("tensorboard", "jsonl"),
    )
    out = StringIO()
    assert run(cfg, out=out) == 0
    return logdir / "r1", out.getvalue()


def _records(run_dir: Path) -> list[dict[str, object]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _aoff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(args))
    got = capsys.readouterr()
    return rc, got.out, got.err


def _row(out: str, tag: str) -> list[str]:
    for line in out.splitlines():
        if line.split(" ", 1)[0] == tag:
            return line.split()
    raise AssertionError(f"no row for {tag!r} in:\n{out}")


def _copy(run_dir: Path, dest: Path, *, keep: str) -> Path:
    shutil.copytree(run_dir, dest)
    for f in dest.iterdir():
        if keep not in f.name:
            f.unlink()
    return dest


def test_show_prints_summary_and_tag_table(
    demo_run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = demo_run
    last = _records(run_dir)[-1]
    rc, out, err = _aoff(capsys, "show", str(run_dir), "--width", "160")
    assert rc == 0 and err == ""
    assert f"Total env steps: {last['step']:,}" in out
    assert f"Iterations: {ITERATIONS} of {ITERATIONS}" in out
    assert "aoff-summary.json (20 records)" in out  # the run summary, not the files
    assert "State: finished" in out
    reward = float(str(last["reward/mean"]))
    assert f"reward/mean: last {reward:.1f}" in out
    row = _row(out, "reward/mean")
    assert float(row[2]) == pytest.approx(reward, abs=0.05)
    assert len(row[5]) == ITERATIONS and set(row[5]) <= set(UNICODE_BARS)
    train_rows = [ln for ln in out.splitlines() if ln.startswith("train/")]
    assert len(train_rows) >= 10
    assert float(_row(out, "axis/iteration")[2]) == ITERATIONS


def test_show_reads_tensorboard_when_there_is_no_jsonl(
    demo_run: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = demo_run
    last = _records(run_dir)[-1]
    tb = _copy(run_dir, tmp_path / "tb", keep="tfevents")
    rc, out, err = _aoff(capsys, "show", str(tb), "--width", "160")
    assert rc == 0 and err == ""
    assert "TensorBoard event files (20 records)" in out
    assert f"Total env steps: {last['step']:,}" in out
    # float32 in the event file: compare at the printed precision
    assert float(_row(out, "reward/mean")[2]) == pytest.approx(
        float(str(last["reward/mean"])), 1e-3
    )


def test_show_truncated_jsonl_prints_what_it_read(
    demo_run: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = demo_run
    records = _records(run_dir)
    cut = _copy(run_dir, tmp_path / "cut", keep="metrics")
    path = cut / "metrics.jsonl"
    path.write_bytes(path.read_bytes()[:-40])  # tear the last line
    rc, out, err = _aoff(capsys, "show", str(cut))
    assert rc == 0
    assert f"{ITERATIONS - 1} records" in out
    assert f"Total env steps: {records[-2]['step']:,}" in out
    assert str(path) in err and "truncated" in err
    assert len(err.strip().splitlines()) == 1


def test_show_truncated_tensorboard_prints_what_it_read(
    demo_run: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = demo_run
    records = _records(run_dir)
    cut = _copy(run_dir, tmp_path / "cut", keep="tfevents")
    (event_file,) = (f for f in cut.iterdir() if "aoff-hparams" not in f.name)
    raw = event_file.read_bytes()
    starts, pos = [], 0
    while pos < len(raw):  # TFRecord framing: u64 length, u32 crc, data, u32 crc
        starts.append(pos)
        pos += 16 + int.from_bytes(raw[pos : pos + 8], "little")
    # the last record is the final metrics (written at close); tear the last step's
    event_file.write_bytes(raw[: starts[-1] - 7])
    rc, out, err = _aoff(capsys, "show", str(cut))
    assert rc == 0
    assert f"Total env steps: {records[-2]['step']:,}" in out
    assert str(event_file) in err and "truncated" in err


def test_show_and_ls_on_an_empty_folder_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _aoff(capsys, "show", str(tmp_path))
    assert rc == 1 and out == ""
    assert "no TensorBoard event files, metrics.jsonl, progress.csv or aoff-summary.json" in err
    assert str(tmp_path) in err
    rc, out, err = _aoff(capsys, "ls", str(tmp_path))
    assert rc == 1 and "no run folders" in err
    rc, _, err = _aoff(capsys, "show", str(tmp_path / "missing"))
    assert rc == 1 and "not a folder" in err


def test_ls_lists_each_run(
    demo_run: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = demo_run
    last = _records(run_dir)[-1]
    root = tmp_path / "runs"
    shutil.copytree(run_dir, root / "a")
    _copy(run_dir, root / "nested" / "b", keep="tfevents")
    (root / "not-a-run").mkdir()
    rc, out, err = _aoff(capsys, "ls", str(root))
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["run", "steps", "last", "reward", "wall", "time", "status"]
    names = [ln.split()[0] for ln in lines[1:]]
    assert names == ["a", os.path.join("nested", "b")]
    for line in lines[1:]:
        cols = line.split()
        assert cols[1] == f"{last['step']:,}"
        assert float(cols[2]) == pytest.approx(float(str(last["reward/mean"])), abs=0.05)
        # a's summary says how it ended; b (event files only) has nothing that says so
        assert line.endswith("finished" if cols[0] == "a" else "no summary"), line


def test_demo_hint_commands_run_as_printed(demo_run: tuple[Path, str]) -> None:
    run_dir, text = demo_run
    commands = {}
    for line in text.splitlines():
        label, _, rest = line.partition(":")
        if label in ("Open them with", "Summary"):
            commands[label] = shlex.split(rest)
    assert set(commands) == {"Open them with", "Summary"}
    for words in commands.values():
        assert os.path.isfile(words[0]) or words[0] == sys.executable, words
    assert commands["Open them with"][-2:] == ["--logdir", str(run_dir.parent)]
    assert commands["Summary"][-2:] == ["show", str(run_dir)]


def test_demo_checkpoint_is_marked_simulated(demo_run: tuple[Path, str]) -> None:
    run_dir, _ = demo_run
    assert checkpoint_path(DemoConfig(logdir="runs", name="x"), 3).startswith("(simulated) runs")
    assert not (run_dir / "checkpoints").exists()  # no placeholder file is written


def test_sparkline() -> None:
    assert sparkline([]) == ""
    assert sparkline([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) == UNICODE_BARS
    assert sparkline([1.0, float("nan"), 3.0], bars=ASCII_BARS) == "_!#"
    assert sparkline([5.0] * 4) == UNICODE_BARS[3] * 4
    assert len(sparkline([float(i) for i in range(1000)], width=24)) == 24


def test_producer_rows_are_kept_out_of_the_runs_series(tmp_path: Path) -> None:
    """Rows a ``log.remote()`` producer wrote (``"producer"`` set) have their own steps:
    ``ls``/``show`` count them apart instead of mixing them into the learner's."""
    from aoff._runfolder.reading._runs import read_run

    rows = [
        {"step": 1, "iteration": 1, "wall_time": 10.0, "train/loss": 1.0},
        {"step": 20_000, "iteration": 5, "wall_time": 11.0, "x": 3.0, "producer": "c0"},
        {"step": 2, "iteration": 2, "wall_time": 12.0, "train/loss": 0.5},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = read_run(str(tmp_path))
    assert data is not None
    assert data.steps == 2 and data.iterations == 2 and data.records == 2
    assert data.curves["train/loss"] == [1.0, 0.5] and "x" not in data.curves
    assert data.producer_rows == {"c0": 1}
    assert any("c0 (1)" in n for n in data.notes)


@pytest.mark.parametrize("width", [80, 100])
def test_show_fits_the_width_and_never_wraps_a_tag(
    demo_run: tuple[Path, str], capsys: pytest.CaptureFixture[str], width: int
) -> None:
    """Piped, ``--width`` is the limit: the table drops columns and narrows the
    sparkline before it would fold a tag name."""
    run_dir, _ = demo_run
    tags = list(_records(run_dir)[-1])[3:]  # after step, iteration, wall_time
    rc, out, _ = _aoff(capsys, "show", str(run_dir), "--width", str(width))
    assert rc == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    firsts = [line.split(" ", 1)[0] for line in lines]
    for tag in tags:
        assert tag in firsts, tag  # whole, at the start of its own row
    assert "last" in lines[lines.index(next(x for x in lines if x.startswith("tag")))]


def test_a_run_that_logged_no_step_says_so_not_stopped_at_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finished run without a ``log_step`` is not "stopped at 0 of 1,500": the summary
    printed at its end says that no step was logged, and so does ``ls``/``show``'s
    status for a run summary without records."""
    import aoff
    from aoff._cli._show import stopped_early
    from aoff._runfolder.reading._rundata import RunData

    log = aoff.OffPolicyLogger(max_iterations=1500, log_backend="none", pump="thread")
    log.log_status("warming up")
    log.finish()
    printed = capsys.readouterr()
    assert "Training stopped before any step was logged" in printed.out + printed.err
    assert "0 of 1,500" not in printed.out + printed.err
    data = RunData(str(tmp_path), "s", "summary", state="finished", max_iterations=1500)
    assert stopped_early(data) == "stopped before any step was logged"
    data.records, data.iterations = 3, 2
    assert stopped_early(data) == "stopped at 2 of 1,500"


@pytest.mark.parametrize("width", ["0", "-5", "19"])
def test_show_refuses_a_width_too_narrow(
    demo_run: tuple[Path, str], capsys: pytest.CaptureFixture[str], width: str
) -> None:
    run_dir, _ = demo_run
    with pytest.raises(SystemExit) as done:
        _aoff(capsys, "show", str(run_dir), "--width", width)
    got = capsys.readouterr()
    assert (done.value.code, got.out) == (2, "")
    assert got.err == (
        f"aoff show: argument --width: must be an int >= 20 and <= 1,000, got {width} "
        "(see aoff show --help)\n"
    )


def test_every_help_says_each_default_once(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("demo", "attach", "show", "ls", "compare", "export"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())  # one line: wrapped help joined
        options = re.split(r" (?=-[-a-z])", text.split("options:", 1)[1])
        for option in options:
            assert option.lower().count("default") <= 1, (command, option)
        if command == "compare":
            assert "resamples (from 2000 to 1,000,000) (default: 2000)" in text  # added once


def test_ls_loads_only_its_own_arguments(tmp_path: Path) -> None:
    """``aoff ls`` builds only its own sub-parser: compare's statistics, the demo and
    attach are not imported (a part of every warm ``ls --where``'s cost)."""
    import subprocess

    code = (
        "import sys, aoff.__main__ as m\n"
        "m.main(['ls', sys.argv[1]])\n"
        "print([n for n in ('_compare', '_demo', '_attach') if 'aoff._cli.' + n in sys.modules])"
    )
    got = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert got.stdout == "[]\n" and "no run folders" in got.stderr, got


def test_show_says_env_steps_only_for_a_run_that_logged_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aoff import OffPolicyLogger

    for name, collect in (("none", False), ("some", True)):
        with OffPolicyLogger(
            log_dir=str(tmp_path / name), backends=("jsonl",), display="none", pump="thread"
        ) as log:
            for i in range(1, 4):
                if collect:
                    log.log_collector(i * 64, i * 64)
                log.log_step(i, {"loss": 1.0})
    rc, out, _ = _aoff(capsys, "show", str(tmp_path / "none"))
    assert rc == 0 and "Last step: 3" in out and "env steps" not in out
    rc, out, _ = _aoff(capsys, "show", str(tmp_path / "some"))
    assert rc == 0 and "Total env steps: 192" in out
