"""Regenerate ``docs/assets/dashboard.svg``: the live dashboard of a real demo run.

The picture in the README and on the documentation site must show what ``python -m aoff
demo`` really draws, not a drawing of it. So this script runs the demo itself (the same
``aoff._cli._demo.run`` that ``python -m aoff demo`` calls, with its simulated SAC numbers and
its real logger) with one change: the logger gets a display that keeps the state of each
frame. When the run is past ``--at`` of its iterations, that frame is drawn by aoff's own
:class:`aoff.Dashboard` on a Rich ``Console(record=True)`` and exported with Rich's
``save_svg``.

    python scripts/make_dashboard_svg.py            # writes docs/assets/dashboard.svg

Run it again whenever the dashboard changes; the SVG is committed.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from typing import Any

from rich.console import Console

from aoff import Dashboard
from aoff._cli._demo import run
from aoff._cli._demo_config import DemoConfig
from aoff._core._state import State


class FrameKeeper:
    """A display (``aoff.Display``) that draws nothing and keeps one frame's state."""

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration
        self.kept: tuple[State, float] | None = None

    def open(self, state: State, now: float) -> None:
        pass

    def update(self, state: State, now: float) -> None:
        if self.kept is None and state.iteration >= self.iteration:
            self.kept = (state, now)

    def say(self, markup: str) -> None:
        pass

    def close(self, state: State, now: float, *, summary: bool) -> None:
        if self.kept is None:
            self.kept = (state, now)


class _Config(DemoConfig):
    keeper: FrameKeeper

    def logger_kwargs(self) -> dict[str, Any]:
        kwargs = super().logger_kwargs()
        kwargs["display"] = self.keeper
        return kwargs


def render_svg(state: State, now: float, width: int, title: str) -> str:
    """Draw one frame with aoff's own dashboard on a recording console; return the SVG."""
    console = Console(
        record=True,
        file=io.StringIO(),
        width=width,
        color_system="truecolor",
        force_terminal=False,  # Live draws once, at stop(): one clean frame
        legacy_windows=False,
    )
    dash = Dashboard(console=console, live=True)
    dash.open(state, now)
    dash.close(state, now, summary=False)
    return console.export_svg(title=title)


def main(argv: list[str] | None = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(here, "..", "docs", "assets", "dashboard.svg"))
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--iter-ms", type=float, default=75.0)
    p.add_argument("--at", type=float, default=0.6, help="fraction of the run to show")
    p.add_argument("--width", type=int, default=110)
    args = p.parse_args(argv)

    keeper = FrameKeeper(max(1, int(args.iterations * args.at)))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = _Config(
            iterations=args.iterations,
            iter_ms=args.iter_ms,
            refresh=8.0,
            backends=("tensorboard",),
            logdir=tmp,
            name="demo",
        )
        cfg.keeper = keeper
        status = run(cfg, out=io.StringIO())
    if status != 0 or keeper.kept is None:
        print("the demo run did not finish", file=sys.stderr)
        return 1
    svg = render_svg(*keeper.kept, width=args.width, title="python -m aoff demo")
    out = os.path.normpath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(svg)
    print(f"wrote {out} (iteration {keeper.kept[0].iteration} of {args.iterations})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
