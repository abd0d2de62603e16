"""The run index: what ``--where`` reads of every run below a folder, kept in one file.

Why a module of its own: filtering ten thousand runs by config and summary must not open
ten thousand folders' files each time. The index (``.aoff-index.msgpack`` in the folder
of runs) keeps, per run, the fields a filter reads (``_where``: ``run``, ``tags``,
``config``, ``summary``, ``last``) beside the size and mtime of each file they came
from; per folder walked, its mtime and sub-folders. A later look stats instead of
reading: a folder whose mtime is unchanged has the same names in it (a file created,
removed or renamed changes it), a run whose files keep their size and mtime has the
same fields. Anything else is read again, so the index is never wrong when a run
changes under it: it is a cache of what a full read would give, checked at every use.
A file changed within ``RACY_NS`` of being indexed (a write in the same clock tick
could keep its size and mtime) is not trusted next time, as git does with its index.

It is written by whoever reads the folder (``aoff ls/compare/export --where``,
``read_scalars(where=)``); a run at its finish (:func:`note_finished`) appends its entry
to the journal beside each index above it (``.aoff-index.journal``: one small write,
however many runs the index holds), which the next reader folds in. A folder aoff
cannot write to still works: the index goes to ``$XDG_CACHE_HOME/aoff/index/``
(``~/.cache``), or stays in memory when that fails too. Two writers race harmlessly
(each file is replaced whole; the loser's entries are read again at the next look). A
file that is not an index (damaged, another version) is ignored and rebuilt.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec

from .._replace import replaced
from ._runconfig import read_config
from ._runfind import is_run_dir
from ._runs import read_run
from ._where import Where

__all__ = [
    "INDEX_NAME",
    "JOURNAL_NAME",
    "RACY_NS",
    "RunIndex",
    "fields_of",
    "note_finished",
    "select_runs",
]

INDEX_NAME = ".aoff-index.msgpack"
#: the entries runs append at their finish, folded into the index by its next reader
JOURNAL_NAME = ".aoff-index.journal"
FORMAT = "aoff.run-index"
VERSION = 2
#: a file or folder changed this recently when indexed is checked again next time
RACY_NS = 2_000_000_000
#: how many folders above a finished run are looked at for an index to update
ANCESTORS = 8


class _Dir(msgspec.Struct, array_like=True):
    """A folder that is not a run: its mtime and sub-folders."""

    mtime: int
    sub: list[str]
    racy: bool


class _Entry(msgspec.Struct, array_like=True):
    """A run: its folder's mtime, its own files' names and ``(size, mtime_ns)`` (packed
    int64 pairs), and its fields, each kept encoded until a filter reads it."""

    mtime: int
    names: str  # "\0"-joined
    sig: bytes
    racy: bool
    tags: msgspec.Raw
    config: msgspec.Raw
    summary: msgspec.Raw
    last: msgspec.Raw


class _File(msgspec.Struct):
    format: str
    version: int
    dirs: dict[str, _Dir]
    runs: dict[str, _Entry]


class Damaged(Exception):
    """An index entry whose fields are not what aoff wrote: the index is rebuilt."""


_decoder = msgspec.msgpack.Decoder(_File)
_journal_decoder = msgspec.msgpack.Decoder(tuple[str, _Entry])
_field_decoder = msgspec.msgpack.Decoder()
_encoder = msgspec.msgpack.Encoder()
_SHAPES: dict[str, type] = {"tags": list, "config": dict, "summary": dict, "last": dict}


class Fields(Mapping[str, Any]):
    """A run's fields as a filter reads them, each decoded from the index at first use."""

    __slots__ = ("_entry", "_got", "_name")

    def __init__(self, name: str, entry: _Entry) -> None:
        self._name = name
        self._entry = entry
        self._got: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        if key == "run":
            return self._name
        got = self._got.get(key)
        if got is not None:
            return got
        shape = _SHAPES.get(key)
        if shape is None:
            return default
        try:
            got = _field_decoder.decode(getattr(self._entry, key))
        except msgspec.DecodeError as exc:
            raise Damaged(f"{key}: {exc}") from exc
        if not isinstance(got, shape):
            raise Damaged(f"{key}: a {type(got).__name__}")
        self._got[key] = got
        return got

    def __getitem__(self, key: str) -> Any:
        got = self.get(key, _ABSENT)
        if got is _ABSENT:
            raise KeyError(key)
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(("run", *_SHAPES))

    def __len__(self) -> int:
        return 1 + len(_SHAPES)


_ABSENT = object()


def _cache_path(root: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]
    return os.path.join(base, "aoff", "index", key + ".msgpack")


def _load(path: str) -> _File | None:
    try:
        with open(path, "rb") as f:
            got = _decoder.decode(f.read())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if got.format != FORMAT or got.version != VERSION:
        return None
    return got


def fields_of(run_dir: str, name: str, *, live: bool = False) -> dict[str, Any]:
    """The fields a filter reads of one run, read from its files (``OSError`` when they
    cannot be read). ``summary`` holds what is known of ``step``, ``iteration``,
    ``records``, ``state``, ``first_time``, ``last_time`` and ``kind`` (the source:
    summary, jsonl, tensorboard or csv)."""
    data = read_run(run_dir, live=live, ends=True)
    config = read_config(run_dir)
    if data is None:
        return {"run": name, "tags": [], "config": config, "summary": {}, "last": {}}
    summary = {
        "step": data.steps,
        "iteration": data.iterations,
        "records": data.records,
        "state": data.state,
        "first_time": data.first_time,
        "last_time": data.last_time,
        "kind": data.kind,
    }
    return {
        "run": name,
        "tags": list(data.tags),
        "config": config,
        "summary": {k: v for k, v in summary.items() if v is not None},
        "last": {tag: t.last for tag, t in data.tags.items()},
    }


def _files(path: str, now: int) -> tuple[str, bytes, bool]:
    """The run folder's own files: names, packed ``(size, mtime_ns)``, whether any is racy."""
    got: list[tuple[str, int, int]] = []
    racy = False
    with os.scandir(path) as it:
        for e in it:
            if e.is_dir():
                continue
            try:
                st = e.stat()
            except OSError:
                continue  # removed while we looked: the folder's mtime says it next time
            got.append((e.name, st.st_size, st.st_mtime_ns))
            racy |= now - st.st_mtime_ns < RACY_NS
    got.sort()
    sig = struct.pack(f"<{2 * len(got)}q", *(v for _, size, m in got for v in (size, m)))
    return "\0".join(n for n, _, _ in got), sig, racy


def _unchanged(path: str, entry: _Entry) -> bool:
    """Whether the run's files keep the sizes and mtimes they had when indexed."""
    if not entry.names:
        return not entry.sig
    now: list[int] = []
    prefix = path + os.sep
    stat = os.stat
    try:
        for name in entry.names.split("\0"):
            st = stat(prefix + name)
            now += (st.st_size, st.st_mtime_ns)
    except OSError:
        return False
    return _packer(len(now)).pack(*now) == entry.sig


@functools.cache
def _packer(n: int) -> struct.Struct:
    """The packing of ``n`` int64s (a run's files' sizes and mtimes), made once per ``n``."""
    return struct.Struct(f"<{n}q")


def _packed(value: object) -> msgspec.Raw:
    return msgspec.Raw(_encoder.encode(value))


class RunIndex:
    """The index of the runs below ``root`` (a folder of runs): :meth:`runs` brings it up
    to date and returns every run with its fields; :meth:`save` keeps it."""

    def __init__(
        self, root: str, *, live: Callable[[str], bool] | None = None, fresh: bool = False
    ) -> None:
        self.root = root
        self.live = live
        self.path = os.path.join(root, INDEX_NAME)
        self.cache = _cache_path(root)
        got = None
        if not fresh:
            got = _load(self.path)
            cached = _load(self.cache)
            if got is None or (cached is not None and _mtime(self.cache) > _mtime(self.path)):
                got = cached
        self._dirs: dict[str, _Dir] = {} if got is None else got.dirs
        self._runs: dict[str, _Entry] = {} if got is None else got.runs
        self.changed = got is None
        self.journal = os.path.join(root, JOURNAL_NAME)
        self._journaled = 0  # bytes of the journal folded in
        if not fresh:
            self._fold_journal()
        #: runs read again at the last :meth:`runs` (the others came from the index)
        self.reread = 0
        #: where the index was kept at the last :meth:`save` ("folder", "cache", "memory")
        self.kept: str | None = None
        self.problem: str | None = None

    def runs(self, skipped: list[str] | None = None) -> list[tuple[str, Fields]]:
        """Every run below the root (the runs :func:`~._runfind.find_runs` finds, sorted
        the same way), each ``(path, fields)``; a run whose files cannot be read is named
        in ``skipped`` and left out."""
        now = time.time_ns()
        dirs: dict[str, _Dir] = {}
        runs: dict[str, _Entry] = {}
        seen: set[tuple[int, int]] = set()
        self.reread = 0
        sep, root = os.sep, self.root
        stack = [""]
        while stack:
            rel = stack.pop()
            path = root + sep + rel if rel else root
            try:
                st = os.stat(path)
            except OSError as exc:
                if skipped is not None and rel:
                    skipped.append(f"{path}: {exc.strerror or exc}")
                continue
            ident = (st.st_dev, st.st_ino)
            if ident in seen:  # a link back up, or two links to one folder
                continue
            seen.add(ident)
            mtime = st.st_mtime_ns
            entry = self._runs.get(rel)
            if entry is not None and rel and entry.mtime == mtime and not entry.racy:
                if not _unchanged(path, entry):
                    entry = self._reread(path, rel, mtime, now, skipped)
                if entry is not None:
                    runs[rel] = entry
                continue
            old = self._dirs.get(rel)
            # the root is listed every time: the index's own file changes its mtime
            if old is not None and rel and old.mtime == mtime and not old.racy:
                dirs[rel] = old
                stack.extend(rel + sep + s for s in reversed(old.sub))
                continue
            try:
                is_run = is_run_dir(path) or (self.live is not None and self.live(path))
                if not is_run:
                    with os.scandir(path) as it:
                        sub = sorted(e.name for e in it if e.is_dir())
            except OSError as exc:
                if skipped is not None:
                    skipped.append(f"{exc.filename or path}: {exc.strerror or exc}")
                continue
            if is_run:
                entry = self._reread(path, rel, mtime, now, skipped)
                if entry is not None:
                    runs[rel] = entry
                continue
            rec = _Dir(mtime, sub, now - mtime < RACY_NS)
            if old is None or old.sub != sub or rel:
                self.changed = True
            dirs[rel] = rec
            stack.extend(rel + sep + s if rel else s for s in reversed(sub))
        if dirs.keys() != self._dirs.keys() or runs.keys() != self._runs.keys():
            self.changed = True
        self._dirs, self._runs = dirs, runs
        # os.path.join(root, rel) for each, at the cost of one join; the order is the
        # joined paths' (one prefix)
        prefix = os.path.join(root, "")
        if sep == "/":
            return [(prefix + rel, Fields(rel, runs[rel])) for rel in sorted(runs)]
        return [(prefix + rel, Fields(rel.replace(sep, "/"), runs[rel])) for rel in sorted(runs)]

    def _reread(
        self, path: str, rel: str, mtime: int, now: int, skipped: list[str] | None
    ) -> _Entry | None:
        try:
            entry = self._read(path, rel, mtime, now)
        except OSError as exc:
            if skipped is not None:
                skipped.append(f"{exc.filename or path}: {exc.strerror or exc}")
            return None
        self.reread += 1
        self.changed = True
        return entry

    def _read(self, path: str, rel: str, mtime: int, now: int) -> _Entry:
        names, sig, racy = _files(path, now)
        live = self.live is not None and self.live(path)
        f = fields_of(path, rel.replace(os.sep, "/"), live=live)
        return _Entry(
            mtime,
            names,
            sig,
            racy or live or now - mtime < RACY_NS,
            _packed(f["tags"]),
            _packed(f["config"]),
            _packed(f["summary"]),
            _packed(f["last"]),
        )

    def _fold_journal(self) -> None:
        """Take the entries runs appended at their finish (:func:`note_finished`); a
        record torn or damaged ends what is taken."""
        try:
            with open(self.journal, "rb") as f:
                data = f.read()
        except OSError:
            return
        at = 0
        while at + 8 <= len(data):
            n, crc = struct.unpack_from("<II", data, at)
            body = data[at + 8 : at + 8 + n]
            if len(body) != n or zlib.crc32(body) != crc:
                break
            try:
                rel, entry = _journal_decoder.decode(body)
            except (msgspec.DecodeError, msgspec.ValidationError):
                break
            self._runs[rel] = entry
            self._dirs.pop(rel, None)
            at += 8 + n
        if at:
            self._journaled = at
            self.changed = True

    def save(self) -> None:
        """Keep the index (when it changed): in the folder, else in the cache folder,
        else in memory only (:attr:`kept` says which, :attr:`problem` why)."""
        if not self.changed:
            return
        data = _encoder.encode(_File(FORMAT, VERSION, self._dirs, self._runs))
        why = None
        for where, path in (("folder", self.path), ("cache", self.cache)):
            try:
                if where == "cache":
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                with replaced(path, prefix=".aoff-index-", mode=0o644) as f:
                    f.write(data)
            except OSError as exc:
                why = why or f"{path}: {exc.strerror or exc}"
                continue
            self.kept, self.changed = where, False
            if where == "folder":  # the folder's own copy is the newer one now
                with contextlib.suppress(OSError):
                    os.unlink(self.cache)
            # what was folded in is in the file now; a record appended since this index
            # was loaded is lost with it, and that run is read again at the next look
            # (its files changed since its entry)
            if self._journaled and where == "folder":
                with contextlib.suppress(OSError):
                    os.truncate(self.journal, 0)
            return
        self.kept, self.problem = "memory", why


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def select_runs(
    root: str,
    where: Where,
    skipped: list[str] | None = None,
    *,
    live: Callable[[str], bool] | None = None,
    notes: list[str] | None = None,
) -> list[str]:
    """The runs below ``root`` whose fields pass ``where`` (through the folder's index,
    brought up to date and saved). ``root`` that is a run itself is tested alone. An
    index that could be kept neither in the folder nor in the cache folder is said in
    ``notes``."""
    if not os.path.isdir(root) or is_run_dir(root) or (live is not None and live(root)):
        if not os.path.isdir(root):
            return [root]  # for the caller to refuse as it refuses any path
        return [root] if where(fields_of(root, root)) else []
    index = RunIndex(root, live=live)
    try:
        got = [path for path, fields in index.runs(skipped) if where(fields)]
    except Damaged:  # not what aoff wrote: read every run again
        index = RunIndex(root, live=live, fresh=True)
        got = [path for path, fields in index.runs(skipped) if where(fields)]
    index.save()
    if index.problem is not None and notes is not None:
        notes.append(f"the run index is kept in memory only: cannot write {index.problem}")
    return got


def filter_runs(
    runs: Iterable[str], where: Where, *, live: Callable[[str], bool] | None = None
) -> list[str]:
    """The runs of ``runs`` whose fields pass ``where``, each read from its own files."""
    out = []
    for run in runs:
        is_live = live is not None and live(run)
        if where(fields_of(run, run, live=is_live)):
            out.append(run)
    return out


def note_finished(run_dir: str) -> None:
    """Bring the entry of ``run_dir`` up to date in the indexes of the folders above it
    that have one (a run at its finish); quietly nothing where none has. The entry is
    appended to the folder's journal (one small write, whatever the index's size), which
    the next reader folds into the index."""
    here = os.path.abspath(run_dir)
    up = os.path.dirname(here)
    entry: _Entry | None = None
    for _ in range(ANCESTORS):
        if os.path.isfile(os.path.join(up, INDEX_NAME)):
            if entry is None:
                now = time.time_ns()
                entry = RunIndex(here, fresh=True)._read(here, "", os.stat(here).st_mtime_ns, now)
            rel = os.path.relpath(here, up)
            body = _encoder.encode((rel, entry))
            record = struct.pack("<II", len(body), zlib.crc32(body)) + body
            with contextlib.suppress(OSError):
                fd = os.open(
                    os.path.join(up, JOURNAL_NAME), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
                )
                try:
                    os.write(
                        fd, record
                    )  # one write: appends of runs finishing at once interleave whole
                finally:
                    os.close(fd)
        parent = os.path.dirname(up)
        if parent == up:
            return
        up = parent
