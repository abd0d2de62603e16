"""The one producer logger (``_faces/_producer.py``) under ``log.remote()`` and Ray's
``link.remote()``: both are it, over a ``Sender`` each (the socket's ``Conn``, Ray's
``Pusher``); what differs is only their names and how events leave."""

from __future__ import annotations

import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aoff import RemoteLogger, RemoteReport
from aoff._channel._sender import Conn
from aoff._channel._sending import Sender
from aoff._core._buffer import Overflow
from aoff._faces._producer import ProducerLogger
from aoff._ray._producer import RayLogger
from aoff._ray._pusher import Pusher


def _senders(conn: Conn, pusher: Pusher) -> tuple[Sender, Sender]:
    """mypy checks that both shippers implement the protocol the logger is written over."""
    return conn, pusher


@dataclass(frozen=True)
class _Link:
    """A Ray link's settings, without a cluster (nothing here is sent)."""

    hub: Any = None
    capacity: int = 100
    overflow: Overflow = "drop_oldest"
    timeout: float = 1.0
    interval: float = 0.1
    batch: int = 10
    max_in_flight: int = 2
    media_budget: int = 1 << 20


def test_both_producers_are_the_one_logger_and_name_themselves(tmp_path: Path) -> None:
    """Closed before a first call: nothing was sent, the run confirms none; a pickled
    copy stays closed, and its error names its own class and the call that gives a new
    one."""
    cases = (
        (RemoteLogger(tmp_path, "c0"), "RemoteLogger", "log.remote()"),
        (RayLogger(_Link(), "c1"), "RayLogger", "link.remote()"),
    )
    for log, noun, again in cases:
        assert isinstance(log, ProducerLogger)
        assert log.close() == RemoteReport(log.name, received=0)
        copy = pickle.loads(pickle.dumps(log))
        assert type(copy) is type(log) and copy.name == log.name
        after = f"log_step() on {noun} '{log.name}' after its close(); get a new one with "
        with pytest.raises(RuntimeError, match=re.escape(after + again)):
            copy.log_step(2, {"x": 1.0})
