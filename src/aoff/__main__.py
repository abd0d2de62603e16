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
``compare``, ``export``
    seeds of each configuration with IQM and bootstrap intervals (``_cli/_compare.py``,
    ``docs/guides/compare.md``); a run's scalars as Parquet or CSV (``_cli/_export.py``).
``sweep-shm``
    unlink the shared-memory blocks of aoff runs that were killed before they could
    (``_media/_shmnames.py``; every run also does it when it starts).

Output into a pipe closed early (``aoff ls runs | head -1``) ends the command at once,
quietly, with status 0: the reader had what it wanted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple, NoReturn

from . import __version__


class _Defaults(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already says it (or
    there is none to say)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text.lower()
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or not action.option_strings
        ):
            return text
        return text + " (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """A bad argument is one line (the command, the problem, where to read more), exit 2,
    not the usage block above it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Command(NamedTuple):
    name: str
    help: str  # its line in ``aoff --help``
    description: str  # the top of ``aoff NAME --help``


_COMMANDS = (
    _Command(
        "demo",
        "simulate an off-policy run: live dashboard + TensorBoard files",
        "Simulate a SAC run on Pendulum-v1 (nothing is trained) and log it with aoff: a "
        "live dashboard on a terminal, plain lines when piped, and TensorBoard files in "
        "<logdir>/<name>.",
    ),
    _Command(
        "attach",
        "the live dashboard of a running job, in this terminal",
        "Draw a running job's live dashboard here, from the Unix socket in its run folder "
        "(its log_dir). RUN_DIR may also be a folder above it: with one live run below it, "
        "that one; with several, you choose. Ctrl+C detaches; the run goes on. Exits 0 "
        "after the run's summary or a detach, 1 when nothing is live there.",
    ),
    _Command(
        "show",
        "summary and per-tag table (with sparklines) of a finished run",
        "Print a run's summary and one row per tag (first, last, min, max, sparkline), "
        "read from RUN_DIR/aoff-summary.json (written by aoff as the run goes) or else its "
        "metrics.jsonl or TensorBoard files. Ctrl+C stops it (exit 130).",
    ),
    _Command(
        "ls",
        "one line per run folder: steps, last reward, wall time",
        "List the run folders below RUNS_DIR (folders holding aoff-summary.json, "
        "metrics.jsonl or events.out.tfevents.*; symlinked folders are followed): name, "
        "steps, last reward/mean, wall time from the first to the last record, and whether "
        "it is live (serving `aoff attach`), finished or stopped early. Folders that cannot "
        "be read are skipped with one line each. Ctrl+C stops it (exit 130).",
    ),
    _Command(
        "sweep-shm",
        "unlink the /dev/shm blocks of aoff runs that were killed",
        "Unlink the shared-memory blocks (/dev/shm/aoff_*) whose training process is gone: "
        "a run killed with its whole process group leaves them. Blocks of live runs are "
        "kept. Every run in process mode also does this when it starts.",
    ),
    _Command(
        "compare",
        "seeds of each configuration: IQM, bootstrap interval, curves",
        "Group runs into configurations (seeds of one setting), and print per group the "
        "final score's mean, median, interquartile mean (IQM) and the IQM's 95% bootstrap "
        "interval over runs, the probability of improvement between groups, and each "
        "group's IQM curve with its band. Runs without the metric, or that cannot be read, "
        "are left out with one line each. Ctrl+C stops it (exit 130).",
    ),
    _Command(
        "export",
        "runs' scalars as one Parquet or CSV table",
        "Write the scalars of the runs as one table: long (run, tag, step, wall_time, "
        "value: one row a point) or --wide (run, step: one column a tag). Ctrl+C stops it "
        "(exit 130).",
    ),
)


#: each command's own arguments: the module and function that add them (``sweep-shm``
#: takes none), imported only for the command run: ``aoff ls`` does not load compare's
#: statistics or the demo's simulator
_ARGUMENTS = {
    "demo": ("._cli._demo", "add_arguments"),
    "attach": ("._cli._attach", "add_attach_arguments"),
    "show": ("._cli._show", "add_show_arguments"),
    "ls": ("._cli._show", "add_ls_arguments"),
    "compare": ("._cli._compare", "add_compare_arguments"),
    "export": ("._cli._export", "add_export_arguments"),
}


def _arguments(name: str) -> Callable[[argparse.ArgumentParser], object] | None:
    import importlib

    where = _ARGUMENTS.get(name)
    if where is None:
        return None
    add: Callable[[argparse.ArgumentParser], object] = getattr(
        importlib.import_module(where[0], __package__), where[1]
    )
    return add


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, only that command's arguments are added (the others
    are listed by name and help, which is all ``aoff --help`` shows of them); without,
    every command's."""
    fmt = _Defaults  # every --help lists the defaults, once
    p = _Parser(
        prog="aoff",
        description="aoff: an asyncio-native training logger for off-policy RL.",
        formatter_class=fmt,
    )
    p.add_argument("--version", action="version", version=f"aoff {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in _COMMANDS:
        parser = sub.add_parser(
            cmd.name, formatter_class=fmt, help=cmd.help, description=cmd.description
        )
        add = _arguments(cmd.name) if command in (None, cmd.name) else None
        if add is not None:
            add(parser)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    # the command is the first argument (the only options before it, --help and
    # --version, end the program): only its arguments are needed ("": none's)
    p = _parser(args[0] if args else "")
    ns = p.parse_args(args)
    try:
        if ns.command in ("show", "ls", "compare", "export"):
            try:
                return _read_command(ns)
            except KeyboardInterrupt:  # one line, not a traceback from inside a reader
                print(f"aoff {ns.command}: interrupted", file=sys.stderr)
                return 130
        return _command(p, ns)
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """Whoever read our output closed the pipe: stop quietly. What Python still holds
    for stdout goes nowhere, so its flush at exit cannot raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


def _read_command(ns: argparse.Namespace) -> int:
    from ._cli._pipes import PipeConsole as Console

    if ns.command == "show":
        from ._cli._show import run_show

        return run_show(ns.run_dir, Console(), sys.stderr, width=ns.width, as_json=ns.json)
    if ns.command == "compare":
        from ._cli._compare import run_compare

        return run_compare(ns, Console(), sys.stdout, sys.stderr)
    if ns.command == "export":
        from ._cli._export import run_export

        return run_export(ns, sys.stderr)
    from ._cli._show import run_ls

    return run_ls(ns.runs_dir, sys.stdout, sys.stderr, as_json=ns.json, where=ns.where)


def _command(p: argparse.ArgumentParser, ns: argparse.Namespace) -> int:
    if ns.command == "demo":
        from ._cli._demo import config_from_args, run

        return run(config_from_args(ns))
    if ns.command == "attach":
        from ._cli._attach import run_attach
        from ._cli._pipes import PipeConsole as Console

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
