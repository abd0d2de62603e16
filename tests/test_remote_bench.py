"""Smoke test of ``benchmarks/bench_remote.py`` at tiny sizes (no timing is asserted).

It runs as a user runs it, in a subprocess: it must finish, print both tables with a
row per contender, and say it read every producer's iterations back from disk (the
benchmark itself asserts that each of the 4 spawned producers' rows are complete and
in order, and that nothing was dropped; a failed check exits non-zero).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # 4 spawned producer processes and an agent (~5 s)
def test_bench_remote_prints_tables_and_reads_everything_back() -> None:
    n = 50
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_remote.py"),
            *("--iterations", str(n), "--hot-iterations", "300", "--rounds", "2"),
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    out = proc.stdout
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{proc.stderr}"
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and not ln.startswith("| ---")]
    hot = [r for r in rows if r.startswith("| `")]
    assert [r.split("|")[1].strip() for r in hot] == [
        "`RemoteLogger`",
        "`OffPolicyLogger` (in-process face)",
    ]
    assert all(r.count(" us ") == 3 for r in hot), hot
    tp = [r for r in rows if "4 spawned processes" in r or "the face alone" in r]
    assert len(tp) == 2 and all(f"| {4 * n} |" in r for r in tp), tp
    assert f"read back: {8 * n} JSONL rows, each producer's {n} iterations complete" in out
    assert "nothing dropped" in out
