"""One tag's points of each run, for ``aoff compare``: steps and values, read as they grow.

Why a module of its own: ``compare`` needs each run's whole series of one tag (not the
bucketed curve ``show`` draws), and ``--follow`` reads it again and again while seeds run.
Each run keeps one :class:`aoff.ScalarReader` (its event files, else ``metrics.jsonl``,
else ``progress.csv``), so a look reads only the bytes appended since the last one; a
resumed run's purge drops the points it hides. Reading problems (a torn record, a corrupt
one skipped) come back as one line each, said once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._runfolder._scalars import ScalarReader

__all__ = ["RunSeries"]

Array = np.ndarray[Any, np.dtype[np.float64]]


class RunSeries:
    """A run's points of one tag, kept up to date by :meth:`update`."""

    def __init__(self, run: str, tag: str) -> None:
        self.run = run
        self.tag = tag
        self._reader = ScalarReader([run], [tag])
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
        for _run, tag, (new_steps, _walls, new_values) in cols:
            if tag == self.tag:
                self._steps.append(np.asarray(new_steps, np.float64))
                self._values.append(np.asarray(new_values, np.float64))
                changed = True
        for line in self._reader.problems:
            if line not in self._said:
                self._said.add(line)
                notes.append(line)
        return changed

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
