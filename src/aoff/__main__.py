"""The ``aoff`` command (also ``python -m aoff``).

Subcommands:

``demo``
    a simulated off-policy run: the live dashboard, and TensorBoard files under
    ``runs/`` (see ``aoff demo --help``).
``attach``
    a running job's live dashboard in this terminal (``_cli/_attach.py``).
``show``, ``ls``
    a run's summary and curves; one line per run (``_cli/_show.py``; the guide is
    ``docs/guides/terminal.md``). Ctrl+C ends either with one line, exit 130.
``sweep-shm``
    unlink the shared-memory blocks of aoff runs that were killed before they could
    (``_media/_shmnames.py``; every run also does it when it starts).
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

    fmt = argparse.ArgumentDefaultsHelpFormatter  # every --help lists the defaults
    p = argparse.ArgumentParser(
        prog="aoff",
        description="aoff: an asyncio-native training logger for off-policy RL.",
        formatter_class=fmt,
    )
    p.add_argument("--version", action="version", version=f"aoff {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        formatter_class=fmt,
        help="simulate an off-policy run: live dashboard + TensorBoard files",
        description="Simulate a SAC run on Pendulum-v1 (nothing is trained) and log it "
        "with aoff: a live dashboard on a terminal, plain lines when piped, and "
        "TensorBoard files in <logdir>/<name>.",
    )
    add_arguments(demo)
    attach = sub.add_parser(
        "attach",
        formatter_class=fmt,
        help="the live dashboard of a running job, in this terminal",
        description="Draw a running job's live dashboard here, from the Unix socket in its "
        "run folder (its log_dir). RUN_DIR may also be a folder above it: with one live run "
        "below it, that one; with several, you choose. Ctrl+C detaches; the run goes on. "
        "Exits 0 after the run's summary or a detach, 1 when nothing is live there.",
    )
    add_attach_arguments(attach)
    show = sub.add_parser(
        "show",
        formatter_class=fmt,
        help="summary and per-tag table (with sparklines) of a finished run",
        description="Print a run's summary and one row per tag (first, last, min, max, "
        "sparkline), read from RUN_DIR/aoff-summary.json (written by aoff as the run goes) "
        "or else its metrics.jsonl or TensorBoard files. Ctrl+C stops it (exit 130).",
    )
    add_show_arguments(show)
    ls = sub.add_parser(
        "ls",
        formatter_class=fmt,
        help="one line per run folder: steps, last reward, wall time",
        description="List the run folders below RUNS_DIR (folders holding aoff-summary.json, "
        "metrics.jsonl or events.out.tfevents.*; symlinked folders are followed): name, "
        "steps, last reward/mean, wall time from the first to the last record, and whether "
        "it is live (serving `aoff attach`), finished or stopped early. Folders that cannot "
        "be read are skipped with one line each. Ctrl+C stops it (exit 130).",
    )
    add_ls_arguments(ls)
    sub.add_parser(
        "sweep-shm",
        formatter_class=fmt,
        help="unlink the /dev/shm blocks of aoff runs that were killed",
        description="Unlink the shared-memory blocks (/dev/shm/aoff_*) whose training "
        "process is gone: a run killed with its whole process group leaves them. Blocks of "
        "live runs are kept. Every run in process mode also does this when it starts.",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    ns = p.parse_args(argv)
    if ns.command in ("show", "ls"):
        try:
            return _read_command(ns)
        except KeyboardInterrupt:  # one line, not a traceback from inside a reader
            print(f"aoff {ns.command}: interrupted", file=sys.stderr)
            return 130
    return _command(p, ns)


def _read_command(ns: argparse.Namespace) -> int:
    if ns.command == "show":
        from rich.console import Console

        from ._cli._show import run_show

        return run_show(ns.run_dir, Console(), sys.stderr, width=ns.width)
    from ._cli._show import run_ls

    return run_ls(ns.runs_dir, sys.stdout, sys.stderr)


def _command(p: argparse.ArgumentParser, ns: argparse.Namespace) -> int:
    if ns.command == "demo":
        from ._cli._demo import config_from_args, run

        return run(config_from_args(ns))
    if ns.command == "attach":
        from rich.console import Console

        from ._cli._attach import run_attach

        return run_attach(ns.run_dir, ns.refresh, Console(), sys.stderr, sys.stdin)
    if ns.command == "sweep-shm":
        from ._media._shmnames import sweep_stale

        gone = sweep_stale()
        print(f"aoff sweep-shm: {len(gone)} stale blocks unlinked")
        return 0
    p.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
