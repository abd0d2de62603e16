"""The two faces' edges: a logger never entered, and the wrong twin flagged by mypy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from aoff import AoffWarning, AsyncOffPolicyLogger, OffPolicyLogger, RunView


@pytest.mark.anyio
async def test_an_async_face_never_entered_warns_once_and_never_hangs(tmp_path: Path) -> None:
    log = AsyncOffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        overflow="block",
        capacity=4,
        handle_sigterm=False,
    )
    with pytest.warns(AoffWarning, match=r"before `async with`: nothing is written") as seen:
        with anyio.fail_after(5):  # block policy, full buffer: must not wait
            for i in range(1, 21):
                await log.log_step(i, {"x": float(i)})
    assert len([w for w in seen if issubclass(w.category, AoffWarning)]) == 1
    assert not (tmp_path / "metrics.jsonl").exists()
    # entered later, what was logged before is written, in order
    async with log:
        await log.log_step(21, {"x": 21.0})
    rows = [json.loads(ln) for ln in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, 22))


@pytest.mark.anyio
async def test_an_async_face_finished_without_entering_writes_what_was_logged(
    tmp_path: Path,
) -> None:
    """As the sync face's finish() does: no unexplained drop count."""
    log = AsyncOffPolicyLogger(log_dir=tmp_path, backends=("jsonl",), handle_sigterm=False)
    with pytest.warns(AoffWarning, match=r"`await log.afinish\(\)` writes them"):
        for i in range(1, 52):
            await log.log_step(i, {"x": float(i)})
    with anyio.fail_after(60):
        report = await log.afinish()
    assert report.dropped_events == 0 and report.complete and not report.partial
    rows = [json.loads(ln) for ln in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, 52))
    assert await log.aclose() is report  # idempotent: the run is over


def test_entering_an_async_face_closed_before_it_was_entered_says_so(tmp_path: Path) -> None:
    # It used to hang past SIGTERM (the pump waited for a run that was already over), so
    # it runs in a child with a timeout rather than in this test process.
    script = textwrap.dedent(
        f"""
        import anyio
        from aoff import AsyncOffPolicyLogger

        async def main() -> None:
            log = AsyncOffPolicyLogger(log_dir={str(tmp_path)!r}, backends=("jsonl",))
            await log.aclose()
            try:
                async with log:
                    pass
            except RuntimeError as e:
                print("REFUSED", e)

        anyio.run(main)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "REFUSED" in out.stdout and "entered only once" in out.stdout, out.stdout


@pytest.mark.slow
def test_mypy_flags_code_after_a_wrong_twin_as_unreachable(tmp_path: Path) -> None:
    snippet = tmp_path / "user.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from aoff import AsyncOffPolicyLogger, OffPolicyLogger

            async def main() -> None:
                log = AsyncOffPolicyLogger()
                log.flush()
                print("never runs")

            def sync() -> None:
                s = OffPolicyLogger()
                async def inner() -> None:
                    await s.aflush()
                    print("never runs")

            from aoff import RunView

            class Mine:  # a user's own display
                def open(self, state: RunView, now: float) -> None:
                    state.iteration = 1
                def update(self, state: RunView, now: float) -> None: ...
                def say(self, markup: str) -> None: ...
                def close(self, state: RunView, now: float, *, summary: bool) -> None: ...

            def shows() -> None:
                OffPolicyLogger(display=Mine())
            """
        )
    )
    # aoff's own annotations decide this, not the stubs of what it imports: mypy reads
    # aoff from src/ and nothing from site-packages (34 s with them, 3 s without)
    src = Path(__file__).resolve().parents[1] / "src"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--warn-unreachable",
            "--no-site-packages",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, MYPYPATH=str(src)),
    )
    # the async face's wrong twins are NoReturn: what follows is unreachable; the sync
    # face has no async names at all, so mypy names the right one at the call
    assert out.stdout.count("Statement is unreachable") == 1, out.stdout
    assert '"OffPolicyLogger" has no attribute "aflush"; maybe "flush"?' in out.stdout
    # a display reads the run through a read-only view, and one typed so is a Display
    assert 'Property "iteration" defined in "RunView" is read-only' in out.stdout
    assert '"Mine"' not in out.stdout, out.stdout


class _UsersDisplay:
    """A display as a user writes one: plain methods, reading what ``RunView`` lists."""

    def __init__(self) -> None:
        self.seen: list[tuple[object, ...]] = []

    def open(self, state: RunView, now: float) -> None:
        self.seen.append(("open", state.started, state.config.algo_name))

    def update(self, state: RunView, now: float) -> None:
        self.seen.append(("update", state.iteration, dict(state.latest_metrics)))

    def say(self, markup: str) -> None:
        self.seen.append(("say", markup))

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        metrics = dict(state.latest_metrics)
        self.seen.append(("close", state.steps_logged, state.iteration, metrics, summary))


def test_a_users_own_display_sees_the_run_through_its_view() -> None:
    shown = _UsersDisplay()
    log = OffPolicyLogger(algo_name="SAC", log_backend="none", display=shown)
    for i in range(1, 4):
        log.log_step(i, {"q_loss": 0.5 * i})
    log.finish()
    assert shown.seen[0] == ("open", True, "SAC")
    assert shown.seen[-1] == ("close", 3, 3, {"q_loss": 1.5}, True)
    frames = [f for f in shown.seen if f[0] == "update"]
    assert all(f[1] in (1, 2, 3) for f in frames)
