"""mkdocs hook: the "Axes" guide's two figures, made by ``aoff compare --x`` at each build.

Why at build time: the figures show what the command draws today. Four seeds of one
configuration are written as aoff's JSON Lines backend writes a run with ``axes=``
(``metrics.jsonl``, seeded, nothing trained): the seeds' collectors ran at different
speeds (250 to 1,000 env steps an iteration), and the return grows with the env steps
the agent has seen. ``aoff compare --x iteration`` and ``--x env_steps`` draw the same
runs; the SVGs join the site as ``assets/axes-iteration.svg`` and ``assets/axes-env.svg``
(never written into ``docs/``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import tempfile
from typing import Any

FIGURES = {"iteration": "assets/axes-iteration.svg", "env_steps": "assets/axes-env.svg"}


def write_runs(root: str) -> list[str]:
    """Four seeds of ``sac``; each line has its axes, as aoff writes them."""
    made = []
    for seed, speed in ((1, 250), (2, 500), (3, 750), (4, 1000)):
        rng = random.Random(seed)
        run = os.path.join(root, f"sac-seed{seed}")
        os.makedirs(run)
        with open(os.path.join(run, "metrics.jsonl"), "w") as f:
            for it in range(1, 201):
                env = it * speed
                ret = -1500 + 1350 * (1 - math.exp(-env / 40000)) + rng.gauss(0, 40)
                row = {
                    "step": env,
                    "iteration": it,
                    "wall_time": 1.7e9 + it,
                    "axis/iteration": float(it),
                    "axis/env_steps_total": float(env),
                    "axis/grad_steps": float(2 * it),
                    "reward/mean": round(ret, 2),
                }
                f.write(json.dumps(row) + "\n")
        made.append(run)
    return made


def axes_svgs() -> dict[str, str]:
    from aoff.__main__ import main

    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as root:
        write_runs(root)
        for x, name in FIGURES.items():
            path = os.path.join(root, os.path.basename(name))
            with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
                rc = main(["compare", root, "--metric", "reward/mean", "--x", x, "--out", path])
            if rc != 0:
                raise RuntimeError(f"aoff compare --x {x} exited {rc} drawing the docs' figure")
            with open(path) as f:
                out[name] = f.read()
    return out


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    from mkdocs.structure.files import File

    for name, svg in axes_svgs().items():
        files.append(File.generated(config, name, content=svg))
    return files
