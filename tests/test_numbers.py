"""The commands' numeric options: out of range, not finite or not a number is one line on
stderr naming the option, its range and what was given, and exit status 2 (never a
traceback from inside the command); help texts show a percent sign as one."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoff.__main__ import main


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["compare", "R", "--metric", "m", "--interval", "-1"], "--interval: must be a number > 0"),
        (["compare", "R", "--metric", "m", "--interval", "inf"], "<= 3,600, got inf"),
        (["compare", "R", "--metric", "m", "--reps", "10000000000"], "<= 1,000,000, got 1"),
        (["compare", "R", "--metric", "m", "--reps", "5"], "--reps: must be an int >= 2,000"),
        (["compare", "R", "--metric", "m", "--points", "1"], "--points: must be an int >= 2"),
        (["compare", "R", "--metric", "m", "--points", "1e9"], "--points: must be an int >= 2"),
        (["compare", "R", "--metric", "m", "--final", "0"], "--final: must be a number > 0"),
        (["compare", "R", "--metric", "m", "--seed", "-1"], "--seed: must be an int >= 0"),
        (["show", "R", "--width", "100000"], "--width: must be an int >= 20 and <= 1,000"),
        (["demo", "--iterations", "x"], "--iterations: not a number: 'x'"),
    ],
)
def test_a_bad_number_is_one_line_and_exit_2(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"aoff {args[0]}: argument ") and said in err, err


def test_a_good_number_reaches_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bounds are inclusive where they say >=: the command runs (and finds no run)."""
    args = ["compare", str(tmp_path), "--metric", "m", "--reps", "2000", "--points", "10000"]
    assert main([*args, "--final", "1", "--interval", "3600", "--seed", str(2**32 - 1)]) == 1
    assert "no run" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["compare", "export", "show", "ls", "demo", "attach"])
def test_help_shows_a_percent_sign_once(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "%%" not in out and "%(" not in out
    if command == "compare":
        assert "95% bootstrap" in " ".join(out.split())
