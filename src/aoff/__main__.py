"""The ``aoff`` command (also ``python -m aoff``).

Subcommands:

``demo``
    a simulated off-policy run: the live dashboard, and TensorBoard files under
    ``runs/`` (see ``aoff demo --help``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__


def _parser() -> argparse.ArgumentParser:
    from ._demo import add_arguments

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
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    ns = p.parse_args(argv)
    if ns.command == "demo":
        from ._demo import config_from_args, run

        return run(config_from_args(ns))
    p.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
