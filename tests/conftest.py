"""Shared fixtures and factories for the test suite.

* every ``@pytest.mark.anyio`` test runs on asyncio and on trio (``anyio_backend``);
* ``restore_streams`` fails a test that leaves ``sys.stdout``/``sys.stderr`` redirected;
* plain functions, imported with ``from .conftest import ...``: loggers wired to test
  backends (:func:`make_logger`, :func:`make_async_logger`), and read-back of what a run
  left on disk through the formats' own readers (TensorBoard's ``EventAccumulator``,
  strict JSON for JSONL).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import pytest

from aoff import AsyncOffPolicyLogger, Backend, Display, OffPolicyLogger, Overflow
from aoff.testing import Probe, RecordingDisplay, probe
from aoff.testing._faults import remove_sigterm_handler

if TYPE_CHECKING:
    from rich.console import Console
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from aoff._pump._options import PumpMode


# JAX programs here (PureJaxRL-shaped PPO, rejax, the guides' examples) are compiled once
# each and run for a few updates, so XLA's compile time is most of their test: without
# its backend optimisations it is ~30 % less CPU (rejax PPO 24.6 -> 17.5 s). What the tests
# compare (logged values against what the same compiled program returns) does not depend
# on how XLA optimised it. Set before JAX is imported; children (docs, examples) inherit it.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
)


# Bytecode is cached for this suite even where PYTHONDONTWRITEBYTECODE=1 is set (as on the
# CI machine): without a cache every process compiles what it imports from source — each
# of ~300 agents aoff's ~115 modules (an editable install's sources are never compiled by
# pip), each xdist worker pytest's rewrite of ~120 test modules (collection 26-27 s of CPU
# a worker uncached, 13-15 s cached, measured here). Set before the test modules are
# imported; the agents, examples and children the tests start inherit it. The caches go
# where Python and pytest always put them (__pycache__, ignored by git).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker a core and one more. A test spends much of its time waiting on
    the agent and child processes it starts, so a worker a core left the cores ~30 % idle
    (CI's 2 cores: 685 s of CPU in 480 s); the extra worker fills that without the load
    the suite is already proven to stand (it passes beside a CPU hog a core)."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each module of tests marked ``cluster`` (a local Ray cluster, a Tune sweep) at the
    head of a worker's share, in their order; the other tests after them, in theirs.

    ``--dist worksteal`` hands each worker a contiguous slice of this order (the first
    worker ``n // workers`` tests, the next a share of the rest, ...) and an idle worker
    steals half of the *end* of the longest queue, so a module put at a slice's head
    starts at once: the suite's longest tests never wait at the end of a slice to become
    its tail, and a module's Ray session or sweep is built once (split across workers, it
    was built on each). One module a slice: the Ray cluster's test and the Tune sweeps run
    side by side, not back to back on one worker (beside two CPU hogs that chain alone was
    most of the suite's time). Without workers (``-n0``) they simply come first."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    cluster: dict[str, list[pytest.Item]] = {}
    rest: list[pytest.Item] = []
    for item in items:
        if item.get_closest_marker("cluster") is None:
            rest.append(item)
        else:
            cluster.setdefault(item.nodeid.split("::")[0], []).append(item)
    items[:] = _slices_headed_by(list(cluster.values()), rest, workers)


def _slices_headed_by(
    heads: list[list[pytest.Item]], rest: list[pytest.Item], workers: int
) -> list[pytest.Item]:
    """``heads`` (groups of tests) each at the start of one of the ``workers`` slices that
    worksteal cuts the order into first (more groups than slices: the extra ones follow
    the first), ``rest`` filling each slice up to its size."""
    total = sum(map(len, heads)) + len(rest)
    shares: list[list[pytest.Item]] = [[] for _ in range(max(1, min(workers, total)))]
    for k, group in enumerate(heads):
        shares[k % len(shares)].extend(group)
    order: list[pytest.Item] = []
    left = total
    for i, share in enumerate(shares):
        size = left // (len(shares) - i)  # what worksteal sends this slice
        chunk = share + rest[: max(0, size - len(share))]
        del rest[: len(chunk) - len(share)]
        order += chunk
        left -= len(chunk)
    return order + rest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def restore_streams() -> Iterator[None]:
    """Fail the test if it leaves sys.stdout/sys.stderr redirected."""
    out, err = sys.stdout, sys.stderr
    yield
    ok = sys.stdout is out and sys.stderr is err
    sys.stdout, sys.stderr = out, err
    assert ok, "dashboard left sys.stdout/sys.stderr redirected"


# -- loggers --------------------------------------------------------------------------------
class LoggerOptions(TypedDict, total=False):
    """The constructor arguments the factories pass through (see ``OffPolicyLogger``)."""

    algo_name: str
    max_iterations: int
    refresh_per_second: int
    capacity: int
    overflow: Overflow
    finish_timeout: float
    flush_secs: float
    console: Console | None
    display: Display | None
    clock: Callable[[], float] | None
    handle_sigterm: bool
    pump: PumpMode
    system_interval: float


def make_logger(*backends: Backend, **kw: Unpack[LoggerOptions]) -> OffPolicyLogger:
    """A sync logger that writes to ``backends`` only: no files of its own
    (``log_backend="none"``), a :class:`RecordingDisplay` unless ``display=`` is given,
    and no SIGTERM handler unless ``handle_sigterm=True`` (the test process keeps its own),
    and no system metrics unless ``system_interval=`` is given (a sample landing after
    ~1 s would add ``system/*`` scalars to whichever step comes next).

    Backend and display objects keep the pump in this process (``pump="process"``
    falls back to a thread for them)."""
    kw.setdefault("display", RecordingDisplay())
    kw.setdefault("handle_sigterm", False)
    kw.setdefault("system_interval", 0)
    return OffPolicyLogger(log_backend="none", backends=backends, **kw)


def make_async_logger(*backends: Backend, **kw: Unpack[LoggerOptions]) -> AsyncOffPolicyLogger:
    """The async twin of :func:`make_logger`, with the same defaults."""
    kw.setdefault("display", RecordingDisplay())
    kw.setdefault("handle_sigterm", False)
    kw.setdefault("system_interval", 0)
    return AsyncOffPolicyLogger(log_backend="none", backends=backends, **kw)


def jsonl_agent_logger(run: Path, **kw: Any) -> OffPolicyLogger:
    """A sync logger with the default pump (the agent) writing only JSONL into ``run``
    (no SIGTERM handler, no system metrics)."""
    return OffPolicyLogger(
        log_dir=str(run),
        log_backend="none",
        backends=("jsonl",),
        handle_sigterm=False,
        system_interval=0,
        **kw,
    )


def pump_thread(log: OffPolicyLogger) -> threading.Thread:
    """The thread that runs ``log``'s pump (thread mode)."""
    thread = probe(log).pump_thread
    assert thread is not None, probe(log).pump_place
    return thread


@pytest.fixture
def threads_started() -> Callable[..., set[str]]:
    """``threads_started(*names)``: the names among ``names`` of live threads that this
    test started. A thread that an earlier test in the same worker left ending is not
    this test's: a pump whose ``finish()`` gave up returns before its daemon thread
    ends, and under load that thread can outlive its test by seconds."""
    before = set(threading.enumerate())
    return lambda *names: {
        t.name for t in threading.enumerate() if t.name in names and t not in before
    }


# -- children a test sends Ctrl+C -------------------------------------------------------------
def sigint_as_in_a_shell() -> None:
    """``preexec_fn`` for a child that a test sends Ctrl+C (SIGINT): SIGINT's default
    action back, as a program started from an interactive shell has it. A runner started
    with SIGINT ignored (``nohup``, a backgrounded job, ``(trap '' INT; pytest)``) hands
    that ignore down to every child, and an ignored Ctrl+C never arrives."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# -- letting time pass on purpose --------------------------------------------------------------
def hold_still(seconds: float, why: str) -> None:
    """Let ``seconds`` pass on purpose, and say ``why``: a stretch in which something
    must *not* happen (no condition can wait for a thing that does not come), or a
    loop paced like training. Never a stand-in for something that does come: wait for
    that with ``aoff.testing.wait_until``."""
    assert why, "say why the test holds still"
    time.sleep(seconds)


async def ahold_still(seconds: float, why: str) -> None:
    """:func:`hold_still` in an async test: the event loop runs meanwhile."""
    import anyio

    assert why, "say why the test holds still"
    await anyio.sleep(seconds)


def log_until_the_loss_is_seen(log: OffPolicyLogger, p: Probe, n: int) -> int:
    """Log a step every 10 ms after step ``n`` until a shipping round finds the agent
    gone (``probe(log).agent_lost``); the last step logged."""
    deadline = time.monotonic() + 60
    while p.agent_lost is None:
        assert time.monotonic() < deadline, "the lost agent was never noticed"
        n += 1
        log.log_step(n, {"x": float(n)})
        hold_still(0.01, "a training step takes time")
    return n


async def alog_until_the_loss_is_seen(log: AsyncOffPolicyLogger, p: Probe, n: int) -> int:
    """:func:`log_until_the_loss_is_seen` on the async face: the shipper task ships a
    round meanwhile."""
    import anyio

    with anyio.fail_after(60):
        while p.agent_lost is None:
            n += 1
            await log.log_step(n, {"x": float(n)})
            await ahold_still(0.01, "a training step takes time")
    return n


# -- reading a run back -----------------------------------------------------------------------
def tensorboard_accumulator(path: str | os.PathLike[str]) -> EventAccumulator:
    """TensorBoard's own reader over a run directory or one event file, loaded, every
    scalar kept (no sampling). ``Reload`` raises on a corrupt file."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(os.fspath(path), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def read_tensorboard(log_dir: str | os.PathLike[str]) -> dict[str, list[tuple[int, float]]]:
    """Every scalar tag in ``log_dir`` as ``(step, value)`` pairs, in file order."""
    acc = tensorboard_accumulator(log_dir)
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def read_tensorboard_iterations(log_dir: str | os.PathLike[str]) -> list[int]:
    """The ``axis/iteration`` values in ``log_dir`` (``[]`` when there are none)."""
    return [int(v) for _, v in read_tensorboard(log_dir).get("axis/iteration", [])]


def _no_constants(name: str) -> Any:
    raise AssertionError(f"non-strict JSON constant {name} in a JSONL file")


def loads_strict(line: str) -> Any:
    """One line of JSONL, parsed as strict JSON (a NaN/Infinity literal fails the test)."""
    return json.loads(line, parse_constant=_no_constants)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL file, each parsed with :func:`loads_strict`."""
    return [loads_strict(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def _sigterm_handler_back() -> Iterator[None]:
    """A sync logger made with the default ``handle_sigterm=True`` installs aoff's SIGTERM
    handler for the rest of the process (as in a training script), also from a module
    fixture; each test starts, and ends, with it taken back out."""
    remove_sigterm_handler()
    yield
    remove_sigterm_handler()


@pytest.fixture
def no_cost_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test that counts events exactly (every step written or dropped, none twice):
    a run that lasts over 5 s on a loaded machine also puts aoff's own ``COST`` sample in
    the buffer, which a full buffer then drops and counts: one more than the steps. The
    samples are tested in ``test_rules.py``; here they would only make the totals depend
    on the machine's speed."""
    from aoff._core import _hotcost

    monkeypatch.setattr(_hotcost, "COST_SPAN_NS", 1 << 62)


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (needs root and CAP_SYS_ADMIN; skipped elsewhere)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    try:
        res = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs: {exc}")
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)
