"""``aoff show``/``ls`` see every session and writer of a folder: two runs into one
``log_dir``, six ``SummaryWriter`` objects on one folder. Each session keeps a summary
of its own; with several, the commands read the data files (their union, as TensorBoard
shows the folder) and say how many wrote there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aoff import OffPolicyLogger
from aoff.__main__ import main


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    capsys.readouterr()  # what the runs printed
    assert main([*args, "--json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def _session(run_dir: Path, tag: str, steps: int) -> None:
    with OffPolicyLogger(
        log_dir=str(run_dir),
        log_backend="tensorboard",
        console=None,
        display=None,
        handle_sigterm=False,
        system_interval=0,
        pump="thread",
    ) as log:
        for i in range(1, steps + 1):
            log.log_step(i, {tag: float(i)})
        log.finish()


def test_two_sessions_into_one_log_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "runs" / "shared"
    _session(run, "first/loss", 30)
    _session(run, "second/loss", 50)
    assert sorted(p.name for p in run.glob("aoff-summary*.json")) == [
        "aoff-summary-2.json",
        "aoff-summary.json",
    ]
    shown = _json(capsys, "show", str(run))
    assert isinstance(shown, dict)
    assert shown["writers"] == 2 and shown["kind"] == "tensorboard"
    assert shown["tags"]["first/loss"]["count"] == 30
    assert shown["tags"]["second/loss"]["count"] == 50
    assert shown["tags"]["second/loss"]["last"] == 50.0
    rows = _json(capsys, "ls", str(tmp_path / "runs"))
    assert isinstance(rows, list)
    (row,) = rows
    assert row["writers"] == 2 and row["status"] == "finished (2 writers)"
    assert main(["show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "Source: 2 writers' TensorBoard event files, as one run (" in out
    assert "first/loss" in out and "second/loss" in out
    # one session alone still reads its summary
    alone = tmp_path / "alone"
    _session(alone, "loss", 5)
    one = _json(capsys, "show", str(alone))
    assert isinstance(one, dict) and one["kind"] == "summary" and one["writers"] == 1


def test_six_summarywriters_on_one_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aoff.tensorboard import SummaryWriter

    run = tmp_path / "six"
    # all open at once; each pump in a thread of this process (the agent processes'
    # start-up is the same code for every writer, and costs seconds here)
    writers = [SummaryWriter(str(run), pump="thread") for _ in range(6)]
    for step in range(200):
        for k, w in enumerate(writers):
            w.add_scalar(f"w{k}/value", k * 1000 + step, step)
    for w in writers:
        w.close()
    assert len(list(run.glob("aoff-summary*.json"))) == 6
    ea = EventAccumulator(str(run), size_guidance={"scalars": 0})
    ea.Reload()
    shown = _json(capsys, "show", str(run))
    assert isinstance(shown, dict)
    assert shown["writers"] == 6
    assert sorted(shown["tags"]) == sorted(ea.Tags()["scalars"])
    for tag, t in shown["tags"].items():
        events = ea.Scalars(tag)
        assert t["count"] == len(events) == 200
        assert t["last"] == events[-1].value
    rows = _json(capsys, "ls", str(tmp_path))
    assert isinstance(rows, list)
    (row,) = rows
    assert row["writers"] == 6


def test_sessions_that_say_different_ends_have_no_one_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder two sessions wrote into says how it ended only when both summaries agree:
    one marked interrupted leaves the state unknown, never 'finished'."""
    run = tmp_path / "runs" / "shared"
    _session(run, "first/loss", 5)
    _session(run, "second/loss", 5)
    second = run / "aoff-summary-2.json"
    content = json.loads(second.read_text())
    content["state"] = "interrupted"
    second.write_text(json.dumps(content))
    (row,) = _json(capsys, "ls", str(tmp_path / "runs"))
    assert row["status"] == "unknown (2 writers)"
