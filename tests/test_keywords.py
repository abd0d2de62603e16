"""No silent typo at any door: a misspelt backend, display or pump name, a misspelt keyword
or a value of the wrong type is refused by the constructor, naming the public parameter
(and the names it takes), before any agent starts or any file is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import aoff.tensorboard
from aoff import AsyncOffPolicyLogger, OffPolicyLogger
from aoff._pump import _registry

#: every door that builds a logger, as ``door(tmp_path, **options)``
DOORS: dict[str, Callable[..., object]] = {
    "OffPolicyLogger": lambda d, **kw: OffPolicyLogger(log_dir=str(d), **kw),
    "AsyncOffPolicyLogger": lambda d, **kw: AsyncOffPolicyLogger(log_dir=str(d), **kw),
    "SummaryWriter": lambda d, **kw: aoff.tensorboard.SummaryWriter(str(d), **kw),
}


def _sb3(d: Path, **kw: Any) -> object:
    pytest.importorskip("stable_baselines3")
    import aoff.sb3

    return aoff.sb3.configure(str(d), ["csv"], **kw)


def _torchrl(d: Path, **kw: Any) -> object:
    pytest.importorskip("torchrl")
    import aoff.torchrl

    return aoff.torchrl.Logger("exp", log_dir=str(d), **kw)


DOORS["sb3.configure"] = _sb3
DOORS["torchrl.Logger"] = _torchrl
#: the doors that take the faces' own ``log_backend=``/``display=`` (the writers draw a
#: dashboard by ``dashboard=True``, and write TensorBoard files by what they are)
FACE_DOORS = ("OffPolicyLogger", "AsyncOffPolicyLogger", "sb3.configure")


def _refused(door: str, tmp_path: Path, error: type[Exception], **kw: Any) -> str:
    with pytest.raises(error) as caught:
        DOORS[door](tmp_path / "run", **kw)
    assert not list((tmp_path / "run").glob("events.out.tfevents*"))  # nothing written
    return str(caught.value)


@pytest.mark.parametrize("door", list(DOORS))
def test_a_misspelt_backend_in_backends_is_refused_listing_the_registered_names(
    door: str, tmp_path: Path
) -> None:
    msg = _refused(door, tmp_path, ValueError, backends=("jsnol",))
    assert "'jsnol'" in msg
    assert all(repr(n) in msg for n in _registry.names()), msg


@pytest.mark.parametrize("door", list(DOORS))
def test_a_misspelt_pump_mode_is_refused_listing_the_modes(door: str, tmp_path: Path) -> None:
    msg = _refused(door, tmp_path, ValueError, pump="proces")
    assert "pump" in msg and "'proces'" in msg and "'process'" in msg and "'thread'" in msg


@pytest.mark.parametrize("door", FACE_DOORS)
def test_a_misspelt_log_backend_is_refused_listing_what_it_takes(door: str, tmp_path: Path) -> None:
    msg = (
        _refused(door, tmp_path, ValueError, log_backend="tensorbored")
        if door != ("sb3.configure")
        else _refused(door, tmp_path, TypeError, log_backend="tensorbored")
    )
    assert "log_backend" in msg
    if door != "sb3.configure":  # sb3 sets it from format_strings, and says so
        assert "'tensorbored'" in msg and "'tensorboard'" in msg and "'none'" in msg


@pytest.mark.parametrize("door", FACE_DOORS)
def test_a_misspelt_display_is_refused_listing_the_names(door: str, tmp_path: Path) -> None:
    msg = _refused(door, tmp_path, ValueError, display="rcih")
    assert "display" in msg and "'rcih'" in msg and "'rich'" in msg and "'plain'" in msg


@pytest.mark.parametrize("door", list(DOORS))
def test_a_misspelt_keyword_names_the_public_door_and_the_nearest_parameter(
    door: str, tmp_path: Path
) -> None:
    msg = _refused(door, tmp_path, TypeError, finish_timout=3.0)
    assert "finish_timout" in msg and "Face" not in msg and "_Engine" not in msg, msg
    if door.endswith("OffPolicyLogger"):
        assert msg.startswith(f"aoff.{door}()") and "did you mean finish_timeout=" in msg


def test_the_faces_name_themselves_for_too_many_positional_arguments(tmp_path: Path) -> None:
    args = ("SAC", 3, 4, "e", 1, 2, 4, str(tmp_path), "none", "p", None, "", None, None, None, None)
    with pytest.raises(TypeError, match=r"^aoff\.OffPolicyLogger\(\) takes at most 16 pos"):
        OffPolicyLogger(*args, 1)


@pytest.mark.parametrize(
    ("kw", "error", "said"),
    [
        ({"max_iterations": "100"}, TypeError, "max_iterations must be an int, got '100' (str)"),
        ({"num_envs": 4.0}, TypeError, "num_envs must be an int, got 4.0 (float)"),
        ({"obs_dim": -1}, ValueError, "obs_dim must be >= 0, got -1"),
        ({"algo_name": 3}, TypeError, "algo_name must be a str, got 3 (int)"),
        ({"env_name": None}, TypeError, "env_name must be a str, got None (NoneType)"),
        ({"finish_timeout": "10"}, TypeError, "finish_timeout must be a number of seconds"),
        ({"flush_secs": -1}, ValueError, "flush_secs must be >= 0 seconds, got -1"),
        ({"log_backend": 1}, TypeError, "log_backend must be a str"),
    ],
)
@pytest.mark.parametrize("door", ["OffPolicyLogger", "AsyncOffPolicyLogger"])
def test_a_wrong_type_fails_at_the_constructor_naming_the_parameter(
    door: str, kw: dict[str, Any], error: type[Exception], said: str, tmp_path: Path
) -> None:
    msg = _refused(door, tmp_path, error, **kw)
    assert said in msg, msg


def test_a_numpy_int_is_an_int_and_the_display_only_names_open_no_backend(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    for name in ("none", "None", "no_print"):
        log = OffPolicyLogger(
            max_iterations=np.int64(7), log_dir=str(tmp_path), log_backend=name, pump="thread"
        )
        assert type(log.max_iterations) is int and log.max_iterations == 7
        log.finish()
    assert not list(tmp_path.iterdir())  # display only: no backend, no file


def test_a_registered_name_as_log_backend_opens_that_backend(tmp_path: Path) -> None:
    with OffPolicyLogger(log_dir=str(tmp_path), log_backend="jsonl", display="none") as log:
        log.log_step(1, {"loss": 0.5})
    assert '"train/loss":0.5' in (tmp_path / "metrics.jsonl").read_text()


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"dashboard": "yes"}, "SummaryWriter(dashboard=) must be True or False"),
        ({"total_steps": "100"}, "SummaryWriter(total_steps=) must be an int >= 0"),
        ({"backends": "jsonl"}, "SummaryWriter(backends=) must be a sequence"),
    ],
)
def test_the_writers_own_options_are_checked_at_the_constructor(
    kw: dict[str, Any], said: str, tmp_path: Path
) -> None:
    assert said in _refused("SummaryWriter", tmp_path, TypeError, **kw)
