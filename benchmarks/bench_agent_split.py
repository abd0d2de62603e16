"""Where the running agent's CPU goes, stage by stage, in the agent process itself.

``bench_agent_stages.py`` times each stage alone, on one thread, with nothing beside it;
in the agent the same stages run beside each other (the pump's loop, the receiver, one
writer thread a backend) and cost more. This runs the flat-out workloads of
``bench_agent_cpu.py`` (the standard iteration; one 32-metric ``log_step``) with the
agent's stage functions wrapped, in the agent, by a timer of the calling thread's CPU
(``time.thread_time``), put there by a ``sitecustomize`` module on the agent's
``PYTHONPATH`` (a temporary folder; only a process started as ``aoff._agent`` is
touched). Each stage's µs an iteration are its CPU over every iteration the agent saw
(warm-up included), beside the agent's CPU an iteration as ``bench_agent_cpu.py`` reads
it; "rest" is what no wrapped stage holds (the receiver's reads, the pump's loop and
acks, the system sampler, the collector), start-up left out.

The wrapped names exist since the run fold, so the same file runs against an older
checkout's ``src`` for a before (``PYTHONPATH=<old>/src``)::

    python benchmarks/bench_agent_split.py [--iterations 25000] [--only standard] [--jsonl-parts]
        [--tensorboard-parts]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

#: the stages: (module, class, method, label)
STAGES = (
    ("aoff._pump._backlog", "Backlog", "drain", "unpickle"),
    ("aoff._pump._intake", "Intake", "fold", "fold"),
    ("aoff._runfolder.summary._writer", "RunSummary", "add", "summary"),
    ("aoff._core._watch", "Watch", "see", "rules"),
    ("aoff._backends._tensorboard", "TensorBoardBackend", "_write_sync", "tensorboard"),
    ("aoff._backends._jsonl", "JsonlBackend", "_write_sync", "jsonl"),
)
#: ``--jsonl-parts``: the JSONL stage's own parts (inside it, so not in "rest"; a class of
#: ``None``: a module's function): the encoding (``encode``: the lines made), of which the
#: rows made from the table's columns (``rows``: ``tolist`` and a msgspec struct a row) and
#: msgspec's encoding of them (``msgspec``), and the file's ``write`` (the rest of
#: ``encode`` is the rows freed, the finite checks, the walk of the batch and the join)
JSONL_PARTS = (
    ("aoff._backends._jsonl", "JsonlBackend", "_encode", "j.encode"),
    ("aoff._runfolder.lines._jsonl", None, "_table_rows", "j.rows"),
    ("aoff._runfolder.lines._jsonl", None, "_encode_rows", "j.msgspec"),
    ("aoff._backends._file", None, "write_whole", "j.write"),
)

#: ``--tensorboard-parts``: the TensorBoard stage's own parts: the batch's encoding
#: (``t.encode``), of which the tables' rows filled from their template (``t.fill``), and
#: the file's ``write`` (``t.write``)
TENSORBOARD_PARTS = (
    ("aoff._runfolder.tensorboard._format", "TensorBoardFormat", "encode", "t.encode"),
    ("aoff._runfolder.tensorboard._columns", "_Template", "fill", "t.fill"),
    ("aoff._backends._tensorboard", None, "write_whole", "t.write"),
)

HOOK = textwrap.dedent(
    """
    import atexit, json, os, sys, time
    if os.environ.get("AOFF_BENCH_SPLIT") and "aoff._agent" in " ".join(sys.orig_argv):
        import importlib
        spent = {}
        def _wrap(cls, name, label):
            inner = getattr(cls, name)
            def timed(*args, **kwargs):
                t = time.thread_time()
                try:
                    return inner(*args, **kwargs)
                finally:
                    spent[label] = spent.get(label, 0.0) + time.thread_time() - t
            setattr(cls, name, timed)
        for mod, cls, name, label in STAGES + PARTS:
            owner = importlib.import_module(mod)
            _wrap(owner if cls is None else getattr(owner, cls), name, label)
        def _dump():
            with open(os.environ["AOFF_BENCH_SPLIT"], "w") as f:
                json.dump(spent, f)
        atexit.register(_dump)
    """
)


def one(kind: str, n: int, out: Path, env: dict[str, str]) -> dict[str, float]:
    """A child runs ``bench_agent_cpu.standard`` flat out (``kind``: ``standard`` or
    ``log_step_32``) and prints its figures; the agent writes its stages to ``out``."""
    code = textwrap.dedent(
        f"""
        import json, sys, tempfile
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from _workload import iterate
        from bench_agent_cpu import standard, wide
        body = iterate if {kind!r} == "standard" else wide
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(standard(Path(tmp) / "run", {n}, 0.0, body)))
        """
    )
    got = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "AOFF_BENCH_SPLIT": str(out)},
        capture_output=True,
        text=True,
        check=True,
    )
    whole: dict[str, float] = json.loads(got.stdout.strip().splitlines()[-1])
    return whole


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=25_000)
    ap.add_argument(
        "--only", choices=("standard", "log_step_32"), default=None, help="one workload"
    )
    ap.add_argument("--jsonl-parts", action="store_true", help="the JSONL stage's parts too")
    ap.add_argument(
        "--tensorboard-parts", action="store_true", help="the TensorBoard stage's parts too"
    )
    args = ap.parse_args()
    parts = (JSONL_PARTS if args.jsonl_parts else ()) + (
        TENSORBOARD_PARTS if args.tensorboard_parts else ()
    )
    n = args.iterations
    seen = n + max(n // 10, 100)  # the warm-up's iterations too
    print(f"load {os.getloadavg()[0]:.1f}; agent CPU, µs an iteration, flat out, n={n:,}")
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp) / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(f"STAGES = {STAGES!r}\nPARTS = {parts!r}\n" + HOOK)
        path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path}
        for kind in (args.only,) if args.only else ("standard", "log_step_32"):
            out = Path(tmp) / f"{kind}.json"
            whole = one(kind, n, out, env)
            spent = json.loads(out.read_text())
            stages = {label: spent.get(label, 0.0) / seen * 1e6 for *_, label in STAGES}
            agent = whole["agent_us_per_iteration"]
            cells = "  ".join(f"{k} {v:.2f}" for k, v in stages.items())
            if parts:
                inside = {label: spent.get(label, 0.0) / seen * 1e6 for *_, label in parts}
                cells += " (" + "  ".join(f"{k} {v:.2f}" for k, v in inside.items()) + ")"
            print(
                f"  {kind:<12} {cells}  rest {agent - sum(stages.values()):.2f}  "
                f"agent {agent:.1f} (dropped {whole['dropped']:.0f})"
            )


if __name__ == "__main__":
    main()
