"""Where the pump runs: every configuration a user can name runs in the agent process.

Headless runs (the dashboard off or plain, aoff's own backends passed as objects) must
not move the pump back into the training process; what must stay there (a user's
``Console``, an injected clock, a backend that holds live state) says so in one stderr
line, once a process, with the way to avoid it. Every run is read back from its files.
"""

from __future__ import annotations

import io
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aoff import CsvBackend, JsonlBackend, NullDisplay, OffPolicyLogger, TensorBoardBackend
from aoff.testing import ManualClock, MemoryBackend, probe
from aoff.testing._faults import reset_once_a_process_notices

LINE = "aoff: the pump runs in this process, not in its agent"


def tb_iterations(run: Path) -> list[int]:
    acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
    acc.Reload()
    return [int(e.value) for e in acc.Scalars("axis/iteration")]


def jsonl_iterations(path: Path) -> list[int]:
    return [json.loads(line)["iteration"] for line in path.read_text().splitlines()]


def run_steps(log: OffPolicyLogger, n: int) -> None:
    for i in range(1, n + 1):
        log.log_step(i, {"loss": float(i)})


def in_agent(log: OffPolicyLogger) -> bool:
    """The pump is in another, live process, and no pump thread runs ``log``'s pump in
    this one."""
    p = probe(log)
    if p.pump_place != "agent":
        return False
    assert p.agent_pid != os.getpid() and p.agent_running
    assert p.pump_thread is None
    return True


HEADLESS: dict[str, dict[str, Any]] = {
    "display='none'": {"display": "none", "backends": ("jsonl",)},
    "display='plain'": {"display": "plain", "backends": ("jsonl",)},
    "NullDisplay()": {"display": NullDisplay(), "backends": ("jsonl",)},
}


@pytest.mark.parametrize("case", list(HEADLESS))
def test_headless_runs_keep_the_pump_in_the_agent(
    tmp_path: Path, case: str, capfd: pytest.CaptureFixture[str]
) -> None:
    log = OffPolicyLogger(log_dir=tmp_path, handle_sigterm=False, **HEADLESS[case])
    assert in_agent(log), case
    run_steps(log, 200)
    report = log.finish()
    assert report.steps == 200 and report.complete
    assert jsonl_iterations(tmp_path / "metrics.jsonl") == list(range(1, 201))
    assert tb_iterations(tmp_path) == list(range(1, 201))
    assert LINE not in capfd.readouterr().err


def test_aoff_backend_objects_are_rebuilt_in_the_agent(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tb, jl, csv = (
        TensorBoardBackend(tmp_path / "tb", filename_suffix=".mine"),
        JsonlBackend(tmp_path / "m.jsonl"),
        CsvBackend(tmp_path / "p.csv"),
    )
    log = OffPolicyLogger(
        log_backend="none", backends=[tb, jl, csv], display="none", handle_sigterm=False
    )
    assert in_agent(log)
    run_steps(log, 100)
    report = log.finish()
    assert report.complete
    assert report.backend_written == {"tensorboard": 100, "jsonl": 100, "csv": 100}
    (name,) = os.listdir(tmp_path / "tb")
    assert name.endswith(".mine")  # the constructor's arguments went with it
    assert tb_iterations(tmp_path / "tb") == list(range(1, 101))
    assert jsonl_iterations(tmp_path / "m.jsonl") == list(range(1, 101))
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 101
    assert LINE not in capfd.readouterr().err
    # the objects the user holds were never opened here; opened ones cannot be sent
    assert tb.path is None and jl.portable and csv.portable


def test_an_opened_or_subclassed_backend_is_not_sent(tmp_path: Path) -> None:
    class Mine(JsonlBackend):
        pass

    assert not Mine(tmp_path / "x.jsonl").portable
    jl = JsonlBackend(tmp_path / "y.jsonl")
    jl._open_sync()
    assert not jl.portable
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(jl)
    jl._close_sync()


FALLBACKS: dict[str, tuple[dict[str, Any], str]] = {
    "console": ({"console": Console(file=io.StringIO())}, "display='rich' or 'plain'"),
    "clock": ({"clock": ManualClock(), "display": "none"}, "leave it out: an injected clock"),
    "backend": ({"backends": [MemoryBackend()], "display": "none"}, "name it"),
}


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_what_must_stay_here_says_so_once(
    tmp_path: Path, case: str, capfd: pytest.CaptureFixture[str]
) -> None:
    reset_once_a_process_notices()  # "once a process": this test's process
    kw, advice = FALLBACKS[case]
    logs = [
        OffPolicyLogger(log_dir=tmp_path / str(k), handle_sigterm=False, **kw) for k in range(2)
    ]
    for log in logs:
        assert not in_agent(log)
        run_steps(log, 50)
        assert log.finish().steps == 50
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if LINE in ln]
    assert len(lines) == 1, err  # two loggers, one line
    assert f"{case}=" in lines[0] or "a MemoryBackend in backends=" in lines[0]
    assert advice in lines[0]
    assert tb_iterations(tmp_path / "0") == list(range(1, 51))


def test_pump_thread_says_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    reset_once_a_process_notices()
    log = OffPolicyLogger(
        log_dir=tmp_path,
        console=Console(file=io.StringIO()),
        pump="thread",
        handle_sigterm=False,
    )
    run_steps(log, 10)
    log.finish()
    assert LINE not in capfd.readouterr().err


def test_an_unknown_display_name_is_refused() -> None:
    with pytest.raises(ValueError, match="display must be one of"):
        OffPolicyLogger(display="fancy", handle_sigterm=False)  # type: ignore[arg-type]
