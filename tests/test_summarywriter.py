"""``aoff.tensorboard.SummaryWriter`` against torch's own ``SummaryWriter``.

The proof of the drop-in: one seeded random call sequence (several tags; ``add_scalar``
with every accepted value type, ``add_scalars``, ``add_text``, ``add_histogram`` with
several ``bins`` rules, ``add_hparams``; steps out of order, repeated or ``None``) is
played through torch's writer into one folder and through aoff's into another, then
both are read back with TensorBoard's own ``EventMultiplexer`` and compared: the same
run folders, tags per run, ``(step, value)`` sequences, texts, histogram statistics and
HParams plugin contents. A second writer with ``purge_step`` on the same folders checks
the purge. The rest: unsupported calls, bad values at the call, ``close()``, the context
manager, and W&B's ``sync_tensorboard`` in real offline mode.
"""

from __future__ import annotations

import importlib.util
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("tensorboard")

import torch
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from aoff import AoffWarning
from aoff.tensorboard import SummaryWriter
from aoff.testing import probe, read_wandb_history, wait_for_wandb_runs, wait_until

TAGS = ("losses/qf1", "losses/actor", "charts/episodic_return", "alpha")
GIVEN_MAX = 1_700_001_000
KEEP_ALL = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0, ea.COMPRESSED_HISTOGRAMS: 0}


def _value(rng: random.Random) -> Any:
    """A value of one of the types add_scalar accepts."""
    x = rng.uniform(-1e3, 1e3)
    kind = rng.randrange(7)
    if kind == 0:
        return x
    if kind == 1:
        return rng.randrange(-50, 50)
    if kind == 2:
        return np.float32(x)
    if kind == 3:
        return np.array([x])
    if kind == 4:
        return np.array(x)
    if kind == 5:
        return torch.tensor(x)
    return torch.tensor([[x]], dtype=torch.float64)


def calls(seed: int, n: int = 160) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """A seeded random call sequence: (method, args, kwargs)."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    out: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    step = 0
    for i in range(n):
        r = rng.random()
        # mostly growing steps, sometimes back, repeated, or None
        u = rng.random()
        gs: int | None
        if u < 0.1:
            gs = None
        elif u < 0.2:
            gs = max(0, step - rng.randrange(1, 5))
        elif u < 0.3:
            gs = step
        else:
            step += rng.randrange(1, 4)
            gs = step
        wall = 1_700_000_000.0 + i if rng.random() < 0.5 else None
        tag = rng.choice(TAGS)
        if r < 0.5:
            kw: dict[str, Any] = {"walltime": wall}
            if rng.random() < 0.1:
                kw["new_style"] = True
                kw["double_precision"] = rng.random() < 0.5
            out.append(("add_scalar", (tag, _value(rng), gs), kw))
        elif r < 0.65:
            keys = rng.sample(["q1", "q2", "target"], rng.randrange(1, 4))
            main = rng.choice(("values/q", "td"))
            d = {k: _value(rng) for k in keys}
            out.append(("add_scalars", (main, d, gs), {"walltime": wall}))
        elif r < 0.75:
            text = rng.choice(["|a|b|\n|-|-|\n|1|2|", "plain", "ünïcode ✓", ""]) + str(i)
            out.append(("add_text", (tag, text, gs), {"walltime": wall}))
        elif r < 0.92:
            size = rng.choice((1, 7, 100, 1000, 70_000))  # > 65,536: reduced at the call
            values: Any = nrng.normal(rng.uniform(-5, 5), rng.choice((1e-3, 1.0, 1e4)), size)
            if rng.random() < 0.3:
                values = torch.from_numpy(values.astype(np.float32))
            bins: Any = rng.choice(
                ("tensorflow", "tensorflow", 10, "auto", [-1e6, -1.0, 0.0, 1.0, 1e6])
            )
            kw = {"bins": bins, "walltime": wall}
            if rng.random() < 0.2:
                kw["max_bins"] = rng.choice((3, 50))
            out.append(("add_histogram", (tag, values, gs), kw))
        else:
            hp = {"lr": rng.choice((1e-3, 3e-4)), "algo": "sac", "n": rng.randrange(9)}
            hp["flag"] = rng.random() < 0.5
            metrics = {"hparam/return": _value(rng), "hparam/loss": rng.random()}
            kw = {"run_name": f"hp{i}", "global_step": gs}
            if rng.random() < 0.5:
                kw["hparam_domain_discrete"] = {"algo": ["sac", "td3"]}
            out.append(("add_hparams", (hp, metrics), kw))
    return out


def play(writer: Any, sequence: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
    for method, args, kwargs in sequence:
        getattr(writer, method)(*args, **kwargs)


def read(root: Path) -> dict[str, dict[str, Any]]:
    """Everything TensorBoard's reader sees, per run (relative folder), comparable."""
    mux = EventMultiplexer(size_guidance=KEEP_ALL)
    mux.AddRunsFromDirectory(str(root))
    mux.Reload()
    out: dict[str, dict[str, Any]] = {}
    for run, tags in mux.Runs().items():
        acc = mux.GetAccumulator(run)
        got: dict[str, Any] = {"tags": {k: sorted(v) for k, v in tags.items() if v}}
        for tag in tags[ea.SCALARS]:
            got["s:" + tag] = [(e.step, e.value) for e in acc.Scalars(tag)]
            # the wall times the calls gave (1.7e9 + i); the others are "now" in each
            got["w:" + tag] = [
                e.wall_time if e.wall_time < GIVEN_MAX else 0 for e in acc.Scalars(tag)
            ]
        for tag in tags[ea.TENSORS]:
            got["t:" + tag] = [
                (e.step, e.tensor_proto.SerializeToString()) for e in acc.Tensors(tag)
            ]
        for tag in tags[ea.HISTOGRAMS]:
            got["h:" + tag] = [(e.step, vars(e.histogram_value)) for e in acc.Histograms(tag)]
        try:
            contents = acc.PluginTagToContent("hparams")
            # decoded: a protobuf map's serialised order is not fixed
            got["hparams"] = {k: HParamsPluginData.FromString(c) for k, c in contents.items()}
        except KeyError:  # no HParams summary in this run
            got["hparams"] = {}
        out[run] = got
    return out


def test_same_calls_read_back_the_same_as_torchs_writer(tmp_path: Path) -> None:
    sequence = calls(seed=7)
    methods = {m for m, _, _ in sequence}
    assert methods == {"add_scalar", "add_scalars", "add_text", "add_histogram", "add_hparams"}
    theirs, ours = tmp_path / "torch", tmp_path / "aoff"
    with TorchWriter(str(theirs)) as tw:
        play(tw, sequence)
    with SummaryWriter(str(ours)) as aw:
        play(aw, sequence)
    # a second session on each folder: purge_step hides the first one's points from 40 on.
    # Readers go through a folder's files in name order, and both writers name a file
    # `<10-digit second>.<host>.<pid>.<n>`: within one second, torch's order then
    # depends on its process-wide file counter as a string ("12" < "9"), which the
    # tests run before this one move. Starting the second session in a later second
    # keeps both folders' files in session order, as a script run twice would.
    first_done = int(time.time())
    wait_until(lambda: int(time.time()) != first_done, what="the next wall-clock second")
    tail = calls(seed=8, n=30)
    with TorchWriter(str(theirs), purge_step=40) as tw:
        play(tw, tail)
    with SummaryWriter(str(ours), purge_step=40) as aw:
        play(aw, tail)

    want, got = read(theirs), read(ours)
    assert sorted(got) == sorted(want)  # the same run folders, relative
    assert len(want) > 5
    for run in want:
        assert got[run]["tags"] == want[run]["tags"], run
        assert got[run].keys() == want[run].keys(), run
        for key in want[run]:
            assert got[run][key] == want[run][key], (run, key)
    # the comparison saw every kind of data
    main = want["."]
    assert main["tags"].keys() >= {ea.SCALARS, ea.TENSORS, ea.HISTOGRAMS}
    assert any(w["hparams"] for w in want.values())


def test_default_log_dir_and_hparams_run_follow_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_sac") as w:
        logdir = Path(w.get_logdir())
        w.add_hparams({"lr": 0.1}, {"m": 1.0})
    assert logdir.parent == Path("runs")
    assert logdir.name.endswith("_" + socket.gethostname() + "_sac")
    subs = [p for p in logdir.iterdir() if p.is_dir()]
    assert len(subs) == 1 and float(subs[0].name) > 1e9  # str(time.time())
    assert list(subs[0].glob("events.out.tfevents.*"))


def test_unsupported_and_media_calls_say_what_to_use(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        for name in (
            "add_graph",
            "add_embedding",
            "add_mesh",
            "add_pr_curve",
            "add_custom_scalars",
            "add_onnx_graph",
        ):
            with pytest.raises(NotImplementedError, match=f"{name}.*torch.utils.tensorboard"):
                getattr(w, name)(None)
        with pytest.raises(NotImplementedError, match=r"add_image_with_boxes.*torch"):
            w.add_image_with_boxes("tag", None)
        # the media calls are covered (tests/test_media.py): bad input is an error there
        with pytest.raises(TypeError, match="add_image: 'tag' must be a NumPy array"):
            w.add_image("tag", None)
        with pytest.raises(AttributeError):
            w.no_such_method  # noqa: B018


BAD_VALUES: list[tuple[Any, type[Exception], str]] = [
    ("1.0", TypeError, "must be a number.*str"),
    (np.array([1.0, 2.0]), ValueError, r"shape \(2,\)"),
    (torch.tensor([1.0, 2.0]), ValueError, r"shape \(2,\)"),
    ({"a": 1}, TypeError, "dict"),
    (None, TypeError, "NoneType"),
    (np.array(["x"]), TypeError, "dtype"),
]


def test_bad_values_are_errors_at_the_call(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        for value, error, match in BAD_VALUES:
            with pytest.raises(error, match=match):
                w.add_scalar("x", value, 1)
            with pytest.raises(error, match=match):
                w.add_scalars("m", {"a": value}, 1)
        w.add_scalar("x", 2.0, 1)
    assert read(tmp_path)["."]["s:x"] == [(1, 2.0)]  # nothing of the bad calls
    assert not (tmp_path / "m_a").exists()


def test_other_bad_input_is_an_error_at_the_call(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(TypeError, match="tag must be a str"):
            w.add_scalar(3, 1.0)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="text_string must be a str"):
            w.add_text("t", 3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="empty"):
            w.add_histogram("h", np.array([]))
        with pytest.raises(ValueError, match="no value falls within"):
            w.add_histogram("h", np.array([5.0]), bins=[0.0, 1.0])
        with pytest.raises(ValueError, match="NaN or infinity"):
            w.add_histogram("h", np.array([np.nan, 1.0]), bins=10)
        with pytest.raises(TypeError, match="should be dictionary"):
            w.add_hparams([], {})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="int, float, str, bool"):
            w.add_hparams({"a": [1]}, {})
        for bad in ("\ud800", "a\udfff"):  # lone surrogates: UTF-8 cannot hold them
            with pytest.raises(ValueError, match="not valid Unicode"):
                w.add_scalar(bad, 1.0)
            with pytest.raises(ValueError, match="not valid Unicode"):
                w.add_text("t", bad)
            with pytest.raises(ValueError, match="not valid Unicode"):
                w.add_scalars("m", {bad: 1.0})
        with pytest.raises(TypeError, match="global_step"):
            w.add_scalar("x", 1.0, "later")  # type: ignore[arg-type]


def test_close_is_idempotent_and_later_calls_warn(tmp_path: Path) -> None:
    w = SummaryWriter(str(tmp_path))
    w.add_scalar("x", 1.0, 0)
    w.flush()
    assert read(tmp_path)["."]["s:x"] == [(0, 1.0)]  # flush() means on disk
    w.close()
    w.close()
    assert w.report is not None and w.report.dropped_events == 0
    with pytest.warns(AoffWarning, match=r"add_scalar\(\) called after"):
        w.add_scalar("x", 2.0, 1)
    w.flush()  # after close: nothing to do, returns


@pytest.mark.slow  # starts wandb's service process
def test_wandb_sync_tensorboard_sees_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb not installed")
    import wandb

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "wb").mkdir()
    # dir= as well as WANDB_DIR: wandb reads its settings once a process, so an earlier
    # wandb test in the same (xdist) worker would otherwise decide where this run goes
    run = wandb.init(project="p", sync_tensorboard=True, dir=str(tmp_path / "wb"))
    try:
        with SummaryWriter(str(tmp_path / "runs" / "r")) as w:
            for step in range(5):
                w.add_scalar("charts/return", float(step * 10), step)
            w.add_scalars("q", {"a": 1.0, "b": 2.0}, 4)
    finally:
        run.finish()
        wandb.tensorboard.unpatch()
    # wandb's offline writer is a service process: its last rows may land a moment
    # after finish(); the exit record is the last thing it writes
    (file,) = wait_for_wandb_runs(tmp_path / "wb")
    rows = read_wandb_history(file)
    keys = set().union(*rows)
    returns = [r["charts/return"] for r in rows if "charts/return" in r]
    assert returns == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert {"q_a/q", "q_b/q"} <= keys  # add_scalars' sub-runs, named by their folders


def test_extras_jsonl_and_csv_and_the_pump_stays_in_the_agent(tmp_path: Path) -> None:
    import pandas as pd

    with SummaryWriter(str(tmp_path), backends=("jsonl", "csv")) as w:
        assert probe(w).pump_place == "agent"  # no dashboard, still process mode
        w.add_scalar("loss", 0.5, 3)
        w.add_scalars("q", {"a": 1.0}, 3)
        w.add_text("note", "hi", 4)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r.get("loss"), r.get("q"), r.get("run"), r.get("note")) for r in rows] == [
        (3, 0.5, None, None, None),
        (3, None, 1.0, "q_a", None),
        (4, None, None, None, "hi"),
    ]
    csv = pd.read_csv(tmp_path / "progress.csv")
    assert csv["loss"].tolist()[0] == 0.5 and csv["run"].tolist()[1] == "q_a"
