"""``aoff compare --x``: seeds aligned on another axis (issue #50).

Two seeds of one configuration whose collectors ran at different speeds (100 and 200 env
steps an iteration) log a metric that is a function of the env steps; through aoff's own
TensorBoard files, ``--x env_steps`` lines them up (the IQM band has no width), ``--x
iteration`` does not, ``--x grad_steps`` (an ``axes=`` name) puts the curve on that axis,
and ``--x wall_time`` on seconds since each run's start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aoff import OffPolicyLogger
from aoff.__main__ import main


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("axes")
    for seed, speed in ((1, 100), (2, 200)):
        with OffPolicyLogger(
            log_dir=root / f"sac-seed{seed}",
            display="none",
            handle_sigterm=False,
            system_interval=0,
        ) as log:
            for it in range(1, 41):
                env_steps = speed * it
                log.log_collector(env_steps, 10)
                log.log_step(it, {"q": env_steps / 1000}, axes={"grad_steps": 2 * it})
    return root


def _curve(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> dict[str, Any]:
    rc = main(["compare", str(root), "--metric", "train/q", "--json", "--points", "5", *args])
    got = capsys.readouterr()
    assert rc == 0, got.err
    shown = json.loads(got.out)
    assert shown["x"] == (args[args.index("--x") + 1] if "--x" in args else "step")
    [group] = shown["groups"]
    assert group["runs"] == 2
    curve: dict[str, Any] = group["curve"]
    return curve


def test_seeds_line_up_on_env_steps_not_on_iterations(
    seeds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_env = _curve(capsys, seeds, "--x", "env_steps")
    assert on_env["iqm_ci_lo"] == pytest.approx(on_env["iqm_ci_hi"])  # one curve, two seeds
    assert on_env["iqm"] == pytest.approx([s / 1000 for s in on_env["steps"]])
    on_it = _curve(capsys, seeds, "--x", "iteration")
    assert on_it["steps"][-1] == pytest.approx(40)
    widths = [hi - lo for lo, hi in zip(on_it["iqm_ci_lo"], on_it["iqm_ci_hi"], strict=True)]
    assert max(widths) > 1.0  # at iteration 40: 4.0 and 8.0


def test_x_takes_an_axes_name_and_wall_time(
    seeds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_grad = _curve(capsys, seeds, "--x", "grad_steps")
    assert on_grad["steps"][0] == pytest.approx(2) and on_grad["steps"][-1] == pytest.approx(80)
    on_wall = _curve(capsys, seeds, "--x", "wall_time")
    assert on_wall["steps"][0] == pytest.approx(0.0)
    assert main(["compare", str(seeds), "--metric", "train/q", "--x", "grad_steps"]) == 0
    chart = capsys.readouterr().out
    assert "grad_steps 2" in chart and "80" in chart  # the terminal chart's x axis
    rc = main(["compare", str(seeds), "--metric", "train/q", "--x", "nope"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "without a value on 'nope'" in err and "no run with 'train/q'" in err
