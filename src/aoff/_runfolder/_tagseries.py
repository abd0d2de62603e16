"""One tag's points as they are read: loose points and bulk blocks, in file order.

Why a module of its own: every reader of :func:`aoff.read_scalars` (event files, JSONL,
CSV) hands its points over in this one shape, a point at a time (the general decoder) or
as NumPy blocks (the fast path); TensorBoard's purge rules cut it back by step.

NumPy is imported where points are joined, not with the module: the format modules that
name the run folder's files import this one, and the training process reads those names
(the backends' registry) without ever reading a file back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Columns", "Series", "joined"]

#: steps (int64), wall times (float64), values (float64)
Columns: TypeAlias = """tuple[
    np.ndarray[Any, np.dtype[np.int64]],
    np.ndarray[Any, np.dtype[np.float64]],
    np.ndarray[Any, np.dtype[np.float64]],
]"""


class Series:
    """A tag's points not yet handed out, in the order they were read."""

    __slots__ = ("parts", "steps", "values", "walls")

    def __init__(self) -> None:
        self.parts: list[Columns] = []
        self.steps: list[int] = []
        self.walls: list[float] = []
        self.values: list[float] = []

    def point(self, step: int, wall: float, value: float) -> None:
        self.steps.append(step)
        self.walls.append(wall)
        self.values.append(value)

    def block(self, cols: Columns) -> None:
        if self.steps:
            self.flush()
        self.parts.append(cols)

    def flush(self) -> None:
        import numpy as np

        self.parts.append(
            (
                np.asarray(self.steps, np.int64),
                np.asarray(self.walls, np.float64),
                np.asarray(self.values, np.float64),
            )
        )
        self.steps, self.walls, self.values = [], [], []

    def drop_from(self, step: int) -> None:
        """Keep only the points before ``step`` (TensorBoard's purge of orphaned data)."""
        if self.steps:
            self.flush()
        kept: list[Columns] = []
        for s, w, v in self.parts:
            keep = s < step
            kept.append((s, w, v) if keep.all() else (s[keep], w[keep], v[keep]))
        self.parts = kept

    def __len__(self) -> int:
        return len(self.steps) + sum(len(p[0]) for p in self.parts)

    def take_parts(self) -> list[Columns]:
        """Every point held, as the parts it was read in; the series is empty afterwards."""
        if self.steps:
            self.flush()
        parts, self.parts = self.parts, []
        return parts

    def take(self) -> Columns:
        """Every point held, as three arrays; the series is empty afterwards."""
        return joined(self.take_parts())


def joined(parts: list[Columns]) -> Columns:
    """The parts as three arrays."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    if not parts:
        return (np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64))
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )
