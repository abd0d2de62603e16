"""mkdocs hook: the "Compare runs" guide's figure, made by ``aoff compare`` at each build.

Why at build time: the figure shows what the command draws today, not what it drew
when someone last ran it by hand. Six runs are written as aoff's JSON Lines backend
writes them (``metrics.jsonl``: simulated learning curves of two configurations, three
seeds each, seeded, nothing trained) into a temporary folder; ``aoff compare ... --out``
draws them, and the SVG joins the site as ``assets/compare.svg`` (never written into
``docs/``, so a build leaves the tree as it was).
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
from typing import Any

FIGURE = "assets/compare.svg"


def write_runs(root: str) -> list[str]:
    """Two configurations × three seeds, CleanRL's run names, ``charts/episodic_return``."""
    made = []
    for exp, rate in (("sac", 1.0), ("sac_big_batch", 1.35)):
        for seed in (1, 2, 3):
            rng = random.Random(seed * 100 + int(rate * 10))
            run = os.path.join(root, f"Pendulum-v1__{exp}__{seed}__1700000000")
            os.makedirs(run)
            with open(os.path.join(run, "metrics.jsonl"), "w") as f:
                for i in range(1, 101):
                    step = i * 1000
                    ret = -1500 + 1350 * (1 - math.exp(-rate * step / 30000)) + rng.gauss(0, 60)
                    row = {"step": step, "iteration": i, "wall_time": 1.7e9 + i}
                    row["charts/episodic_return"] = round(ret, 2)
                    f.write(json.dumps(row) + "\n")
            made.append(run)
    return made


def compare_svg() -> str:
    from aoff.__main__ import main

    with tempfile.TemporaryDirectory() as root:
        write_runs(root)
        out = os.path.join(root, "compare.svg")
        with open(os.devnull, "w") as quiet:
            import contextlib

            with contextlib.redirect_stdout(quiet):
                rc = main(["compare", root, "--metric", "charts/episodic_return", "--out", out])
        if rc != 0:
            raise RuntimeError(f"aoff compare exited {rc} while drawing the docs' figure")
        with open(out) as f:
            return f.read()


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, FIGURE, content=compare_svg()))
    return files
