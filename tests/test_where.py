"""The ``--where`` language (``_runfolder/reading/_where.py``): what each operator keeps, a
missing field, and errors that name the column (never ``eval`` of the text)."""

from __future__ import annotations

import pytest

from aoff._runfolder.reading._where import WhereError, compile_where

RUN = {
    "run": "hopper/sac-s3",
    "tags": ["train/loss", "reward/mean"],
    "config": {"env": "Hopper-v4", "seed": 3, "lr": 3e-4, "per": True, "nets": [256, 256]},
    "summary": {"step": 1000, "state": "finished"},
    "last": {"reward/mean": 250.5, "odd tag": float("nan")},
}


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('config.env == "Hopper-v4" and config.seed < 5', True),
        ("config.env == 'Ant-v4' or config.seed >= 3", True),
        ("not config.seed <= 3", False),
        ("config.seed != 3", False),
        ("config.seed > -1 and config.lr < 1e-3 and config.lr > .0001", True),
        ('"train/loss" in tags and "eval/x" not in tags', True),
        ('"sac" in run and "ppo" not in run', True),
        ('config.env in ["Ant-v4", "Hopper-v4"]', True),
        ("config.seed in [1, 2]", False),
        ("config.per and config.per == true", True),
        ("config.seed == 3.0", True),  # numbers compare as numbers
        ('config.seed == "3"', False),  # never a number with a text
        ('config.seed < "5"', False),
        ("config.per == 1", False),  # true is not 1
        ("config.nets == [256, 256]", True),
        ("last.reward/mean > 200 and summary.step >= 1000", True),
        ('summary.state == "finished"', True),
        ('last["odd tag"] > 0 or last["odd tag"] <= 0', False),  # NaN orders with nothing
        ("last.reward/mean < inf and last.reward/mean > -inf", True),
        # a field the run lacks: every comparison false, != too; `not` negates that
        ("config.missing != 3", False),
        ("config.missing == null", False),
        ("not config.missing == 3", True),
        ("(config.seed == 1 or config.seed == 3) and (config.env == 'Hopper-v4')", True),
    ],
)
def test_what_each_filter_keeps(text: str, kept: bool) -> None:
    assert compile_where(text)(RUN) is kept


@pytest.mark.parametrize(
    ("text", "column", "says"),
    [
        ("config.seed = 3", 13, "use =="),
        ("config.seed <", 14, "expected a value"),
        ("conf.seed == 1", 1, "unknown field 'conf.seed'"),
        ('config.env == "Hop', 15, "never closed"),
        ("(config.seed == 1", 18, "expected ')'"),
        ("config.seed == 3x", 16, "malformed number"),
        ("config.seed == 1 config.env", 18, "expected and, or"),
        ("config == 1", 1, "config needs a key"),
        ("run.x == 1", 1, "run takes no key"),
        ('__import__("os").system("true")', 17, "unexpected character '.'"),
        ('__import__ == "os"', 1, "unknown field '__import__'"),
        ("", 1, "an empty filter"),
    ],
)
def test_errors_name_the_column(text: str, column: int, says: str) -> None:
    with pytest.raises(WhereError) as got:
        compile_where(text)
    assert got.value.pos + 1 == column and says in str(got.value)
    # the text, and a caret under the column
    lines = str(got.value).splitlines()
    assert lines[1] == f"  {text}" and lines[2] == "  " + " " * (column - 1) + "^"
