"""Config and hyperparameters (``config=``, ``log_config``), read back by each backend's
own reader: TensorBoard's ``EventAccumulator`` and the HParams plugin's own parsers, the
``config.json`` file, and W&B's offline run file.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aoff import AoffWarning, OffPolicyLogger
from aoff._core._config import HParams, flatten_config
from aoff._pump._options import PumpMode
from aoff._runfolder.tensorboard._files import HPARAMS_FILE_PREFIX
from aoff._runfolder.tensorboard._hparams import text_table
from aoff.testing import RecordingDisplay, probe

from .conftest import make_logger, tensorboard_accumulator


class Device:
    """Stands for a config value JSON cannot hold (a torch.device, a function, ...)."""

    def __str__(self) -> str:
        return "cuda:0"


SEED_KEYS = {
    "algo": "SAC",
    "env": "Pendulum-v1",
    "num_envs": 8,
    "obs_dim": 3,
    "action_dim": 1,
    "max_iterations": 100,
}


# -- the conversion rules ------------------------------------------------------------------------
def test_flatten_config_rules() -> None:
    bad_list = [Device()]
    values, converted = flatten_config(
        {
            "lr": 3e-4,
            "sac": {"tau": np.float32(0.5), "gamma": 0.99, "net": {"hidden": (256, 256)}},
            "batch": np.int64(256),
            "name": "run",
            "flag": True,
            "none": None,
            "empty": {},
            "device": Device(),
            "nan": float("nan"),
            "inf": -math.inf,
            "bad_list": bad_list,
        },
        "config",
    )
    assert values == {
        "lr": 3e-4,
        "sac/tau": 0.5,
        "sac/gamma": 0.99,
        "sac/net/hidden": [256, 256],
        "batch": 256,
        "name": "run",
        "flag": True,
        "none": None,
        "empty": "{}",
        "device": "cuda:0",
        "nan": "nan",
        "inf": "-inf",
        "bad_list": str(bad_list),
    }
    assert type(values["batch"]) is int and type(values["sac/tau"]) is float
    assert converted == [
        ("device", "Device"),
        ("nan", "float"),
        ("inf", "float"),
        ("bad_list", "list"),
    ]
    json.dumps(values, allow_nan=False)  # everything stored is strict JSON


@pytest.mark.parametrize(
    ("config", "error", "match"),
    [
        ([("lr", 1)], TypeError, r"config: expected a dict, got list"),
        ({1: "x"}, TypeError, r"config: key 1 is int, not str"),
        ({"sac": {2: "x"}}, TypeError, r"key 2 is int, not str \(under 'sac'\)"),
        ({"sac/tau": 1, "sac": {"tau": 2}}, ValueError, r"key 'sac/tau' is given twice"),
    ],
)
def test_bad_config_raises_at_construction(config: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        OffPolicyLogger(log_backend="none", config=config, handle_sigterm=False)


def test_hparams_tracks_versions_and_rewards() -> None:
    hp = HParams({"a": 1})
    assert hp.version == 0 and hp.final_metrics() == {}
    hp.merge({"a": 1})
    assert hp.version == 0  # nothing changed
    hp.merge({"a": True})  # same ==, another type: a change
    hp.merge({"b": "x"})
    assert hp.version == 2 and hp.values == {"a": True, "b": "x"}
    for r in (1.0, float("nan"), 5.0, 2.0):
        hp.reward(r)
    assert hp.final_metrics() == {"hparams/reward_mean_last": 2.0, "hparams/reward_mean_best": 5.0}


def test_text_table_escapes_markdown() -> None:
    table = text_table({"a|b": "x\ny", "lst": [1, 2]})
    assert table.splitlines() == ["|param|value|", "|-|-|", "|a\\|b|x y|", "|lst|[1, 2]|"]


# -- a whole run: every backend ------------------------------------------------------------------
def session_infos(log_dir: Path) -> tuple[dict[str, Any], Any]:
    """The HParams session start info's hparams (as Python values) and the session end
    info, through TensorBoard's reader and the plugin's own metadata parsers."""
    from tensorboard.plugins.hparams import metadata as hp_metadata

    acc = tensorboard_accumulator(log_dir)
    content = acc.PluginTagToContent(hp_metadata.PLUGIN_NAME)
    start = hp_metadata.parse_session_start_info_plugin_data(
        content[hp_metadata.SESSION_START_INFO_TAG]
    )
    end = hp_metadata.parse_session_end_info_plugin_data(content[hp_metadata.SESSION_END_INFO_TAG])
    hparams = {k: getattr(v, v.WhichOneof("kind")) for k, v in start.hparams.items()}
    return hparams, end


def text_tables(log_dir: Path) -> list[tuple[int, str]]:
    acc = tensorboard_accumulator(log_dir)
    return [
        (e.step, e.tensor_proto.string_val[0].decode("utf-8"))
        for e in acc.Tensors("hyperparameters")
    ]


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_config_reaches_every_backend(tmp_path: Path, pump: PumpMode) -> None:
    log_dir = tmp_path / "run"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = OffPolicyLogger(
            "SAC",
            100,
            8,
            "Pendulum-v1",
            3,
            1,
            log_dir=log_dir,
            log_backend="none",  # the dashboard, in the agent with pump="process"
            backends=("tensorboard", "jsonl", "csv"),
            handle_sigterm=False,
            pump=pump,
            config={"lr": 3e-4, "sac": {"tau": 0.005}, "device": Device()},
        )
    ours = [w for w in caught if issubclass(w.category, AoffWarning)]
    assert [str(w.message) for w in ours] == [
        "aoff: config: 1 value(s) JSON cannot hold were stored as str(): 'device' (Device)"
    ]
    assert ours[0].filename == __file__  # the warning points at the constructor call
    rewards = [1.0, 7.0, 3.0, 2.0]
    for i, r in enumerate(rewards[:2], 1):
        log.log_step(i, {"loss": 1.0 / i}, reward=r)
    log.flush()  # the first table and session info are on disk
    log.log_config({"buffer": {"size": 1_000_000}})
    for i, r in enumerate(rewards[2:], 3):
        log.log_step(i, {"loss": 1.0 / i}, reward=r)
    log.log_config({"late": "after the last step"})
    log.finish()

    everything = {
        **SEED_KEYS,
        "lr": 3e-4,
        "sac/tau": 0.005,
        "device": "cuda:0",
        "buffer/size": 1_000_000,
        "late": "after the last step",
    }
    # config.json (JSONL and CSV): the whole config, strict JSON
    assert json.loads((log_dir / "config.json").read_text(encoding="utf-8")) == everything

    # TensorBoard: one HParams file; its session start info has every key (the later
    # ones too), the session end says the run succeeded
    from tensorboard.plugins.hparams import api_pb2

    assert len(list(log_dir.glob(HPARAMS_FILE_PREFIX + "*"))) == 1
    hparams, end = session_infos(log_dir)
    assert hparams == {k: float(v) if type(v) is int else v for k, v in everything.items()}
    assert end.status == api_pb2.STATUS_SUCCESS

    # the text table: the first at step 0 with the constructor's keys, the last with all
    tables = text_tables(log_dir)
    first_step, first = tables[0]
    assert first_step == 0
    assert "|lr|0.0003|" in first and "|sac/tau|0.005|" in first and "buffer" not in first
    last_step, last = tables[-1]
    assert last_step == 4
    assert last.splitlines()[2:] == [
        f"|{k}|{v if isinstance(v, str) else json.dumps(v)}|" for k, v in everything.items()
    ]

    # the final metrics for the HParams view: the last and the best reward/mean
    acc = tensorboard_accumulator(log_dir)
    assert [(e.step, e.value) for e in acc.Scalars("hparams/reward_mean_last")] == [(4, 2.0)]
    assert [(e.step, e.value) for e in acc.Scalars("hparams/reward_mean_best")] == [(4, 7.0)]
    assert [e.value for e in acc.Scalars("reward/mean")] == rewards


def test_interrupted_run_ends_with_failure_status(tmp_path: Path) -> None:
    from tensorboard.plugins.hparams import api_pb2

    log = OffPolicyLogger(
        log_dir=tmp_path,
        display=RecordingDisplay(),
        handle_sigterm=False,
        pump="thread",
        config={"lr": 0.1},
    )
    log.log_step(1, reward=1.0)
    with pytest.raises(RuntimeError), log:
        raise RuntimeError("boom")
    _, end = session_infos(tmp_path)
    assert end.status == api_pb2.STATUS_FAILURE


def test_no_config_writes_no_config_files(tmp_path: Path) -> None:
    with OffPolicyLogger(
        log_dir=tmp_path,
        display=RecordingDisplay(),
        backends=("jsonl", "csv"),
        handle_sigterm=False,
        pump="thread",
    ) as log:
        log.log_step(1, reward=1.0)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "config.json" not in names
    assert [n for n in names if n.startswith("events.")] == [
        n for n in names if n.startswith("events.out.tfevents.1")
    ]
    assert "hyperparameters" not in tensorboard_accumulator(tmp_path).Tags()["tensors"]


def test_log_config_bad_input_raises_in_the_caller() -> None:
    with make_logger(pump="thread") as log:
        with pytest.raises(TypeError, match=r"log_config: expected a dict, got str"):
            log.log_config("lr=3")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"log_config: key \(1, 2\) is tuple, not str"):
            log.log_config({(1, 2): 3})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match=r"log_config: key 'a/b' is given twice"):
            log.log_config({"a": {"b": 1}, "a/b": 2})
        with pytest.warns(AoffWarning, match=r"log_config: 1 value\(s\) .* 'fn' \(function\)"):
            log.log_config({"fn": test_flatten_config_rules})
        log.flush()
        assert probe(log).state.hparams.values == {"fn": str(test_flatten_config_rules)}


@pytest.mark.anyio
async def test_async_face_log_config(tmp_path: Path) -> None:
    from aoff import AsyncOffPolicyLogger

    async with AsyncOffPolicyLogger(
        log_dir=tmp_path,
        log_backend="none",
        backends=("jsonl",),
        display=RecordingDisplay(),
        handle_sigterm=False,
        pump="thread",
        config={"a": 1},
    ) as log:
        await log.log_step(1)
        await log.log_config({"b": {"c": 2}})
    got = json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))
    assert got == {
        "algo": "RL",
        "env": "",
        "num_envs": 4096,
        "obs_dim": 0,
        "action_dim": 0,
        "max_iterations": 1500,
        "a": 1,
        "b/c": 2,
    }
