"""TensorBoard's step on another axis (``TensorBoardBackend(x=...)``).

Why a module of its own: which tag holds an axis, and what becomes of a record that has
no value on it, is the run folder's format (``aoff compare --x`` and :func:`aoff.read_scalars`
name the same axes); the backend only hands its records through :class:`OnAxis`.

TensorBoard has one integer step per point. ``x`` names the axis that becomes it for the
run's own records and its producers' (each producer's file is a run of its own, so its
steps grow on its own axis):

* ``"step"`` (the default): the record's step, as the seed wrote it;
* ``"iteration"``: the learner's iteration;
* ``"env_steps"``: the run's total env steps (``axis/env_steps_total``);
* any other name: the axis ``axes={name: ...}`` logs (``axis/<name>``).

``SummaryWriter``'s records keep the ``global_step`` their call gave. A record without a
value on the axis (steps logged before the first ``axes=`` that names it) keeps its own
step; that is said once and counted (``OnAxis.kept``). A value that is not a whole number
is written rounded down (TensorBoard's step is an int64), said once.
``wall_time`` is refused: every TensorBoard point has its wall time, and TensorBoard's
own "Relative" and "Wall" x axes draw it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from ..._core._records import PerTags, Record, StepRecord, columns

__all__ = ["AXIS_TAGS", "OnAxis", "axis_tag"]

#: the axes whose tag is not ``axis/<name>``
AXIS_TAGS = {"iteration": "axis/iteration", "env_steps": "axis/env_steps_total"}
_I64 = 2**63


def axis_tag(name: str) -> str:
    """The tag that holds axis ``name`` on a record."""
    return AXIS_TAGS.get(name) or "axis/" + name


class OnAxis:
    """Moves records onto axis ``x`` (see the module's docstring)."""

    __slots__ = ("_at", "_said", "kept", "tag", "x")

    def __init__(self, x: str) -> None:
        if not isinstance(x, str) or not x or x.startswith("axis/"):
            raise ValueError(
                f"x must be an axis name ('step', 'iteration', 'env_steps' or a name given "
                f"to axes=), got {x!r}"
            )
        if x == "wall_time":
            raise ValueError(
                "x='wall_time': every TensorBoard point has its wall time already; choose "
                "TensorBoard's 'Relative' or 'Wall' x axis to draw it"
            )
        self.x = x
        self.tag = axis_tag(x)
        #: records written at their own step: they had no value on the axis
        self.kept = 0
        self._said: set[str] = set()
        tag = self.tag
        self._at: PerTags[int] = PerTags(lambda tags: tags.index(tag) if tag in tags else -1)

    def moved(self, records: Sequence[Record], say: Callable[[str], None]) -> Sequence[Record]:
        """``records`` with their step on the axis (the same list when ``x`` is ``step``)."""
        if self.x == "step":
            return records
        return [self._moved(rec, say) for rec in records]

    def _moved(self, rec: Record, say: Callable[[str], None]) -> Record:
        if not isinstance(rec, StepRecord):  # a SummaryWriter call's step is its own
            return rec
        if self.x == "iteration":
            return dataclasses.replace(rec, step=rec.iteration)
        value = None
        if rec.scalars:
            tags, values = columns(rec.scalars)
            i = self._at.get(tags)
            if i >= 0:
                value = values[i]
        if value is None or not math.isfinite(value) or not -_I64 <= value < _I64:
            self.kept += 1
            self._say_once(
                say,
                "missing",
                f"TensorBoard x={self.x!r}: a record without a value on it is written at "
                f"its own step ({rec.step})",
            )
            return rec
        step = math.floor(value)
        if step != value:
            self._say_once(
                say,
                "whole",
                f"TensorBoard x={self.x!r}: {value!r} is not a whole number; TensorBoard's "
                f"step is written rounded down ({step})",
            )
        return dataclasses.replace(rec, step=step)

    def _say_once(self, say: Callable[[str], None], what: str, message: str) -> None:
        if what not in self._said:
            self._said.add(what)
            say(message)
