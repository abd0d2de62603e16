"""The dashboard's renderables: formats, thresholds, orderings, glyphs and golden layouts.

Goldens live in ``tests/golden/*.txt``: plain-text exports at 120 columns (40 rows), and
``*_80x24.txt`` / ``*_120x40.txt`` rendered on a console of that size. Regenerate with
``AOFF_UPDATE_GOLDEN=1 pytest tests/test_render.py`` and review every diff by eye.
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.style import Style
from rich.text import Text

from aoff._core._records import RunConfig
from aoff._core._state import State
from aoff._display._format import fmt_duration, fmt_ms, fmt_number
from aoff._display._render import (
    ASCII_GLYPHS,
    UNICODE_GLYPHS,
    collector_rows,
    dashboard_panel,
    eta_seconds,
    glyphs_for,
    glyphs_for_encoding,
    header,
    metrics_table,
    plain_line,
    reward_table,
    reward_trend,
    summary_panel,
    timing_table,
)

GOLDEN = Path(__file__).parent / "golden"
T0 = 1_700_000_000.0  # a fixed wall-clock origin
NOW = T0 + 187.0


# -- helpers -------------------------------------------------------------------------------
class _AsciiIO(io.StringIO):
    """A text stream that says it can only carry ASCII (like ``LANG=C`` pipes)."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "ascii"


def make_console(*, ascii_only: bool = False, width: int = 120, height: int = 40) -> Console:
    return Console(
        record=True,
        width=width,
        height=height,  # never the height of the terminal running the tests
        file=_AsciiIO() if ascii_only else io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
    )


def export(
    renderable: RenderableType, *, ascii_only: bool = False, width: int = 120, height: int = 40
) -> str:
    console = make_console(ascii_only=ascii_only, width=width, height=height)
    console.print(renderable)
    return console.export_text()


def sized(renderable: RenderableType, width: int, height: int, *, ascii_only: bool = False) -> str:
    """What a ``width`` x ``height`` terminal without colours shows of ``renderable``."""
    file = _AsciiIO() if ascii_only else io.StringIO()
    console = Console(width=width, height=height, file=file, force_terminal=True, color_system=None)
    console.print(renderable)
    return file.getvalue()


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("AOFF_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing golden {path}; run with AOFF_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {path}"


def style_of(
    renderable: RenderableType, needle: str, *, width: int = 120, height: int = 40
) -> Style:
    """The style of the one rendered segment that contains ``needle``."""
    console = make_console(width=width, height=height)
    hits = [s for s in console.render(renderable) if needle in s.text]
    if len(hits) > 1:  # e.g. "━" is also in the table rules: take the exact segment
        hits = [s for s in hits if s.text.strip() == needle]
    assert len(hits) == 1, f"{needle!r} found in {len(hits)} segments"
    assert hits[0].style is not None
    return hits[0].style


def color_of(renderable: RenderableType, needle: str, *, width: int = 120, height: int = 40) -> str:
    color = style_of(renderable, needle, width=width, height=height).color
    assert color is not None
    return color.name


def empty_state() -> State:
    return State()


def mid_run_state() -> State:
    """A run 187 s in, training timer started at 60 s, every section filled."""
    s = State(
        config=RunConfig(
            algo_name="SAC", max_iterations=1500, num_envs=4096, env_name="Humanoid-v4"
        )
    )
    s.started = True
    s.start_time = T0
    s.training_start_time = T0 + 60.0
    s.last_wall_time = NOW
    s.iteration = 120
    s.total_steps = 3_456_789
    s.buffer_size = 1_000_000
    s.buffer_target = 1_000_000
    s.train_time = 0.0123
    s.wait_time = 0.0004
    s.h2d_time = 0.0004
    s.weight_sync_time = 0.0011
    s.throughput_known = True
    s.throughput_steps = 32_768
    s.logged = {"learner", "done_rates", "collection_sync", "collector"}
    s.latest_metrics = {
        "loss/critic_loss": 2.5,
        "loss/actor_loss": -3.2,
        "alpha": 0.0123,
        "q_mean": 245.3,
        "grad_norm": 1.2e7,
        "target_entropy": -17.0,
    }
    s.reward_history.extend(float(i) for i in range(30))
    s.reward_components = {"reward/forward_vel": 1.2345, "ctrl_cost": -0.05, "reward/alive": 0.0}
    s.collector_timing = {
        "env_step_ms": 5.5,
        "weight_sync_ms": 0.3,
        "action_select_ms": 0.9,
        "replay_ms": 0.4,
        "sync_coordination_ms": 0.1,
        "env_step_backend_ms": 4.0,
        "env_step_reset_done_ms": 0.2,
        "prefetch_ms": 2.0,
    }
    s.timeout_rate = 0.0123
    s.terminated_rate = 0.2
    s.sync_collection = True
    s.env_steps_per_sync = 8
    s.staging_len = 3
    s.staging_max = 4
    s.ep_length = 512.34
    s.status = "Training"
    s.training_started = True
    return s


# -- formatting ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1e6, "1.00e+06"),
        (1_234_567.0, "1.23e+06"),
        (-2.5e7, "-2.50e+07"),
        (999_999.0, "999999.0"),
        (100.0, "100.0"),
        (-245.34, "-245.3"),
        (99.5, "99.500"),
        (1.0, "1.000"),
        (-3.14159, "-3.142"),
        (0.999, "0.9990"),
        (0.001, "0.0010"),
        (-0.01234, "-0.0123"),
        (0.0001, "1.00e-04"),
        (-2.5e-7, "-2.50e-07"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
    ],
)
def test_fmt_number(value: float, expected: str) -> None:
    assert fmt_number(value) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0, "0s"),
        (42, "42s"),
        (59.9, "59s"),
        (60, "1m00s"),
        (187, "3m07s"),
        (3599, "59m59s"),
        (3600, "1h00m00s"),
        (7387, "2h03m07s"),
        (100 * 3600 + 5, "100h00m05s"),
        (-5, "0s"),
        (math.nan, "--"),
        (math.inf, "--"),
    ],
)
def test_fmt_duration(seconds: float, expected: str) -> None:
    assert fmt_duration(seconds) == expected


def test_fmt_ms() -> None:
    assert fmt_ms(0.0123) == "12.3ms"
    assert fmt_ms(4.04, already_ms=True) == "4.0ms"


# -- glyphs --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("encoding", "ascii_expected"),
    [("utf-8", True), ("UTF-16", True), ("ascii", False), ("latin-1", False), ("cp1252", False)],
)
def test_glyphs_for_encoding(encoding: str, ascii_expected: bool) -> None:
    expected = UNICODE_GLYPHS if ascii_expected else ASCII_GLYPHS
    assert glyphs_for_encoding(encoding) is expected


def test_glyphs_for_unknown_encoding_is_ascii() -> None:
    assert glyphs_for_encoding("no-such-codec") is ASCII_GLYPHS


def test_glyphs_for_console() -> None:
    assert glyphs_for(make_console()) is UNICODE_GLYPHS
    assert glyphs_for(make_console(ascii_only=True)) is ASCII_GLYPHS


def test_ascii_glyphs_are_ascii() -> None:
    for value in (ASCII_GLYPHS.timer, ASCII_GLYPHS.up, ASCII_GLYPHS.down, ASCII_GLYPHS.flat):
        value.encode("ascii")
    ASCII_GLYPHS.yes.encode("ascii")
    ASCII_GLYPHS.no.encode("ascii")
    assert len({ASCII_GLYPHS.up, ASCII_GLYPHS.down, ASCII_GLYPHS.flat}) == 3


# -- goldens -------------------------------------------------------------------------------
def test_golden_empty() -> None:
    text = export(dashboard_panel(empty_state(), NOW))
    assert text.count("Waiting for") == 2
    check_golden("empty", text)


def test_golden_mid_run() -> None:
    text = export(dashboard_panel(mid_run_state(), NOW))
    assert "Waiting" not in text
    check_golden("mid_run", text)


def test_golden_mid_run_ascii() -> None:
    glyphs = glyphs_for(make_console(ascii_only=True))
    text = export(dashboard_panel(mid_run_state(), NOW, glyphs), ascii_only=True)
    text.encode("ascii")  # raises if any non-ASCII character got through
    check_golden("mid_run_ascii", text)


def test_golden_problems() -> None:
    s = mid_run_state()
    s.latest_metrics["loss/critic_loss"] = 12.5
    s.wait_time = 0.0021
    s.staging_len = 4
    s.dropped_events = 12_345
    s.backend_problems = {"tensorboard": "failed", "jsonl": "disk full"}
    check_golden("problems", export(dashboard_panel(s, NOW)))


def test_golden_summary() -> None:
    s = mid_run_state()
    s.finished = True
    s.extra_summary = "  Best reward: [green]29.0[/]\n"
    s.last_save = "/ckpt/model_120.pt"
    text = export(summary_panel(s, NOW))
    assert "Training stopped at 120 of 1,500" in text  # finish() before max_iterations
    check_golden("summary", text)


def test_golden_summary_interrupted() -> None:
    s = mid_run_state()
    s.finished = True
    s.interrupted = True
    s.finish_title = "Interrupted"
    s.dropped_events = 3
    s.backend_problems = {"wandb": "timed out"}
    text = export(summary_panel(s, NOW))
    assert "Training interrupted: stopped at 120 of 1,500" in text
    assert "Training complete" not in text
    check_golden("summary_interrupted", text)


SMALL, BIG = (80, 24), (120, 40)


def problems_state() -> State:
    s = mid_run_state()
    s.latest_metrics["loss/critic_loss"] = 12.5
    s.wait_time = 0.0021
    s.staging_len = 4
    s.buffer_size = 317_440
    s.dropped_events = 12_345
    s.backend_problems = {"tensorboard": "failed", "jsonl": "disk full"}
    return s


def assert_fits(text: str, width: int, height: int) -> None:
    lines = text.splitlines()
    assert len(lines) <= height, f"{len(lines)} rows"
    assert all(cell_len(ln) == width for ln in lines), [cell_len(ln) for ln in lines]
    shown = text.replace("Waiting for data...", "").replace("Initializing...", "")
    # the placeholder wrapped in a narrow Rewards column is still the placeholder
    shown = re.sub(r"Waiting for(\s|│)*\n(.*?)data\.\.\.", "", shown)
    assert "…" not in shown and "..." not in shown


@pytest.mark.parametrize(
    ("name", "make", "size", "ascii_only"),
    [
        ("mid_run_80x24", mid_run_state, SMALL, False),
        ("mid_run_ascii_80x24", mid_run_state, SMALL, True),
        ("problems_80x24", problems_state, SMALL, False),
        ("empty_80x24", empty_state, SMALL, False),
        ("mid_run_120x40", mid_run_state, BIG, False),
        ("problems_120x40", problems_state, BIG, False),
    ],
)
def test_golden_sized(
    name: str, make: Callable[[], State], size: tuple[int, int], ascii_only: bool
) -> None:
    glyphs = ASCII_GLYPHS if ascii_only else UNICODE_GLYPHS
    text = sized(dashboard_panel(make(), NOW, glyphs), *size, ascii_only=ascii_only)
    assert_fits(text, *size)
    if ascii_only:
        text.encode("ascii")
    check_golden(name, text)


def test_big_terminal_keeps_the_wide_layout() -> None:
    assert sized(dashboard_panel(mid_run_state(), NOW), *BIG) == export(
        dashboard_panel(mid_run_state(), NOW)
    )
    assert (GOLDEN / "mid_run_120x40.txt").read_text(encoding="utf-8") == (
        GOLDEN / "mid_run.txt"
    ).read_text(encoding="utf-8")


def test_small_terminal_shows_every_number_whole() -> None:
    text = sized(dashboard_panel(problems_state(), NOW), *SMALL)
    for number in (
        "317,440",
        "Steps/s 2,374,493",
        "Mean (last 50) 14.500",
        "Peak 29.000",
        "12,345",
        "1.20e+07",
        "12.500",
        "20.0%",
        "4,096",
        "✓ (8)",
        "4/4",
    ):
        assert number in text, number
    for label in ("Terminated Rate", "Sync Coordination", "Staging Pool", "Training"):
        assert label in text, label


@pytest.mark.parametrize(
    ("width", "height", "wide"),
    [(120, 40, True), (200, 23, True), (80, 40, False), (120, 22, False), (100, 30, False)],
)
def test_layout_follows_the_size(width: int, height: int, wide: bool) -> None:
    """Wide when every number fits whole and the panel fits the height, else compact."""
    panel = dashboard_panel(mid_run_state(), NOW)
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True)
    assert panel.layout(console, console.options)[0] == ("wide" if wide else "compact")
    lines = sized(panel, width, height).splitlines()
    assert len(lines) <= height
    assert "…" not in "".join(lines)


def test_compact_drops_spacers_before_rows() -> None:
    tall = sized(dashboard_panel(problems_state(), NOW), 80, 40).splitlines()
    short = sized(dashboard_panel(problems_state(), NOW), *SMALL).splitlines()
    assert len(tall) == 25 and len(short) == 24
    assert [ln for ln in tall if ln.strip("│ ")] == [ln for ln in short if ln.strip("│ ")]


def test_compact_keeps_the_styles() -> None:
    panel = dashboard_panel(problems_state(), NOW)
    at = {"width": 80, "height": 24}
    assert color_of(panel, "12.500", **at) == "red"
    assert color_of(panel, "2.1ms", **at) == "red"
    assert color_of(panel, "14.500", **at) == "green"
    assert style_of(panel, "14.500", **at).bold
    assert style_of(panel, "29.000", **at).dim
    assert color_of(panel, "317,440", **at) == "yellow"
    assert color_of(panel, "12,345", **at) == "red"
    assert color_of(panel, "Steps/s 2,374,493", **at) == "green"
    assert color_of(panel, "Losses & Metrics", **at) == "cyan"
    assert color_of(panel, "Learner", **at) == "blue"
    assert style_of(panel, "Training", **at).italic


def test_any_size_renders_within_its_width() -> None:
    states = (empty_state(), mid_run_state(), problems_state())
    for width in (1, 2, 4, 5, 8, 13, 20, 33, 47, 61, 79, 81, 99, 119, 121, 160):
        for height in (1, 5, 12, 24, 60):
            for s in states:
                text = sized(dashboard_panel(s, NOW), width, height)
                assert all(cell_len(ln) <= width for ln in text.splitlines())


# -- panel structure -----------------------------------------------------------------------
def test_panel_title_and_border() -> None:
    panel = dashboard_panel(mid_run_state(), NOW)
    assert panel.title == " 🚀 aoff Off-Policy Training "
    title = style_of(panel, "aoff Off-Policy Training")
    assert title.bold
    assert title.color is not None and title.color.name == "bright_blue"
    assert color_of(panel, "╭─") == "bright_blue"
    assert color_of(panel, "╰─") == "bright_blue"
    lines = export(panel).splitlines()
    assert all(ln.startswith("│ ") and ln.endswith(" │") for ln in lines[1:-1])  # padding 1
    ascii_panel = dashboard_panel(mid_run_state(), NOW, ASCII_GLYPHS)
    assert ascii_panel.title == " aoff Off-Policy Training "


def test_panel_section_order() -> None:
    lines = export(dashboard_panel(mid_run_state(), NOW)).splitlines()
    idx = {
        "header": next(i for i, ln in enumerate(lines) if "iter 120/1500" in ln),
        "metrics": next(i for i, ln in enumerate(lines) if "Losses & Metrics" in ln),
        "timing": next(i for i, ln in enumerate(lines) if "Learner" in ln),
    }
    assert idx["header"] < idx["metrics"] < idx["timing"]
    assert "Rewards" in lines[idx["metrics"]]  # side by side
    assert lines[idx["header"] + 1].strip("│ ") == ""  # blank spacer line


# -- header --------------------------------------------------------------------------------
def test_header_fields_and_styles() -> None:
    h = header(mid_run_state(), NOW)
    assert h.plain == (
        " SAC | Humanoid-v4 | iter 120/1500 | ⏱ 3m07s | ETA 24m20s | Ep Len 512.3"
        " | Steps/s 2,374,493 | Training"
    )
    assert color_of(h, "SAC") == "cyan"
    assert style_of(h, "SAC").bold
    assert style_of(h, "Humanoid-v4").bold
    assert color_of(h, "iter 120") == "yellow"
    assert color_of(h, "3m07s") == "green"
    assert color_of(h, "ETA") == "magenta"
    assert color_of(h, "Steps/s") == "green"
    assert style_of(h, "Training").italic
    assert style_of(h, "Training").dim
    assert h.no_wrap
    assert h.overflow == "ellipsis"


def test_header_eta_uses_training_timer() -> None:
    s = mid_run_state()
    # 127 s since the training timer, 120 iterations done, 1380 left
    assert eta_seconds(s, NOW) == pytest.approx(1380 * 127 / 120)
    s.training_start_time = None
    assert eta_seconds(s, NOW) == pytest.approx(1380 * 187 / 120)
    s.iteration = 0
    assert eta_seconds(s, NOW) is None
    assert "ETA" not in header(s, NOW).plain


def test_header_eta_never_negative() -> None:
    s = mid_run_state()
    s.iteration = 2000  # past max_iterations
    assert eta_seconds(s, NOW) == 0


def test_header_optional_fields() -> None:
    s = mid_run_state()
    s.ep_length = 0.0
    s.throughput_known = False
    s.config.env_name = ""
    text = header(s, NOW).plain
    assert "Ep Len" not in text
    assert "Steps/s" not in text
    assert " |  | " not in text
    assert text.startswith(" SAC | iter 120/1500 | ")


def test_header_status_markup() -> None:
    s = mid_run_state()
    s.status = "[red]ERROR: env crashed[/]"
    h = header(s, NOW)
    assert h.plain.endswith("| ERROR: env crashed")
    assert color_of(h, "ERROR") == "red"
    s.status = "[not closed"
    assert header(s, NOW).plain.endswith("| [not closed")


def test_header_is_one_line_with_ellipsis() -> None:
    s = mid_run_state()
    s.status = "a very long status " * 10
    lines = export(dashboard_panel(s, NOW)).splitlines()
    assert lines[1].rstrip("│ ").endswith("…")
    assert lines[2].strip("│ ") == ""  # the blank spacer: the header did not wrap
    ascii_lines = export(dashboard_panel(s, NOW, ASCII_GLYPHS), ascii_only=True)
    ascii_lines.encode("ascii")
    assert ascii_lines.splitlines()[2].strip("| ") == ""


def test_compact_header_wraps_by_field_and_cuts_only_the_status() -> None:
    s = mid_run_state()
    s.status = "a very long status " * 10
    lines = sized(dashboard_panel(s, NOW), 60, 40).splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.strip("│ ") == "")
    head = [ln.strip("│ ") for ln in lines[1:end]]
    assert len(head) == 3
    fields = [f for ln in head[:-1] for f in ln.split(" | ")]
    assert fields == [
        "SAC",
        "Humanoid-v4",
        "iter 120/1500",
        "⏱ 3m07s",
        "ETA 24m20s",
        "Ep Len 512.3",
        "Steps/s 2,374,493",
    ]
    assert head[-1].startswith("a very long status") and head[-1].endswith("…")
    text = "\n".join(lines)
    for number in (
        "1,000,000",
        "1.20e+07",
        "-17.000",
        "Mean (last 50) 14.500",
        "Peak 29.000",
        "✓ (8)",
    ):
        assert number in text
    ascii_text = sized(dashboard_panel(s, NOW, ASCII_GLYPHS), 60, 40, ascii_only=True)
    ascii_text.encode("ascii")
    assert "Steps/s 2,374,493" in ascii_text


def test_header_before_start() -> None:
    assert header(empty_state(), NOW).plain == " RL | iter 0/1500 | ⏱ 0s | Initializing..."


# -- metrics -------------------------------------------------------------------------------
def _rows(table_text: str) -> list[str]:
    return [ln.strip() for ln in table_text.splitlines()[2:] if ln.strip()]


def test_metrics_order_and_labels() -> None:
    rows = _rows(export(metrics_table(mid_run_state())))
    labels = [r.rsplit(" ", 1)[0].strip() for r in rows]
    assert labels == [
        "Loss/Actor Loss",
        "Loss/Critic Loss",
        "Alpha",
        "Grad Norm",
        "Q Mean",
        "Target Entropy",
    ]
    raw = export(metrics_table(mid_run_state())).splitlines()
    assert any(ln.startswith("Loss/Actor Loss") for ln in raw)
    assert any(ln.startswith("  Alpha") for ln in raw)


def test_metrics_values_formatted() -> None:
    text = export(metrics_table(mid_run_state()))
    for value in ("-3.200", "2.500", "0.0123", "1.20e+07", "245.3", "-17.000"):
        assert value in text


@pytest.mark.parametrize(
    ("value", "color"),
    [(12.5, "red"), (10.0, "yellow"), (-50.0, "yellow"), (math.nan, "red"), (math.inf, "red")],
)
def test_loss_alert(value: float, color: str) -> None:
    s = empty_state()
    s.latest_metrics = {"critic_loss": value, "alpha": 55.0}
    table = metrics_table(s)
    assert color_of(table, fmt_number(value)) == color
    assert color_of(table, "55.000") == "yellow"  # non-loss: never red


def test_metrics_waiting() -> None:
    table = metrics_table(empty_state())
    assert "Waiting for data..." in export(table)
    assert style_of(table, "Waiting").dim


def test_table_header_styles() -> None:
    s = mid_run_state()
    assert color_of(metrics_table(s), "Losses & Metrics") == "cyan"
    assert color_of(reward_table(s), "Rewards") == "green"
    assert color_of(timing_table(s), "Learner") == "blue"


# -- rewards -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([1.0] * 9, None),
        ([1.0] * 10, "flat"),
        ([5.0] * 10 + [5.0] * 10, "flat"),
        ([10.0] * 10 + [10.6] * 10, "up"),
        ([10.0] * 10 + [10.4] * 10, "flat"),
        ([10.0] * 10 + [9.4] * 10, "down"),
        ([10.0] * 10 + [9.6] * 10, "flat"),
        # negative rewards: getting less negative is an improvement
        ([-100.0] * 10 + [-90.0] * 10, "up"),
        ([-100.0] * 10 + [-110.0] * 10, "down"),
        ([-100.0] * 10 + [-97.0] * 10, "flat"),
        ([0.0] * 10 + [0.1] * 10, "up"),
        ([0.0] * 10 + [-0.1] * 10, "down"),
        # only the last 20 count; fewer than 10 previous use what there is
        ([1000.0] * 30 + [1.0] * 10 + [2.0] * 10, "up"),
        ([1.0] * 5 + [2.0] * 10, "up"),
    ],
)
def test_reward_trend(history: list[float], expected: str | None) -> None:
    assert reward_trend(history) == expected


@pytest.mark.parametrize(
    ("tail", "glyph", "color"),
    [(12.0, "▲", "green"), (8.0, "▼", "red"), (10.0, "━", "yellow")],
)
def test_reward_trend_rendered(tail: float, glyph: str, color: str) -> None:
    s = empty_state()
    s.reward_history.extend([10.0] * 10 + [tail] * 10)
    table = reward_table(s)
    assert color_of(table, glyph) == color
    assert f"Reward {glyph}" in export(table)
    ascii_glyph = {"▲": "^", "▼": "v", "━": "-"}[glyph]
    assert f"Reward {ascii_glyph} " in export(reward_table(s, ASCII_GLYPHS), ascii_only=True)


def test_reward_no_trend_below_ten() -> None:
    s = empty_state()
    s.reward_history.extend([1.0] * 9)
    text = export(reward_table(s))
    assert not any(g in text for g in "▲▼")
    assert "Reward" in text
    assert "Waiting" not in text


def test_reward_mean_last_50_peak_all() -> None:
    s = empty_state()
    s.reward_history.extend([100.0] + [1.0] * 49 + [3.0] * 50)
    table = reward_table(s)
    assert "Mean (last 50) 3.000 / Peak 100.000" in export(table)
    assert color_of(table, "3.000") == "green"
    assert style_of(table, "3.000").bold
    assert style_of(table, "100.000").dim


def test_reward_components() -> None:
    table = reward_table(mid_run_state())
    lines = [ln.strip() for ln in export(table).splitlines()]
    comp = [ln for ln in lines if ln.endswith(("+0.0000", "-0.0500", "+1.2345"))]
    # sorted by original key: "ctrl_cost" < "reward/alive" < "reward/forward_vel"
    assert [c.rsplit(" ", 1)[0].strip() for c in comp] == ["ctrl cost", "alive", "forward vel"]
    assert color_of(table, "+1.2345") == "green"
    assert color_of(table, "-0.0500") == "red"
    assert style_of(table, "+0.0000").dim


def test_reward_waiting_but_components_shown() -> None:
    s = empty_state()
    s.reward_components = {"reward/alive": 1.0}
    text = export(reward_table(s))
    assert "Waiting for data..." in text
    assert "alive" in text
    assert "+1.0000" in text


# -- timing table --------------------------------------------------------------------------
def test_collector_known_then_unknown_then_nested() -> None:
    rows = collector_rows(mid_run_state().collector_timing)
    assert rows == [
        ("Weight Sync", "0.3ms"),
        ("Action Select", "0.9ms"),
        ("Env Step", "5.5ms"),
        ("  backend_ms", "4.0ms"),
        ("  reset_done_ms", "0.2ms"),
        ("Replay", "0.4ms"),
        ("Sync Coordination", "0.1ms"),
        ("prefetch_ms", "2.0ms"),
    ]


def test_collector_nesting_rules() -> None:
    rows = collector_rows(
        {
            "zeta_ms": 1.0,
            "alpha_ms": 1.0,
            "alpha_io_ms": 1.0,
            "alpha_io_read_ms": 1.0,
            "alphabet_ms": 1.0,  # not "alpha_" + something: a sibling, not a child
            "env_step_backend_ms": 1.0,  # parent absent: top level, by name
            "sync_ms": 1.0,  # would be a prefix of sync_coordination_ms: known keys stay put
            "sync_coordination_ms": 1.0,
            "queue_depth": 1.0,  # no _ms: shown as given
        }
    )
    assert [label for label, _ in rows] == [
        "Sync Coordination",
        "alpha_ms",
        "  io_ms",
        "    read_ms",
        "alphabet_ms",
        "env_step_backend_ms",
        "queue_depth",
        "sync_ms",
        "zeta_ms",
    ]


def test_collector_empty() -> None:
    assert collector_rows({}) == []


@pytest.mark.parametrize(("wait", "color"), [(0.0021, "red"), (0.001, "yellow"), (0.0, "yellow")])
def test_wait_alert(wait: float, color: str) -> None:
    s = mid_run_state()
    s.wait_time = wait
    table = timing_table(s)
    assert color_of(table, f"{wait * 1000:.1f}ms") == color


def test_learner_values() -> None:
    text = export(timing_table(mid_run_state()))
    for label, value in (
        ("Wait", "0.4ms"),
        ("H2D", "0.4ms"),
        ("Train", "12.3ms"),
        ("Weight Sync", "1.1ms"),
    ):
        line = next(ln for ln in text.splitlines() if ln.startswith(label))
        assert line.split()[len(label.split())] == value


@pytest.mark.parametrize(("length", "color"), [(3, "green"), (4, "yellow"), (5, "yellow")])
def test_staging_pool_colour(length: int, color: str) -> None:
    s = mid_run_state()
    s.staging_len = length
    assert color_of(timing_table(s), f"{length}/4") == color


def test_staging_pool_hidden_without_max() -> None:
    s = mid_run_state()
    s.staging_max = 0
    assert "Staging Pool" not in export(timing_table(s))


def test_system_column() -> None:
    text = export(timing_table(mid_run_state()))
    assert "1,000,000" in text
    assert "1.2%" in text
    assert "20.0%" in text
    assert "4,096" in text
    assert "✓ (8)" in text
    s = mid_run_state()
    s.sync_collection = False
    assert export(timing_table(s)).count("✗") == 1
    assert "no" in export(timing_table(s, ASCII_GLYPHS), ascii_only=True).split("Sync Collect")[1]


def test_system_problem_rows() -> None:
    s = mid_run_state()
    assert "Dropped" not in export(timing_table(s))
    s.dropped_events = 1
    assert "Dropped" in export(timing_table(s))
    assert "Dropped events: 1" in export(summary_panel(s, NOW))
    assert "dropped 1 " in plain_line(s, NOW)
    s.dropped_events = 12_345
    s.backend_problems = {"tensorboard": "failed"}
    table = timing_table(s)
    text = export(table)
    assert "12,345" in text
    assert color_of(table, "Dropped") == "red"
    assert color_of(table, "12,345") == "red"
    assert color_of(table, "tensorboard") == "red"
    assert color_of(table, "failed") == "red"


# -- summary -------------------------------------------------------------------------------
def test_summary_content() -> None:
    s = mid_run_state()
    s.extra_summary = "  Best: [bold]1[/]"
    s.last_save = "/ckpt/a.pt"
    panel = summary_panel(s, NOW + 999)  # total time comes from last_wall_time
    text = export(panel)
    assert "Total time: 3m07s" in text
    assert "Iterations: 120/1500" in text
    assert "Total env steps: 3,456,789" in text
    assert "  Best: 1" in text
    assert "Last checkpoint: /ckpt/a.pt" in text
    assert text.index("Best") < text.index("Last checkpoint")
    assert panel.border_style == "green"
    assert isinstance(panel.title, Text)
    assert panel.title.plain == "Training Summary"
    assert color_of(panel, "3,456,789") == "yellow"
    assert color_of(panel, "Training stopped at 120 of 1,500") == "yellow"
    s.iteration = s.config.max_iterations
    assert color_of(summary_panel(s, NOW), "Training complete") == "green"


def test_summary_of_a_run_that_logged_no_step_says_so() -> None:
    """Not "stopped at 0 of 1,500": no iteration 0 was ever logged."""
    s = empty_state()
    s.config.max_iterations = 1500
    s.start_time = T0
    text = export(summary_panel(s, T0 + 5))
    assert "Training stopped before any step was logged" in text
    assert "0 of 1,500" not in text
    assert color_of(summary_panel(s, T0 + 5), "Training stopped before") == "yellow"
    s.interrupted = True
    text = export(summary_panel(s, T0 + 5))
    assert "Training interrupted: stopped before any step was logged" in text
    s.interrupted = False
    s.steps_logged = 1  # log_step(0, ...): iteration 0 was logged, and stopped there
    assert "Training stopped at 0 of 1,500" in export(summary_panel(s, T0 + 5))


def test_summary_omits_empty_fields_and_indents_a_long_checkpoint() -> None:
    """No bare ``Env:``; a checkpoint path too long for 80 columns folds under itself."""
    s = mid_run_state()
    s.config.env_name = ""
    s.last_save = "/very/long/checkpoint/folder/" + "x" * 60 + "/model_000120.pt"
    text = sized(summary_panel(s, NOW), 80, 24)
    assert "Env" not in text and "Algo: SAC" in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "Last checkpoint: " in line)
    start = lines[at].index("/very")
    assert lines[at + 1][:start].strip("│ ") == ""  # the rest of the path, not the label column
    assert lines[at + 1][start:].strip("│ ")


def test_summary_interrupted_style() -> None:
    s = mid_run_state()
    s.interrupted = True
    panel = summary_panel(s, NOW)
    assert panel.border_style == "yellow"
    assert color_of(panel, "Training interrupted") == "yellow"


def test_summary_without_events_uses_now() -> None:
    s = empty_state()
    s.start_time = T0
    assert "Total time: 42s" in export(summary_panel(s, T0 + 42))
    assert "Last checkpoint" not in export(summary_panel(s, T0 + 42))


# -- plain line ----------------------------------------------------------------------------
def test_plain_line_example() -> None:
    s = mid_run_state()
    s.throughput_steps = 3456
    s.h2d_time, s.train_time, s.weight_sync_time = 0.0, 1.0, 0.0
    s.reward_history.clear()
    s.reward_history.append(-123.456)
    assert plain_line(s, NOW) == "iter 120/1500 | 3,456 steps/s | reward -123.456 | Training"


def test_plain_line_minimal_and_markup_free() -> None:
    s = empty_state()
    s.status = "[red]ERROR[/] in env"
    assert plain_line(s, NOW) == "iter 0/1500 | ERROR in env"


def test_plain_line_problems() -> None:
    s = mid_run_state()
    s.dropped_events = 1500
    s.backend_problems = {"wandb": "failed"}
    line = plain_line(s, NOW)
    assert "dropped 1,500" in line
    assert "wandb: failed" in line
    assert line.endswith("| Training")
    assert "\n" not in line


def many_metrics_state() -> State:
    """What the demo logs: 12 metrics and nested collector timings (29 rows wide)."""
    s = mid_run_state()
    s.latest_metrics = {
        "loss/actor_loss": 155.8,
        "loss/alpha_loss": 0.51,
        "loss/q1_loss": 1.702,
        "loss/q2_loss": 2.403,
        "alpha": 0.042,
        "entropy": -1.154,
        "grad_norm_actor": 0.4066,
        "grad_norm_critic": 1.187,
        "lr": 3e-4,
        "q1_mean": -154.4,
        "q2_mean": -152.9,
        "target_q": -153.8,
    }
    return s


def test_a_small_terminal_fits_many_metrics_by_flowing_them_under_the_rewards() -> None:
    text = sized(dashboard_panel(many_metrics_state(), NOW), *SMALL)
    assert_fits(text, *SMALL)
    for number in ("155.8", "0.5100", "-154.4", "-152.9", "-153.8", "3.00e-04", "1.187"):
        assert number in text, number
    assert text.count("Losses & Metrics") == 1  # the rest continues under the rewards, untitled
    # and the reward trend keeps its row (a sparkline) between the rewards and them
    rows = text.splitlines()
    trend = next(i for i, r in enumerate(rows) if "Reward trend" in r)
    assert any("Q2 Mean" in r for r in rows[trend + 1 :]), text
    # a big terminal still gets the seed's layout, every metric in one column
    big = sized(dashboard_panel(many_metrics_state(), NOW), *BIG)
    assert big.count("Losses & Metrics") == 1 and "-153.8" in big
