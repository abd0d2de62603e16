"""The fold's value checks: every value an event carries is checked here, never raised.

One part of the fold (``_fold.py`` owns it and hands it to the others) because the
checks are shared by every kind of event, the run's own, a step's (``_fold_step.py``),
what waits for a step (``_fold_pending.py``) and ``SummaryWriter``'s
(``_fold_writer.py``): a value that is not a number is counted and reported once per
(argument, key), and the fold goes on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ._convert import BadValue, encodable, to_float
from ._say import Say
from ._state import State

_FLOAT = float
_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1
_REPORTED_KEYS_MAX = 10_000
_FLOAT_ONLY = frozenset((float,))
_STR_ONLY = frozenset((str,))


class Checks:
    """Counts skipped values in ``state.invalid_values``; ``say`` gets one message for
    the first problem of each (argument, key) pair."""

    __slots__ = ("_reported", "say", "state")

    def __init__(self, state: State, say: Say) -> None:
        self.state = state
        self.say = say
        self._reported: set[tuple[str, object]] = set()

    def bad(self, where: str, key: object, message: str) -> None:
        """Count one skipped value; report it if it is the first for (where, key)."""
        self.state.invalid_values += 1
        seen = self._reported
        try:
            first = (where, key) not in seen
        except TypeError:  # pragma: no cover - dict keys are hashable
            first = True
        if first:
            if len(seen) < _REPORTED_KEYS_MAX:
                seen.add((where, key))
            self.say(message)

    def num(self, where: str, key: object, value: object, default: float = 0.0) -> float:
        if type(value) is _FLOAT:
            return value
        try:
            return to_float(where, key, value)
        except BadValue as exc:
            self.bad(where, key, f"{exc}; using {default!r}")
            return default

    def num_or_skip(self, where: str, key: object, value: object) -> float | None:
        if type(value) is _FLOAT:
            return value
        try:
            return to_float(where, key, value)
        except BadValue as exc:
            self.bad(where, key, f"{exc}; skipped")
            return None

    def mapping(self, where: str, values: object) -> dict[str, float]:
        """Validate one dict argument: keys must be str, values real numbers."""
        out: dict[str, float] = {}
        if values is None:
            return out
        if type(values) is not dict and not isinstance(values, Mapping):  # an ABC: slow
            got = type(values).__name__
            self.bad(where, None, f"{where}: expected a dict, got {got}; ignored")
            return out
        if (
            type(values) is dict
            and _FLOAT_ONLY.issuperset(map(type, values.values()))
            and _STR_ONLY.issuperset(map(type, values))
            and "".join(values).isascii()
        ):
            return values  # the common case: the recorder's own copy, already clean
        for k, v in values.items():
            if type(k) is not str:
                msg = f"{where}: key {k!r:.60} is {type(k).__name__}, not str; skipped"
                self.bad(where, k, msg)
                continue
            if not k.isascii() and not encodable(k):
                # e.g. a lone surrogate: TensorBoard's protobuf (and W&B) would refuse the
                # whole batch and the backend would be disabled for one bad key
                self.bad(where, k, f"{where}: key {k!r:.60} is not valid Unicode; skipped")
                continue
            if type(v) is _FLOAT:
                out[k] = v
                continue
            try:
                out[k] = to_float(where, k, v)
            except BadValue as exc:
                self.bad(where, k, f"{exc}; skipped")
        return out

    def integer(self, where: str, name: str, value: object) -> int:
        """An integer that fits TensorBoard's int64 step; anything else is reported, 0."""
        if type(value) is int:
            if _I64_MIN <= value <= _I64_MAX:
                return value
        else:
            f = self.num(where, name, value)
            if math.isfinite(f):
                i = int(f)
                if _I64_MIN <= i <= _I64_MAX:
                    return i
        self.bad(
            where, name, f"{where}: {name}={value!r:.60} is not a finite 64-bit integer; using 0"
        )
        return 0
