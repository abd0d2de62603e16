"""Taking turns for the GIL (``_pump/_turns``): while a pump runs in the training process,
aoff's long work comes in pieces with pauses between them, and nothing it produces
changes: the same frames, the same bytes in the files, every event folded in order.

How much shorter the training loop's waits get is a timing claim, measured side by side
in ``benchmarks/slowdown.py`` (docs/reference/performance.md, #26), not here.
"""

from __future__ import annotations

import io
import json
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from aoff import OffPolicyLogger
from aoff._core._buffer import EventBuffer
from aoff._core._events import Event
from aoff._core._recorder import Recorder
from aoff._core._records import Record, StepRecord
from aoff._core._say import SayOnce
from aoff._core._state import State
from aoff._display._api import NullDisplay
from aoff._display._dashboard import Dashboard
from aoff._display._render import ASCII_GLYPHS, UNICODE_GLYPHS, Glyphs, dashboard_panel
from aoff._pump import _turns
from aoff._pump._intake import BEHIND_SLICE, FOLD_SLICE, TURN_BACKLOG, TURN_SLICE, Intake
from aoff._runfolder.lines._jsonl import encode_lines
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import EventEncoder
from tests.test_render import NOW, many_metrics_state, mid_run_state, problems_state


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every sleep a pause asks for, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(_turns, "time", types.SimpleNamespace(sleep=slept.append))
    return slept


@pytest.fixture
def restore_streams() -> Iterator[None]:
    out, err = sys.stdout, sys.stderr
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def test_sharing_nests_and_ends(pauses: list[float]) -> None:
    assert not _turns.shared()
    _turns.pause()
    assert pauses == []  # not shared: a pause is nothing
    with _turns.sharing():
        with _turns.sharing():
            assert _turns.shared()
        assert _turns.shared()  # one pump ended, the other still runs
        _turns.pause()
    assert not _turns.shared()
    with pytest.raises(RuntimeError), _turns.sharing():  # an error still ends the turn
        raise RuntimeError
    assert not _turns.shared()
    assert pauses == [_turns.PAUSE]


def test_apause_is_a_real_sleep_only_while_shared() -> None:
    slept: list[float] = []

    async def main() -> None:
        real = anyio.sleep

        async def sleep(s: float) -> None:
            slept.append(s)
            await real(s)

        anyio.sleep = sleep  # type: ignore[assignment]
        try:
            await _turns.apause()
            with _turns.sharing():
                await _turns.apause()
        finally:
            anyio.sleep = real

    anyio.run(main)
    assert slept == [_turns.PAUSE]


# -- the dashboard: the same frame, drawn in pieces --------------------------------------
def _live_frames(make: Callable[[], State], size: tuple[int, int], glyphs: Glyphs) -> str:
    """What a terminal receives for an open, two frames and a close with a summary."""
    buf = io.StringIO()
    console = Console(
        file=buf, force_terminal=True, width=size[0], height=size[1], color_system="truecolor"
    )
    dash = Dashboard(console, pacing=_turns.bounded)  # as the pump builds it
    dash.glyphs = glyphs
    dash.open(make(), NOW)
    dash.update(make(), NOW + 1)
    dash.update(make(), NOW + 2)
    dash.close(make(), NOW + 3, summary=True)
    return buf.getvalue()


@pytest.mark.parametrize("make", [mid_run_state, problems_state, many_metrics_state])
@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
@pytest.mark.parametrize("glyphs", [UNICODE_GLYPHS, ASCII_GLYPHS])
@pytest.mark.usefixtures("restore_streams")
def test_frames_in_pieces_are_the_same_frames(
    pauses: list[float], make: Callable[[], State], size: tuple[int, int], glyphs: Glyphs
) -> None:
    whole = _live_frames(make, size, glyphs)
    assert pauses == []
    with _turns.sharing():
        pieces = _live_frames(make, size, glyphs)
    assert pieces == whole
    # each of the 4 frames (open, 2 updates, the last at close) in 6 pieces or more
    assert len(pauses) >= 4 * 6


@pytest.mark.usefixtures("restore_streams")
def test_renderers_pause_only_through_the_pacing_they_are_given(pauses: list[float]) -> None:
    """The pacing is passed in, a no-op by default: while a pump shares the process, a
    panel, a dashboard and the encoders given none draw and encode in one piece."""
    with _turns.sharing():
        Console(file=io.StringIO(), width=120, height=40, force_terminal=True).print(
            dashboard_panel(many_metrics_state(), NOW)
        )
        console = Console(file=io.StringIO(), force_terminal=True, width=120, height=40)
        dash = Dashboard(console)
        dash.open(mid_run_state(), NOW)
        dash.update(mid_run_state(), NOW + 1)
        dash.close(mid_run_state(), NOW + 2, summary=True)
        encode_lines(_records(50))
        encode_records(EventEncoder(), _records(50))
    assert pauses == []


def test_panel_pauses_between_sections_and_lines(pauses: list[float]) -> None:
    with _turns.sharing():
        panel = dashboard_panel(many_metrics_state(), NOW, pause=_turns.pause)
        built = len(pauses)
        Console(file=io.StringIO(), width=120, height=40, force_terminal=True).print(panel)
    assert built >= 2  # building the content: between its parts
    assert len(pauses) - built >= 6  # drawing: between sections, table rows and lines


# -- the backends: the same bytes, encoded in pieces -------------------------------------
def _records(n: int) -> list[StepRecord]:
    scalars = tuple((f"train/metric_{k}", k * 0.25) for k in range(30))
    return [StepRecord(i, i // 4, 1_700_000_000.0 + i, scalars) for i in range(n)]


def test_jsonl_lines_in_pieces_are_the_same_bytes(pauses: list[float]) -> None:
    recs = _records(50)
    whole = encode_lines(recs)
    assert encode_lines(recs, _turns.in_pieces) == whole  # not shared: no pause
    assert pauses == []
    with _turns.sharing():
        assert encode_lines(recs, _turns.in_pieces) == whole
    assert len(pauses) == (len(recs) - 1) // _turns.RECORDS_A_PIECE
    assert [json.loads(x)["step"] for x in whole.splitlines()] == list(range(50))


def test_tensorboard_events_in_pieces_are_the_same_bytes(pauses: list[float]) -> None:
    recs = _records(50)
    whole = encode_records(EventEncoder(), recs)
    with _turns.sharing():
        assert encode_records(EventEncoder(), recs) == whole  # no pacing given: no pause
        assert pauses == []
        assert encode_records(EventEncoder(), recs, _turns.in_pieces) == whole
    assert len(pauses) == (len(recs) - 1) // _turns.RECORDS_A_PIECE


# -- the intake: smaller slices while shared and not behind ------------------------------
def _intake(n: int) -> tuple[Intake, list[int], list[Record]]:
    buffer = EventBuffer(100_000)
    events: list[Event] = []
    rec: Recorder[None] = Recorder()
    rec._init_recorder(events.append, lambda: 1234.5)
    for i in range(n):
        rec.log_step(i, {"loss": float(i)})
    for e in events:
        buffer.put(e)
    state = State()
    folded: list[Record] = []
    intake = Intake(
        buffer,
        state,
        [],
        SayOnce(lambda _: None),
        finish_timeout=5.0,
        on_change=lambda: None,
        on_slice=lambda: None,
        on_records=lambda recs, _spans: folded.extend(recs),
        shares=_turns.shared,  # as the pump passes them
        pause=_turns.apause,
    )
    sizes: list[int] = []
    drain = buffer.drain

    def spy(limit: int | None = None) -> list[Event]:
        sizes.append(limit or 0)
        return drain(limit)

    buffer.drain = spy  # type: ignore[method-assign]
    return intake, sizes, folded


@pytest.mark.parametrize(
    ("n", "share", "final", "size"),
    [
        (200, True, False, TURN_SLICE),
        (TURN_BACKLOG + 100, True, False, FOLD_SLICE),  # behind: catch up at full speed
        (200, True, True, FOLD_SLICE),  # the final drain: nobody is left to wait
        (200, False, False, FOLD_SLICE),  # the agent's pump: as it always was
        (BEHIND_SLICE + 100, False, False, BEHIND_SLICE),  # the agent behind: larger slices
        (BEHIND_SLICE + 100, True, True, FOLD_SLICE),  # never while a loop shares the GIL
    ],
)
def test_intake_slices(n: int, share: bool, final: bool, size: int) -> None:
    intake, sizes, folded = _intake(n)

    async def drain() -> None:
        with _turns.sharing() if share else _null():
            while len(intake.buffer):
                await intake.drain_once(final=final)

    anyio.run(drain)
    assert set(sizes) == {size}
    assert [r.step for r in folded] == list(range(n))  # every event, in order
    assert intake.state.steps_logged == n


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_thread_mode_takes_turns_while_it_runs(tmp_path: Path, pauses: list[float]) -> None:
    log = OffPolicyLogger(
        algo_name="SAC",
        max_iterations=3000,
        log_dir=str(tmp_path),
        backends=("jsonl",),
        display=NullDisplay(),
        pump="thread",
        handle_sigterm=False,
    )
    log.start()
    assert _turns.shared()
    for i in range(3000):
        log.log_step(i, {"loss": float(i)})
    rep = log.finish()
    assert not _turns.shared()
    assert rep.backend_written["jsonl"] == 3000 and not rep.dropped_events
    # the pump passed its pacing in: the JSONL batches were encoded in pieces
    assert pauses and set(pauses) == {_turns.PAUSE}
    lines = (tmp_path / "metrics.jsonl").read_bytes().splitlines()
    assert [json.loads(x)["iteration"] for x in lines] == list(range(3000))


def test_a_frame_takes_turns_for_a_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``bounded``'s deadline a job goes on in one piece (a slow machine must not
    make a frame look stuck to the display's guard)."""
    slept: list[float] = []
    clock = [0.0]
    monkeypatch.setattr(_turns, "time", types.SimpleNamespace(sleep=slept.append))
    monkeypatch.setattr(_turns, "monotonic", lambda: clock[0])
    with _turns.sharing():
        pause = _turns.bounded(0.5)
        pause()
        clock[0] = 0.6
        pause()  # past the deadline: no pause
        _turns.bounded(0.5)()  # the next job's deadline
    assert slept == [_turns.PAUSE, _turns.PAUSE]


@pytest.mark.usefixtures("restore_streams")
def test_dashboard_frames_past_their_turns_are_drawn_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(_turns, "time", types.SimpleNamespace(sleep=slept.append))
    monkeypatch.setattr(_turns, "monotonic", lambda: 1e9)  # every deadline already past
    monkeypatch.setattr("aoff._display._dashboard.FRAME_TURNS", -1.0)
    whole = _live_frames(mid_run_state, (120, 40), UNICODE_GLYPHS)
    with _turns.sharing():
        assert _live_frames(mid_run_state, (120, 40), UNICODE_GLYPHS) == whole
    assert slept == []  # open, both updates and the last frame: each in one piece
