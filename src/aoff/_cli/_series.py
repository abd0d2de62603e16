"""One tag's points of each run, for ``aoff compare``: steps and values, read as they grow.

Why a module of its own: ``compare`` needs each run's whole series of one tag (not the
bucketed curve ``show`` draws), and ``--follow`` reads it again and again while seeds run.
Each run keeps one :class:`aoff.ScalarReader` (its event files, else ``metrics.jsonl``,
else ``progress.csv``), so a look reads only the bytes appended since the last one; a
resumed run's purge drops the points it hides. Reading problems (a torn record, a corrupt
one skipped) come back as one line each, said once.

On another axis (``--x``): ``wall_time`` is each point's seconds since the run's first
point; ``iteration``, ``env_steps`` or an ``axes=`` name is that axis's value on the same
record (the axis's tag read beside the metric, matched by step and wall time: a record's
scalars share both). A point whose record has no value on the axis is left out of the
curve and counted (:attr:`RunSeries.off_axis`), said once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._runfolder.reading._scalars import ScalarReader
from .._runfolder.tensorboard._xaxis import axis_tag

__all__ = ["RunSeries"]

Array = np.ndarray[Any, np.dtype[np.float64]]


class RunSeries:
    """A run's points of one tag, kept up to date by :meth:`update`."""

    def __init__(self, run: str, tag: str, x: str = "step") -> None:
        self.run = run
        self.tag = tag
        self.x = x
        #: the tag whose values are the x of each point (None: the step or wall time)
        self._x_tag = None if x in ("step", "wall_time") else axis_tag(x)
        self._reader = ScalarReader([run], [tag] if self._x_tag is None else [tag, self._x_tag])
        #: the axis's value at each (step, wall time) read so far
        self._x_at: dict[tuple[float, float], float] = {}
        self._wall0: float | None = None
        #: the metric's points left out: their record had no value on the axis
        self.off_axis = 0
        self._steps: list[Array] = []
        self._values: list[Array] = []
        self._said: set[str] = set()
        self._retracted = 0

    @property
    def bytes_read(self) -> int:
        return self._reader.bytes_read

    def update(self, notes: list[str]) -> bool:
        """Read what was appended; True when the series changed. New reading problems go
        to ``notes``. Raises ``OSError`` (``FileNotFoundError`` too) when the run cannot be
        read, ``ValueError`` when it holds no data file."""
        cols = self._reader.read_columns()
        retracted = self._reader.retracted
        changed = False
        for _run, step, tags in retracted[self._retracted :]:  # a resumed run hides these
            if tags is None or self.tag in tags:
                steps, values = self.steps, self.values
                keep = steps < step
                self._steps, self._values = [steps[keep]], [values[keep]]
                changed = True
        self._retracted = len(retracted)
        if self._x_tag is not None:
            for _run, tag, (new_steps, walls, new_values) in cols:
                if tag == self._x_tag:
                    keys = zip(new_steps, walls, strict=True)
                    self._x_at.update(zip(keys, new_values, strict=True))
        for _run, tag, (new_steps, walls, new_values) in cols:
            if tag == self.tag:
                xs = self._xs(new_steps, walls, notes)
                keep = ~np.isnan(xs)
                self._steps.append(xs[keep])
                self._values.append(np.asarray(new_values, np.float64)[keep])
                changed = True
        for line in self._reader.problems:
            if line not in self._said:
                self._said.add(line)
                notes.append(line)
        return changed

    def _xs(self, steps: Any, walls: Any, notes: list[str]) -> Array:
        """The x of each point (NaN: its record has no value on the axis)."""
        if self.x == "step":
            return np.asarray(steps, np.float64)
        if self.x == "wall_time":
            w = np.asarray(walls, np.float64)
            if self._wall0 is None and len(w):
                self._wall0 = float(w[0])
            return w - (self._wall0 or 0.0)
        at = self._x_at
        nan = float("nan")
        xs = np.asarray([at.get(k, nan) for k in zip(steps, walls, strict=True)], np.float64)
        off = int(np.isnan(xs).sum())
        if off:
            first = not self.off_axis
            self.off_axis += off
            if first:
                notes.append(
                    f"{self.run}: points of {self.tag!r} without a value on {self.x!r} "
                    "(logged before the axis) are left out of the curve"
                )
        return xs

    @property
    def steps(self) -> Array:
        return np.concatenate(self._steps) if self._steps else np.empty(0)

    @property
    def values(self) -> Array:
        return np.concatenate(self._values) if self._values else np.empty(0)

    def other_tags(self) -> list[str]:
        """Every scalar tag the run has (read once more, in full: for the message that
        names what it has when it lacks the tag asked for)."""
        reader = ScalarReader([self.run])
        return list(dict.fromkeys(tag for _run, tag, _cols in reader.read_columns()))
