"""The rules evaluated on the records the fold makes: where a run watches itself.

Why here, after the fold: every value already passes through the pump (in the agent, or
a thread of the training process), so watching costs the training loop nothing. Each
rule looks only at the tags it names: which of a record's tags those are is worked out
once per tag sequence (:class:`PerTags`), so a record costs a few comparisons per rule.
A rule fires once per tag (``nonfinite``: once in all; ``stalled``: again after steps
came back), so a run that went wrong says so once, not every step.

Each rule is evaluated on its own: an exception in one (a bug, a value nobody thought
of) is counted against that rule and said once (:attr:`Watch.errors`,
:meth:`Watch.take_lines`), and every other rule still sees the record, so no rule can
silence another, and nothing a rule does reaches the pump. The windows' arithmetic cannot
overflow: a running mean is kept as a sum of ``value / window``, whose magnitude never
passes float64's largest.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._columns import ScalarColumns, Spans, record_columns, row_spans
from ._records import PerTags, Record, StepRecord, TextRecord, WriterRecord
from ._rules import Alert, Rule

__all__ = ["Watch"]

_isfinite = math.isfinite


def _safe_fsum(values: Iterable[float]) -> float:
    """``math.fsum``, but never ``OverflowError``: its rounding near float64's largest
    can raise where plain addition gives inf."""
    vals = list(values)
    try:
        return math.fsum(vals)
    except OverflowError:
        return sum(vals)


class _Series:
    """One (rule, tag)'s last values: a median (``blowup``) or a running mean and its
    best (``regression``, ``slower``). A mean's window holds ``value / window`` (finite
    values only), so its sum is the mean itself and stays within float64's range."""

    __slots__ = ("best", "median", "since", "total", "values")

    def __init__(self, window: int) -> None:
        self.values: deque[float] = deque(maxlen=window)
        self.total = 0.0
        self.best = -math.inf
        self.median = 0.0
        self.since = 0  # appends since the median was computed

    def add_to_mean(self, v: float) -> float | None:
        """Append ``v``; the mean of a full window (None before)."""
        vals = self.values
        part = v / (vals.maxlen or 1)
        if len(vals) == vals.maxlen:
            self.total -= vals[0]
        vals.append(part)
        self.total += part
        self.since += 1
        if self.since >= len(vals):  # recompute now and then: float drift
            self.since, self.total = 0, _safe_fsum(vals)
        return self.total if len(vals) == vals.maxlen else None

    def median_before(self, v: float) -> float | None:
        """The median magnitude of the values before ``v`` (None until half a window),
        then append ``v``; the median is recomputed every eighth of a window."""
        vals = self.values
        window = vals.maxlen or 2
        med = self.median if len(vals) >= max(2, window // 2) else None
        vals.append(abs(v))
        self.since += 1
        if self.since >= max(1, window // 8) or med is None:
            self.since, self.median = 0, statistics.median(vals)
        return med


class Watch:
    """Evaluates ``rules`` on step records (:meth:`see`) and on the clock (:meth:`tick`).

    Runs on the pump's loop only. ``clock``: the wall time alerts carry; ``monotonic``:
    what ``stalled`` measures silence with.
    """

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rules = tuple(r for r in rules if r.kind != "stalled")
        self._stalls = tuple(r for r in rules if r.kind == "stalled")
        self._clock = clock
        self._monotonic = monotonic
        self._fired: set[tuple[int, str]] = set()
        self._series: dict[tuple[int, str], _Series] = {}
        self._picks: PerTags[tuple[tuple[int, Rule, tuple[int, ...]], ...]] = PerTags(self._pick)
        # stalled: when each source (None: the run's own loop) last logged a step, and
        # which sources are stalled now (said once until they log again)
        self._seen: dict[str | None, tuple[float, int]] = {}
        self._silent: set[str | None] = set()
        #: per rule name, the evaluations that raised (each rule's first said in a line)
        self.errors: dict[str, int] = {}
        self._lines: list[str] = []

    def take_lines(self) -> list[str]:
        """The lines to say since the last call: a rule's first error."""
        lines, self._lines = self._lines, []
        return lines

    def _failed(self, rule: Rule, exc: BaseException) -> None:
        name = rule.name
        n = self.errors[name] = self.errors.get(name, 0) + 1
        if n == 1:
            self._lines.append(
                f"aoff: rule {name} failed ({type(exc).__name__}: {exc}); it skips the "
                "values it fails on, every other rule goes on"
            )

    def _pick(self, tags: tuple[str, ...]) -> tuple[tuple[int, Rule, tuple[int, ...]], ...]:
        out = []
        for i, rule in enumerate(self.rules):
            idx = tuple(j for j, t in enumerate(tags) if rule.matches(t))
            if idx:
                out.append((i, rule, idx))
        return tuple(out)

    def see(self, records: Sequence[Record], spans: Spans | None = None) -> list[Alert]:
        """The alerts ``records`` (in order) make. The common case, every value finite
        and no bound crossed, costs a C-level ``all(map(isfinite, ...))`` per
        ``nonfinite`` rule and a comparison per value a bound or trend names; a run of
        a run fold's rows (``_core/_columns.row_spans``) where no rule can fire costs a
        NumPy check per rule (:meth:`_quiet`), its last step for ``stalled``. ``spans``:
        ``records`` walked so already (a caller that hands them to other readers too)."""
        alerts: list[Alert] = []
        stalls = bool(self._stalls)
        now = self._monotonic() if stalls else 0.0
        for i, j, table, a in row_spans(records) if spans is None else spans:
            if table is not None and self._quiet(table, a, a + j - i):
                if stalls:
                    self._saw(records[j - 1], now)  # type: ignore[arg-type]
                continue
            for k in range(i, j):
                self._see_one(records[k], stalls, now, alerts)
        return alerts

    def _saw(self, rec: StepRecord, now: float) -> None:
        """``stalled``: ``rec``'s source logged a step ``now``."""
        self._seen[rec.producer] = (now, rec.step)
        if self._silent:
            self._silent.discard(rec.producer)

    def _quiet(self, table: ScalarColumns, a: int, b: int) -> bool:
        """Whether no rule can fire on rows ``a .. b`` of ``table``: each ``nonfinite``
        rule fired already or sees finite values only, each bound (``above``,
        ``below``, ``collapse``) crossed by no finite value. A rule with a window
        (``blowup``, ``regression``, ``slower``) keeps its state value by value: never
        quiet, the rows go one by one."""
        import numpy as np

        picks = self._picks.get(table.tags)
        if not picks:
            return True
        rows = table.values[a:b]
        fired = self._fired
        for i, rule, idx in picks:
            kind = rule.kind
            if kind == "nonfinite" and (i, "") in fired:
                continue
            # a rule on every tag (nonfinite's default) reads the rows as they are
            vals: Any = rows if len(idx) == rows.shape[1] else rows[:, list(idx)]
            with np.errstate(invalid="ignore", over="ignore"):
                if kind == "nonfinite":
                    # a finite sum: every value finite (a NaN or an infinity makes it NaN
                    # or infinite), one pass and no mask; else (or finite values that
                    # overflow it) the values themselves say
                    crossed = not _isfinite(float(vals.sum())) and not np.isfinite(vals).all()
                elif kind == "above":
                    crossed = bool((vals > rule.threshold).any())
                elif kind == "below":
                    crossed = bool((vals < rule.threshold).any())
                elif kind == "collapse":
                    crossed = bool((vals <= rule.threshold).any())
                else:
                    return False
            if crossed:  # ±inf crosses a bound here, not in _judge: one by one says
                return False
        return True

    def _see_one(self, rec: Record, stalls: bool, now: float, alerts: list[Alert]) -> None:
        """One record's alerts, appended to ``alerts``."""
        if stalls and isinstance(rec, StepRecord):
            self._saw(rec, now)
        if isinstance(rec, TextRecord) or not self.rules:
            return
        cols = record_columns(rec)
        if cols is None:
            return
        fired = self._fired
        tags, values = cols
        for i, rule, idx in self._picks.get(tags):
            if rule.kind == "nonfinite":
                if (i, "") in fired:
                    continue
                picked = values if len(idx) == len(values) else [values[j] for j in idx]
                if all(map(_isfinite, picked)):
                    continue
            for j in idx:
                try:
                    got = self._judge(i, rule, tags[j], values[j], rec)
                except Exception as exc:  # one rule's error, never the others'
                    self._failed(rule, exc)
                    continue
                if got is not None:
                    alerts.append(got)
                    if rule.kind == "nonfinite":
                        break

    def _judge(
        self, i: int, rule: Rule, tag: str, v: float, rec: StepRecord | WriterRecord
    ) -> Alert | None:
        kind = rule.kind
        key = (i, "" if kind == "nonfinite" else f"{rec.producer}:{tag}")
        if key in self._fired:
            return None
        x = rule.threshold
        if kind == "nonfinite":
            if _isfinite(v):
                return None
            what = f"{tag} is {v!r}"
        elif not _isfinite(v):
            return None  # nonfinite's, not a bound's or a trend's
        elif kind == "above":
            if not v > x:
                return None
            what = f"{tag} = {v:.6g} is above {x:g}"
        elif kind == "below":
            if not v < x:
                return None
            what = f"{tag} = {v:.6g} is below {x:g}"
        elif kind == "collapse":
            if not v <= x:
                return None
            what = f"{tag} collapsed to {v:.6g} (floor {x:g})"
        elif kind == "blowup":
            med = self._series_of(key, rule).median_before(v)
            if med is None or not med > 0 or not abs(v) > x * med:
                return None
            what = f"{tag} = {v:.6g} blew up: {abs(v) / med:.3g}x its running median {med:.3g}"
        else:  # regression, slower: a running mean fell from its best
            s = self._series_of(key, rule)
            mean = s.add_to_mean(v)
            if mean is None:
                return None
            best = s.best = max(s.best, mean)
            if not mean < best - x * abs(best):
                return None
            word = "fell" if kind == "regression" else "slowed"
            # best - mean can round to inf for huge opposite means: a number, not an error
            under = f"{(best - mean) / abs(best):.0%} " if best else ""
            what = (
                f"{tag}'s mean over {rule.window} values {word} to {mean:.6g}, "
                f"{under}under its best {best:.6g}"
            )
            v = mean
        self._fired.add(key)
        name = tag if rec.producer is None else f"{rec.producer}:{tag}"
        where = "" if rec.producer is None else f" (producer {rec.producer})"
        return Alert(
            self._clock(),
            rule.name,
            name,
            rec.step,
            v,
            f"{what} at step {rec.step}{where}",
            rule.stop,
        )

    def _series_of(self, key: tuple[int, str], rule: Rule) -> _Series:
        s = self._series.get(key)
        if s is None:
            s = self._series[key] = _Series(rule.window)
        return s

    def tick(self) -> list[Alert]:
        """``stalled``: the sources silent for longer than a rule's ``seconds``."""
        if not self._stalls or not self._seen:
            return []
        now = self._monotonic()
        alerts: list[Alert] = []
        for source, (last, step) in self._seen.items():
            if source in self._silent:
                continue
            quiet = now - last
            for rule in self._stalls:
                if quiet > rule.seconds:
                    try:
                        alert = self._stalled(rule, source, step, quiet)
                    except Exception as exc:  # one rule's error, never the others'
                        self._failed(rule, exc)
                        continue
                    self._silent.add(source)
                    alerts.append(alert)
                    break
        return alerts

    def _stalled(self, rule: Rule, source: str | None, step: int, quiet: float) -> Alert:
        who = "no step" if source is None else f"producer {source} sent no step"
        return Alert(
            self._clock(),
            rule.name,
            "" if source is None else source,
            step,
            quiet,
            f"{who} for {quiet:.0f}s after step {step} (stalled after {rule.seconds:g}s)",
            rule.stop,
        )
