"""A training script for ``test_signals.py``: logs N steps, says FINISHING, finishes.

``signal_child.py RUN MODE N sync|async [until-signal|forever]`` (the async face holds in
process mode only: in thread mode its pump is a task on this loop): with a hold, the first
``HELD_AFTER`` steps are written (flushed), then the buffer is held (``hold_drains``) while
the rest are logged and ``finish()`` begins, so its drain is under way when the test's
signal comes, however loaded the machine; ``until-signal`` lets it go at the first SIGINT
or SIGTERM, ``forever`` never (only a second Ctrl+C ends the run)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import anyio

from aoff import AsyncOffPolicyLogger, OffPolicyLogger
from aoff._pump._options import PumpMode
from aoff.testing import wait_until
from aoff.testing._faults import hold_drains

#: the steps written before a hold
HELD_AFTER = 100


def main() -> None:
    run, n = sys.argv[1], int(sys.argv[3])
    mode: PumpMode = "process" if sys.argv[2] == "process" else "thread"
    hold = sys.argv[5] if len(sys.argv) > 5 else ""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in an interactive shell
    if sys.argv[4] == "async":
        anyio.run(run_async, run, mode, n, hold)
        return
    log = OffPolicyLogger(
        log_dir=run, backends=("jsonl",), pump=mode, overflow="block", log_backend="tensorboard"
    )
    first = 1
    if hold:
        for first in range(1, HELD_AFTER + 1):
            log.log_step(first, {"x": float(first)})
        log.flush()
        first += 1
        gate = hold_drains(log)
        if hold == "until-signal":
            let_go_at_the_first_signal(gate)
    for i in range(first, n + 1):
        log.log_step(i, {"x": float(i)})
    # FINISHING once finish() waits for its drain, not before the call: a signal that
    # came between the line and the call would be a Ctrl+C in the loop, not in finish()
    threading.Thread(target=say_when_finishing, daemon=True).start()
    report = log.finish()
    print("DONE", report.steps, flush=True)


def let_go_at_the_first_signal(gate: threading.Event) -> None:
    """SIGINT and SIGTERM open ``gate`` first, then do what they did (aoff's handlers,
    or the event loop's, whose own wake-up does not go through this Python handler)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        before = signal.getsignal(signum)
        assert callable(before), (signum, before)

        def opened(sig: int, frame: object, before: Any = before) -> None:
            gate.set()
            before(sig, frame)

        signal.signal(signum, opened)


def say_when_finishing() -> None:
    main = threading.main_thread().ident
    assert main is not None

    def waiting_in_finish() -> bool:
        frame = sys._current_frames().get(main)
        inside = False
        innermost = frame.f_code.co_name if frame is not None else ""
        while frame is not None:
            inside = inside or frame.f_code.co_name == "finish"  # the only one on main's stack
            frame = frame.f_back
        return inside and innermost == "wait"

    # finish() is waiting for the drain (the test waits up to 240 s for the child)
    wait_until(waiting_in_finish, timeout=240, interval=0.001, what="finish() to wait")
    sys.stdout.write("FINISHING\n")  # one write: the pump thread prints too
    sys.stdout.flush()


async def run_async(run: str, mode: PumpMode, n: int, hold: str) -> None:
    async with AsyncOffPolicyLogger(
        log_dir=run, backends=("jsonl",), pump=mode, overflow="block", log_backend="tensorboard"
    ) as log:
        first = 1
        if hold:  # as the sync face's (the face's SIGTERM watcher is on by now)
            for first in range(1, HELD_AFTER + 1):
                await log.log_step(first, {"x": float(first)})
            await log.aflush()
            first += 1
            gate = hold_drains(log)
            if hold == "until-signal":
                let_go_at_the_first_signal(gate)
        for i in range(first, n + 1):
            await log.log_step(i, {"x": float(i)})
        sys.stdout.write("FINISHING\n")
        sys.stdout.flush()
    # leaving the block drains; a SIGTERM meanwhile is raised after it as SystemExit(143)


if __name__ == "__main__":
    main()
