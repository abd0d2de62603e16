"""``aoff compare`` on real runs nobody here wrote: CleanRL's SAC logging pattern through
torch's own ``SummaryWriter``, 3 seeds × 2 configurations, read back and compared.

The expected numbers are computed from what TensorBoard's own ``EventAccumulator`` reads
and from ``rliable`` (IQM), not from aoff's reader."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aoff.__main__ import main

from .conftest import sigint_as_in_a_shell
from .tbruns import CLEANRL_SAC_TAGS

ROOT = Path(__file__).resolve().parents[1]
RETURN = "charts/episodic_return"
#: CleanRL sac_continuous_action.py's scalar tags (tbruns.py names them) but the
#: episode's: the fixture writes the return by its own rule, and no length
SAC_TAGS = tuple(t for t in CLEANRL_SAC_TAGS if not t.startswith("charts/episodic_"))


@pytest.fixture(scope="module")
def cleanrl_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``runs/{env}__{exp}__{seed}__{time}`` as CleanRL's SAC names and fills them."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    root = tmp_path_factory.mktemp("cleanrl") / "runs"
    for exp, gain in (("sac_continuous_action", 1.0), ("sac_big_batch", 1.4)):
        for seed in (1, 2, 3):
            rng = np.random.default_rng(seed + int(gain * 10))
            w = torch_tb.SummaryWriter(f"{root}/Pendulum-v1__{exp}__{seed}__17000000{seed}")
            w.add_text("hyperparameters", f"|param|value|\n|-|-|\n|seed|{seed}|")
            for step in range(0, 6000, 50):
                if step % 200 == 0:
                    w.add_scalar(RETURN, gain * step / 20 + rng.normal(0, 20), step)
                    w.add_scalar("charts/episodic_length", 200, step)
                if step % 100 == 0:
                    for i, tag in enumerate(SAC_TAGS):
                        w.add_scalar(tag, float(rng.normal(i, 1)), step)
            w.close()
    return root


def _ea_series(run: Path, tag: str) -> tuple[np.ndarray, np.ndarray]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run), size_guidance={"scalars": 0})
    ea.Reload()
    events = ea.Scalars(tag)
    return np.array([e.step for e in events], float), np.array([e.value for e in events])


def _aoff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_compare_cleanrl_sac_runs_against_tensorboard_and_rliable(
    cleanrl_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = pytest.importorskip("rliable.metrics")
    rc, out, err = _aoff(
        capsys, "compare", str(cleanrl_runs), "--metric", RETURN, "--json", "--seed", "5"
    )
    assert rc == 0, err
    assert err == ""
    got = json.loads(out)
    assert got["metric"] == RETURN
    names = [g["name"] for g in got["groups"]]
    assert names == ["Pendulum-v1__sac_big_batch", "Pendulum-v1__sac_continuous_action"]
    for g in got["groups"]:
        assert g["runs"] == 3
        runs = sorted(Path(r) for r in g["run_dirs"])
        scores = []
        for run in runs:
            steps, values = _ea_series(run, RETURN)
            last = steps.max()
            scores.append(values[steps >= last - 0.1 * (last - steps.min())].mean())
        final = g["final"]
        assert final["scores"] == pytest.approx(scores, rel=1e-6)
        assert final["iqm"] == pytest.approx(float(metrics.aggregate_iqm(np.c_[scores])))
        assert final["mean"] == pytest.approx(np.mean(scores))
        assert final["median"] == pytest.approx(np.median(scores))
        lo, hi = final["iqm_ci"]
        assert min(scores) <= lo <= final["iqm"] <= hi <= max(scores)
        assert len(g["curve"]["steps"]) == 100
    (poi,) = got["probability_of_improvement"]
    assert poi["x"] == names[0] and poi["p"] == 1.0  # 1.4x the return, well apart


def test_compare_draws_in_80_columns_in_a_terminal(cleanrl_runs: Path) -> None:
    """In a real pseudo-terminal 80 columns wide: the grouping, the table and the chart,
    no line wider than the terminal."""
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLUMNS="80", LINES="40", TERM="xterm")
    proc = subprocess.Popen(
        [sys.executable, "-m", "aoff", "compare", str(cleanrl_runs / "*"), "--metric", RETURN],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    import re

    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode())
    lines = text.replace("\r", "").splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "group Pendulum-v1__sac_big_batch: 3 runs" in lines
    assert any("IQM 95% CI" in line for line in lines)
    assert any(line.lstrip().startswith("step 0") and line.endswith("5,800") for line in lines)
    assert sum("●" in line or "■" in line for line in lines) >= 6  # both curves drawn


def test_follow_redraws_as_a_seed_appends_and_ctrl_c_ends_it(tmp_path: Path) -> None:
    """``--follow`` reads the appended bytes and redraws; Ctrl+C ends it with one line
    and status 130."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    run = tmp_path / "walk-seed1"
    w = torch_tb.SummaryWriter(str(run))
    for step in range(10):
        w.add_scalar("r", 1.0, step)
    w.flush()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = ["compare", str(run), "--metric", "r", "--json", "--follow", "--interval", "0.1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aoff", *cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=sigint_as_in_a_shell,  # the test's Ctrl+C must reach it
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = json.loads(proc.stdout.readline())
        assert first["groups"][0]["final"]["iqm"] == 1.0
        for step in range(10, 20):
            w.add_scalar("r", 3.0, step)
        w.flush()
        second = json.loads(proc.stdout.readline())
        assert second["groups"][0]["final"]["iqm"] == 3.0  # steps 18, 19: the last 10 %
        assert second["groups"][0]["curve"]["steps"][-1] == 19.0
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        assert proc.stderr.read() == "aoff compare: interrupted\n"
    finally:
        w.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_compare_out_writes_a_labelled_figure(
    cleanrl_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SVG's text is searchable: axes, legend (a PNG is made by the docs build)."""
    out = tmp_path / "fig.svg"
    rc, _, err = _aoff(capsys, "compare", str(cleanrl_runs), "--metric", RETURN, "--out", str(out))
    assert rc == 0, err
    svg = out.read_text()
    for text in ("environment steps", "IQM over runs", "sac_big_batch (3 runs)"):
        assert text in svg
    rc, _, err = _aoff(capsys, "compare", str(cleanrl_runs), "--metric", RETURN, "--out", "x.jpg")
    assert rc == 2 and ".png, .svg or .pdf" in err


def test_group_regex_and_what_is_left_out(
    cleanrl_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--group``'s first capture group names the group; runs it does not match, runs
    without the metric and files that cannot be read are each named once on stderr."""
    rc, out, err = _aoff(
        capsys,
        "compare",
        str(cleanrl_runs),
        "--metric",
        RETURN,
        "--json",
        "--group",
        r"__(sac_big_batch)__",
    )
    assert rc == 0
    assert [(g["name"], g["runs"]) for g in json.loads(out)["groups"]] == [("sac_big_batch", 3)]
    assert err.count("does not match --group") == 3
    rc, _, err = _aoff(capsys, "compare", str(cleanrl_runs), "--metric", "x", "--group", "a(")
    assert rc == 2 and "not a regular expression" in err
    rc, _, err = _aoff(capsys, "compare", str(cleanrl_runs), "--metric", "x", "--group", "a")
    assert rc == 2 and "no capture group" in err
    rc, _, err = _aoff(capsys, "compare", str(cleanrl_runs), "--metric", "no/such")
    assert rc == 1
    assert err.count("has no 'no/such'") == 6 and "no run with 'no/such'" in err
    bad = tmp_path / "bad-seed1"
    bad.mkdir()
    fifo = bad / "events.out.tfevents.1.x"
    os.mkfifo(fifo)  # an event "file" that cannot be read as one (no seeking)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        one = str(cleanrl_runs / "Pendulum-v1__sac_big_batch__1__170000001")
        rc, out, err = _aoff(capsys, "compare", one, str(bad), "--metric", RETURN, "--json")
    finally:
        os.close(writer)
    assert rc == 0
    assert err.count("\n") == 1 and f"skipped {bad}" in err


def test_a_runs_series_reads_each_byte_once(tmp_path: Path) -> None:
    """What ``--follow`` reads each look: the bytes appended since the last one."""
    from aoff._cli._series import RunSeries
    from aoff.tensorboard import SummaryWriter

    run = tmp_path / "grow-seed1"
    w = SummaryWriter(str(run), pump="thread")
    for step in range(50):
        w.add_scalar("r", float(step), step)
    w.flush()
    series = RunSeries(str(run), "r")
    assert series.update([]) and len(series.values) == 50
    first = series.bytes_read
    for step in range(50, 80):
        w.add_scalar("r", float(step), step)
    w.close()
    (events,) = run.glob("events.out.tfevents.*")
    assert series.update([]) and series.values.tolist() == [float(s) for s in range(80)]
    assert first < series.bytes_read == events.stat().st_size  # each byte read once
    assert not series.update([])  # nothing new


@pytest.fixture(scope="module")
def probe_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four seeds per case, ``reward/mean = 100 + seed`` at steps 0..990 through torch's
    own ``SummaryWriter``; seed 4 goes wrong: NaN from step 500 on, +inf on its last 5
    points, or it stops at step 490."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    root = tmp_path_factory.mktemp("probe")
    for case in ("nanmid", "infend", "short"):
        for seed in (1, 2, 3, 4):
            w = torch_tb.SummaryWriter(str(root / f"{case}-seed{seed}"))
            for step in range(0, 1000, 10):
                value = 100.0 + seed
                if seed == 4 and case == "nanmid" and step >= 500:
                    value = float("nan")
                if seed == 4 and case == "infend" and step >= 950:
                    value = float("inf")
                if seed == 4 and case == "short" and step >= 500:
                    break
                w.add_scalar("reward/mean", value, step)
            w.close()
    return root


def test_a_diverged_seed_is_named_and_never_scored_healthy(
    probe_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The probe's cases: a seed NaN from the middle, one +inf at its end, one with fewer
    steps. The diverged ones score -inf (the worst run: the IQM of 4 trims it, the mean is
    -inf), each is named with the step it diverged from, and no curve is cut silently."""
    rc, out, err = _aoff(capsys, "compare", str(probe_runs), "--metric", "reward/mean", "--json")
    assert rc == 0, err
    groups = {g["name"]: g for g in json.loads(out)["groups"]}
    assert set(groups) == {"nanmid", "infend", "short"}
    for case, from_step, value in (("nanmid", 500.0, "nan"), ("infend", 950.0, "inf")):
        g = groups[case]
        run4 = str(probe_runs / f"{case}-seed4")
        assert g["diverged"] == [{"run": run4, "from_step": from_step, "value": value}]
        assert g["final"]["scores"] == [101.0, 102.0, 103.0, None]  # None: -inf
        assert g["final"]["mean"] is None
        assert g["final"]["iqm"] == pytest.approx(101.5)  # the middle two of 4
        assert f"{run4} diverged: {value} from step {from_step:g}" in err
        # drawn to where it stops, and said: the curve's last steps are over 3 runs
        assert g["curve_ends"] == [{"run": run4, "step": from_step - 10}]
        assert g["curve"]["runs"][0] == 4 and g["curve"]["runs"][-1] == 3
        assert g["curve"]["steps"][-1] == 990.0
        assert f"{run4}'s curve stops at step {from_step - 10:g}" in err
    short = groups["short"]
    assert short["diverged"] == [] and short["final"]["scores"] == [101, 102, 103, 104]
    assert short["curve"]["steps"][-1] == 990.0 and short["curve"]["runs"][-1] == 3
    assert short["curve"]["iqm"][-1] == pytest.approx(102.0)  # seeds 1-3 past step 490
    assert (
        "short-seed4's curve stops at step 490: after it, group 'short' is drawn over 3 of 4 runs"
        in err
    )
    rc, out, err = _aoff(capsys, "compare", str(probe_runs), "--metric", "reward/mean")
    assert rc == 0 and "1 diverged (scored -inf)" in out


def test_a_one_point_spike_shows_in_the_drawn_envelope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One seed's loss spikes at one step between the curve's grid steps: the IQM (over 3
    runs, interpolated at the grid) never sees it, the envelope does, in the JSON, the
    terminal chart (its top row, in the spike's column) and the figure's band."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    for seed in (1, 2, 3):
        w = torch_tb.SummaryWriter(str(tmp_path / "runs" / f"sac__{seed}"))
        for step in range(1000):
            w.add_scalar("loss", 50.0 if seed == 2 and step == 437 else 1.0, step)
        w.close()
    runs = str(tmp_path / "runs")
    args = ("--metric", "loss", "--json", "--points", "64", "--group", "(sac)__")
    rc, out, err = _aoff(capsys, "compare", runs, *args)
    assert rc == 0, err
    (group,) = json.loads(out)["groups"]
    curve = group["curve"]
    assert 437.0 not in curve["steps"] and max(curve["iqm"]) == 1.0  # smoothed away
    near = int(np.argmin([abs(s - 437) for s in curve["steps"]]))
    assert curve["max"][near] == 50.0 and curve["min"][near] == 1.0
    assert max(m for i, m in enumerate(curve["max"]) if i != near) == 1.0

    from aoff._cli._comparechart import curve_chart
    from aoff._cli._comparefig import draw_figure
    from aoff._cli._series import RunSeries
    from aoff._cli._stats import iqm_curve

    series = [RunSeries(f"{runs}/sac__{seed}", "loss") for seed in (1, 2, 3)]
    for s in series:
        s.update([])
    c = iqm_curve([(s.steps, s.values) for s in series], points=64, reps=200)
    assert c is not None
    lines = curve_chart([("sac", c)], 80, metric="loss").plain.splitlines()
    top = lines[1]  # under the title: the row of the chart's greatest value
    assert top.lstrip().startswith("50 |") and top.count("┊") == 1
    left = top.index("|") + 1
    col, cols = top.index("┊") - left, len(top) - left
    assert abs(col - round(437 / 999 * (cols - 1))) <= 1  # in the spike's column
    assert "┊ min to max of the runs" in lines[0]

    import matplotlib.pyplot as plt

    fig = draw_figure("loss", [("sac", 3, c)])
    try:
        tops = [p.vertices[:, 1].max() for k in fig.axes[0].collections for p in k.get_paths()]
    finally:
        plt.close(fig)
    assert max(tops) == 50.0  # the envelope's band reaches the spike
