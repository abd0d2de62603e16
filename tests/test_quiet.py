"""``quiet_this_thread``: a backend's thread's prints (trackio's) are dropped while
every other thread's, the dashboard's own lines among them, still reach ``sys.stdout``
(``contextlib.redirect_stdout`` swallowed them all for as long as trackio's call
lasted)."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from aoff._backends._quiet import quiet_this_thread


def test_only_the_quiet_threads_prints_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    inside, printed = threading.Event(), threading.Event()

    def backend_call() -> None:
        with quiet_this_thread():
            print("* Trackio project initialized")  # trackio's own line
            inside.set()
            assert printed.wait(30)  # the dashboard prints while the call lasts

    t = threading.Thread(target=backend_call)
    t.start()
    assert inside.wait(30)
    print("trackio logging to project: p")  # another thread: the dashboard's line
    printed.set()
    t.join(30)
    assert out.getvalue() == "trackio logging to project: p\n"
    assert sys.stdout is out  # put back
