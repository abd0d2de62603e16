"""``aoff compare --out FILE``: the sample-efficiency figure, with Matplotlib.

Why a module of its own: Matplotlib is heavy and optional (imported here, only when
``--out`` is given, with the headless ``Agg`` backend). The figure is meant for a paper
or a report: each group's IQM curve with its 95 % band and, fainter, its envelope (the
min to the max of every run's points at each step of the curve: a one-point spike shows
in it, where the IQM and its interval smooth it away), the axes labelled (the metric,
"environment steps"), a legend naming each group and its run count, and the file type
from its suffix (``.png``, ``.svg``, ``.pdf``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ._stats import Curve

__all__ = ["FIGURE_SUFFIXES", "draw_figure", "save_figure"]

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


#: the x axis's label per ``--x`` (an ``axes=`` name is its own label)
_X_LABELS = {
    "step": "environment steps",
    "env_steps": "environment steps",
    "iteration": "iterations",
    "wall_time": "seconds",
}


def save_figure(
    path: str, metric: str, curves: Sequence[tuple[str, int, Curve]], *, x: str = "step"
) -> None:
    """Write the figure of ``curves`` (name, runs, curve) to ``path``. Raises
    ``ValueError`` for another suffix, ``ImportError`` without Matplotlib, ``OSError``
    when the file cannot be written."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FIGURE_SUFFIXES:
        raise ValueError(f"--out {path!r}: the file must end in .png, .svg or .pdf")
    import matplotlib.pyplot as plt

    fig = draw_figure(metric, curves, x=x)
    try:
        fig.savefig(path, dpi=150)
    finally:
        plt.close(fig)


def draw_figure(metric: str, curves: Sequence[tuple[str, int, Curve]], *, x: str = "step") -> Any:
    """The Matplotlib figure of ``curves`` (name, runs, curve), not yet saved or closed."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    try:
        for name, runs, c in curves:
            (line,) = ax.plot(c.steps, c.iqm, label=f"{name} ({runs} runs)", linewidth=1.8)
            colour = line.get_color()
            ax.fill_between(c.steps, c.lo, c.hi, color=colour, alpha=0.2, linewidth=0)
            # the envelope: a cell around each grid step, as its points were put in
            ax.fill_between(
                c.steps, c.env_lo, c.env_hi, color=colour, alpha=0.08, linewidth=0.5, step="mid"
            )
        ax.set_xlabel(_X_LABELS.get(x, x))
        ax.set_ylabel(f"{metric} (IQM over runs)")
        ax.set_title(f"{metric}: IQM, 95 % bootstrap interval, min to max of the runs", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(frameon=False)
    except BaseException:
        plt.close(fig)
        raise
    return fig
