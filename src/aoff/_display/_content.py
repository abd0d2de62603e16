"""What the live panel says, as pre-formatted, pre-styled cells: no layout, no console.

The panel's words, numbers, orderings, colours and thresholds are the seed logger's and
are pinned by tests; its layout changes with the terminal's size (``_panel``). Keeping
the content here, as plain data built from a :class:`~aoff._core._state.State`, lets
both layouts (and the plain-line output) say exactly the same thing, and lets the
content be tested without drawing anything. Where the seed was silent or plainly wrong,
the choice made is documented on the function concerned (notably the reward trend for
negative rewards and nested collector timings).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from rich.errors import MarkupError
from rich.style import Style
from rich.text import Text

from .._core._view import RunView
from ._cells import EMPTY, Cell
from ._format import fmt_duration, fmt_ms, fmt_number
from ._glyphs import UNICODE_GLYPHS, Glyphs

Trend = Literal["up", "down", "flat"]
Pair = tuple[Cell, Cell]

#: Known collector timings, in the order the original logger showed them, with their labels.
COLLECTOR_TIMING_LABELS: Mapping[str, str] = {
    "weight_sync_ms": "Weight Sync",
    "action_select_ms": "Action Select",
    "env_step_ms": "Env Step",
    "replay_ms": "Replay",
    "sync_coordination_ms": "Sync Coordination",
}
COLLECTOR_TIMING_ORDER: tuple[str, ...] = tuple(COLLECTOR_TIMING_LABELS)
_ORDER_INDEX = {key: i for i, key in enumerate(COLLECTOR_TIMING_ORDER)}

TREND_WINDOW = 10
REWARD_MEAN_WINDOW = 50
#: names its window: a run's summary often shows another mean (e.g. of the last 10 episodes)
MEAN_LABEL = f"Mean (last {REWARD_MEAN_WINDOW}) "
TREND_THRESHOLD = 0.05
LOSS_ALERT = 10.0
WAIT_ALERT_MS = 1.0

_S = Style.parse
BOLD, DIM, RED, GREEN, YELLOW = _S("bold"), _S("dim"), _S("red"), _S("green"), _S("yellow")
BOLD_GREEN, SEPARATOR = _S("bold green"), DIM
_ALGO, _ENV, _ETA, _STATUS = _S("bold cyan"), _S("bold white"), _S("bold magenta"), "dim italic"


def markup(text: str, style: str = "") -> Text:
    """User text that may carry Rich markup (status, extra summary); literal if invalid."""
    try:
        return Text.from_markup(text, style=style)
    except MarkupError:
        return Text(text, style=style)


def mean(values: Sequence[float]) -> float:
    return sum(values) / max(len(values), 1)


def label(key: str) -> str:
    """A metric key as the metrics table shows it."""
    return key.replace("_", " ").title()


def eta_seconds(state: RunView, now: float) -> float | None:
    """Seconds left: remaining iterations × seconds per iteration so far.

    Time is measured from ``training_start_time`` when the training timer was started
    (so buffer warm-up does not inflate the estimate), else from ``start_time``.
    ``None`` before the first iteration or before the run started.
    """
    if state.iteration <= 0:
        return None
    origin = state.training_start_time
    if origin is None:
        origin = state.start_time
    if origin is None:
        return None
    elapsed = max(now - origin, 0.0) + state.elapsed_before  # earlier sessions' too
    if state.config.max_iterations <= 0:  # no end known (aoff.tensorboard's default)
        return None
    remaining = max(state.config.max_iterations - state.iteration, 0)
    return remaining * elapsed / state.iteration


def iteration_of(state: RunView) -> str:
    """``"<iteration>/<max_iterations>"``, or the iteration alone when no end is known."""
    top = state.config.max_iterations
    return f"{state.iteration}/{top}" if top > 0 else str(state.iteration)


def header_fields(state: RunView, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> list[Cell]:
    """The header's fields: algo, env, iteration, elapsed, ETA, episode length,
    throughput, status (last, as Rich markup; literal when it is not valid markup).

    An empty env name is left out rather than shown as an empty field. Every field but
    the status is ``whole``: a layout must show it uncut.
    """
    cfg = state.config
    elapsed = max(now - state.start_time, 0.0) if state.start_time is not None else 0.0
    elapsed += state.elapsed_before  # a resumed run's clock goes on (load_state_dict)
    fields = [Cell((f" {cfg.algo_name}", _ALGO), whole=True)]
    if cfg.env_name:
        fields.append(Cell((cfg.env_name, _ENV), whole=True))
    fields.append(Cell((f"iter {iteration_of(state)}", YELLOW), whole=True))
    fields.append(Cell((f"{glyphs.timer} {fmt_duration(elapsed)}", GREEN), whole=True))
    eta = eta_seconds(state, now)
    if eta is not None:
        fields.append(Cell((f"ETA {fmt_duration(eta)}", _ETA), whole=True))
    if state.ep_length > 0:
        fields.append(Cell((f"Ep Len {state.ep_length:.1f}", YELLOW), whole=True))
    sps = state.steps_per_sec()
    if sps is not None:
        fields.append(Cell((f"Steps/s {sps:,.0f}", BOLD_GREEN), whole=True))
    if state.last_media is not None:  # log_image/log_video/log_figure: the latest
        key, step = state.last_media
        fields.append(Cell((f"media {key[:24]} @{step:,}", _ETA), whole=True))
    if state.status:
        fields.append(Cell.of_text(markup(state.status, style=_STATUS)))
    return fields


def join_fields(fields: Sequence[Cell], lead: str = "") -> Cell:
    """Fields joined by a dim `` | `` into one cell."""
    out = Cell(lead)
    for i, field in enumerate(fields):
        out = (out + Cell((" | ", SEPARATOR)) + field) if i else (out + field)
    out.whole = False  # the layouts check the fields' widths themselves
    return out


def header(state: RunView, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> Text:
    """The one-line header of the wide layout (see :func:`header_fields`), never wrapped:
    what does not fit is cut (``…``, or cropped with ASCII glyphs)."""
    line = join_fields(header_fields(state, now, glyphs)).to_text()
    line.no_wrap = True
    line.overflow = glyphs.overflow
    return line


def metric_rows(state: RunView) -> list[Pair]:
    """ "Losses & Metrics" | "Value": loss keys first (sorted; red above 10, or when not
    finite), then the other keys sorted and indented; ``_`` → space, title case (a
    drop-in's tags, ``labels_as_written``, as written)."""
    metrics = state.latest_metrics
    if not metrics:
        return [(Cell(("Waiting for data...", DIM)), EMPTY)]
    rows: list[Pair] = []
    named = str if state.labels_as_written else label  # a drop-in's tags as written
    for key in sorted(k for k in metrics if "loss" in k.lower()):
        value = metrics[key]
        alert = value > LOSS_ALERT or not math.isfinite(value)
        rows.append((Cell(named(key)), Cell((fmt_number(value), RED if alert else YELLOW))))
    for key in sorted(k for k in metrics if "loss" not in k.lower()):
        rows.append((Cell(f"  {named(key)}"), Cell(fmt_number(metrics[key]))))
    for _, shown in rows:
        shown.whole = True
    return rows


def reward_trend(history: Iterable[float]) -> Trend | None:
    """Compare the mean of the last 10 rewards with the mean of the (up to) 10 before.

    ``None`` below 10 values. The seed compared ``new > old * 1.05``, which inverts for
    negative rewards (−95 after −100 would read as falling). Here the ±5 % band is taken
    relative to ``abs(old)``: ``up`` when ``new > old + 0.05·|old|``, ``down`` when
    ``new < old − 0.05·|old|``, else ``flat`` — so an improvement is ``up`` whatever the
    sign. With exactly 10 values there is nothing to compare against: ``flat`` (the seed
    divided an empty sum by 10 and so always showed ``up`` for positive rewards).
    """
    values = list(history)
    if len(values) < TREND_WINDOW:
        return None
    previous = values[-2 * TREND_WINDOW : -TREND_WINDOW]
    if not previous:
        return "flat"
    new = mean(values[-TREND_WINDOW:])
    old = mean(previous)
    band = TREND_THRESHOLD * abs(old)
    if new > old + band:
        return "up"
    if new < old - band:
        return "down"
    return "flat"


def reward_rows(state: RunView, glyphs: Glyphs, *, split: bool = False) -> list[Pair]:
    """ "Rewards" | "Value": trend, mean of the last 50 (labelled so: the seed's plain
    "Mean" read like the summary's mean of other windows) and peak of the kept history, then
    each reward component (sorted, ``reward/`` removed, ``_`` → space, signed, coloured
    by sign). ``split`` puts Mean and Peak on two rows (for narrow columns)."""
    history = list(state.reward_history)
    rows: list[Pair] = []
    if history:
        name = state.reward_tag or "Reward"  # a drop-in's reward: the tag as logged
        label = Cell((name, BOLD), whole=True)
        trend = reward_trend(history)
        if trend is not None:
            glyph = {"up": (glyphs.up, GREEN), "down": (glyphs.down, RED)}
            label = Cell((name, BOLD), " ", glyph.get(trend, (glyphs.flat, YELLOW)), whole=True)
        avg = f"{mean(history[-REWARD_MEAN_WINDOW:]):.3f}"
        peak = f"{max(history):.3f}"
        if split:
            rows.append((label, Cell(MEAN_LABEL, (avg, BOLD_GREEN), whole=True)))
            rows.append((EMPTY, Cell("Peak ", (peak, DIM), whole=True)))
        else:
            value = Cell(MEAN_LABEL, (avg, BOLD_GREEN), " / Peak ", (peak, DIM), whole=True)
            rows.append((label, value))
    else:
        rows.append((Cell(("Waiting for data...", DIM)), EMPTY))
    for name, val in sorted(state.reward_components.items()):
        shown = name.replace("reward/", "").replace("_", " ")
        color = GREEN if val > 0 else RED if val < 0 else DIM
        rows.append((Cell(f"  {shown}"), Cell((f"{val:+.4f}", color), whole=True)))
    return rows


def _collector_parents(keys: Iterable[str]) -> dict[str, str | None]:
    """Map each collector key to the key it nests under (``None`` for top level).

    A key ``<stem>_ms`` nests under another present key ``<parent>_ms`` when ``stem``
    starts with ``parent + "_"`` (``env_step_backend_ms`` under ``env_step_ms``); the
    longest such parent wins, so nesting can go several levels deep. The seed's five
    known keys always stay at the top level, in their fixed order.
    """
    present = list(keys)
    stems = {k: k[: -len("_ms")] for k in present if k.endswith("_ms")}
    parents: dict[str, str | None] = {}
    for key in present:
        best: str | None = None
        stem = stems.get(key)
        if stem is not None and key not in _ORDER_INDEX:
            for other, other_stem in stems.items():
                if (
                    other != key
                    and stem.startswith(other_stem + "_")
                    and (best is None or len(other_stem) > len(stems[best]))
                ):
                    best = other
        parents[key] = best
    return parents


def collector_rows(timing: Mapping[str, float]) -> list[tuple[str, str]]:
    """Collector timings as ``(label, "12.3ms")`` rows in display order.

    Top level: the seed's known keys in their fixed order with their labels, then
    unknown keys sorted by name and shown as given. Each nested key (see
    :func:`_collector_parents`) follows its parent directly, indented two spaces per
    level, children sorted by name, and is shown by what its key adds to its parent's
    (``env_step_backend_ms`` under ``env_step_ms`` reads ``backend_ms``), so that deep
    keys still fit the narrow column.
    """
    parents = _collector_parents(timing)
    children: dict[str | None, list[str]] = {}
    for key, parent in parents.items():
        children.setdefault(parent, []).append(key)

    def top_order(key: str) -> tuple[int, str]:
        return (_ORDER_INDEX.get(key, len(COLLECTOR_TIMING_ORDER)), key)

    rows: list[tuple[str, str]] = []

    def walk(key: str, depth: int) -> None:
        parent = parents[key]
        if parent is not None:
            label = key[len(parent) - len("ms") :]
        else:
            label = COLLECTOR_TIMING_LABELS.get(key, key)
        rows.append(("  " * depth + label, fmt_ms(timing[key], already_ms=True)))
        for child in sorted(children.get(key, ())):
            walk(child, depth + 1)

    for key in sorted(children.get(None, ()), key=top_order):
        walk(key, 0)
    return rows


def _mib(mb: float) -> str:
    """``512M``, ``2.1G``: short enough for the System value column at 80 columns."""
    return f"{mb:.0f}M" if mb < 1000 else f"{mb / 1024:.1f}G"


def system_rows(system: Mapping[str, float]) -> list[Pair]:
    """The training process's CPU % and RSS, and GPU utilisation and memory when sampled
    (``_sysmetrics``); two rows at most, so the compact 80x24 layout keeps its height."""
    rows: list[Pair] = []
    cpu = system.get("system/cpu_percent")
    rss = system.get("system/rss_mb")
    if cpu is not None and rss is not None:
        rows.append((Cell("CPU/RSS"), Cell(f"{cpu:.0f}% {_mib(rss)}", whole=True)))
    util = system.get("system/gpu_util")
    mem = system.get("system/gpu_mem_mb")
    if util is not None and mem is not None:
        rows.append((Cell("GPU/Mem"), Cell(f"{util:.0f}% {_mib(mem)}", whole=True)))
    return rows


def timing_columns(state: RunView, glyphs: Glyphs) -> list[tuple[str, list[Pair]]]:
    """The bottom section's columns, ``(title, (label, value) rows)``: Learner,
    Collector and System, each only once something of it was logged.

    A row shows once its call came (a value alone cannot tell a rate of 0 from a call
    never made): the learner times once a ``log_step`` carried one; Collector with
    collector timings (a ``Staleness`` row, median and max, once collectors report a
    ``policy_version`` axis; and a ``Producers`` row when ``log.remote()`` producers log: how
    many, and their ``log_step`` calls in all); in System, ``Buffer`` once a buffer size
    or fill target above 0 came, the done rates once ``update_done_rates`` was called,
    ``Envs`` when ``num_envs`` is above 0, ``Sync Collect`` once
    ``set_collection_sync`` was called, ``Staging Pool`` once it has a size. System adds
    aoff rows to the seed's: the sampled ``CPU/RSS`` and ``GPU/Mem``
    (:func:`system_rows`), ``Dropped`` (red) when the hot-path buffer had to drop
    events, and one red row per failing backend (its message is text, not a number: the
    one value a layout may cut). A column with no row is left out.
    """
    columns: list[tuple[str, list[Pair]]] = []
    times = (state.wait_time, state.h2d_time, state.train_time, state.weight_sync_time)
    if "learner" in state.logged or any(times):
        wait_ms = state.wait_time * 1000
        wait_style = RED if wait_ms > WAIT_ALERT_MS else YELLOW
        learner = [
            (Cell("Wait"), Cell((fmt_ms(wait_ms, already_ms=True), wait_style), whole=True)),
            (Cell("H2D"), Cell(fmt_ms(state.h2d_time), whole=True)),
            (Cell("Train"), Cell(fmt_ms(state.train_time), whole=True)),
            (Cell("Weight Sync"), Cell(fmt_ms(state.weight_sync_time), whole=True)),
        ]
        columns.append(("Learner", learner))
    collector = [
        (Cell(label), Cell(value, whole=True))
        for label, value in collector_rows(state.collector_timing)
    ]
    if state.staleness:  # collectors' policy versions against the learner's (axes=)
        lags = state.staleness
        stale = f"med {statistics.median(lags):g} / max {max(lags):g}"
        collector.append((Cell("Staleness"), Cell(stale, whole=True)))
    if state.producers:  # log.remote(): how many, and their log_step calls in all
        steps = sum(p.steps for p in state.producers.values())
        n = len(state.producers)
        collector.append((Cell("Producers"), Cell(f"{n} ({steps:,} steps)", whole=True)))
    if collector:
        columns.append(("Collector", collector))
    system = _system_column(state, glyphs)
    if system:
        columns.append(("System", system))
    return columns


def _system_column(state: RunView, glyphs: Glyphs) -> list[Pair]:
    """The System column's rows (see :func:`timing_columns`)."""
    system: list[Pair] = []
    if state.buffer_size > 0 or state.buffer_target > 0:
        system.append((Cell("Buffer"), Cell(f"{state.buffer_size:,}", whole=True)))
    if "done_rates" in state.logged or state.timeout_rate or state.terminated_rate:
        timeout = Cell(f"{state.timeout_rate * 100:.1f}%", whole=True)
        terminated = Cell(f"{state.terminated_rate * 100:.1f}%", whole=True)
        system += [(Cell("Timeout Rate"), timeout), (Cell("Terminated Rate"), terminated)]
    if state.config.num_envs > 0:
        system.append((Cell("Envs"), Cell(f"{state.config.num_envs:,}", whole=True)))
    if "collection_sync" in state.logged or state.sync_collection:
        sync = f"{glyphs.yes} ({state.env_steps_per_sync})" if state.sync_collection else glyphs.no
        system.append((Cell("Sync Collect"), Cell(sync, whole=True)))
    if state.staging_max > 0:
        full = state.staging_len >= state.staging_max
        staging = f"{state.staging_len}/{state.staging_max}"
        system.append(
            (Cell("Staging Pool"), Cell((staging, YELLOW if full else GREEN), whole=True))
        )
    system.extend(system_rows(state.system))
    if state.dropped_events > 0:
        dropped = Cell((f"{state.dropped_events:,}", RED), whole=True)
        system.append((Cell(("Dropped", RED)), dropped))
    for name, problem in sorted(state.backend_problems.items()):
        system.append((Cell((name, RED)), Cell((problem, RED))))
    return system
