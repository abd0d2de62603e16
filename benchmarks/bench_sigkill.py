"""How much a SIGKILL loses: the age of the newest record on disk when the process dies.

Runs ``tests/exit_child.py forever`` (sync face, TensorBoard + JSONL, ``flush_secs=0.5``,
logging ~10,000 steps/s), kills it with SIGKILL while it logs, and compares the kill time
with the ``wall_time`` of the last complete JSONL line, and the last iteration the child
had logged with the last one on disk. SIGKILL cannot be caught, so this is what the
backends had already handed to the OS (they write unbuffered, once per pump tick).

    python benchmarks/bench_sigkill.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = Path(__file__).resolve().parent.parent / "tests" / "exit_child.py"


def one() -> tuple[float, int]:
    d = Path(tempfile.mkdtemp(prefix="aoff-sigkill-"))
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), "forever", str(d)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    progress = d / "progress.txt"
    deadline = time.monotonic() + 60
    while not progress.exists() or len(progress.read_text().split()) < 3000:
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the child made no progress")
        time.sleep(0.01)
    time.sleep(0.5)
    t_kill = time.time()
    proc.kill()
    proc.wait()
    lines = (d / "metrics.jsonl").read_text(encoding="utf-8").split("\n")
    if len(lines) < 2:
        raise RuntimeError("nothing on disk")
    last = json.loads(lines[-2])  # lines[-1] is "" or a partly written line
    logged = int(progress.read_text().split()[-1])
    return t_kill - last["wall_time"], logged - int(last["iteration"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    results = [one() for _ in range(a.runs)]
    for age, behind in results:
        print(f"newest record on disk was {age * 1000:5.0f} ms old; {behind:4d} steps lost")
    print(
        f"worst of {a.runs}: {max(r[0] for r in results) * 1000:.0f} ms, "
        f"{max(r[1] for r in results)} steps (flush_secs was 0.5 s)"
    )


if __name__ == "__main__":
    main()
