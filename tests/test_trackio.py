"""``backends=("trackio",)``: the agent writes the run into trackio's local store, read
back through trackio's own API and command line (its data folder is ``TRACKIO_DIR``,
here under tmp_path: no network, nothing in the user's store), and the training process
never imports trackio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trackio")

TRAIN = textwrap.dedent(
    """
    import sys
    import numpy as np
    import aoff

    log = aoff.OffPolicyLogger(
        algo_name="SAC", env_name="Pendulum-v1", num_envs=1, log_backend="none",
        backends=("trackio",), wandb_project="aoff-test", wandb_name="sac-1",
        config={"lr": 0.001}, display="none",
    )
    for i in range(1, 6):
        log.log_step(i, {"train/loss": 1.0 / i})
    log.log_histogram("q", np.arange(10.0))
    log.log_image("img", np.full((8, 8, 3), 200, dtype=np.uint8), step=5)
    log.log_video("vid", np.zeros((4, 16, 16, 3), dtype=np.uint8), step=5, fps=4)
    print(log.finish().backend_written["trackio"], "trackio" in sys.modules)

    import json  # read back through trackio's Api, now that the run is over
    import trackio

    runs = trackio.Api().runs("aoff-test")
    print(json.dumps([[r.name, r.config] for r in runs]))
    """
)


CLI = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from trackio.cli import main  # what the trackio command runs

    answers = []
    for argv in json.loads(sys.argv[1]):
        sys.argv = ["trackio", *argv]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            main()
        answers.append(json.loads(out.getvalue()))
    print(json.dumps(answers))
    """
)


def trackio_cli(env: dict[str, str], *queries: tuple[str, ...]) -> list[Any]:
    """What ``trackio <query...> --json`` prints, for each query (its argv, with
    ``--project``): trackio's own command line, one process for them all (each trackio
    command pays trackio's import, ~1 s)."""
    argvs = [[*q, "--json"] for q in queries]
    got = subprocess.run(
        [sys.executable, "-c", CLI, json.dumps(argvs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    answers: list[Any] = json.loads(got.stdout.splitlines()[-1])
    return answers


def test_a_run_lands_in_trackios_local_store(tmp_path: Path) -> None:
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio")}
    for key in ("TRACKIO_SPACE_ID", "TRACKIO_SERVER_URL"):
        env.pop(key, None)
    got = subprocess.run(
        [sys.executable, "-c", TRAIN], env=env, capture_output=True, text=True, timeout=120
    )
    assert got.returncode == 0, got.stderr
    counts, runs = got.stdout.splitlines()
    written, imported = counts.split()
    assert int(written) >= 5 and imported == "False"  # the agent imported it, not us
    [[name, config]] = json.loads(runs)
    assert name == "sac-1"
    assert config["lr"] == 0.001 and config["algo"] == "SAC"

    on = ("--project", "aoff-test", "--run", "sac-1")
    loss, at5 = trackio_cli(
        env,
        ("get", "metric", *on, "--metric", "train/loss"),
        ("get", "snapshot", *on, "--step", "5"),
    )
    assert [(v["step"], v["value"]) for v in loss["values"]] == [(i, 1.0 / i) for i in range(1, 6)]
    at5 = at5["metrics"]
    assert at5["q"][0]["value"]["_type"] == "trackio.histogram"
    for key, kind in (("img", "trackio.image"), ("vid", "trackio.video")):
        [value] = at5[key]
        assert value["step"] == 5 and value["value"]["_type"] == kind
        stored = tmp_path / "trackio" / "media" / value["value"]["file_path"]
        assert stored.stat().st_size > 0


def test_the_backend_object_is_plain_data_the_agent_gets() -> None:
    import pickle

    from aoff import TrackioBackend
    from aoff._pump._options import Options

    backend = TrackioBackend(project="p", name="r", group="g")
    again = pickle.loads(pickle.dumps(backend))
    assert (again.project, again.run_name, again.group) == ("p", "r", "g")
    assert Options(log_backend="none", backends=(backend,)).in_process_only() is None
    named = Options(log_backend="none", backends=("trackio",), wandb_project="p", wandb_name="r")
    built = named.build_backends()[0]
    assert isinstance(built, TrackioBackend) and (built.project, built.run_name) == ("p", "r")
    with pytest.raises(ValueError, match="'trackio' backend cannot continue a run"):
        Options(log_backend="none", backends=("trackio",), resume_step=3).backend_names()


SAME_CALLS = textwrap.dedent(
    """
    import json, sys
    import aoff, trackio

    # through aoff: the training process logs, the agent delivers to trackio later
    log = aoff.OffPolicyLogger(
        algo_name="SAC", log_backend="none", backends=("trackio", "jsonl"),
        log_dir=sys.argv[1], wandb_project="through-aoff", wandb_name="r",
        config={"lr": 0.001, "_target_": "algos.SAC"}, display="plain",
        pump="thread",  # its lines printed here, not forwarded from an agent at the end
    )
    for i in range(1, 6):  # the learner's times from step 3: logged from there
        log.log_step(i, {"train/loss": 1.0 / i}, train_time=0.01 * (i >= 3),
                     axes={"grad_steps": 2 * i})
    log.finish()

    # the same calls, made with trackio directly
    trackio.init(project="direct", name="r", config={"algo": "SAC", "lr": 0.001},
                 embed=False, auto_log_gpu=False, auto_log_cpu=False)
    for i in range(1, 6):
        times = {f"timing/learner_{k}_ms": 10.0 * (k == "train")
                 for k in ("wait", "incremental_h2d", "train", "weight_sync")}
        trackio.log({"axis/grad_steps": 2 * i, "train/loss": 1.0 / i,
                     **(times | {"perf/iter_ms": 10.0} if i >= 3 else {})}, step=i)
    trackio.finish()
    print(json.dumps({p: [r.config for r in trackio.Api().runs(p)]
                      for p in ("through-aoff", "direct")}))
    """
)


def test_trackio_gets_only_the_users_config_against_direct_trackio_calls(tmp_path: Path) -> None:
    """Only the keys the user configured (no run-description default such as
    ``num_envs: 4096``), and a key trackio reserves left out alone with one line (it used
    to lose the whole run); the points as trackio.log's: the face's scaffolding (done
    rates, learner times, ``perf/iter_ms``, its clocks) only once logged, the user's
    axes kept; that trackio stamps its own times said once."""
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio")}
    for key in ("TRACKIO_SPACE_ID", "TRACKIO_SERVER_URL"):
        env.pop(key, None)
    got = subprocess.run(
        [sys.executable, "-c", SAME_CALLS, str(tmp_path / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert got.returncode == 0, got.stderr
    said = got.stdout + got.stderr  # the plain display's lines
    assert said.count("config key '_target_' left out") == 1, said
    assert said.count("trackio stamps each point when it stores it") == 1, said
    configs = json.loads(got.stdout.splitlines()[-1])
    [ours], [theirs] = configs["through-aoff"], configs["direct"]

    def user_keys(c: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in c.items() if not k.startswith("_")}  # trackio's own

    assert user_keys(ours) == user_keys(theirs) == {"algo": "SAC", "lr": 0.001}
    projects = ("through-aoff", "direct")
    shown = ("train/loss", "timing/learner_train_ms", "perf/iter_ms", "axis/grad_steps")
    queries: list[tuple[str, ...]] = [
        ("list", "metrics", "--project", p, "--run", "r") for p in projects
    ]
    queries += [
        ("get", "metric", "--project", p, "--run", "r", "--metric", m)
        for m in shown
        for p in projects
    ]
    answers = trackio_cli(env, *queries)
    listed, answers = answers[: len(projects)], answers[len(projects) :]
    metrics = dict(zip(projects, (a["metrics"] for a in listed), strict=True))
    assert sorted(metrics["through-aoff"]) == sorted(metrics["direct"]), metrics
    points = {
        (m, p): [(v["step"], v["value"]) for v in answer["values"]]
        for (m, p), answer in zip(((m, p) for m in shown for p in projects), answers, strict=True)
    }
    loss = [(i, 1.0 / i) for i in range(1, 6)]
    assert points["train/loss", "through-aoff"] == points["train/loss", "direct"] == loss
    for metric in shown[1:]:
        ours, theirs = points[metric, "through-aoff"], points[metric, "direct"]
        assert ours == theirs != [], (metric, ours, theirs)


HPARAMS = textwrap.dedent(
    """
    import json, sys
    import trackio
    from aoff.tensorboard import SummaryWriter

    w = SummaryWriter(sys.argv[1], backends=("trackio",), wandb_project="through-aoff",
                      wandb_name="r", dashboard=True, pump="thread")  # lines printed here
    w.add_hparams({"lr": 0.1, "batch": 32}, {"hparam/return": 90.0})
    w.add_scalar("loss", 0.5, 1)
    w.add_hparams({"late": 1}, {"hparam/late": 1.0})
    w.flush()  # said while the run goes on, not in the final drain
    w.add_scalar("loss", 0.4, 2)
    w.close()
    print(json.dumps([r.config for r in trackio.Api().runs("through-aoff")]))
    """
)


def test_add_hparams_reaches_trackios_config_and_its_metrics_keep_their_names(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio")}
    for key in ("TRACKIO_SPACE_ID", "TRACKIO_SERVER_URL"):
        env.pop(key, None)
    got = subprocess.run(
        [sys.executable, "-c", HPARAMS, str(tmp_path / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert got.returncode == 0, got.stderr
    [config] = json.loads(got.stdout.splitlines()[-1])
    assert {k: config[k] for k in ("lr", "batch")} == {"lr": 0.1, "batch": 32}
    # the writer's own description ("SummaryWriter", its folder, no envs) is not config
    assert not {"algo", "env", "num_envs", "max_iterations"} & set(config), config
    assert "late" not in config  # trackio fixes the config at the first point: said
    said = " ".join((got.stdout + got.stderr).split())  # the display wraps its lines
    assert said.count("trackio keeps a run's config as of its first point: late") == 1, said
    want = (("hparam/return", 0, 90.0), ("hparam/late", 0, 1.0))
    on = ("--project", "through-aoff", "--run", "r")
    outs = trackio_cli(env, *(("get", "metric", *on, "--metric", m) for m, _, _ in want))
    for (metric, step, value), out in zip(want, outs, strict=True):
        assert [(v["step"], v["value"]) for v in out["values"]] == [(step, value)], metric
