"""Where a run's live socket and its key live, and how to tell a live run from a stale one.

A run with a ``log_dir`` serves its state on ``log_dir/aoff.sock``: a Unix socket (never
TCP) of mode 0600, so only its owner can connect. Connecting takes the key in
``log_dir/aoff.key`` (32 random bytes, hex), a file created with mode 0600 from the start
(``O_CREAT | O_EXCL``), never made private after the fact.

The socket is bound in a fresh private (0700) folder, made 0600 there and only then
renamed into the run folder, so it is never reachable with a looser mode. A Unix socket
path is limited (``sun_path``: 107 bytes on Linux, 103 on macOS): when
``log_dir/aoff.sock`` would be longer, the socket stays in a private 0700 folder under
the temp directory and ``log_dir/aoff.sock.where`` (0600) names it. Either way the run
removes all of it at its end; a run that was killed leaves them behind, and a socket
nobody listens on refuses connections at once: that is "not live".
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import socket
import stat
import sys
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Listener
from typing import Literal

__all__ = [
    "KEY_NAME",
    "POINTER_NAME",
    "SOCKET_NAME",
    "LiveError",
    "Placement",
    "bind_listener",
    "check_owner",
    "create_key",
    "find_socket",
    "has_live_files",
    "live_status",
    "probe",
    "read_key",
    "remove_placement",
]

SOCKET_NAME = "aoff.sock"
KEY_NAME = "aoff.key"
POINTER_NAME = "aoff.sock.where"
#: the longest socket path the OS takes, in bytes (``sun_path`` less its NUL)
SUN_PATH_MAX = 103 if sys.platform == "darwin" else 107
#: connections waiting to be accepted (the default, 1, would make a burst of viewers wait)
BACKLOG = 16
_PRIVATE = 0o600
_KEY_BYTES = 32

Probe = Literal["live", "stale", "gone", "denied"]


class LiveError(Exception):
    """A run's live files cannot be used; the message says why, for the user."""


def fits(path: str) -> bool:
    """Whether ``path`` is short enough to bind a Unix socket to."""
    return len(os.fsencode(path)) <= SUN_PATH_MAX


def _create_private(path: str, data: bytes) -> None:
    """Write ``data`` to a new file that is mode 0600 from its creation; a leftover file
    of that name (a killed run's) is replaced."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, _PRIVATE)
    except FileExistsError:
        os.unlink(path)
        fd = os.open(path, flags, _PRIVATE)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def create_key(run_dir: str) -> bytes:
    """A new random key, written to ``run_dir/aoff.key`` (0600). Returns the key."""
    key = secrets.token_hex(_KEY_BYTES).encode("ascii")
    _create_private(os.path.join(run_dir, KEY_NAME), key + b"\n")
    return key


def check_owner(path: str, what: str) -> os.stat_result:
    """``lstat(path)``, refusing a file that belongs to another user."""
    st = os.lstat(path)
    if st.st_uid != os.getuid():
        raise LiveError(
            f"{what} {path!r} belongs to another user (uid {st.st_uid}); only the run's "
            "owner can attach"
        )
    return st


def read_key(run_dir: str) -> bytes:
    """The key of ``run_dir``'s live run (refused if another user owns the file)."""
    path = os.path.join(run_dir, KEY_NAME)
    try:
        st = check_owner(path, "the key file")
        if not stat.S_ISREG(st.st_mode):
            raise LiveError(f"{path!r} is not a regular file")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags)
        try:
            data = os.read(fd, 4 * _KEY_BYTES)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise LiveError(f"{run_dir!r} has no {KEY_NAME}: the run is not live") from None
    except PermissionError:
        raise LiveError(f"cannot read {path!r}: only the run's owner can attach") from None
    key = data.strip()
    if not key:
        raise LiveError(f"{path!r} is empty: the run is not live")
    return key


def find_socket(run_dir: str) -> str | None:
    """The socket of ``run_dir`` (its own, or the one its pointer names), or ``None``."""
    own = os.path.join(run_dir, SOCKET_NAME)
    if os.path.lexists(own):
        return own
    pointer = os.path.join(run_dir, POINTER_NAME)
    try:
        check_owner(pointer, "the socket pointer")
        with open(pointer, encoding="utf-8") as f:
            target = f.readline().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise LiveError(f"cannot read {pointer!r}: {exc}") from None
    return target or None


def has_live_files(run_dir: str) -> bool:
    """Whether ``run_dir`` holds a socket or a pointer (a live run, or a killed one's)."""
    return os.path.lexists(os.path.join(run_dir, SOCKET_NAME)) or os.path.lexists(
        os.path.join(run_dir, POINTER_NAME)
    )


def probe(sock_path: str, timeout: float = 1.0) -> Probe:
    """Connect and hang up: ``live`` (someone listens), ``stale`` (a socket file nobody
    listens on: a killed run's), ``gone`` (no socket), ``denied`` (not ours to open)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
    except (FileNotFoundError, NotADirectoryError):
        return "gone"
    except ConnectionRefusedError:
        return "stale"
    except PermissionError:
        return "denied"
    except TimeoutError:  # a listener with a full backlog is still a listener
        return "live"
    except OSError as exc:
        if exc.errno in (errno.ENOTSOCK, errno.ECONNREFUSED):
            return "stale"
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):  # a full backlog: listening
            return "live"
        return "denied" if exc.errno in (errno.EACCES, errno.EPERM) else "gone"
    finally:
        s.close()
    return "live"


def live_status(run_dir: str) -> str:
    """For ``aoff ls``: ``live``, ``not live (stale socket)`` or ``""`` (no live files)."""
    try:
        path = find_socket(run_dir)
    except LiveError:
        return "not live (unreadable socket pointer)"
    if path is None:
        return ""
    got = probe(path)
    if got == "live":
        return "live"
    if got == "denied":
        return "live? (another user's socket)"
    return "not live (stale socket)"


@dataclass
class Placement:
    """Where a server's socket ended up, so that exactly these files are removed."""

    socket_path: str
    identity: tuple[int, int]  # (st_dev, st_ino) of the socket, to never remove another's
    key_path: str
    key_identity: tuple[int, int]
    pointer_path: str | None = None
    pointer_identity: tuple[int, int] | None = None
    private_dir: str | None = None


def _identity(path: str) -> tuple[int, int]:
    st = os.lstat(path)
    return (st.st_dev, st.st_ino)


def _bind_private(folder: str, name: str) -> tuple[Listener, str]:
    path = os.path.join(folder, name)
    listener = Listener(path, family="AF_UNIX", backlog=BACKLOG)
    try:
        os.chmod(path, _PRIVATE)  # inside a 0700 folder: nobody else could reach it yet
    except OSError:
        _close_listener(listener)
        raise
    return listener, path


def _forget_bound_path(listener: Listener) -> None:
    """The path the listener bound was renamed away: it must not try to unlink it. Its
    finaliser would, at close or at interpreter exit, and multiprocessing prints the
    ``FileNotFoundError`` traceback there (seen when a run ends during start-up). The
    renamed socket is removed by :func:`remove_placement`."""
    inner = getattr(listener, "_listener", None)
    finaliser = getattr(inner, "_unlink", None)
    if finaliser is not None:
        finaliser.cancel()
        inner._unlink = None  # type: ignore[union-attr]


def _close_listener(listener: Listener) -> None:
    # the listener unlinks the path it bound, which was renamed away: nothing to do then
    with contextlib.suppress(OSError):
        listener.close()


def _bind_in_run_dir(
    run_dir: str, final: str, pointer: str, key_path: str
) -> tuple[Listener, Placement]:
    tmp = tempfile.mkdtemp(prefix=".aoff-", dir=run_dir)  # mode 0700
    try:
        if not fits(os.path.join(tmp, "s")):
            raise OSError(errno.ENAMETOOLONG, "private folder path too long")
        listener, bound = _bind_private(tmp, "s")
        try:
            os.replace(bound, final)
        except OSError:
            _close_listener(listener)
            raise
        _forget_bound_path(listener)
        with contextlib.suppress(OSError):
            os.unlink(pointer)  # a killed run's, pointing elsewhere
        return listener, Placement(final, _identity(final), key_path, _identity(key_path))
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(tmp)


def bind_listener(run_dir: str) -> tuple[Listener, Placement]:
    """Bind the run's socket (see the module's doc); ``key`` was written already.

    ``run_dir/aoff.key`` must exist already. Raises ``OSError`` when no place works
    (the caller reports it: attach is then off for the run).
    """
    key_path = os.path.join(run_dir, KEY_NAME)
    final = os.path.join(run_dir, SOCKET_NAME)
    pointer = os.path.join(run_dir, POINTER_NAME)
    if fits(final):
        try:
            return _bind_in_run_dir(run_dir, final, pointer, key_path)
        except OSError:
            pass  # e.g. a file system without sockets: the temp folder below
    # too long (or the folder's file system has no sockets): a private temp folder
    for parent in (tempfile.gettempdir(), "/tmp"):
        private = tempfile.mkdtemp(prefix="aoff-", dir=parent)
        if not fits(os.path.join(private, SOCKET_NAME)):
            os.rmdir(private)
            continue
        try:
            listener, bound = _bind_private(private, SOCKET_NAME)
        except OSError:
            os.rmdir(private)
            raise
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(final)  # a killed run's socket would hide the pointer
            _create_private(pointer, os.fsencode(bound) + b"\n")
        except OSError:
            _close_listener(listener)
            with contextlib.suppress(OSError):
                os.unlink(bound)
            os.rmdir(private)
            raise
        return listener, Placement(
            bound,
            _identity(bound),
            key_path,
            _identity(key_path),
            pointer,
            _identity(pointer),
            private,
        )
    raise OSError(errno.ENAMETOOLONG, f"no socket path short enough for {run_dir!r}")


def _unlink_if(path: str | None, identity: tuple[int, int] | None) -> None:
    if path is None:
        return
    with contextlib.suppress(OSError):
        if identity is None or _identity(path) == identity:
            os.unlink(path)


def remove_placement(listener: Listener, where: Placement) -> None:
    """Close the listener and remove the socket, key, pointer and private folder, each
    only if it is still this run's (a newer run in the same folder keeps its own)."""
    _close_listener(listener)
    _unlink_if(where.socket_path, where.identity)
    _unlink_if(where.key_path, where.key_identity)
    _unlink_if(where.pointer_path, where.pointer_identity)
    if where.private_dir is not None:
        with contextlib.suppress(OSError):
            os.rmdir(where.private_dir)
