"""The ``aoff`` command (also ``python -m aoff``).

Subcommands:

``demo``
    a simulated off-policy run: the live dashboard, and TensorBoard files under
    ``runs/`` (see ``aoff demo --help``).
``attach``
    a running job's live dashboard in this terminal (``_live/_client.py``).
``show``, ``ls``
    a finished run's summary and curves; one line per run (``_show.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__


def _parser() -> argparse.ArgumentParser:
    from ._cli._attach import add_attach_arguments
    from ._cli._demo import add_arguments
    from ._cli._show import add_ls_arguments, add_show_arguments

    p = argparse.ArgumentParser(
        prog="aoff", description="aoff: an asyncio-native training logger for off-policy RL."
    )
    p.add_argument("--version", action="version", version=f"aoff {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="simulate an off-policy run: live dashboard + TensorBoard files",
        description="Simulate a SAC run on Pendulum-v1 (nothing is trained) and log it "
        "with aoff: a live dashboard on a terminal, plain lines when piped, and "
        "TensorBoard files in <logdir>/<name>.",
    )
    add_arguments(demo)
    attach = sub.add_parser(
        "attach",
        help="the live dashboard of a running job, in this terminal",
        description="Draw a running job's live dashboard here, from the Unix socket in its "
        "run folder (its log_dir). RUN_DIR may also be a folder above it: with one live run "
        "below it, that one; with several, you choose. Ctrl+C detaches; the run goes on. "
        "Exits 0 after the run's summary or a detach, 1 when nothing is live there.",
    )
    add_attach_arguments(attach)
    show = sub.add_parser(
        "show",
        help="summary and per-tag table (with sparklines) of a finished run",
        description="Print a finished run's summary and one row per tag (first, last, min, "
        "max, sparkline), read from RUN_DIR/metrics.jsonl or else its TensorBoard files.",
    )
    add_show_arguments(show)
    ls = sub.add_parser(
        "ls",
        help="one line per run folder: steps, last reward, wall time",
        description="List the run folders below RUNS_DIR (folders holding metrics.jsonl or "
        "events.out.tfevents.*): name, steps, last reward/mean, wall time from the first to "
        "the last record, and whether it is live (serving `aoff attach`) or finished.",
    )
    add_ls_arguments(ls)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    ns = p.parse_args(argv)
    if ns.command == "demo":
        from ._cli._demo import config_from_args, run

        return run(config_from_args(ns))
    if ns.command == "attach":
        from rich.console import Console

        from ._cli._attach import run_attach

        return run_attach(ns.run_dir, ns.refresh, Console(), sys.stderr, sys.stdin)
    if ns.command == "show":
        from rich.console import Console

        from ._cli._show import run_show

        return run_show(ns.run_dir, Console(), sys.stderr)
    if ns.command == "ls":
        from ._cli._show import run_ls

        return run_ls(ns.runs_dir, sys.stdout, sys.stderr)
    p.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
