"""Reading a finished run back from disk, for ``aoff show`` and ``aoff ls``.

A run folder holds what aoff wrote: ``aoff-summary.json`` (the run summary the pump keeps,
:mod:`aoff._backends._summary`), ``metrics.jsonl`` (JSON Lines backend) and/or
``events.out.tfevents.*`` (TensorBoard backend, or any other tool). The commands only need
each tag's first/last/min/max values and a curve to draw, plus the run's step, iteration
and wall-time range, so every source is read into one small :class:`RunData`, in this
order: the summary (a few kilobytes, whatever the run's length) when the run finished
or is live; else ``metrics.jsonl`` (exact float64 values); else the event files, read by
aoff's own scalar reader (:mod:`aoff._backends._tbread`, >100 MB/s).

A run that was killed, or a disk that filled up, can leave a torn last record. Both file
readers keep everything before it and add a one-line note naming the file, so the
commands can show what is there and say what is not.
"""

from __future__ import annotations

import glob
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "JSONL_NAME",
    "SUMMARY_NAME",
    "TB_PATTERN",
    "RunData",
    "TagStats",
    "find_runs",
    "is_run_dir",
    "read_run",
    "scan_bytes",
]

JSONL_NAME = "metrics.jsonl"
SUMMARY_NAME = "aoff-summary.json"  # _backends/_summary.py (not imported: ls stays light)
TB_PATTERN = "events.out.tfevents.*"
_FIXED = ("step", "iteration", "wall_time")
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
#: a curve longer than this is kept as this many bucket means (what a sparkline needs)
CURVE_POINTS = 128
REWARD_TAG = "reward/mean"


@dataclass
class TagStats:
    """One tag as ``show`` prints it."""

    count: int
    first: float
    last: float
    lo: float | None  # finite values only; None when there is none
    hi: float | None
    #: the curve, or bucket means of it when it is long (NaN: no finite value there)
    curve: list[float]


@dataclass
class RunData:
    """What ``show``/``ls`` print about one run."""

    path: str
    source: str  # the file (JSONL, summary) or folder (TensorBoard) the numbers came from
    kind: str  # "summary", "jsonl" or "tensorboard"
    records: int = 0
    steps: int | None = None
    iterations: int | None = None
    max_iterations: int | None = None
    first_time: float | None = None
    last_time: float | None = None
    #: "running", "finished" or "interrupted" (from the summary); None when not known
    state: str | None = None
    #: tag -> its statistics, tags in order of first appearance
    tags: dict[str, TagStats] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: rows logged by ``log.remote()`` producers, by name: not the run's own series
    producer_rows: dict[str, int] = field(default_factory=dict)

    @property
    def curves(self) -> dict[str, list[float]]:
        return {tag: t.curve for tag, t in self.tags.items()}

    @property
    def wall_time(self) -> float | None:
        """Seconds from the first record to the last, when both are known."""
        if self.first_time is None or self.last_time is None:
            return None
        return max(self.last_time - self.first_time, 0.0)

    def last(self, tag: str) -> float | None:
        t = self.tags.get(tag)
        return t.last if t is not None else None

    def best(self, tag: str) -> float | None:
        t = self.tags.get(tag)
        return t.hi if t is not None else None


def stats_of(values: Any) -> TagStats:
    """:class:`TagStats` of a non-empty sequence (or numpy array) of floats."""
    import numpy as np

    v = np.asarray(values, np.float64)
    finite = np.isfinite(v)
    n = len(v)
    lo = hi = None
    if finite.any():
        lo, hi = float(v[finite].min()), float(v[finite].max())
    if n <= CURVE_POINTS:
        curve = v.tolist()
    else:
        edges = (np.arange(CURVE_POINTS) * n) // CURVE_POINTS
        sums = np.add.reduceat(np.where(finite, v, 0.0), edges)
        counts = np.add.reduceat(finite.astype(np.int64), edges)
        with np.errstate(invalid="ignore", divide="ignore"):
            curve = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).tolist()
    return TagStats(n, float(v[0]), float(v[-1]), lo, hi, curve)


#: aoff's HParams event file (config and final metrics, ``_backends/_hparams.py``): no
#: run steps in it, so ``show``/``ls`` leave it out, as the run summary does
_HPARAMS_MARK = ".aoff-hparams."


def _tb_files(path: str, *, hparams: bool = False) -> list[str]:
    files = sorted(glob.glob(os.path.join(glob.escape(path), TB_PATTERN)))
    return files if hparams else [f for f in files if _HPARAMS_MARK not in os.path.basename(f)]


def is_run_dir(path: str) -> bool:
    """Whether ``path`` holds a run summary, a ``metrics.jsonl`` or TensorBoard event files."""
    return (
        os.path.isfile(os.path.join(path, SUMMARY_NAME))
        or os.path.isfile(os.path.join(path, JSONL_NAME))
        or bool(_tb_files(path, hparams=True))
    )


def find_runs(root: str, skipped: list[str] | None = None) -> list[str]:
    """Every run folder at or below ``root``, sorted; a run's own subfolders are skipped.

    Symlinked folders are followed (each real folder once). A folder with a live socket
    (or a killed run's) counts too, data or not yet. A folder that cannot be listed is
    named in ``skipped`` (``"<path>: <why>"``) and left out."""
    from .._channel._paths import has_live_files

    found: list[str] = []
    seen: set[str] = set()

    def problem(exc: OSError) -> None:
        if skipped is not None:
            skipped.append(f"{exc.filename or root}: {exc.strerror or exc}")

    for here, dirs, _files in os.walk(root, onerror=problem, followlinks=True):
        real = os.path.realpath(here)
        if real in seen:  # a link back up, or two links to one folder
            dirs[:] = []
            continue
        seen.add(real)
        try:
            is_run = is_run_dir(here) or has_live_files(here)
        except OSError as exc:
            problem(exc)
            dirs[:] = []
            continue
        if is_run:
            found.append(here)
            dirs[:] = []  # its wandb/, checkpoints/ ... are part of the run
        else:
            dirs.sort()
    return sorted(found)


def _as_float(v: object) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        return _NONFINITE.get(v)
    return None


def _read_jsonl(run_dir: str, path: str) -> RunData:
    data = RunData(path=run_dir, source=path, kind="jsonl")
    curves: dict[str, list[float]] = {}
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    last_index = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    bad_middle = 0
    count = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not an object")
        except ValueError:
            if i == last_index:
                data.notes.append(f"{path}: the last record is truncated or corrupt; skipped")
            else:
                bad_middle += 1
            continue
        if isinstance(row.get("media"), str):  # a media file's row (_backends/_mediafiles)
            continue
        producer = row.get("producer")
        if isinstance(producer, str):  # a collector's own steps: kept apart, counted
            data.producer_rows[producer] = data.producer_rows.get(producer, 0) + 1
            continue
        step, it, wall = row.get("step"), row.get("iteration"), row.get("wall_time")
        if isinstance(step, int):
            data.steps = step
        if isinstance(it, int):
            data.iterations = it
        if isinstance(wall, int | float) and math.isfinite(wall):
            data.first_time = wall if data.first_time is None else min(data.first_time, wall)
            data.last_time = wall if data.last_time is None else max(data.last_time, wall)
        for tag, value in row.items():
            if tag in _FIXED:
                continue
            v = _as_float(value)
            if v is not None:
                # a tag missing from earlier records starts where it first appears
                curves.setdefault(tag, []).append(v)
        count += 1
    data.records = count
    data.tags = {tag: stats_of(values) for tag, values in curves.items()}
    if data.producer_rows:
        names = ", ".join(f"{n} ({k:,})" for n, k in sorted(data.producer_rows.items()))
        data.notes.append(
            f"{path}: rows from producers are not in these series: {names}; "
            "TensorBoard has each as its own run"
        )
    if bad_middle:
        data.notes.append(f"{path}: {bad_middle} unreadable line(s) skipped")
    return data


def _read_tensorboard(
    run_dir: str, files: list[str], progress: Callable[[int], None] | None, *, ends: bool = False
) -> RunData:
    from .._backends._tbread import scan_files, scan_last

    scan = scan_last(files, progress) if ends else None
    if scan is None or REWARD_TAG not in scan.tags:
        scan = scan_files(files, progress)
    data = RunData(path=run_dir, source=run_dir, kind="tensorboard")
    for path, problem in scan.problems:
        data.notes.append(f"{path}: {problem}; read up to it")
    data.first_time, data.last_time = scan.first_time, scan.last_time
    data.records = scan.records
    steps = [int(s.steps.max()) for s in scan.tags.values()]
    data.steps = max(steps) if steps else None
    data.tags = {tag: stats_of(s.values) for tag, s in scan.tags.items()}
    it = data.tags.get("axis/iteration")
    if it is not None and math.isfinite(it.last):
        data.iterations = int(it.last)
    return data


def _load_summary(run_dir: str, *, live: bool) -> dict[str, Any] | None:
    """The summary's content when it may stand for the run: finished (or interrupted),
    or still being refreshed by a live run; ``None`` when absent, unreadable or left by
    a run that was killed (its files go further than it)."""
    path = os.path.join(run_dir, SUMMARY_NAME)
    try:
        with open(path, "rb") as f:
            content = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("format") != "aoff.run-summary":
        return None
    if content.get("version") != 1 or not isinstance(content.get("tags"), dict):
        return None
    if content.get("state") == "running" and not live:
        return None
    files = content.get("files")
    if isinstance(files, dict):  # a data file cut since: read the files, say what is lost
        for name, size in files.items():
            try:
                if os.path.getsize(os.path.join(run_dir, str(name))) < int(size):
                    return None
            except (OSError, TypeError, ValueError):
                return None
    return content


def _num(v: object) -> float | None:
    """A number of the summary file (``_backends._summary.to_json_float``'s output);
    read here without importing numpy, which ``ls`` does not need."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and v in _NONFINITE:
        return _NONFINITE[v]
    raise ValueError(f"not a number: {v!r}")


def _nan_if_none(v: float | None) -> float:
    return math.nan if v is None else v


def _from_summary(run_dir: str, content: dict[str, Any]) -> RunData | None:
    data = RunData(path=run_dir, source=os.path.join(run_dir, SUMMARY_NAME), kind="summary")
    try:
        data.records = int(content["records"])
        for name in ("steps", "iterations", "max_iterations"):
            v = content.get({"steps": "step", "iterations": "iteration"}.get(name, name))
            setattr(data, name, None if v is None else int(v))
        data.first_time = _num(content.get("first_time"))
        data.last_time = _num(content.get("last_time"))
        data.state = str(content.get("state"))
        for tag, t in content["tags"].items():
            curve = [_num(v) for v in t["curve"]]
            data.tags[str(tag)] = TagStats(
                count=int(t["count"]),
                first=_nan_if_none(_num(t["first"])),
                last=_nan_if_none(_num(t["last"])),
                lo=_num(t.get("min")),
                hi=_num(t.get("max")),
                curve=[_nan_if_none(v) for v in curve],
            )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return data


def scan_bytes(run_dir: str, *, live: bool = False, ends: bool = False) -> int:
    """How many bytes of event files :func:`read_run` will read (0: none, or little)."""
    if _load_summary(run_dir, live=live) is not None:
        return 0
    if os.path.isfile(os.path.join(run_dir, JSONL_NAME)):
        return 0
    from .._backends._tbread import TAIL_BYTES

    files = _tb_files(run_dir)
    total = 0
    for p in files:
        try:
            total += os.path.getsize(p)
        except OSError:
            continue
    return 2 * TAIL_BYTES if ends and total > 2 * TAIL_BYTES else total


def read_run(
    run_dir: str,
    *,
    live: bool = False,
    progress: Callable[[int], None] | None = None,
    ends: bool = False,
) -> RunData | None:
    """Read ``run_dir``'s summary, or else its JSONL file, or else its TensorBoard files.

    ``None`` when the folder holds none of them. A JSONL file without a single readable
    record falls back to the TensorBoard files when there are any. ``live``: the run is
    serving ``aoff attach`` now, so a summary it is still refreshing stands for it.
    ``progress`` is called with the bytes of each chunk of event file read. ``ends``
    (``aoff ls``): only the last values, steps and time range are needed, so big event
    files are read at their two ends only (each tag's count and curve then cover only
    the end of the run). Raises ``OSError`` when a file cannot be read.
    """
    content = _load_summary(run_dir, live=live)
    if content is not None:
        got = _from_summary(run_dir, content)
        if got is not None:
            return got
    jsonl = os.path.join(run_dir, JSONL_NAME)
    tb = _tb_files(run_dir)
    data: RunData | None = None
    if os.path.isfile(jsonl):
        data = _read_jsonl(run_dir, jsonl)
        if data.records > 0 or not tb:
            return data
    if tb:
        tb_data = _read_tensorboard(run_dir, tb, progress, ends=ends)
        if data is not None:
            tb_data.notes[:0] = [*data.notes, f"{jsonl}: no readable records; read TensorBoard"]
        return tb_data
    return data
