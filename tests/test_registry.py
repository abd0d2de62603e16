"""Named backends come from one registry: a throwaway backend registered the documented
way (docs/architecture.md, "Adding a named backend") runs in the agent, resumes and is
listed by ``aoff ls``; unknown names get an error listing the registered ones."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio.to_thread
import pytest

from aoff import OffPolicyLogger
from aoff.__main__ import main
from aoff._backends._base import BackendContext, Takes, takes_of
from aoff._core._records import Record, StepRecord, TextRecord
from aoff._core._rules import ALERT_TAG
from aoff._pump import _registry
from aoff._pump._options import Options
from aoff._pump._registry import BackendOptions, NamedBackend

FILE = "steps.txt"


class StepsBackend:
    """Writes ``step value`` lines of one tag; cuts the lines after a resumed step."""

    name = "steps"
    portable = True

    def __init__(self, path: str, resume_step: int | None) -> None:
        self.path = path
        self.resume_step = resume_step

    def _cut(self) -> None:
        if self.resume_step is not None and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                kept = [ln for ln in f if int(ln.split()[0]) <= self.resume_step]
            with open(self.path, "w", encoding="utf-8") as f:
                f.writelines(kept)

    def _append(self, records: Sequence[Record]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            for rec in records:
                match rec:
                    case StepRecord(step=step, scalars=scalars):
                        f.write(f"{step} {dict(scalars)['train/loss']}\n")

    async def open(self, ctx: BackendContext) -> None:
        await anyio.to_thread.run_sync(self._cut)

    async def write(self, records: Sequence[Record]) -> None:
        await anyio.to_thread.run_sync(self._append, records)

    async def flush(self) -> None:
        return

    async def close(self) -> None:
        return


def build_steps(o: BackendOptions) -> StepsBackend:
    return StepsBackend(os.path.join(o.log_dir, FILE), o.resume_step)


STEPS = NamedBackend("steps", build_steps, "writes log_dir/steps.txt", resumable=True)


@pytest.fixture
def steps_registered() -> Iterator[None]:
    _registry.register(STEPS)
    try:
        yield
    finally:
        _registry.unregister("steps")


def run(
    log_dir: Path,
    first: int,
    last: int,
    resume_step: int | None = None,
    backends: tuple[str, ...] = ("jsonl", "steps"),
) -> None:
    log = OffPolicyLogger(
        num_envs=1,
        log_dir=str(log_dir),
        log_backend="none",
        backends=backends,
        display="none",
        resume_step=resume_step,
    )
    for i in range(first, last + 1):
        log.log_step(i, {"train/loss": float(i)})
    report = log.finish()
    assert report.backend_written["steps"] == last - first + 1


def test_a_registered_backend_runs_in_the_agent_resumes_and_is_listed(
    tmp_path: Path, steps_registered: None, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "runs" / "r1"
    run(run_dir, 1, 6)  # pump="process": the agent builds it from the options' entry
    run(run_dir, 4, 8, resume_step=3)  # its factory is told the step: it cuts 4..6
    got = (run_dir / FILE).read_text(encoding="utf-8").split()
    assert [int(s) for s in got[::2]] == list(range(1, 9))
    run(tmp_path / "runs" / "r2", 1, 4, backends=("steps",))  # its files alone
    capsys.readouterr()
    assert main(["ls", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "r1" in out and "r2" in out, out


def test_names_come_from_the_registry(steps_registered: None, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown backend 'parquet'") as unknown:
        OffPolicyLogger(log_backend="none", backends=("parquet",), handle_sigterm=False)
    listed = str(unknown.value)  # every registered name, the one registered here too
    assert "'steps'" in listed and all(repr(n) in listed for n in _registry.names()), listed
    with pytest.raises(ValueError, match=r"needs log_dir \(writes log_dir/steps.txt\)"):
        OffPolicyLogger(log_backend="none", backends=("steps",), handle_sigterm=False)
    with pytest.raises(ValueError, match="is registered already"):
        _registry.register(NamedBackend("steps", build_steps))
    wants_no_resume = NamedBackend("once", build_steps, "x", resumable=False)
    _registry.register(wants_no_resume)
    try:
        with pytest.raises(ValueError, match="'once' backend cannot continue a run"):
            OffPolicyLogger(
                log_dir=str(tmp_path),
                log_backend="none",
                backends=("once",),
                resume_step=3,
                handle_sigterm=False,
            )
    finally:
        _registry.unregister("once")


def test_a_backend_built_in_the_script_itself_keeps_the_pump_here(
    steps_registered: None, tmp_path: Path
) -> None:
    def build_here(o: BackendOptions) -> StepsBackend:
        return build_steps(o)

    build_here.__module__ = "__main__"  # as if defined in the training script
    _registry.register(NamedBackend("here", build_here, "x"))
    try:
        options = Options(log_dir=str(tmp_path), log_backend="none", backends=("here",))
        line = options.in_process_line()
        assert line is not None and "backend 'here', defined in __main__" in line
        assert "register it from a module the agent can import" in line
        assert Options(log_dir=str(tmp_path), backends=("steps",)).in_process_line() is None
    finally:
        _registry.unregister("here")


NOTES = "notes.txt"


class NotesBackend:
    """Takes texts (``Takes.TEXTS``): writes ``step tag text`` lines of its text records."""

    name = "notes"
    portable = True
    takes = Takes.TEXTS

    def __init__(self, path: str) -> None:
        self.path = path

    def _append(self, records: Sequence[Record]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            for rec in records:
                match rec:
                    case TextRecord(step=step, texts=texts):
                        f.writelines(f"{step} {tag} {text}\n" for tag, text in texts)

    async def open(self, ctx: BackendContext) -> None:
        return

    async def write(self, records: Sequence[Record]) -> None:
        await anyio.to_thread.run_sync(self._append, records)

    async def flush(self) -> None:
        return

    async def close(self) -> None:
        return


class DeafBackend(NotesBackend):
    """The same writer, saying it takes nothing besides steps."""

    name = "deaf"
    takes = Takes.NOTHING


def build_notes(o: BackendOptions) -> NotesBackend:
    return NotesBackend(os.path.join(o.log_dir, NOTES))


def build_deaf(o: BackendOptions) -> DeafBackend:
    return DeafBackend(os.path.join(o.log_dir, "deaf.txt"))


def test_a_registered_backend_that_takes_texts_gets_the_runs_alerts(tmp_path: Path) -> None:
    """Its capability is all it takes: registered with ``takes=Takes.TEXTS`` (its class
    says the same), it gets each alert as a text record in the agent; a twin that takes
    nothing gets none; the registry names it among the backends that take texts."""
    _registry.register(NamedBackend("notes", build_notes, "x", takes=Takes.TEXTS))
    _registry.register(NamedBackend("deaf", build_deaf, "x"))
    try:
        assert "notes" in _registry.takers(Takes.TEXTS)
        assert "deaf" not in _registry.takers(Takes.TEXTS | Takes.ALERTS)
        log = OffPolicyLogger(
            log_dir=str(tmp_path), log_backend="none", backends=("notes", "deaf"), display="none"
        )
        log.log_step(1, {"train/loss": 1.0})
        log.log_step(2, {"train/loss": float("nan")})  # nonfinite(): an alert
        report = log.finish()
    finally:
        _registry.unregister("notes")
        _registry.unregister("deaf")
    assert [a.rule for a in report.alerts] == ["nonfinite"]
    alert = report.alerts[0]
    lines = (tmp_path / NOTES).read_text(encoding="utf-8").splitlines()
    assert lines == [f"{alert.step} {ALERT_TAG} {alert.message}"]
    assert report.backend_written == {"notes": 3, "deaf": 2}  # two steps (+ the alert)
    assert not (tmp_path / "deaf.txt").exists() or not (tmp_path / "deaf.txt").read_text()


def test_each_entry_says_what_its_backend_takes(tmp_path: Path) -> None:
    """The registry's ``takes`` (for messages, before anything is built) is what the
    built backend says (which routes alerts and media)."""
    options = Options(log_dir=str(tmp_path), log_backend="none")
    for name in _registry.names():
        assert takes_of(_registry.entry(name).build(options)) == _registry.entry(name).takes, name
