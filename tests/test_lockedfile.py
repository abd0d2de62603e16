"""``_backends/_lockedfile.py``: where a file backend's batches are written.

In the agent (``BackendContext.writes_on_loop``) a file on a local disk is written on the
loop's own thread; a network filesystem's, and every file outside the agent, in a worker
thread. Each backend is driven as the runner drives it, and its file read back.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aoff import JsonlBackend, StepRecord, TensorBoardBackend
from aoff._backends import _lockedfile
from aoff._backends._base import BackendContext
from aoff._backends._lockedfile import LockedFileBackend

RECORDS = [StepRecord(i, i, 1.0 + i, (("train/x", float(i)),)) for i in range(1, 6)]


def threads_of_writes(backend: LockedFileBackend) -> list[int]:
    """The thread of each ``_write_sync`` call from now on."""
    seen: list[int] = []
    write: Any = backend._write_sync  # type: ignore[attr-defined]

    def watched(records: Any) -> None:
        seen.append(threading.get_ident())
        write(records)

    backend._write_sync = watched  # type: ignore[attr-defined]
    return seen


def make(kind: str, tmp_path: Path) -> LockedFileBackend:
    if kind == "jsonl":
        return JsonlBackend(tmp_path / "metrics.jsonl")
    return TensorBoardBackend(tmp_path)


def steps_written(kind: str, tmp_path: Path) -> list[int]:
    if kind == "jsonl":
        lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
        return [json.loads(line)["step"] for line in lines]
    acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
    acc.Reload()
    return [e.step for e in acc.Scalars("train/x")]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["jsonl", "tensorboard"])
@pytest.mark.parametrize(
    ("on_loop", "local", "here"),
    [(True, True, True), (True, False, False), (False, True, False)],
    ids=["agent-local-disk", "agent-network-fs", "training-process"],
)
async def test_batches_are_written_on_the_loop_only_in_the_agent_on_a_local_disk(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    on_loop: bool,
    local: bool,
    here: bool,
) -> None:
    asked: list[str] = []

    def on_local_disk(path: str) -> bool:
        asked.append(path)
        return local

    monkeypatch.setattr(_lockedfile, "on_local_disk", on_local_disk)
    backend = make(kind, tmp_path)
    await backend.open(BackendContext(writes_on_loop=on_loop))  # type: ignore[attr-defined]
    assert backend.writes_here is here
    assert asked == (
        [str(tmp_path / "metrics.jsonl") if kind == "jsonl" else str(tmp_path)] if on_loop else []
    )
    seen = threads_of_writes(backend)
    await backend.write(RECORDS[:3])  # type: ignore[attr-defined]
    await backend.write(RECORDS[3:])  # type: ignore[attr-defined]
    await backend.close()  # type: ignore[attr-defined]
    loop_thread = threading.get_ident()
    assert len(seen) == 2
    assert all((t == loop_thread) is here for t in seen), (seen, loop_thread)
    assert steps_written(kind, tmp_path) == [1, 2, 3, 4, 5]
