"""Smoke tests of ``python -m aoff demo`` and the SAC examples, run as users run them.

Each program runs in a subprocess with its output piped (so the dashboard prints plain
lines) and tiny sizes; the test then reads the TensorBoard files back with TensorBoard's
own ``EventAccumulator`` and checks the tags and step counts. The example runs need the
``examples`` extra (torch, gymnasium, trio) and are skipped without it. The cheap checks
of the demo's simulation and command line run in-process.
"""

from __future__ import annotations

import importlib.util
import io
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aoff.__main__ import main as aoff_main
from aoff._cli._demo_config import DemoConfig
from aoff._cli._demo_sim import Simulation

from .conftest import read_jsonl, read_tensorboard, tensorboard_accumulator

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TIMEOUT = 180  # seconds per subprocess: generous, this machine is slow and shared

needs_examples = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "gymnasium", "trio")),
    reason="needs the 'examples' extra (torch, gymnasium, trio)",
)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    assert list(logdir.glob("events.out.tfevents.*")), f"no event file in {logdir}"
    return read_tensorboard(logdir)


# -- the demo -------------------------------------------------------------------------------
@pytest.mark.slow  # a child process
@pytest.mark.parametrize("face", ["sync", "async"])
def test_demo_writes_a_readable_tensorboard_run(tmp_path: Path, face: str) -> None:
    n = 20
    args = ["-m", "aoff", "demo", "--iterations", str(n), "--iter-ms", "1"]
    args += ["--logdir", str(tmp_path / "runs"), "--name", "smoke", "--seed", "3"]
    args += ["--backends", "tensorboard,jsonl", "--refresh", "20"]
    if face == "async":
        args.append("--async")
    proc = _run(args, tmp_path)

    run_dir = tmp_path / "runs" / "smoke"
    assert f"tensorboard --logdir {tmp_path / 'runs'}" in proc.stdout
    assert re.search(r"Training (complete|stopped at)", proc.stdout)
    assert "\x1b[?25l" not in proc.stdout  # piped: plain lines, no Live cursor codes

    sc = _scalars(run_dir)
    for tag in (
        "axis/iteration",
        "axis/env_steps_total",
        "reward/mean",
        "reward/angle",
        "train/q1_loss",
        "train/alpha",
        "train/entropy",
        "episode/length",
        "timing/collector_env_step_backend_ms",
        "perf/steps_per_sec",
    ):
        assert len(sc[tag]) == n, tag
    assert [v for _, v in sc["axis/iteration"]] == list(range(1, n + 1))
    steps = [s for s, _ in sc["axis/iteration"]]
    assert steps == sorted(steps) and steps[0] > 0  # x axis: env steps after the warm-up
    rewards = [v for _, v in sc["reward/mean"]]
    assert rewards[0] < -1000 and rewards[-1] > -400  # the simulated learning curve

    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == n
    assert json.loads(lines[-1])["iteration"] == n


def test_demo_simulation_is_seeded_and_learns() -> None:
    a = Simulation(iterations=100, seed=7, iter_ms=10.0)
    b = Simulation(iterations=100, seed=7, iter_ms=10.0)
    fills = list(a.fill())
    assert fills == list(b.fill())
    assert fills[-1].buffer_size == fills[-1].target
    assert all(x.buffer_size < y.buffer_size for x, y in itertools.pairwise(fills))
    steps_a = [a.step(i) for i in range(1, 101)]
    assert steps_a == [b.step(i) for i in range(1, 101)]
    early = sum(s.reward for s in steps_a[:10]) / 10
    late = sum(s.reward for s in steps_a[-10:]) / 10
    assert -1500 < early < -1000 and -300 < late < -150
    assert steps_a[-1].metrics["alpha"] < steps_a[0].metrics["alpha"]
    assert steps_a[-1].metrics["q1_loss"] < steps_a[5].metrics["q1_loss"]
    # the nested collector timing sits under its parent and fits within it
    t = steps_a[0].collector_timing_ms
    assert t["env_step_backend_ms"] < t["env_step_ms"]
    assert Simulation(iterations=100, seed=8).step(1) != Simulation(iterations=100, seed=7).step(1)


def test_demo_config_routes_backends() -> None:
    kw = DemoConfig(backends=("tensorboard", "jsonl"), logdir="r", name="n").logger_kwargs()
    assert (kw["log_backend"], kw["backends"], kw["log_dir"]) == (
        "tensorboard",
        ("jsonl",),
        os.path.join("r", "n"),
    )
    kw = DemoConfig(backends=(), name="n").logger_kwargs()
    assert (kw["log_backend"], kw["backends"], kw["log_dir"]) == ("none", (), "")


def test_cli_needs_a_command_and_rejects_unknown_backends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert aoff_main([]) == 2
    assert "demo" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        aoff_main(["demo", "--backends", "tensorboard,nope"])
    assert exc.value.code == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        aoff_main(["demo", "--iterations", "0"])


# -- the SAC examples ----------------------------------------------------------------------
@pytest.mark.slow  # real SAC training in a subprocess, ~4 s each
@needs_examples
@pytest.mark.parametrize("name", ["sac_pendulum_sync", "sac_pendulum_asyncio", "sac_pendulum_trio"])
def test_sac_example_runs_and_logs(tmp_path: Path, name: str) -> None:
    total, starts = 200, 100
    logdir = tmp_path / name
    proc = _run(
        [
            str(EXAMPLES / f"{name}.py"),
            "--total-steps",
            str(total),
            "--learning-starts",
            str(starts),
            "--logdir",
            str(logdir),
            # tiny networks: this checks the plumbing, not the learning
            "--hidden",
            "32",
            "--batch-size",
            "32",
        ],
        tmp_path,
    )
    assert f"{name}: seed 0, {total} env steps" in proc.stdout
    assert (logdir / "sac_pendulum.pt").is_file()

    sc = _scalars(logdir)
    updates = total - starts
    for tag in (
        "axis/iteration",
        "train/q1_loss",
        "train/q2_loss",
        "train/actor_loss",
        "train/alpha",
        "train/alpha_loss",
        "train/entropy",
        "train/q1_mean",
        "timing/learner_train_ms",
        "timing/collector_env_step_ms",
    ):
        assert len(sc[tag]) == updates, tag
    assert [v for _, v in sc["axis/iteration"]] == list(range(1, updates + 1))
    # the x axis is env steps: one update per step after the warm-up; the async runners'
    # collector may be up to 2 steps (MAX_LEAD) ahead of the learner when it logs
    steps = [s for s, _ in sc["axis/iteration"]]
    lead = 0 if name == "sac_pendulum_sync" else 2
    assert all(starts + k <= s <= starts + k + lead for k, s in enumerate(steps, 1)), steps
    assert steps == sorted(steps) and steps[-1] == total
    # Pendulum's 200-step episode ends at the last step and is logged with its return
    assert [s for s, _ in sc["reward/mean"]] == [total]
    assert -2000 < sc["reward/mean"][0][1] < 0
    # written once an episode has ended (mean length > 0), as the seed logger did
    assert sc["episode/length"][-1] == (total, 200.0)
    assert "reward/return_mean10" in sc
    assert all(v > 0 for _, v in sc["train/alpha"])


@pytest.mark.slow  # real SAC training in a subprocess, a few seconds
@needs_examples
def test_cleanrl_style_sac_logs_through_aoffs_summarywriter(tmp_path: Path) -> None:
    total, starts = 300, 100
    proc = _run(
        [
            str(EXAMPLES / "cleanrl_sac.py"),
            *("--total-timesteps", str(total), "--learning-starts", str(starts)),
            *("--batch-size", "32"),
        ],
        tmp_path,
    )
    assert "global_step=199, episodic_return=" in proc.stdout  # the script's own prints
    (run_dir,) = (tmp_path / "runs").iterdir()  # CleanRL's runs/<run_name>
    assert run_dir.name.startswith("Pendulum-v1__cleanrl_sac__1__")
    sc = _scalars(run_dir)
    assert [s for s, _ in sc["charts/episodic_return"]] == [199]
    assert sc["charts/episodic_length"] == [(199, 200.0)]
    for tag in ("losses/qf1_loss", "losses/actor_loss", "losses/alpha", "charts/SPS"):
        assert [s for s, _ in sc[tag]] == [200], tag
    acc = tensorboard_accumulator(run_dir)
    (text,) = acc.Tensors("hyperparameters/text_summary")
    assert text.tensor_proto.string_val[0].startswith(b"|param|value|")


@pytest.mark.slow  # SAC with 2 spawned collector processes, ~10 s
@needs_examples
def test_sac_collectors_example_logs_learner_and_each_collector(tmp_path: Path) -> None:
    total, starts, collectors = 400, 200, 2
    logdir = tmp_path / "collectors"
    proc = _run(
        [
            str(EXAMPLES / "sac_pendulum_collectors.py"),
            *("--total-steps", str(total), "--learning-starts", str(starts)),
            *("--collectors", str(collectors), "--chunk", "10", "--sync-every", "10"),
            *("--logdir", str(logdir), "--hidden", "32", "--batch-size", "32"),
            *("--backends", "jsonl"),
        ],
        tmp_path,
    )
    assert f"sac_pendulum_collectors: seed 0, {total} env steps" in proc.stdout
    for k in range(collectors):
        assert f"collector{k}: " in proc.stdout and ", 0 dropped" in proc.stdout
    assert (logdir / "sac_pendulum.pt").is_file()

    # the run's total env steps is the sum of the collectors' (the learner steps none)
    assert f"Total env steps: {total}" in proc.stdout

    # the learner: one record per update, its x axis the collectors' summed env steps as
    # the run had them then (their events arrive on their own connections, so no exact
    # step is asserted: only that it grows and lies within the collectors' range)
    updates = total - starts
    sc = _scalars(logdir)
    assert [v for _, v in sc["axis/iteration"]] == list(range(1, updates + 1))
    assert len(sc["train/q1_loss"]) == updates
    steps = [s for s, _ in sc["axis/iteration"]]
    assert steps == sorted(steps) and starts < steps[-1] <= total
    rows = read_jsonl(logdir / "metrics.jsonl")
    own = [r for r in rows if "producer" not in r]
    assert [r["iteration"] for r in own] == list(range(1, updates + 1))

    # each collector: its own TensorBoard run and JSONL rows, in order, one per chunk
    per = total // collectors
    for k in range(collectors):
        name = f"collector{k}"
        mine = [r for r in rows if r.get("producer") == name]
        assert [r["iteration"] for r in mine] == list(range(1, per // 10 + 1)), name
        assert [r["step"] for r in mine] == list(range(10, per + 1, 10)), name
        assert all(r["timing/collector_env_step_ms"] > 0 for r in mine), name
        # Pendulum's 200-step episode ends at the collector's last step
        assert [r["step"] for r in mine if "reward/mean" in r] == [per], name
        tb = _scalars(logdir / name)
        assert [s for s, _ in tb["axis/iteration"]] == [r["step"] for r in mine], name
        assert len(tb["reward/mean"]) == 1 and -2000 < tb["reward/mean"][0][1] < 0, name
    # the learner's new weights reached the collectors (one may have run all its steps
    # during the warm-up, before the first sync)
    assert max(r["train/policy_version"] for r in rows if "producer" in r) > 0


@needs_examples
def test_examples_end_with_the_demos_closing_lines(tmp_path: Path) -> None:
    """The demo and every example print the same commands for the same files: each file
    written (progress.csv, config.json and the run summary included), one tensorboard
    command form, ``aoff show``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    try:
        import _sac  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    from aoff._cli._demo_outro import closing_lines

    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    for backends in (["tensorboard"], ["tensorboard", "jsonl", "csv"], ["tensorboard", "csv"]):
        lines = closing_lines(str(run), backends)
        assert lines == _sac.closing_lines(str(run), backends)
        text = "\n".join(lines)
        assert f"--logdir {run.parent}" in text and f"show {run}" in text
        assert ("progress.csv" in text) == ("csv" in backends)
        assert str(run / "config.json") in text


def test_every_help_lists_its_defaults_and_choices(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("demo", "attach", "show", "ls"):
        with pytest.raises(SystemExit):
            aoff_main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        if command == "demo":
            assert "tensorboard, jsonl, csv, wandb" in text
            for default in ("(default: 300)", "(default: tensorboard)", "(default: runs)"):
                assert default in text, default
            assert "(default: )" not in text
        if command == "attach":  # its help names the default itself: said once
            assert "(default 4;" in text and text.count("default") == 1, text


def test_the_demo_fills_tensorboards_hparams_tab(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing import plugin_event_accumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    from aoff._cli._demo import run

    cfg = DemoConfig(iterations=3, iter_ms=0.0, logdir=str(tmp_path), name="h")
    assert run(cfg, out=io.StringIO()) == 0
    acc = plugin_event_accumulator.EventAccumulator(str(tmp_path / "h"))
    acc.Reload()
    content = acc.PluginTagToContent("hparams")
    data = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = dict(data.session_start_info.hparams)
    assert hparams["env"].string_value == "Pendulum-v1"
    assert hparams["iterations"].number_value == 3


# -- each example says what it needs, and the test install has it -----------------------
_NEEDS = re.compile(r"^Needs the [^:]*:\s+``pip install 'aoff\[([a-z0-9_,-]+)\]'``", re.M)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _extras() -> dict[str, list[str]]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = dict(project["optional-dependencies"])
    extras[""] = project["dependencies"]  # the core install
    return extras


def _installed_with(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, their own requirements included."""
    from importlib import metadata

    from packaging.requirements import Requirement

    todo = [Requirement(r).name for r in requirements]
    seen: set[str] = set()
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [Requirement(r).name for r in requires if "extra ==" not in r]
    return seen


def _imports_needed(path: Path) -> set[str]:
    """The top-level modules ``path`` always imports: an import under an ``if`` or a
    ``try`` is optional (``--track``'s wandb); the examples' own ``_sac`` is followed."""
    import ast

    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If | ast.Try):
                continue
            if isinstance(child, ast.Import):
                found.update(a.name.split(".")[0] for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.add(child.module.split(".")[0])
            visit(child)

    visit(tree)
    if "_sac" in found:
        found |= _imports_needed(path.with_name("_sac.py"))
    return found - set(sys.stdlib_module_names) - {"aoff", "_sac"}


def test_every_example_states_the_extras_it_needs_and_the_test_install_has_them() -> None:
    from importlib import metadata

    extras = _extras()
    readme = (ROOT / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith("python3 -m venv") and "pytest" in x)
    install = re.search(r"-e '\.\[([a-z0-9_,-]+)\]'", line)
    assert install, line
    tested = set(install[1].split(","))
    found = metadata.packages_distributions().items()
    module_dists = {m: {_norm(d) for d in ds} for m, ds in found}
    examples = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
    assert len(examples) >= 8
    for path in examples:
        stated = _NEEDS.search(path.read_text())
        assert stated, f"{path.name} does not say which extras it needs (Needs the ... extra)"
        needs = stated[1].split(",")
        assert set(needs) <= set(extras), (path.name, needs)
        assert set(needs) <= tested, f"{path.name}: {needs} not all in README's tests line"
        provided = _installed_with([r for e in ["", *needs] for r in extras[e]])
        for module in sorted(_imports_needed(path)):
            dists = module_dists.get(module)
            assert dists, f"{path.name} imports {module}, which is not installed"
            assert dists & provided, f"{path.name} imports {module}; none of {needs} installs it"
