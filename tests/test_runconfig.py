"""A run's config read back (``_runfolder/reading/_runconfig.py``) from what other tools write:
CleanRL's hyperparameter table (``writer.add_text("hyperparameters", ...)``, its exact
call) and torch's ``SummaryWriter.add_hparams``, both through torch's own writer, then
filtered by ``aoff ls --where`` through the run index."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from aoff.__main__ import main
from aoff._runfolder.reading._runconfig import read_config, table_config

SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter


def _cleanrl_run(folder: Path, env_id: str, seed: int) -> None:
    """CleanRL's ``sac_continuous_action.py``: its ``Args`` (a part), its table, scalars."""
    args = argparse.Namespace(
        exp_name="sac_continuous_action",
        seed=seed,
        torch_deterministic=True,
        wandb_entity=None,
        env_id=env_id,
        buffer_size=int(1e6),
        learning_starts=5e3,
        policy_lr=3e-4,
        alpha=0.2,
    )
    writer = SummaryWriter(str(folder))
    writer.add_text(
        "hyperparameters",
        "|param|value|\n|-|-|\n%s"  # noqa: UP031  (CleanRL's exact call)
        % ("\n".join([f"|{key}|{value}|" for key, value in vars(args).items()])),
    )
    for step in range(0, 300, 10):
        writer.add_scalar("losses/qf1_loss", 1 / (step + 1), step)
    writer.close()


def test_cleanrl_table_and_add_hparams_are_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "runs"
    for env_id in ("Hopper-v4", "Ant-v4"):
        for seed in (1, 7):
            _cleanrl_run(root / f"{env_id}__sac__{seed}", env_id, seed)
    assert read_config(str(root / "Hopper-v4__sac__1")) == {
        "exp_name": "sac_continuous_action",
        "seed": 1,
        "torch_deterministic": True,
        "wandb_entity": None,
        "env_id": "Hopper-v4",
        "buffer_size": 1_000_000,
        "learning_starts": 5000.0,
        "policy_lr": 3e-4,
        "alpha": 0.2,
    }
    # add_hparams: a session start info in a sub-folder torch names by the time; a bool
    # is stored as a number by torch
    writer = SummaryWriter(str(root / "tuned"))
    writer.add_scalar("losses/qf1_loss", 0.5, 0)
    writer.add_hparams(
        {"env_id": "Hopper-v4", "seed": 3, "policy_lr": 1e-3, "autotune": True},
        {"hparam/return": 10.0},
    )
    writer.close()
    assert read_config(str(root / "tuned")) == {
        "env_id": "Hopper-v4",
        "seed": 3,
        "policy_lr": 1e-3,
        "autotune": 1,
    }
    text = 'config.env_id == "Hopper-v4" and config.seed < 5 and config.policy_lr > 1e-4'
    assert main(["ls", str(root), "--json", "--where", text]) == 0
    assert [r["run"] for r in json.loads(capsys.readouterr().out)] == [
        "Hopper-v4__sac__1",
        "tuned",
    ]
    assert main(["ls", str(root), "--json", "--where", "config.wandb_entity == null"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 4  # the table's four runs


def test_a_table_is_read_by_its_cells_spelling() -> None:
    got = table_config(
        "Some words first.\n|param|value|\n|-|-|\n|a|True|\n|b|None|\n|c|-3|\n|d|1e-05|"
        "\n|e|nan|\n|f|a \\| b|\n|g| spaced |\n|h||\n|lonely|\nnot a row"
    )
    assert math.isnan(got.pop("e"))
    assert got == {"a": True, "b": None, "c": -3, "d": 1e-05, "f": "a | b", "g": "spaced", "h": ""}
