"""Only what the user set is shown: a run description left at the original logger's
defaults (``max_iterations=1500``, ``num_envs=4096``) is kept where that logger kept it
(the face's attributes, the W&B/TensorBoard config) but never shown as a fact; a run a
rule stopped says so; a drop-in writer's dashboard shows the reward tag users log, and
every tag as written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from rich.console import Console

import aoff.tensorboard
from aoff import OffPolicyLogger, rules
from aoff.__main__ import main
from aoff._backends._configwrites import run_config
from aoff._core._view import RunView
from aoff._display._panel import dashboard_panel
from aoff._display._summary import summary_panel
from aoff.testing import RecordingDisplay


def _text(renderable: object, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def _last(display: RecordingDisplay) -> RunView:
    return display.closed[-1][1]  # the state the run ended with


def test_defaults_the_user_never_gave_are_not_shown(tmp_path: Path) -> None:
    shown = RecordingDisplay()
    log = OffPolicyLogger("SAC", log_dir=str(tmp_path), display=shown, pump="thread")
    for i in range(1, 6):
        log.log_step(i, {"loss": 1.0 / i}, reward=float(i))
    log.finish()
    assert (log.max_iterations, log.num_envs) == (1500, 4096)  # the seed's attributes
    assert run_config(log._options.config, {})["max_iterations"] == 1500  # its W&B config
    state = _last(shown)
    panel, summary = (
        _text(dashboard_panel(state, state.last_wall_time or 0.0)),
        _text(summary_panel(state, 0.0)),
    )
    assert "iter 5 " in panel and "1500" not in panel and "1,500" not in panel
    assert "ETA" not in panel and "Envs" not in panel and "4,096" not in panel
    assert "Iterations: 5 " in summary and "Iterations: 5/" not in summary
    assert "1500" not in summary and "1,500" not in summary
    summary_file = json.loads((tmp_path / "aoff-summary.json").read_text())
    assert summary_file["max_iterations"] == 0  # aoff show: "5", not "5 of 1,500"


def test_values_the_user_gave_are_shown_even_the_defaults(tmp_path: Path) -> None:
    shown = RecordingDisplay()
    log = OffPolicyLogger("SAC", 1500, 4096, display=shown, pump="thread", log_backend="none")
    for i in range(1, 3):
        log.log_step(i, {"loss": 1.0})
    log.finish()
    state = _last(shown)
    panel = _text(dashboard_panel(state, (state.last_wall_time or 0.0) + 1))
    assert "iter 2/1500" in panel and "ETA" in panel and "4,096" in panel


def test_a_run_a_rule_stopped_says_so_never_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Everywhere the run's end is shown: the summary panel, ``aoff-summary.json``,
    ``aoff show`` (text and ``--json``) and ``aoff ls``."""
    shown = RecordingDisplay()
    log = OffPolicyLogger(
        "SAC", 100, display=shown, pump="thread", log_dir=str(tmp_path / "run"),
        log_backend="jsonl", rules=[rules.nonfinite(stop=True)],
    )  # fmt: skip
    for i in range(1, 100):
        log.log_step(i, {"loss": math.nan if i == 30 else 1.0})
        if log.should_stop:
            break
    log.finish()
    state = _last(shown)
    it = state.iteration
    said = f"stopped at iteration {it} by rule nonfinite"
    text = " ".join(_text(summary_panel(state, 0.0)).split())
    assert it < 100 and f"Training {said}" in text, text
    assert "complete" not in text
    summary_file = json.loads((tmp_path / "run" / "aoff-summary.json").read_text())
    assert summary_file["state"] == "stopped"
    assert summary_file["stopped"]["iteration"] == it
    assert summary_file["stopped"]["rule"] == "nonfinite"
    outs = []
    for args in (("show", "run"), ("show", "run", "--json"), ("ls", ".")):
        capsys.readouterr()
        assert main([args[0], str(tmp_path / args[1]), *args[2:]]) == 0
        outs.append(capsys.readouterr().out)
    show, show_json, ls = outs
    assert said in " ".join(show.split()) and "finished" not in show, show
    assert json.loads(show_json)["state"] == said
    [row] = ls.splitlines()[1:]
    assert row.endswith(said) and "finished" not in row, ls


def test_a_writers_dashboard_shows_the_reward_tag_and_tags_as_written(tmp_path: Path) -> None:
    with aoff.tensorboard.SummaryWriter(str(tmp_path), dashboard=True, pump="thread") as w:
        for step in range(1, 13):
            w.add_scalar("charts/episodic_return", float(step), step)
            w.add_scalar("losses/qf1_loss", 0.5, step)
            w.add_scalar("charts/SPS", 100.0, step)
        w.flush()  # folded: the dashboard's state has every call
        state = w._engine._core.state.snapshot()
    assert list(state.reward_history) == [float(s) for s in range(1, 13)]
    assert state.reward_tag == "charts/episodic_return"
    panel = _text(dashboard_panel(state, 0.0), width=120)
    assert "Waiting for data" not in panel
    assert "charts/episodic_return ▲" in panel and "Mean (last 50) 6.500" in panel
    assert "losses/qf1_loss" in panel and "charts/SPS" in panel  # not "Losses/Qf1 Loss"
