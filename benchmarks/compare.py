"""aoff next to its peers: the same off-policy workload through each logger, side by side.

    python benchmarks/compare.py [--iterations N] [--slow-iterations M] [--out DIR]

One iteration = the 4 calls a SAC/TD3 loop makes (``update_collector_timing`` with 5 keys,
``update_done_rates``, ``log_collector``, ``log_step`` with 12 metrics + reward + 4
components; 32 scalars written a step). Contenders, each in a fresh process
(``_contenders.py``), one after the other:

* ``aoff-sync``  — ``OffPolicyLogger``, TensorBoard + JSONL on, live dashboard;
* ``aoff-async`` — ``AsyncOffPolicyLogger``, same, in an asyncio loop that yields once an
  iteration (outside the timed calls);
* ``seedlike``   — ``_seedlike.SeedLikeLogger``: renders the panel (4 Hz throttle) and calls
  ``SummaryWriter.add_scalar`` 32× a step on the training thread, as the seed does;
* ``tb-writer``  — ``torch.utils.tensorboard.SummaryWriter.add_scalar`` 32× alone;
* ``wandb``      — one ``wandb.log(dict, step=)`` an iteration, offline (if installed);
* ``torchrl-tb`` — TorchRL's ``TensorboardLogger``, one ``log_metrics(dict, step=)`` an
  iteration, in this process (if torchrl is installed);
* ``torchrl-process`` — the same logger as ``service_backend="process"`` (TorchRL's
  ``ProcessLogger``: the logger in its own process, each call waiting for its answer);
* ``trackio``    — ``trackio.log(dict, step=)``, local store (its thread sends a batch
  every 0.5 s), read back through trackio's storage reader (if installed).

The last three are the newest designs. Then the libraries' own loggers, each beside aoff's
drop-in for it, the same calls into both (the workload's record as one dict a step):

* ``tianshou-tb`` / ``aoff-tianshou`` — Tianshou's ``TensorboardLogger`` (torch's writer,
  a flush a ``write``) and ``aoff.tianshou.Logger``: one ``log_update_data`` a step;
* ``tune-tbx`` / ``aoff-tune`` — Ray Tune's ``TBXLoggerCallback`` and
  ``aoff.ray.TuneCallback``: one ``log_trial_result`` a step, as Tune's driver loop calls
  it (a stand-in trial object, no cluster), then the trial's end.

The note gives each pair's ratios. ``--quick`` (the test suite's smoke run) leaves all of
these out.

Dashboards (aoff and seedlike) draw a Rich ``Live`` panel on a console that is forced to
be a colour terminal but writes to ``/dev/null`` (full redraws, no terminal speed in the
measurement; ``slowdown.py`` draws to a real pseudo-terminal instead).

Per contender: hot-path median / p99 / p99.9 (``perf_counter_ns`` around one iteration's
calls), wall and CPU time of loop + final close/flush, peak RSS, and a read-back of what
reached the disk (TensorBoard through ``EventAccumulator``, JSONL rows, the offline
``.wandb`` file through ``aoff.testing``). Writes ``results.json``, ``results.md`` and
``latency.png`` into ``--out`` (default ``bench-out/``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from _workload import EXPECTED_TAGS, percentiles_us, step_of

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_contenders.py")

LABELS = {
    "aoff-sync": "aoff sync face (OffPolicyLogger)",
    "aoff-async": "aoff async face (AsyncOffPolicyLogger)",
    "seedlike": "synchronous reference (seed-like: Rich + SummaryWriter)",
    "tb-writer": "torch SummaryWriter alone (add_scalar x32)",
    "wandb": "wandb.log offline",
    "torchrl-tb": "TorchRL TensorboardLogger (log_metrics, in process)",
    "torchrl-process": "TorchRL ProcessLogger (TensorboardLogger, service_backend='process')",
    "trackio": "trackio.log (local store)",
    "tianshou-tb": "Tianshou TensorboardLogger (log_update_data)",
    "aoff-tianshou": "aoff.tianshou.Logger (log_update_data)",
    "tune-tbx": "Ray Tune TBXLoggerCallback (log_trial_result)",
    "aoff-tune": "aoff.ray.TuneCallback (log_trial_result)",
}
ORDER = ("aoff-sync", "aoff-async", "seedlike", "tb-writer", "wandb")
#: the newest designs, each run when its library is installed (not with ``--quick``)
NEWEST = ("torchrl-tb", "torchrl-process", "trackio")
#: the sweep and library loggers, each beside aoff's drop-in for it (not with ``--quick``)
LIBRARIES = ("tianshou-tb", "aoff-tianshou", "tune-tbx", "aoff-tune")
#: the module each contender needs beyond aoff's own
NEEDS = {"wandb": "wandb", "torchrl-tb": "torchrl", "torchrl-process": "torchrl"}
NEEDS["trackio"] = "trackio"
NEEDS.update({"tianshou-tb": "tianshou", "aoff-tianshou": "tianshou"})
NEEDS.update({"tune-tbx": "ray.tune", "aoff-tune": "ray.tune"})
#: the library loggers' tags: ``(prefix of every workload tag, their own extra tags)``
TAGGED = {
    "tianshou-tb": ("update/", ("update/update_step",)),
    "aoff-tianshou": ("update/", ("update/update_step",)),
    "tune-tbx": ("ray/tune/", ("ray/tune/timesteps_total",)),
    "aoff-tune": ("ray/tune/", ("ray/tune/timesteps_total",)),
}
FAST = {"aoff-sync", "aoff-async"}
RATIO_TARGET = 500.0


def installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def torchrl_has_process_logger() -> bool:
    """Whether the installed TorchRL has ``ProcessLogger`` (``service_backend="process"``)."""
    import importlib.util

    spec = importlib.util.find_spec("torchrl")
    if spec is None or not spec.submodule_search_locations:
        return False
    where = os.path.join(next(iter(spec.submodule_search_locations)), "record", "loggers")
    return os.path.exists(os.path.join(where, "process.py"))


# -- running -----------------------------------------------------------------------------
def run_contender(name: str, iterations: int, work: str, no_torch: bool) -> dict[str, Any]:
    """Run one contender in a fresh interpreter; return its JSON result."""
    out_dir = os.path.join(work, name)
    result_file = os.path.join(work, f"{name}.json")
    cmd = [
        sys.executable,
        WORKER,
        name,
        "--iterations",
        str(iterations),
        "--dir",
        out_dir,
        "--result",
        result_file,
    ]
    if no_torch:
        cmd.append("--no-torch")
    env = dict(os.environ, WANDB_MODE="offline", WANDB_SILENT="true", PYTHONHASHSEED="0")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0 or not os.path.exists(result_file):
        raise RuntimeError(
            f"contender {name} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    with open(result_file, encoding="utf-8") as f:
        res: dict[str, Any] = json.load(f)
    res["process_s"] = elapsed
    res["dir"] = out_dir
    res["stderr_tail"] = proc.stderr[-2000:]
    return res


# -- reading back what reached the disk --------------------------------------------------
def check_tensorboard(
    log_dir: str, n: int, prefix: str = "", own: tuple[str, ...] = ()
) -> tuple[bool, str]:
    """Every workload tag (under ``prefix``) at every step; nothing else but aoff's
    system metrics and the logger's ``own`` tags."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(log_dir, size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags().get("scalars", []))
    want_steps = [step_of(i) for i in range(n)]
    problems: list[str] = []
    expected = [prefix + t for t in EXPECTED_TAGS]
    missing = [t for t in expected if t not in tags]
    if missing:
        more = "..." if len(missing) > 5 else ""
        problems.append(f"tags missing: {', '.join(missing[:5])}{more}")
    short = 0
    for tag in expected:
        if tag not in tags:
            continue
        events = acc.Scalars(tag)
        if sorted(e.step for e in events) != want_steps:
            short += 1
            if short <= 3:
                problems.append(f"{tag}: {len(events)}/{n} steps")
    if short > 3:
        problems.append(f"... {short} tags with missing or extra steps")
    if prefix + "axis/iteration" in tags:
        by_step = {e.step: e.value for e in acc.Scalars(prefix + "axis/iteration")}
        wrong = sum(1 for i in range(n) if by_step.get(step_of(i)) != float(i))
        if wrong:
            problems.append(f"axis/iteration wrong at {wrong} steps")
    # aoff's system metrics (sampled once a second by its pump) are its own extra
    extra = sorted(t for t in tags - set(expected) - set(own) if not t.startswith("system/"))
    if extra:
        problems.append(f"unexpected tags: {', '.join(extra[:5])}")
    found = sum(len(acc.Scalars(t)) for t in tags)
    if problems:
        return False, "TensorBoard: " + "; ".join(problems)
    return True, f"TensorBoard ok ({found:,} scalars, {n:,} steps)"


def check_jsonl(path: str, n: int) -> tuple[bool, str]:
    if not os.path.exists(path):
        return False, "JSONL: file missing"
    rows = 0
    bad = 0
    steps: list[int] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            rows += 1
            steps.append(row.get("step"))
            if any(t not in row for t in EXPECTED_TAGS):
                bad += 1
    if rows != n or bad or sorted(steps) != [step_of(i) for i in range(n)]:
        return False, f"JSONL: {rows:,}/{n:,} rows, {bad} rows missing tags"
    return True, f"JSONL ok ({rows:,} rows)"


def check_wandb(run_root: str, n: int) -> tuple[bool, str]:
    files = glob.glob(os.path.join(run_root, "wandb", "offline-run-*", "run-*.wandb"))
    if len(files) != 1:
        return False, f"W&B: expected one offline run file, found {len(files)}"
    from aoff.testing import read_wandb_history as read_history

    rows = read_history(files[0])
    bad = sum(1 for r in rows if any(t not in r for t in EXPECTED_TAGS))
    steps = sorted(r.get("_step", -1) for r in rows)
    if len(rows) != n or bad or steps != [step_of(i) for i in range(n)]:
        return False, f"W&B: {len(rows):,}/{n:,} history rows, {bad} rows missing keys"
    return True, f"W&B ok ({len(rows):,} rows x {len(EXPECTED_TAGS)} keys)"


READ_TRACKIO = """
import json, sys
from trackio.sqlite_storage import SQLiteStorage
rows = SQLiteStorage.get_logs(sys.argv[1], sys.argv[2])
print(json.dumps([{k: v for k, v in r.items() if k != "timestamp"} for r in rows]))
"""


def check_trackio(store: str, n: int) -> tuple[bool, str]:
    """The run in trackio's store under ``store``, read by trackio's storage reader (the
    one its dashboard and command line use), in a process whose ``TRACKIO_DIR`` it is."""
    env = dict(os.environ, TRACKIO_DIR=store)
    run = "SAC_HalfCheetah-v4"
    got = subprocess.run(
        [sys.executable, "-c", READ_TRACKIO, "aoff-bench", run],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if got.returncode != 0:
        return False, f"trackio: reading the store failed: {got.stderr[-300:]}"
    rows = json.loads(got.stdout)
    bad = sum(1 for r in rows if any(t not in r for t in EXPECTED_TAGS))
    steps = sorted(r.get("step", -1) for r in rows)
    if len(rows) != n or bad or steps != [step_of(i) for i in range(n)]:
        return False, f"trackio: {len(rows):,}/{n:,} rows, {bad} rows missing keys"
    return True, f"trackio ok ({len(rows):,} rows x {len(EXPECTED_TAGS)} keys)"


def verify(name: str, run_dir: str, n: int) -> tuple[bool, str]:
    """Read back a contender's output; ``(all present, human-readable summary)``."""
    checks: list[tuple[bool, str]] = []
    if name in ("aoff-sync", "aoff-async", "seedlike", "tb-writer"):
        checks.append(check_tensorboard(run_dir, n))
    if name in ("aoff-sync", "aoff-async"):
        checks.append(check_jsonl(os.path.join(run_dir, "metrics.jsonl"), n))
    if name == "wandb":
        checks.append(check_wandb(run_dir, n))
    if name in ("torchrl-tb", "torchrl-process"):
        checks.append(check_tensorboard(os.path.join(run_dir, "tb"), n))
    if name == "trackio":
        checks.append(check_trackio(run_dir, n))
    if name in TAGGED:
        runs = sorted(
            {os.path.dirname(p) for p in glob.glob(f"{run_dir}/**/*tfevents*", recursive=True)}
        )
        if len(runs) != 1:
            checks.append((False, f"TensorBoard: {len(runs)} run folders in {run_dir}, not 1"))
        else:
            checks.append(check_tensorboard(runs[0], n, *TAGGED[name]))
    return all(ok for ok, _ in checks), "; ".join(text for _, text in checks)


# -- reporting ---------------------------------------------------------------------------
def summarize(res: dict[str, Any]) -> dict[str, Any]:
    n = res["iterations"]
    samples = res["samples_ns"]
    row: dict[str, Any] = {
        "contender": res["name"],
        "label": LABELS[res["name"]],
        "iterations": n,
        **percentiles_us(samples),
        "mean_us": sum(samples) / max(len(samples), 1) / 1000,
        "max_us": max(samples) / 1000 if samples else float("nan"),
        "setup_s": res["setup_s"],
        "loop_s": res["loop_s"],
        "wall_s": res["wall_s"],
        "wall_per_iter_us": res["wall_s"] / n * 1e6,
        "cpu_s": res["cpu_s"],
        "helper_cpu_s": res["helper_cpu_s"],
        "cpu_per_iter_us": res["cpu_s"] / n * 1e6,
        "rss_peak_mb": res["rss_peak_kb"] / 1024,
        "rss_over_base_mb": (res["rss_peak_kb"] - res["rss_base_kb"]) / 1024,
        "torch_imported": res["torch_imported"],
        "info": res.get("info", {}),
    }
    return row


def markdown_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| contender | iterations | hot path median µs | p99 µs | p99.9 µs | worst µs "
        "| wall, loop + close s | wall / iter µs | CPU s | CPU / iter µs "
        "| peak RSS MB (+ over start) | on disk |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
    )
    lines = []
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['iterations']:,} | {r['median_us']:,.2f} | {r['p99_us']:,.1f} "
            f"| {r['p999_us']:,.1f} | {r['max_us']:,.0f} | {r['wall_s']:,.2f} "
            f"| {r['wall_per_iter_us']:,.1f} "
            f"| {r['cpu_s']:,.2f} | {r['cpu_per_iter_us']:,.1f} "
            f"| {r['rss_peak_mb']:,.0f} (+{r['rss_over_base_mb']:,.0f}) | {r['check']} |"
        )
    return head + "\n".join(lines) + "\n"


def plot(results: list[dict[str, Any]], rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    for res, row in zip(results, rows, strict=True):
        s = sorted(x / 1000 for x in res["samples_ns"])
        if not s:
            continue
        n = len(s)
        ys = [(i + 1) / n for i in range(n)]
        ax.step(s, ys, where="post", label=f"{row['label']} (n={n:,})")
    ax.set_xscale("log")
    ax.set_xlabel("per-iteration hot-path time, µs (log scale; 4 calls, 32 scalars)")
    ax.set_ylabel("fraction of iterations ≤ x (ECDF)")
    ax.set_ylim(0, 1.0)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("Time the training loop spends in the logger, per iteration")
    fig.legend(loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path)
    plt.close(fig)


def machine_line() -> str:
    try:
        load = os.getloadavg()
        load_s = f"load {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}"
    except OSError:  # pragma: no cover
        load_s = "load n/a"
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {load_s}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=20_000, help="aoff's iterations")
    ap.add_argument(
        "--slow-iterations",
        type=int,
        default=None,
        help="iterations for seedlike, tb-writer and wandb (default: iterations / 10)",
    )
    ap.add_argument("--out", default="bench-out", help="folder for results.json/.md/.png")
    ap.add_argument(
        "--contenders",
        default=None,
        help=f"comma-separated subset of {','.join(ORDER + NEWEST + LIBRARIES)} (default: all "
        "installed; --quick: the first five)",
    )
    ap.add_argument(
        "--no-torch",
        action="store_true",
        help="do not import torch in workers that do not need it (faster start)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke-test size: 300/100 iterations, --no-torch (numbers not meaningful)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the contenders' output folders")
    ap.add_argument(
        "--aoff-pump",
        choices=("thread", "process"),
        default="thread",
        help="thread: aoff draws its dashboard into a Console here (the pump in this "
        "process); process: no dashboard, the pump in the agent (a script's default)",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.iterations = 300 if args.iterations == 20_000 else args.iterations
        args.slow_iterations = args.slow_iterations or 100
        args.no_torch = True
    slow_n = args.slow_iterations or max(args.iterations // 10, 1)
    default = ORDER if args.quick else ORDER + NEWEST + LIBRARIES
    chosen = args.contenders or ",".join(default)
    names = [n.strip() for n in chosen.split(",") if n.strip()]
    unknown = [n for n in names if n not in ORDER + NEWEST + LIBRARIES]
    if unknown:
        ap.error(f"unknown contenders: {unknown}")
    skipped: list[str] = []
    for name in list(names):
        if name in NEEDS and not installed(NEEDS[name]):
            names.remove(name)
            skipped.append(f"{name} ({NEEDS[name]} not installed)")
        elif name == "torchrl-process" and not torchrl_has_process_logger():
            names.remove(name)
            skipped.append(f"{name} (the installed torchrl has no ProcessLogger)")

    os.environ["AOFF_COMPARE_PUMP"] = args.aoff_pump  # read by the workers (_contenders)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()
    load_before = machine_line()
    print(f"machine: {load_before}")
    work = tempfile.mkdtemp(prefix="aoff-compare-")
    results: list[dict[str, Any]] = []
    for name in names:
        n = args.iterations if name in FAST else slow_n
        print(f"running {name:<10} ({n:,} iterations, fresh process) ...", end="", flush=True)
        results.append(run_contender(name, n, work, args.no_torch))
        print(f" {results[-1]['process_s']:.1f} s", flush=True)

    print("reading the outputs back ...", end="", flush=True)
    t_check = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(verify, r["name"], r["dir"], r["iterations"]) for r in results]
        checks = [f.result() for f in futures]
    print(f" {time.perf_counter() - t_check:.1f} s", flush=True)

    rows = []
    for res, (ok, text) in zip(results, checks, strict=True):
        row = summarize(res)
        row["check_ok"] = ok
        row["check_detail"] = text
        row["check"] = "ok" if ok else text
        rows.append(row)

    by_name = {r["contender"]: r for r in rows}
    ratios: dict[str, float] = {}
    ref = by_name.get("seedlike")
    for face in ("aoff-sync", "aoff-async"):
        if ref and face in by_name and by_name[face]["median_us"] > 0:
            ratios[face] = ref["median_us"] / by_name[face]["median_us"]

    table = markdown_table(rows)
    notes = [
        f"Machine: {load_before} at start; {machine_line()} at the end.",
        f"aoff contenders ran {args.iterations:,} iterations, the others {slow_n:,} "
        "(they cost milliseconds an iteration); each contender in a fresh process, one "
        "after the other.",
        "Hot path = perf_counter_ns around one iteration's logging calls on the training "
        "thread (aoff: 4 calls; seed-like: the same 4 calls; SummaryWriter: 32 add_scalar; "
        "wandb: building the dict + one wandb.log). Wall and CPU = loop + final "
        "close/flush (process user+sys from getrusage, plus wandb's service process).",
        "Dashboards (aoff, seed-like) draw a Rich Live panel at refresh_per_second=4 on a "
        "console forced to be a colour terminal, writing to /dev/null.",
        "aoff: log_backend='tensorboard' + backends=('jsonl',), default capacity and "
        "overflow; its pump (fold, TensorBoard + JSONL encoding, rendering) runs "
        "concurrently and its GIL share is part of what is measured. A loop that only "
        "logs outruns any background writer: the sync face buffers and its pump catches up "
        "in finish() (inside 'wall'); 20,000 iterations = 80,000 events fit the default "
        "buffer (100,000 events), much longer logging-only runs would drop (printed).",
        "Every worker imports torch first, as a training process does"
        + (" (not in this run: --no-torch)." if args.no_torch else "."),
    ]
    if skipped:
        notes.append("Skipped: " + ", ".join(skipped) + ".")
    ratio_lines = []
    for face, ratio in ratios.items():
        ratio_lines.append(
            f"{LABELS[face]} hot-path median vs the synchronous reference's: {ratio:,.0f}x "
            f"(target >= {RATIO_TARGET:,.0f}x: {'met' if ratio >= RATIO_TARGET else 'NOT met'})"
        )

    for theirs, ours in (("tianshou-tb", "aoff-tianshou"), ("tune-tbx", "aoff-tune")):
        a, b = by_name.get(theirs), by_name.get(ours)
        if a and b and b["median_us"] > 0 and b["wall_s"] > 0:
            ratio_lines.append(
                f"{LABELS[ours]} vs {LABELS[theirs]}, the same {a['iterations']:,} calls: "
                f"hot-path median {a['median_us'] / b['median_us']:,.1f}x lower, "
                f"p99 {a['p99_us'] / b['p99_us']:,.1f}x, "
                f"wall (loop + close) {a['wall_s'] / b['wall_s']:,.2f}x"
            )

    print()
    print(table)
    for line in ratio_lines:
        print(line)
    all_ok = all(r["check_ok"] for r in rows)
    print("on-disk check:", "ok" if all_ok else "PROBLEMS (see the table)")
    for r in rows:
        print(f"  {r['contender']:<10} {r['check_detail']}")
    for r in rows:
        drops = r["info"].get("report", {}).get("dropped_events")
        if drops:
            print(f"  note: {r['contender']} dropped {drops:,} events (buffer overflow)")

    md = "\n".join(
        [
            "# aoff vs peers: per-iteration logging cost",
            "",
            table,
            *[f"- {x}" for x in ratio_lines],
            "",
            *[f"- {x}" for x in notes],
            "",
            "![latency ECDF](latency.png)",
            "",
        ]
    )
    with open(os.path.join(args.out, "results.md"), "w", encoding="utf-8") as f:
        f.write(md)
    payload = {
        "machine_start": load_before,
        "machine_end": machine_line(),
        "iterations": args.iterations,
        "slow_iterations": slow_n,
        "no_torch": args.no_torch,
        "rows": rows,
        "ratios_vs_seedlike": ratios,
        "notes": notes,
        "skipped": skipped,
    }
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2)
    plot(results, rows, os.path.join(args.out, "latency.png"))
    print(
        f"wrote {args.out}/results.md, results.json, latency.png "
        f"({time.perf_counter() - t_start:.0f} s in all)"
    )
    if not args.keep:
        _rmtree(work)
    else:
        print(f"kept the contenders' output in {work}")
    return 0 if all_ok else 1


def _rmtree(path: str) -> None:
    import shutil

    onerror: Callable[..., None] = lambda *a: None  # noqa: E731 - best effort
    shutil.rmtree(path, onerror=onerror)


if __name__ == "__main__":
    sys.exit(main())
