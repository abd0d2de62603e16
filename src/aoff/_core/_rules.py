"""The rules a run watches itself with, and the alert one makes: plain frozen values.

Why plain values: the rules are chosen in the training process (``rules=[...]`` on a
face or an adapter) and evaluated where the events are folded, which is usually another
process (the agent) or, for a producer's run, another machine; a frozen dataclass
pickles as what it is, compares by value and cannot change on the way. How they are
evaluated is :mod:`._watch`'s; where an alert goes is the pump's (``_pump/_alerts.py``).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ALERTS_NAME",
    "ALERT_TAG",
    "DEFAULT_RULES",
    "Alert",
    "Rule",
    "above",
    "below",
    "blowup",
    "check_rules",
    "collapse",
    "nonfinite",
    "regression",
    "slower",
    "stalled",
    "stopped_by",
]

ALERTS_NAME = "alerts.jsonl"
"""The run folder's file of alerts, one JSON object a line."""
#: the text tag an alert is written under (TensorBoard's text plugin, W&B's summary)
ALERT_TAG = "aoff/alerts"

Kind = Literal[
    "nonfinite", "above", "below", "blowup", "collapse", "regression", "stalled", "slower"
]


@dataclass(frozen=True, slots=True)
class Alert:
    """What a rule saw: when (wall time), which rule, on which tag and step, the value
    that made it fire, a sentence for people, and whether the rule asked the loop to stop.
    ``tag`` is ``""`` for a rule on the run as a whole (``stalled``); a producer's tag is
    ``"<producer>:<tag>"``."""

    time: float
    rule: str
    tag: str
    step: int
    value: float
    message: str
    stop: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The ``alerts.jsonl`` line, the webhook's body and the command's stdin."""
        value: float | str = self.value if math.isfinite(self.value) else repr(self.value)
        return {
            "time": self.time,
            "rule": self.rule,
            "tag": self.tag,
            "step": self.step,
            "value": value,
            "message": self.message,
            "stop": self.stop,
        }


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule; make it with :func:`nonfinite`, :func:`above`, ... (they check their
    arguments). ``tags`` are names or ``fnmatch`` globs; ``threshold`` is the rule's one
    number (the bound, factor, floor, drop or fraction), ``window`` how many values it
    looks back over, ``seconds`` how long ``stalled`` waits."""

    kind: Kind
    tags: tuple[str, ...] = ("*",)
    threshold: float = 0.0
    window: int = 0
    seconds: float = 0.0
    stop: bool = False

    @property
    def name(self) -> str:
        """How alerts and lines name the rule: ``above(loss, 100)``."""
        tags = ",".join(self.tags)
        match self.kind:
            case "nonfinite":
                return "nonfinite" if self.tags == ("*",) else f"nonfinite({tags})"
            case "stalled":
                return f"stalled({self.seconds:g}s)"
            case "blowup" | "regression" | "slower":
                return f"{self.kind}({tags}, {self.threshold:g}, window={self.window})"
            case _:
                return f"{self.kind}({tags}, {self.threshold:g})"

    def matches(self, tag: str) -> bool:
        return any(t == tag or fnmatch.fnmatchcase(tag, t) for t in self.tags)


def _tags(tag: object, what: str) -> tuple[str, ...]:
    tags = (tag,) if isinstance(tag, str) else tag
    if not isinstance(tags, Sequence) or not tags or not all(isinstance(t, str) for t in tags):
        raise TypeError(f"aoff.rules.{what}: tag must be a name, a glob or a list of them")
    if not all(tags):
        raise ValueError(f"aoff.rules.{what}: a tag must not be empty")
    return tuple(tags)


def _number(value: object, what: str, name: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"aoff.rules.{what}: {name} must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise ValueError(f"aoff.rules.{what}: {name} must be > 0, got {value!r}")
    return float(value)


def _fraction(value: object, what: str, name: str) -> float:
    x = _number(value, what, name)
    if not 0 < x < 1:
        raise ValueError(f"aoff.rules.{what}: {name} must be between 0 and 1, got {value!r}")
    return x


def _window(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"aoff.rules.{what}: window must be an int >= 2, got {value!r}")
    return value


def _stop(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"aoff.rules.{what}: stop must be True or False, got {value!r}")
    return value


def nonfinite(tags: str | Sequence[str] = "*", *, stop: bool = False) -> Rule:
    """NaN or infinity in any value of ``tags`` (all by default): a loss, a metric, a
    reward. Fires once, naming the first tag and step it saw."""
    return Rule("nonfinite", _tags(tags, "nonfinite"), stop=_stop(stop, "nonfinite"))


def above(tag: str | Sequence[str], x: float, *, stop: bool = False) -> Rule:
    """A value of ``tag`` greater than ``x`` (once per tag)."""
    return Rule("above", _tags(tag, "above"), _number(x, "above", "x"), stop=_stop(stop, "above"))


def below(tag: str | Sequence[str], x: float, *, stop: bool = False) -> Rule:
    """A value of ``tag`` less than ``x`` (once per tag)."""
    return Rule("below", _tags(tag, "below"), _number(x, "below", "x"), stop=_stop(stop, "below"))


def blowup(
    tag: str | Sequence[str], factor: float = 10.0, window: int = 100, *, stop: bool = False
) -> Rule:
    """A value of ``tag`` more than ``factor`` times (in magnitude) the median magnitude
    of its last ``window`` values, once half a window was seen (e.g. a critic loss)."""
    f = _number(factor, "blowup", "factor", positive=True)
    if not f > 1:
        raise ValueError(f"aoff.rules.blowup: factor must be > 1, got {factor!r}")
    return Rule(
        "blowup", _tags(tag, "blowup"), f, _window(window, "blowup"), stop=_stop(stop, "blowup")
    )


def collapse(tag: str | Sequence[str], floor: float = 1e-4, *, stop: bool = False) -> Rule:
    """A value of ``tag`` fell to ``floor`` or under (e.g. SAC's alpha, a policy's std)."""
    fl = _number(floor, "collapse", "floor")
    return Rule("collapse", _tags(tag, "collapse"), fl, stop=_stop(stop, "collapse"))


def regression(
    tag: str | Sequence[str] = "reward/mean",
    drop: float = 0.5,
    window: int = 50,
    *,
    stop: bool = False,
) -> Rule:
    """The mean of the last ``window`` values of ``tag`` fell by ``drop`` (a fraction of
    its magnitude) from the best such mean of the run."""
    d = _fraction(drop, "regression", "drop")
    w = _window(window, "regression")
    return Rule("regression", _tags(tag, "regression"), d, w, stop=_stop(stop, "regression"))


def stalled(seconds: float = 300.0, *, stop: bool = False) -> Rule:
    """No step for ``seconds`` (after the first), or a producer silent that long (after
    its first step). Fires again once steps came back and stalled anew."""
    s = _number(seconds, "stalled", "seconds", positive=True)
    return Rule("stalled", ("*",), seconds=s, stop=_stop(stop, "stalled"))


def slower(
    fraction: float = 0.5,
    *,
    tag: str | Sequence[str] = "perf/steps_per_sec",
    window: int = 50,
    stop: bool = False,
) -> Rule:
    """Env-steps/s (``tag``): the mean of its last ``window`` values fell by ``fraction``
    from the best such mean of the run."""
    f = _fraction(fraction, "slower", "fraction")
    w = _window(window, "slower")
    return Rule("slower", _tags(tag, "slower"), f, w, stop=_stop(stop, "slower"))


DEFAULT_RULES: tuple[Rule, ...] = (nonfinite(), stalled())
"""What a run watches when ``rules=`` is not given."""


def stopped_by(alerts: Sequence[Alert], iteration: int, max_iterations: int) -> Alert | None:
    """The alert of the ``stop=True`` rule that ended the run, or None: the first such
    alert, unless the loop still reached its last iteration (``max_iterations``, 0 when
    none was given: then any stop alert ended it). One rule for every place that says how
    a run ended (the summary panel, ``aoff-summary.json``, ``aoff show``/``ls``)."""
    rule = next((a for a in alerts if a.stop), None)
    if rule is None or 0 < max_iterations <= iteration:
        return None
    return rule


def check_rules(rules: object) -> tuple[Rule, ...]:
    """``rules=``: None for the defaults, else a list of rules (``[]``: none)."""
    if rules is None:
        return DEFAULT_RULES
    if isinstance(rules, Rule):
        raise TypeError("rules must be a list of rules, e.g. rules=[aoff.rules.nonfinite()]")
    if isinstance(rules, str | bytes) or not isinstance(rules, Sequence):
        raise TypeError(f"rules must be a list of aoff.rules rules, got {type(rules).__name__}")
    for r in rules:
        if not isinstance(r, Rule):
            raise TypeError(
                f"rules: {r!r} is not a rule (make them with aoff.rules.nonfinite(), above(), ...)"
            )
    return tuple(rules)
