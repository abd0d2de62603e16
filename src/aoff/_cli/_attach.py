"""``aoff attach RUN_DIR``: the run's live dashboard in this terminal, from its socket.

The viewer connects to the run folder's socket (``aoff._channel._paths``), proves it
holds the key, names its role (:class:`~aoff._channel._roles.View`) and draws every
snapshot it gets with the run's own :class:`~aoff._display._dashboard.Dashboard`, at this
terminal's size. It never sends anything else, so nothing it does (Ctrl+C, a closed
terminal, SIGKILL) can reach the run: it only stops reading.

Exit status: 0 after the run's end (its summary panel is shown) or a Ctrl+C (detached);
1 when there is nothing to attach to (not a folder, no live run, a stale socket, another
user's socket, a refused key, a lost connection).
"""

from __future__ import annotations

import argparse
import os
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection
from typing import IO, Any, TextIO

from rich.console import Console

from .._channel._paths import (
    POINTER_NAME,
    SOCKET_NAME,
    LiveError,
    check_owner,
    find_socket,
    has_live_files,
    probe,
    read_key,
)
from .._channel._roles import End, Refused, Snapshot, View, decode_to_viewer, to_wire
from .._display._dashboard import Dashboard
from .._runfolder.reading._runfind import is_run_dir
from ._folder import not_a_folder
from ._pipes import output_closed

__all__ = ["add_attach_arguments", "run_attach"]

DEFAULT_REFRESH = 4.0


class _NotLive(Exception):
    """Nothing to attach to; the message says why."""


def _candidates(root: str) -> list[str]:
    """``root`` if it is a run folder with a socket (or pointer), else every such folder
    below it (a run's own subfolders are not searched)."""
    if has_live_files(root):
        return [root]
    found: list[str] = []
    for here, dirs, _files in os.walk(root):
        if has_live_files(here):
            found.append(here)
            dirs[:] = []
        else:
            dirs.sort()
    return sorted(found)


def _socket_of(run_dir: str) -> str:
    """The run's socket, refused when it is not this user's, or :class:`_NotLive`."""
    try:
        sock = find_socket(run_dir)
        if sock is None:
            raise _NotLive(f"{run_dir!r} is not live: it has no {SOCKET_NAME}")
        try:
            check_owner(sock, "the socket")
        except FileNotFoundError:
            raise _NotLive(f"{run_dir!r} is not live: its run has ended") from None
    except LiveError as exc:
        raise _NotLive(str(exc)) from None
    state = probe(sock)
    if state == "stale":
        raise _NotLive(
            f"{run_dir!r} is not live: {sock!r} is left from a run that did not end "
            "cleanly (killed?); nothing listens on it"
        )
    if state == "gone":
        raise _NotLive(f"{run_dir!r} is not live: its run has ended")
    if state == "denied":
        raise _NotLive(f"cannot open {sock!r}: only the run's owner can attach")
    return sock


def _pick(root: str, stdin: TextIO, out: IO[str]) -> str:
    """The one live run at or below ``root``; with several, the user picks one."""
    if not os.path.isdir(root):
        raise _NotLive(not_a_folder(root))
    found = _candidates(root)
    if found == [root]:
        return root
    live: list[str] = []
    for run in found:
        try:
            _socket_of(run)
        except _NotLive:
            continue
        live.append(run)
    if not live and not found and is_run_dir(root):
        raise _NotLive(f"{root!r} is not live: its run has ended (aoff show prints it)")
    if not live:
        stale = f" ({len(found)} left by runs that did not end cleanly)" if found else ""
        raise _NotLive(f"no live run in {root!r}{stale}")
    if len(live) == 1:
        return live[0]
    print(f"{len(live)} live runs in {root!r}:", file=out)
    for i, run in enumerate(live, 1):
        print(f"  {i}) {os.path.relpath(run, root)}", file=out)
    print(f"Attach to which one? [1-{len(live)}] ", end="", file=out, flush=True)
    answer = stdin.readline().strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(live):
        raise _NotLive(f"no run chosen (got {answer!r}; expected a number 1-{len(live)})")
    return live[int(answer) - 1]


def _connect(run_dir: str, refresh: float) -> Connection:
    sock = _socket_of(run_dir)
    try:
        key = read_key(run_dir)
    except LiveError as exc:
        raise _NotLive(str(exc)) from None
    try:
        conn = Client(sock, family="AF_UNIX", authkey=key)
    except AuthenticationError:
        raise _NotLive(
            f"the run serving {sock!r} refused the key in {run_dir!r} (a newer run in the "
            "same folder?)"
        ) from None
    except (ConnectionRefusedError, FileNotFoundError):
        raise _NotLive(f"{run_dir!r} is not live: its run ended just now") from None
    except (EOFError, OSError) as exc:
        raise _NotLive(f"could not attach to {sock!r}: {exc or type(exc).__name__}") from None
    conn.send(to_wire(View(refresh)))
    return conn


def _view(conn: Connection, console: Console, err: TextIO, name: str) -> int:
    dash: Dashboard | None = None
    state: Any = None
    now = 0.0
    try:
        while True:
            if output_closed(console.file):  # whoever read us is gone: so are we
                return 0
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                if dash is not None:
                    dash.close(state, now, summary=False)
                print(f"aoff attach: lost the run {name!r} (it ended without a word)", file=err)
                return 1
            try:
                news = decode_to_viewer(msg)
            except ValueError as exc:
                print(f"aoff attach: the run's message was not understood: {exc}", file=err)
                return 1
            match news:
                case Refused(why):
                    print(f"aoff attach: the run says: {why}", file=err)
                    return 1
                case Snapshot(state, now):
                    fresh = dash is None
                    if dash is None:
                        dash = Dashboard(console)
                    if state.panel_widths:  # the run's own layout, at its terminal's size
                        dash.memory.adopt(state.panel_widths)
                    if fresh:
                        dash.open(state, now)
                    else:
                        dash.update(state, now)
                case End(state, now, _, lines):  # the viewer always shows the summary
                    if dash is None:
                        dash = Dashboard(console)
                        dash.open(state, now)
                    dash.close(state, now, summary=True)
                    for line in lines:
                        console.print(line, markup=False, highlight=False)
                    console.print(f"aoff attach: the run {name!r} has ended.", highlight=False)
                    return 0
    except KeyboardInterrupt:
        if dash is not None:
            dash.close(state, now, summary=False)
        console.print(f"aoff attach: detached from {name!r}; the run goes on.", highlight=False)
        return 0
    finally:
        conn.close()


def run_attach(
    path: str,
    refresh: float,
    console: Console,
    err: TextIO,
    stdin: TextIO,
) -> int:
    """``aoff attach PATH``: returns the exit status."""
    if output_closed(console.file):
        return 0
    try:
        run_dir = _pick(path, stdin, console.file)
        conn = _connect(run_dir, refresh)
    except _NotLive as exc:
        print(f"aoff attach: {exc}", file=err)
        return 1
    except KeyboardInterrupt:
        return 0
    return _view(conn, console, err, os.path.basename(os.path.abspath(run_dir)))


def _refresh(text: str) -> float:
    try:
        hz = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not hz > 0 or hz > 60:
        raise argparse.ArgumentTypeError(f"must be > 0 and at most 60, got {text}")
    return hz


def add_attach_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help=f"a live run's folder (its log_dir, holding {SOCKET_NAME} or {POINTER_NAME}), "
        "or a folder above it",
    )
    p.add_argument(
        "--refresh",
        type=_refresh,
        default=DEFAULT_REFRESH,
        metavar="HZ",
        help=f"redraws per second (default {DEFAULT_REFRESH:g}; the run sends at most one "
        "snapshot per pump tick, about 20 a second)",
    )
