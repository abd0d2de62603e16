"""The run's hyperparameters: flattened, made JSON-safe once, and kept live for backends.

Why here, in the training process and at call time: a config may hold anything (a
``torch.device``, a function, a NumPy scalar, NaN). Converting it where it is given —
the constructor's ``config=`` or :meth:`log_config` — means what travels to the agent is
plain data that always pickles, every backend stores the same values, and a bad key is an
error at the line that gave it, never a dead pump.

Rules (also in docs/guides/config.md):

* nested mappings are flattened, their keys joined with ``"/"``: ``{"sac": {"tau": 0.005}}``
  becomes ``{"sac/tau": 0.005}``; a key given twice after flattening (``"sac/tau"`` next to
  ``{"sac": {"tau": ...}}``) is a ``ValueError``;
* keys must be ``str``; any other key is a ``TypeError``; an empty section is kept as
  the string ``"{}"``;
* ``str``, ``bool``, ``int`` (within the float range, which TensorBoard's HParams
  needs), finite ``float`` and ``None`` are kept; other real numbers
  (NumPy scalars) become ``int``/``float``; lists and tuples are kept as JSON lists when
  JSON can hold them;
* anything else (and NaN or ±inf, which JSON cannot hold) is stored as ``str(value)``, and
  the call warns once (an :class:`~aoff.AoffWarning`) naming every converted key;
* a key UTF-8 cannot encode (a lone surrogate) is a ``ValueError``; a text value holding
  one (a path ``os.fsdecode`` made of a non-UTF-8 name) is stored with the escape written
  out (``"/data/caf\\udce9"``), and counts among the converted keys: every format stores
  UTF-8, and one such value would otherwise keep every backend from opening.

:class:`HParams` is the live view the fold keeps and the backends read: the values so far,
a version that grows when a key is added or changed, and the final metrics (last and best
mean reward) the TensorBoard HParams view shows.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from ._convert import encodable, unencodable, visible

__all__ = ["ConfigValue", "HParams", "flatten_config", "format_converted"]

#: a value as stored: what JSON, TensorBoard's HParams and W&B all hold
ConfigValue: TypeAlias = "str | bool | int | float | list[Any] | None"

_dumps = json.JSONEncoder(allow_nan=False, sort_keys=False, ensure_ascii=False).encode


#: ints within this bound are doubles for sure (2**1024 is beyond the float range)
_FLOAT_INT = 2**1023

#: what a converted text with a lone surrogate is named as in the warning
ESCAPED = "str, not valid Unicode: stored escaped"


def _plain(value: object) -> tuple[ConfigValue, bool]:
    """``(stored value, kept as is)``: the JSON-safe form of one leaf value."""
    if isinstance(value, str):
        if value.isascii() or encodable(value):
            return value, True
        return visible(value), False
    if value is None or isinstance(value, bool):
        return value, True
    if isinstance(value, numbers.Integral):
        i = int(value)
        if -_FLOAT_INT < i < _FLOAT_INT:
            return i, True
        try:
            float(i)  # TensorBoard's HParams and W&B store a number as a double
        except OverflowError:
            return str(i), False
        return i, True
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isfinite(f):
            return f, True
        return str(value), False
    if isinstance(value, list | tuple):
        try:
            text = _dumps(list(value))
        except (TypeError, ValueError):
            return visible(str(value)), False
        if not text.isascii() and not encodable(text):
            return visible(str(value)), False  # a text inside holds a lone surrogate
        return json.loads(text), True
    return visible(str(value)), False


def flatten_config(
    mapping: object, where: str
) -> tuple[dict[str, ConfigValue], list[tuple[str, str]]]:
    """Flatten and convert ``mapping``: ``(values, converted)``.

    ``converted`` lists ``(key, type name)`` for every value stored as ``str()``.
    Raises ``TypeError`` for a non-mapping or a non-``str`` key, ``ValueError`` for a key
    that appears twice after flattening. ``where`` names the argument in messages.
    """
    if mapping is None:
        return {}, []
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{where}: expected a dict, got {type(mapping).__name__}")
    out: dict[str, ConfigValue] = {}
    converted: list[tuple[str, str]] = []

    def walk(m: Mapping[Any, Any], prefix: str) -> None:
        for key, value in m.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"{where}: key {key!r:.60} is {type(key).__name__}, not str "
                    f"(under {prefix[:-1]!r})"
                    if prefix
                    else f"{where}: key {key!r:.60} is {type(key).__name__}, not str"
                )
            name = prefix + key
            if not key.isascii() and not encodable(key):
                raise unencodable(where, "key", name)
            if isinstance(value, Mapping) and value:
                walk(value, name + "/")
                continue
            if name in out:
                raise ValueError(
                    f"{where}: key {name!r} is given twice once nested keys are joined "
                    "with '/'; rename one of them"
                )
            if isinstance(value, Mapping):  # an empty section
                out[name] = "{}"
                continue
            stored, kept = _plain(value)
            if not kept:
                escaped = isinstance(value, str)
                converted.append((name, ESCAPED if escaped else type(value).__name__))
            out[name] = stored

    walk(mapping, "")
    return out, converted


def format_converted(where: str, converted: list[tuple[str, str]]) -> str:
    """The one warning for the values of one call that were stored as ``str()``."""
    shown = ", ".join(f"{k!r} ({t})" for k, t in converted[:8])
    more = f" and {len(converted) - 8} more" if len(converted) > 8 else ""
    cannot = "JSON or UTF-8" if any(t == ESCAPED for _, t in converted) else "JSON"
    return (
        f"aoff: {where}: {len(converted)} value(s) {cannot} cannot hold were stored as str(): "
        f"{shown}{more}"
    )


class HParams:
    """The run's config as backends see it, kept by the fold (one per run).

    ``values`` only grows or changes (a key logged again takes its new value);
    ``version`` counts those changes, so a backend compares one int per batch to know
    whether it has something new to write. ``reward_last``/``reward_best`` are the last
    and the best ``reward/mean`` of the run (None until a reward is logged);
    ``interrupted`` is set by the fold from the closing event.
    """

    __slots__ = ("interrupted", "reward_best", "reward_last", "values", "version")

    def __init__(self, values: Mapping[str, ConfigValue] | None = None) -> None:
        self.values: dict[str, ConfigValue] = dict(values or {})
        self.version = 0
        self.reward_last: float | None = None
        self.reward_best: float | None = None
        #: the run ended by Ctrl+C, SIGTERM or an exception (the HParams session status)
        self.interrupted = False

    def merge(self, values: Mapping[str, ConfigValue]) -> None:
        """Add or change keys; the version grows only if something changed."""
        changed = False
        for k, v in values.items():
            if k not in self.values or self.values[k] != v or type(self.values[k]) is not type(v):
                self.values[k] = v
                changed = True
        if changed:
            self.version += 1

    def reward(self, value: float) -> None:
        """One step's mean reward (the fold calls this; NaN never becomes the best)."""
        self.reward_last = value
        best = self.reward_best
        if value == value and (best is None or value > best):
            self.reward_best = value

    def rewards(self, values: Sequence[float]) -> None:
        """:meth:`reward` of each of ``values`` in order (a run fold's steps), at once:
        the last is the last, the best the first largest that is not NaN."""
        if not values:
            return
        self.reward_last = values[-1]
        known = [v for v in values if v == v]
        if known:
            top = max(known)  # the first of equal ones, as one by one
            best = self.reward_best
            if best is None or top > best:
                self.reward_best = top

    def snapshot(self) -> tuple[int, dict[str, ConfigValue]]:
        """``(version, a copy of values)``, taken on the pump's loop."""
        return self.version, dict(self.values)

    def final_metrics(self) -> dict[str, float]:
        """What the HParams view compares runs by (only the known ones)."""
        out: dict[str, float] = {}
        if self.reward_last is not None:
            out["hparams/reward_mean_last"] = self.reward_last
        if self.reward_best is not None:
            out["hparams/reward_mean_best"] = self.reward_best
        return out
