"""The Display implementation: Live on terminals, throttled plain lines elsewhere, and a
``close`` that always gives the terminal back."""

from __future__ import annotations

import io
import re
import sys
import threading
from collections.abc import Iterator

import pytest
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment

from aoff._core._records import RunConfig
from aoff._core._state import State
from aoff._core._view import RunView
from aoff._display._api import Display
from aoff._display._dashboard import Dashboard, use_live
from aoff._display._render import ASCII_GLYPHS, UNICODE_GLYPHS

T0 = 1_700_000_000.0
SHOW_CURSOR = "\x1b[?25h"
HIDE_CURSOR = "\x1b[?25l"


class _AsciiIO(io.StringIO):
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "ascii"


#: the summary's first line for these states (iteration < max_iterations)
SUMMARY_HEAD = "Training stopped at"


def state(iteration: int = 0, *, status: str = "Training") -> State:
    s = State(config=RunConfig(algo_name="SAC", env_name="Pendulum-v1", max_iterations=100))
    s.started = True
    s.start_time = T0
    s.last_wall_time = T0 + iteration
    s.iteration = iteration
    s.status = status
    s.total_steps = iteration * 1000
    if iteration:
        s.latest_metrics = {"critic_loss": 1.0 / iteration}
        s.reward_history.append(-float(iteration))
    return s


def bad_state() -> State:
    """A snapshot the renderer chokes on (a metric that is not a number)."""
    s = state(5)
    s.latest_metrics = {"critic_loss": "oops"}  # type: ignore[dict-item]
    return s


def plain_console(**kwargs: object) -> Console:
    return Console(file=io.StringIO(), force_terminal=False, width=120, **kwargs)  # type: ignore[arg-type]


def term_console(**kwargs: object) -> Console:
    return Console(
        file=io.StringIO(),
        force_terminal=True,
        width=120,
        color_system="truecolor",
        **kwargs,  # type: ignore[arg-type]
    )


def output(console: Console) -> str:
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


@pytest.fixture
def restore_streams() -> Iterator[None]:
    """Fail the test if it leaves sys.stdout/sys.stderr redirected."""
    out, err = sys.stdout, sys.stderr
    yield
    ok = sys.stdout is out and sys.stderr is err
    sys.stdout, sys.stderr = out, err
    assert ok, "dashboard left sys.stdout/sys.stderr redirected"


def test_is_a_display() -> None:
    d: Display = Dashboard(plain_console())
    assert isinstance(d, Dashboard)


# -- mode selection ------------------------------------------------------------------------
def test_use_live() -> None:
    assert use_live(term_console())
    assert not use_live(plain_console())
    assert not use_live(term_console(_environ={"TERM": "dumb"}))
    assert not use_live(term_console(_environ={"TERM": "unknown"}))


def test_mode_forced_and_detected() -> None:
    assert Dashboard(term_console()).live_mode
    assert not Dashboard(plain_console()).live_mode
    assert not Dashboard(term_console(), live=False).live_mode
    assert Dashboard(plain_console(), live=True).live_mode


def test_default_console_is_stdout() -> None:
    d = Dashboard()
    assert d.console.file is sys.stdout


def test_glyphs_follow_encoding() -> None:
    assert Dashboard(term_console()).glyphs is UNICODE_GLYPHS
    ascii_console = Console(file=_AsciiIO(), force_terminal=True, width=120)
    assert Dashboard(ascii_console).glyphs is ASCII_GLYPHS


# -- plain mode ----------------------------------------------------------------------------
def test_plain_lines_throttled_by_now() -> None:
    console = plain_console()
    d = Dashboard(console, plain_interval=5.0)
    d.open(state(0, status="Warming up..."), T0)
    for t in (1, 2, 4.9, 5, 6, 9.9, 10, 10.5, 17):
        d.update(state(int(t)), T0 + t)
    d.close(state(17), T0 + 17, summary=False)
    lines = output(console).splitlines()
    assert lines == [
        "iter 0/100 | Warming up...",
        "iter 5/100 | reward -5.000 | Training",
        "iter 10/100 | reward -10.000 | Training",
        "iter 17/100 | reward -17.000 | Training",
    ]


def test_plain_close_does_not_repeat_last_line() -> None:
    console = plain_console()
    d = Dashboard(console, plain_interval=5.0)
    d.open(state(3), T0)
    d.close(state(3), T0 + 1, summary=False)
    assert output(console).splitlines() == ["iter 3/100 | reward -3.000 | Training"]


def test_plain_never_emits_escape_codes() -> None:
    console = plain_console()
    d = Dashboard(console, plain_interval=1.0)
    d.open(state(0), T0)
    d.say("[bold red]a warning[/]")
    for i in range(1, 30):
        d.update(state(i), T0 + i)
    d.close(state(29), T0 + 29, summary=True)
    d.close(state(29), T0 + 29, summary=True)
    text = output(console)
    assert "\x1b[" not in text
    assert "a warning" in text
    assert "[bold red]" not in text
    assert text.count(SUMMARY_HEAD) == 1
    assert "Total env steps: 29,000" in text
    assert "iter 29/100" in text


def test_dumb_terminal_gets_plain_lines() -> None:
    # colour system left on "auto", as for a real terminal
    console = Console(file=io.StringIO(), force_terminal=True, _environ={"TERM": "dumb"})
    d = Dashboard(console)
    d.open(state(0), T0)
    d.update(state(9), T0 + 9)
    d.close(state(9), T0 + 9, summary=True)
    text = output(console)
    assert "\x1b[" not in text
    assert "iter 9/100 | reward -9.000 | Training" in text


def test_plain_summary_interrupted() -> None:
    console = plain_console()
    d = Dashboard(console)
    d.open(state(0), T0)
    s = state(7)
    s.interrupted = True
    d.close(s, T0 + 7, summary=True)
    assert "Training interrupted" in output(console)


def test_plain_lines_do_not_wrap() -> None:
    console = Console(file=io.StringIO(), force_terminal=False, width=40)
    d = Dashboard(console)
    s = state(5, status="a long status message that is longer than forty columns")
    d.open(s, T0)
    assert len(output(console).splitlines()) == 1


# -- live mode -----------------------------------------------------------------------------
@pytest.mark.usefixtures("restore_streams")
def test_live_draws_panel_and_restores_cursor() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(0, status="Warming up..."), T0)
    assert HIDE_CURSOR in output(console)
    assert "Warming up..." in output(console)
    d.update(state(42), T0 + 42)
    assert "iter 42/100" in output(console)
    d.close(state(43), T0 + 43, summary=False)
    text = output(console)
    assert "iter 43/100" in text  # the final frame
    assert text.rindex(SHOW_CURSOR) > text.rindex("iter 43/100")
    assert "Training Summary" not in text


@pytest.mark.usefixtures("restore_streams")
def test_live_close_is_idempotent_and_prints_summary_once() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(0), T0)
    d.update(state(10), T0 + 10)
    d.close(state(10), T0 + 10, summary=True)
    after_first = output(console)
    d.close(state(10), T0 + 10, summary=True)
    d.update(state(11), T0 + 11)  # ignored after close
    assert output(console) == after_first
    assert after_first.count(SUMMARY_HEAD) == 1
    assert after_first.rindex(SUMMARY_HEAD) > after_first.rindex(SHOW_CURSOR)


@pytest.mark.usefixtures("restore_streams")
def test_live_redirects_print_above_panel() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(1), T0)
    print("hello from the training loop")
    print("to stderr", file=sys.stderr)
    d.say("[green]a said line[/]")
    d.update(state(2), T0 + 2)
    d.close(state(2), T0 + 2, summary=False)
    text = output(console)
    assert "hello from the training loop" in text
    assert "to stderr" in text
    assert "a said line" in text
    assert text.index("hello from the training loop") < text.rindex("iter 2/100")


@pytest.mark.usefixtures("restore_streams")
def test_close_after_failed_update_restores_terminal() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(1), T0)
    d.update(state(4), T0 + 4)
    with pytest.raises(TypeError):
        d.update(bad_state(), T0 + 5)
    d.update(state(6), T0 + 6)  # still usable
    d.close(bad_state(), T0 + 7, summary=True)  # final frame fails: last good one stays
    text = output(console)
    assert text.rindex(SHOW_CURSOR) > text.rindex("iter 6/100")
    assert SUMMARY_HEAD in text


class _Exploding:
    """A renderable whose rendering raises, like a Ctrl+C landing mid-render."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment("partial ")
        raise self.exc


def _explode_on_render(d: Dashboard, exc: BaseException) -> None:
    def panel(state: RunView, now: float) -> _Exploding:
        return _Exploding(exc)

    d._panel = panel  # type: ignore[method-assign]


@pytest.mark.usefixtures("restore_streams")
def test_keyboard_interrupt_mid_render_then_close_restores() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(1), T0)
    good_panel = d._panel
    _explode_on_render(d, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        d.update(state(2), T0 + 2)
    d._panel = good_panel  # type: ignore[method-assign]
    d.close(state(3), T0 + 3, summary=True)
    text = output(console)
    assert text.rindex(SHOW_CURSOR) > text.rindex("iter 3/100")
    assert SUMMARY_HEAD in text


@pytest.mark.usefixtures("restore_streams")
def test_close_when_every_frame_fails_still_restores_then_raises() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(1), T0)
    _explode_on_render(d, RuntimeError("render bug"))
    with pytest.raises(RuntimeError):
        d.update(state(2), T0 + 2)
    with pytest.raises(RuntimeError, match="render bug"):
        d.close(state(2), T0 + 2, summary=True)
    text = output(console)
    assert strip_ansi(text).rstrip().endswith("╯")  # summary printed before raising
    assert text.rindex(HIDE_CURSOR) < text.rindex(SHOW_CURSOR) < text.rindex(SUMMARY_HEAD)
    d.close(state(2), T0 + 2, summary=True)  # and a second close is a no-op
    assert output(console) == text


@pytest.mark.usefixtures("restore_streams")
def test_failed_first_frame_build_starts_nothing() -> None:
    console = term_console()
    d = Dashboard(console)
    with pytest.raises(TypeError):
        d.open(bad_state(), T0)
    assert output(console) == ""  # Live never entered: nothing to undo
    d.open(state(1), T0 + 1)
    d.close(state(1), T0 + 1, summary=False)
    assert output(console).rindex(SHOW_CURSOR) > output(console).rindex("iter 1/100")


@pytest.mark.usefixtures("restore_streams")
def test_failed_first_frame_render_restores_terminal() -> None:
    console = term_console()
    d = Dashboard(console)
    _explode_on_render(d, RuntimeError("render bug"))
    with pytest.raises(RuntimeError):
        d.open(state(1), T0)
    text = output(console)
    assert text.index(HIDE_CURSOR) < text.rindex(SHOW_CURSOR)
    d.close(state(1), T0 + 1, summary=False)


@pytest.mark.usefixtures("restore_streams")
def test_update_without_open_starts_live() -> None:
    console = term_console()
    d = Dashboard(console)
    d.update(state(3), T0 + 3)
    assert "iter 3/100" in output(console)
    d.close(state(3), T0 + 3, summary=False)
    assert output(console).rindex(SHOW_CURSOR) > output(console).rindex("iter 3/100")


@pytest.mark.usefixtures("restore_streams")
def test_open_twice_keeps_one_live() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(0), T0)
    d.open(state(1), T0 + 1)
    d.close(state(1), T0 + 1, summary=False)
    assert output(console).count(HIDE_CURSOR) == 1


def test_forced_plain_on_terminal_has_no_cursor_codes() -> None:
    console = term_console()
    d = Dashboard(console, live=False)
    d.open(state(0), T0)
    d.update(state(8), T0 + 8)
    d.close(state(8), T0 + 8, summary=False)
    text = output(console)
    assert "\x1b[?25" not in text
    assert "iter 8/100" in text


@pytest.mark.usefixtures("restore_streams")
def test_say_from_threads_during_updates() -> None:
    console = term_console()
    d = Dashboard(console)
    d.open(state(0), T0)

    def talk(tag: str) -> None:
        for i in range(20):
            d.say(f"{tag}-{i}")

    threads = [threading.Thread(target=talk, args=(f"t{n}",)) for n in range(3)]
    for t in threads:
        t.start()
    for i in range(1, 20):
        d.update(state(i), T0 + i)
    for t in threads:
        t.join()
    d.close(state(20), T0 + 20, summary=False)
    text = strip_ansi(output(console))
    missing = [f"t{n}-{i}" for n in range(3) for i in range(20) if f"t{n}-{i}\n" not in text]
    assert not missing
