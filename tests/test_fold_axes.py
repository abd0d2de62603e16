"""``axes=``: every point on every clock (issue #50).

The recorder adds the axes to its event only when given (an event of a call without
them is the tuple it always was); the fold writes each axis as ``axis/<name>`` on every
record from the step that first names it; an axis that goes down is written as given,
counted and said once; a collector's ``policy_version`` against the learner's gives
``collector/staleness``; a producer's (``log.remote()``) axes are its own. End to end:
JSONL and CSV carry one column per axis, on both faces (the async one on asyncio and
trio) and through a producer's socket.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from aoff import AsyncOffPolicyLogger, OffPolicyLogger
from aoff._core import _events as ev
from aoff._core._fold import Folder
from aoff._core._recorder import Recorder
from aoff._core._state import State
from aoff.testing import wait_until
from tests.conftest import read_jsonl


def _step(it: int, axes: dict[str, Any] | None = None, wall: float = 1.0) -> ev.Event:
    e: ev.Event = (ev.STEP, wall, it, {"loss": 0.5}, None, None, None, 0.0, 0.0, 0.0, 0.0, None)
    return e if axes is None else (*e, axes)


def test_the_recorder_adds_axes_only_when_given_and_copies_them() -> None:
    events: list[ev.Event] = []
    rec: Recorder[None] = Recorder()
    rec._init_recorder(events.append, lambda: 5.0)
    rec.log_step(1, {"loss": 1.0})
    rec.log_collector(10, 20)
    assert [len(e) for e in events] == [
        2 + len(ev.FIELDS[ev.STEP]),
        2 + len(ev.FIELDS[ev.COLLECTOR]),
    ]
    events.clear()
    axes = {"grad_steps": 4}
    rec.log_step(2, {"loss": 1.0}, axes=axes)
    rec.log_collector(10, 20, axes={"policy_version": 3})
    axes["grad_steps"] = 99  # the caller's dict is its own again
    step, coll = events
    assert ev.KINDS[ev.STEP].optional == ("axes",) and ev.KINDS[ev.COLLECTOR].optional == ("axes",)
    assert step[ev.S_AXES] == {"grad_steps": 4} and len(step) == ev.S_AXES + 1
    assert coll[ev.C_AXES] == {"policy_version": 3} and len(coll) == ev.C_AXES + 1
    rec._cost_left = 1  # the next call is the sampled one (timed): axes go through it too
    rec.log_step(4, axes={"grad_steps": 5})
    assert [e[ev.S_AXES] for e in events if e[0] == ev.STEP][-1] == {"grad_steps": 5}
    with pytest.raises(TypeError, match=r"log_step\(axes\): expected a dict, got list"):
        rec.log_step(3, axes=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"log_collector\(axes\): expected a dict, got int"):
        rec.log_collector(1, 2, axes=5)  # type: ignore[arg-type]


def test_axes_join_every_record_from_the_step_that_names_them() -> None:
    said: list[str] = []
    state = State()
    fold = Folder(state, said.append)
    plain = fold.apply(_step(1))
    assert plain is not None
    assert [t for t, _ in plain.scalars][:3] == [
        "axis/iteration",
        "axis/env_steps_total",
        "train/loss",
    ]  # no axes: the seed's record
    r2 = fold.apply(_step(2, {"grad_steps": 8, "policy_version": 1}))
    fold.apply((ev.COLLECTOR, 1.0, 500, 10, 0.0, {"env_frames": 2000}))
    r3 = fold.apply(_step(3))  # no axes= on this call: the latest values are carried
    assert r2 is not None and r3 is not None
    assert r2.as_dict()["axis/grad_steps"] == 8.0
    assert [t for t, _ in r3.scalars][:5] == [
        "axis/iteration",
        "axis/env_steps_total",
        "axis/grad_steps",
        "axis/policy_version",
        "axis/env_frames",
    ]
    assert [v for _, v in r3.scalars][:5] == [3.0, 500.0, 8.0, 1.0, 2000.0]
    assert said == [] and state.axes_back == 0 and state.invalid_values == 0


def test_an_axis_that_goes_down_is_written_counted_and_said_once() -> None:
    said: list[str] = []
    state = State()
    fold = Folder(state, said.append)
    values = []
    for it, g in enumerate((10, 4, 12, 3, 3)):
        rec = fold.apply(_step(it, {"grad_steps": g}))
        assert rec is not None
        values.append(rec.as_dict()["axis/grad_steps"])
    assert values == [10.0, 4.0, 12.0, 3.0, 3.0]  # never dropped, never changed
    assert state.axes_back == 2  # 10 -> 4 and 12 -> 3; an equal value is no step back
    assert said == [
        "log_step(axes): axis 'grad_steps' went down (10 -> 4); written as given, and "
        "counted (FinishReport.axes_back)"
    ]


def test_bad_axes_are_reported_and_skipped_the_rest_kept() -> None:
    said: list[str] = []
    state = State()
    fold = Folder(state, said.append)
    given: dict[Any, Any] = {"step": 5, "env_steps": 9, "g": "x", "nan": float("nan")}
    given.update({3: 1, "ok": 2})  # a key that is not a str, and a good axis
    rec = fold.apply(_step(1, given))
    assert rec is not None
    axes = {t: v for t, v in rec.scalars if t.startswith("axis/")}
    assert axes == {"axis/iteration": 1.0, "axis/env_steps_total": 1.0, "axis/ok": 2.0}
    assert state.invalid_values == 5
    assert any("'step' is the record's own clock" in m for m in said), said
    assert any("'env_steps' is the record's own clock" in m for m in said), said
    assert any("axis 'nan' is nan" in m for m in said), said


def test_staleness_is_the_learners_version_minus_the_collectors() -> None:
    state = State()
    fold = Folder(state)
    # no learner version yet: nothing to compare
    fold.apply((ev.COLLECTOR, 1.0, 100, 10, 0.0, {"policy_version": 0}))
    r1 = fold.apply(_step(1, {"policy_version": 5}))
    fold.apply((ev.COLLECTOR, 1.0, 200, 10, 0.0, {"policy_version": 2}))
    # a producer's collector, against the run's learner
    fold.apply((ev.REMOTE, 1.0, "c0", (ev.COLLECTOR, 1.0, 50, 1, 0.0, {"policy_version": 4})))
    r2 = fold.apply(_step(2))
    r3 = fold.apply(_step(3))
    assert r1 is not None and r2 is not None and r3 is not None
    assert "collector/staleness" not in r1.as_dict()
    assert r2.as_dict()["collector/staleness"] == 1.0  # the latest: 5 - 4
    assert "collector/staleness" not in r3.as_dict()  # none since the last record
    assert list(state.staleness) == [3.0, 1.0]
    # the collector's version is not the run's policy_version axis
    assert r2.as_dict()["axis/policy_version"] == 5.0


def test_a_producers_axes_are_its_own_and_its_steps_back_count_for_the_run() -> None:
    state = State()
    fold = Folder(state)
    fold.apply(_step(1, {"grad_steps": 100}))
    got = [
        fold.apply((ev.REMOTE, 1.0, "c0", _step(it, {"collect_rounds": r})))
        for it, r in ((1, 5), (2, 3))
    ]
    assert [g.as_dict()["axis/collect_rounds"] for g in got if g is not None] == [5.0, 3.0]
    assert all(g is not None and "axis/grad_steps" not in g.as_dict() for g in got)
    assert state.axes_back == 1


def _check_files(run: Path) -> None:
    rows = read_jsonl(run / "metrics.jsonl")
    assert [(r.get("axis/grad_steps"), r.get("axis/policy_version")) for r in rows] == [
        (None, None),
        (4.0, 1.0),
        (8.0, 1.0),
    ]
    with open(run / "progress.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [(r["axis/grad_steps"], r["axis/policy_version"]) for r in table] == [
        ("", ""),
        ("4.0", "1.0"),
        ("8.0", "1.0"),
    ]


def test_jsonl_and_csv_have_a_column_per_axis(tmp_path: Path) -> None:
    with OffPolicyLogger(
        log_dir=tmp_path,
        log_backend="none",
        backends=("jsonl", "csv"),
        handle_sigterm=False,
        system_interval=0,
        display="none",
    ) as log:
        log.log_step(0, {"loss": 1.0})
        log.log_step(1, {"loss": 1.0}, axes={"grad_steps": 4, "policy_version": 1})
        log.log_step(2, {"loss": 1.0}, axes={"grad_steps": 8})
    _check_files(tmp_path)


@pytest.mark.anyio
async def test_the_async_face_takes_axes(tmp_path: Path) -> None:
    async with AsyncOffPolicyLogger(
        log_dir=tmp_path,
        log_backend="none",
        backends=("jsonl", "csv"),
        system_interval=0,
        display="none",
        pump="thread",
    ) as log:
        await log.log_step(0, {"loss": 1.0})
        await log.log_step(1, {"loss": 1.0}, axes={"grad_steps": 4, "policy_version": 1})
        await log.log_step(2, {"loss": 1.0}, axes={"grad_steps": 8})
    _check_files(tmp_path)


def test_a_producer_sends_its_axes_over_the_socket(tmp_path: Path) -> None:
    jsonl = tmp_path / "metrics.jsonl"
    with OffPolicyLogger(
        log_dir=tmp_path,
        log_backend="none",
        backends=("jsonl",),
        handle_sigterm=False,
        system_interval=0,
        display="none",
    ) as log:
        log.log_step(0, {"loss": 1.0}, axes={"policy_version": 7})
        # the run's own calls and the producer's socket are two streams: the learner's
        # version must be folded before the collector reports, or there is none to subtract
        log.flush()
        with log.remote("c0") as r:
            r.log_collector(64, 8, axes={"policy_version": 5})
            r.log_step(3, {"q": 1.0}, axes={"collect_rounds": 2})
        steps = iter(range(1, 10_000))

        def stale_seen() -> list[float]:
            # the producer's socket and the run's own calls are two streams: the run
            # steps until one of its records comes after the producer's collector
            log.log_step(next(steps), {"loss": 1.0})
            log.flush()
            rows = read_jsonl(jsonl)
            return [r["collector/staleness"] for r in rows if "collector/staleness" in r]

        assert wait_until(stale_seen, what="a record with collector/staleness") == [2.0]
        report = log.finish()
    theirs = [r for r in read_jsonl(jsonl) if r.get("producer") == "c0"]
    assert [r["axis/collect_rounds"] for r in theirs] == [2.0]
    assert report.axes_back == 0 and report.invalid_values == 0 and not report.late_points


def test_the_dashboard_shows_staleness_median_and_max() -> None:
    from collections import deque

    from aoff._display._content import timing_columns
    from aoff._display._glyphs import UNICODE_GLYPHS

    def collector_rows(state: State) -> dict[str, str]:
        columns = dict(timing_columns(state, UNICODE_GLYPHS))
        return {k.plain: v.plain for k, v in columns.get("Collector", [])}

    assert "Staleness" not in collector_rows(State())
    state = State(staleness=deque([1.0, 4.0, 2.0, 3.0]))
    assert collector_rows(state)["Staleness"] == "med 2.5 / max 4"


def test_a_producers_late_records_are_written_and_counted() -> None:
    from aoff._core._report import FinishReport, end_of_run_lines

    state = State()
    fold = Folder(state)
    steps = []
    for name, it in (("c0", 5), ("c0", 3), ("c1", 1), ("c0", 4), ("c0", 9)):
        rec = fold.apply((ev.REMOTE, 1.0, name, _step(it)))
        assert rec is not None and rec.producer == name
        steps.append(rec.step)
    assert steps == [5, 3, 1, 4, 9]  # each at its own step
    assert state.late_points == {"c0": 1}  # 5 -> 3; 3 -> 4 goes forward again
    lines = end_of_run_lines(
        FinishReport(late_points={"c0": 1}, axes_back=2),
        overflow_dropped=0,
        capacity=1,
        overflow="block",
    )
    assert lines == [
        "aoff: 2 axis values went down (written as given; each axis was named once above)",
        "aoff: 1 producer records came late or out of order (c0 1); each was written at its "
        "own step",
    ]


def test_the_summary_names_the_late_producer_points() -> None:
    from rich.console import Console

    from aoff._display._summary import summary_panel

    state = State(started=True, start_time=0.0, finished=True)
    state.late_points["c0"] = 3
    state.late_records = 2
    console = Console(width=80, record=True, color_system=None)
    console.print(summary_panel(state, 1.0))
    text = console.export_text()
    assert "Late producer points (written): c0 3" in text and "Late points (written): 2" in text


def test_the_runs_own_late_records_are_written_by_every_backend_and_counted(
    tmp_path: Path,
) -> None:
    """An iteration logged below the one before (not a producer's: the run's own) is
    written at its own step by every backend, counted in the report, its end-of-run
    line, ``aoff-summary.json`` and ``aoff show`` (before: W&B alone counted them)."""
    import json

    log = OffPolicyLogger(
        log_dir=str(tmp_path), log_backend="tensorboard", backends=("jsonl", "csv"),
        display="none", pump="thread",
    )  # fmt: skip
    for it in (1, 2, 5, 3, 6, 4):
        log.log_step(it, {"loss": float(it)})
    report = log.finish()
    assert report.late_records == 2  # 5 -> 3 and 6 -> 4
    assert set(report.backend_written.values()) == {6} and not any(report.backend_lost.values())
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [1, 2, 5, 3, 6, 4]
    with open(tmp_path / "progress.csv", newline="") as f:
        assert [int(r["step"]) for r in csv.DictReader(f)] == [1, 2, 5, 3, 6, 4]
    summary = json.loads((tmp_path / "aoff-summary.json").read_text())
    assert summary["late"] == {"records": 2, "producers": {}}


def test_the_end_of_run_line_and_aoff_show_say_the_late_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aoff.__main__ import main
    from aoff._core._report import FinishReport, end_of_run_lines

    lines = end_of_run_lines(
        FinishReport(late_records=2), overflow_dropped=0, capacity=1, overflow="block"
    )
    assert lines == [
        "aoff: 2 of the run's own records came late or out of order (a step below the one "
        "before); each was written at its own step"
    ]
    log = OffPolicyLogger(log_dir=str(tmp_path), log_backend="none", backends=("jsonl",),
                          display="none", pump="thread")  # fmt: skip
    for it in (2, 1):
        log.log_step(it, {"loss": 1.0})
    log.finish()
    capsys.readouterr()
    assert main(["show", str(tmp_path), "--width", "120"]) == 0
    assert "Late points: 1 (written at their own steps)" in capsys.readouterr().out
