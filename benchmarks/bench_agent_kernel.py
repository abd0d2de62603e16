"""Where the agent's system CPU goes flat out: its syscalls, and its kernel time by kind.

``bench_agent_cpu.py`` prints the agent's system part (``/proc/<pid>/stat``, 10 ms ticks);
this one says what it is made of, for the two flat-out workloads of issue #54 (one
32-metric ``log_step`` a step, and the standard iteration), measured on the running
agent after a warm-up:

* ``--tool strace``: ``strace -c -f`` attached to the agent for the measured steps: each
  syscall's count (the table; ``strace`` slows the agent, so its seconds are not the
  agent's);
* ``--tool perf``: ``perf record -e cpu-clock -g`` on the agent: the share of its CPU
  spent in the kernel, by what brought it there (a file ``write``, a ``futex``: mostly
  the GIL handed between the agent's threads, a page fault, a frame's ``read``...);
* ``--tool none``: the ``/proc`` figures alone (agent CPU, system part, page faults a step).

``--append`` also times what the kernel charges for the bytes written (the files' pages):
CPU a MiB appended to a new file in ``--dir`` (fresh page-cache pages) against a MiB
rewritten in place (pages already resident).

    python benchmarks/bench_agent_kernel.py [--iterations 25000] [--tool strace|perf|none]
        [--append] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _workload import iterate
from bench_agent_cpu import agent_pid, cpu_seconds, logger, system_and_faults, wide

#: perf's kernel frames that say why the agent was in the kernel, first match wins
KINDS = (
    ("__x64_sys_futex", "futex (GIL hand-overs, queues)"),
    ("ksys_write", "write (the files' bytes, acks)"),
    ("ksys_read", "read (frames)"),
    ("exc_page_fault", "page faults"),
    ("__sys_recvfrom", "recvfrom"),
    ("__sys_sendto", "sendto (acks, loop wake-ups)"),
    ("do_epoll_wait", "epoll_wait"),
    ("__x64_sys_mprotect", "mprotect (heaps grown)"),
    ("__x64_sys_madvise", "madvise"),
    ("sysvec", "interrupts"),
)


def _attach(tool: str, pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    if tool == "strace":
        cmd = ["strace", "-c", "-f", "-o", str(out), "-p", str(pid)]
    elif tool == "perf":
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-g", "-o", str(out)]
        cmd += ["-p", str(pid)]
    else:
        return None
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the measured steps start
    return proc


def _kernel_kinds(data: Path) -> list[str]:
    """perf's samples of the agent: the kernel's share of them, by kind."""
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "tid,ip,sym,dso"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total, kinds = 0, collections.Counter[str]()
    for sample in script.split("\n\n"):
        frames = [ln.split() for ln in sample.strip().splitlines()[1:] if ln.strip()]
        if not frames and not sample.strip():
            continue
        total += 1
        if not frames or "kernel" not in frames[0][-1]:
            continue
        names = [f[1] for f in frames if len(f) > 1]
        kind = next((k for key, k in KINDS if key in names), "other")
        kinds[kind] += 1
    kernel = sum(kinds.values())
    lines = [f"  kernel: {kernel / max(total, 1) * 100:.1f} % of {total:,} samples of the agent"]
    lines += [f"    {k:34s} {n / max(total, 1) * 100:5.1f} %" for k, n in kinds.most_common()]
    return lines


def measure(name: str, body: Callable[[Any, int, int], None], n: int, tool: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = logger(Path(tmp) / "run")
        pid = agent_pid(log)
        warm = max(n // 10, 100)
        body(log, 1, warm)
        log.flush()
        out = Path(tmp) / f"{tool}.out"
        proc = _attach(tool, pid, out)
        sys0, faults0 = system_and_faults(pid)
        cpu0 = cpu_seconds(pid)
        body(log, warm + 1, n)
        log.flush()
        cpu = cpu_seconds(pid) - cpu0
        sys1, faults1 = system_and_faults(pid)
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            proc.wait()
        report = log.finish()
        print(
            f"{name}, n={n:,}: agent CPU {cpu / n * 1e6:.1f} us a step, system "
            f"{(sys1 - sys0) / n * 1e6:.1f} us, {(faults1 - faults0) / n:.2f} page faults; "
            f"dropped {report.dropped_events:,}"
        )
        if tool == "strace":
            print("\n".join("  " + ln for ln in out.read_text().splitlines()))
        elif tool == "perf":
            print("\n".join(_kernel_kinds(out)))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def append_cost(folder: Path, mib: int) -> None:
    """CPU a MiB appended to a new file (new page-cache pages) and a MiB rewritten in
    place (resident pages): what a backend's ``write`` pays is mostly the former."""
    block = os.urandom(1 << 20)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        fd = os.open(Path(tmp) / "append", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        t = _cpu()
        for _ in range(mib):
            os.write(fd, block)
        appended = (_cpu() - t) / mib
        os.close(fd)
        fd = os.open(Path(tmp) / "rewrite", os.O_WRONLY | os.O_CREAT)
        os.pwrite(fd, block, 0)
        t = _cpu()
        for _ in range(mib):
            os.pwrite(fd, block, 0)
        rewritten = (_cpu() - t) / mib
        os.close(fd)
    print(
        f"in {folder}, {mib} MiB: appended {appended * 1e6:,.0f} us of CPU a MiB, "
        f"rewritten in place {rewritten * 1e6:,.0f} us a MiB"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=25_000)
    found = "strace" if shutil.which("strace") else "perf" if shutil.which("perf") else "none"
    ap.add_argument("--tool", choices=("strace", "perf", "none"), default=found)
    ap.add_argument("--append", action="store_true", help="also time appending a MiB")
    ap.add_argument("--append-mib", type=int, default=200)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}; {args.tool}; python {sys.version.split()[0]}")
    measure("one 32-metric log_step, flat out", wide, args.iterations, args.tool)
    measure("standard iteration, flat out", iterate, args.iterations, args.tool)
    if args.append:
        append_cost(args.dir, args.append_mib)


if __name__ == "__main__":
    main()
