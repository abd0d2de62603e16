"""``aoff ls``/``show`` reading runs: the run summary, the fast event reader, and the edges.

* the fast reader (``_runfolder/tensorboard/_scan``) returns what TensorBoard's own readers return,
  on files aoff wrote (NaN, infinities, histograms, a config) and on files torch's
  ``SummaryWriter`` wrote (``simple_value``, ``new_style`` tensor scalars, a histogram,
  text, and a resumed run's ``purge_step``);
* the summary file a run leaves agrees with its event files, is used when present, and
  is not trusted when a killed run left it behind;
* ``ls`` follows symlinked run folders (once), skips an unreadable one with one line,
  and Ctrl+C ends ``ls``/``show`` with one line and exit status 130.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from aoff import OffPolicyLogger
from aoff._cli._show import run_ls
from aoff._core._records import StepRecord
from aoff._runfolder.reading._runs import read_run
from aoff._runfolder.summary._writer import CURVE_POINTS, SUMMARY_NAME, RunSummary
from aoff._runfolder.tensorboard._scan import scan_files
from aoff.testing import wait_until

from .conftest import hold_still, sigint_as_in_a_shell

ROOT = Path(__file__).resolve().parent.parent


def _event_files(run_dir: Path) -> list[str]:
    return sorted(str(p) for p in run_dir.glob("events.out.tfevents.*"))


def _tb_scalars(run_dir: Path) -> dict[str, tuple[list[int], list[float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {
        tag: ([e.step for e in acc.Scalars(tag)], [e.value for e in acc.Scalars(tag)])
        for tag in acc.Tags()["scalars"]
    }


def _same(got: np.ndarray, want: list[float]) -> bool:
    return bool(np.array_equal(got, np.asarray(want, np.float64), equal_nan=True))


@pytest.fixture(scope="module")
def aoff_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run aoff wrote: odd values, a histogram, a config; TensorBoard files + summary."""
    run_dir = tmp_path_factory.mktemp("aoff-run")
    with OffPolicyLogger(
        log_dir=str(run_dir),
        log_backend="tensorboard",
        console=None,
        display=None,
        max_iterations=40,
        handle_sigterm=False,
        system_interval=0,
        config={"lr": 3e-4, "batch": 256},
    ) as log:
        for i in range(1, 41):
            odd = {7: math.nan, 8: math.inf, 9: -math.inf}.get(i, 0.5 * i)
            log.log_collector(total_steps=i * 100, buffer_size=i)
            if i % 5 == 0:
                log.log_histogram("q/values", np.linspace(-1.0, 1.0, 50) * i)
            log.log_step(i, {"loss": odd, "lr": 1e-3}, reward=-100.0 + i)
        log.finish()
    return run_dir


def test_fast_reader_matches_tensorboard_on_aoff_files(aoff_run: Path) -> None:
    want = _tb_scalars(aoff_run)
    scan = scan_files(_event_files(aoff_run))
    assert set(scan.tags) == set(want) and "train/loss" in want
    for tag, (steps, values) in want.items():
        assert scan.tags[tag].steps.tolist() == steps, tag
        assert _same(scan.tags[tag].values, values), tag
    assert scan.problems == []


def test_fast_reader_matches_tensorboard_on_torch_files(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from tensorboard.backend.event_processing import plugin_event_accumulator
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "torch"
    with SummaryWriter(str(run)) as w:
        for step in range(10):
            w.add_scalar("plain", step * 1.5, step)
            w.add_scalar("new", -step * 0.25, step, new_style=True)
            w.add_scalar("odd", [math.nan, math.inf, 2.0][step % 3], step)
            w.add_histogram("hist", torch.arange(10.0) * step, step)
            w.add_text("note", f"step {step}", step)
    scan = scan_files(_event_files(run))
    want = _tb_scalars(run)
    assert set(want) == {"plain", "odd"}
    for tag, (steps, values) in want.items():
        assert scan.tags[tag].steps.tolist() == steps, tag
        assert _same(scan.tags[tag].values, values), tag
    # a tensor-encoded scalar (new_style): what the scalars plugin's reader sees
    acc = plugin_event_accumulator.EventAccumulator(str(run), size_guidance={"tensors": 0})
    acc.Reload()
    events = acc.Tensors("new")
    assert scan.tags["new"].steps.tolist() == [e.step for e in events] == list(range(10))
    assert _same(
        scan.tags["new"].values, [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events]
    )
    assert set(scan.tags) == {"plain", "odd", "new"}


def test_fast_reader_applies_a_resumed_runs_purge(tmp_path: Path) -> None:
    """``SummaryWriter(purge_step=6)`` writes ``SessionLog.START`` at step 6: the points
    read before it with a step >= 6 are dropped, as ``EventAccumulator`` does."""
    pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "resumed"
    with SummaryWriter(str(run), filename_suffix=".a") as w:
        for step in range(10):
            w.add_scalar("plain", step * 1.5, step)
    with SummaryWriter(str(run), purge_step=6, filename_suffix=".b") as w:
        for step in range(6, 8):
            w.add_scalar("plain", 100.0 + step, step)
    # named so that TensorBoard reads them in the order written: it sorts the names, and
    # torch's hold a per-process writer count (".9.a" sorts after ".10.b")
    for f in _event_files(run):
        Path(f).rename(run / f"events.out.tfevents.{'2' if f.endswith('.b') else '1'}")
    files = _event_files(run)
    assert len(files) == 2
    scan = scan_files(files)
    steps, values = _tb_scalars(run)["plain"]
    assert steps == [0, 1, 2, 3, 4, 5, 6, 7]
    assert scan.tags["plain"].steps.tolist() == steps
    assert _same(scan.tags["plain"].values, values)


def test_summary_agrees_with_the_event_files(aoff_run: Path, tmp_path: Path) -> None:
    from_summary = read_run(str(aoff_run))
    assert from_summary is not None and from_summary.kind == "summary"
    assert from_summary.state == "finished" and from_summary.max_iterations == 40
    bare = tmp_path / "bare"
    shutil.copytree(aoff_run, bare)
    (bare / SUMMARY_NAME).unlink()
    from_files = read_run(str(bare))
    assert from_files is not None and from_files.kind == "tensorboard"
    assert from_summary.records == from_files.records == 40
    assert (from_summary.steps, from_summary.iterations) == (from_files.steps, 40)
    # the HParams tab's final metrics (hparams/*, written at close at the last step) are
    # not run steps: the summary leaves them out
    assert list(from_summary.tags) == [t for t in from_files.tags if not t.startswith("hparams/")]
    for tag, s in from_summary.tags.items():
        f = from_files.tags[tag]
        assert s.count == f.count, tag
        for a, b in ((s.first, f.first), (s.last, f.last), (s.lo, f.lo), (s.hi, f.hi)):
            # the event files hold float32: compare at its precision
            assert (a is None and b is None) or a == pytest.approx(b, rel=1e-6, nan_ok=True)
    assert from_summary.first_time == pytest.approx(from_files.first_time)
    assert from_summary.last_time == pytest.approx(from_files.last_time)


def test_a_running_summary_is_used_only_while_the_run_is_live(
    aoff_run: Path, tmp_path: Path
) -> None:
    """A summary still marked ``running`` with no live run: the run was killed after it
    was written, so the files (which go further) are read instead."""
    run = tmp_path / "killed"
    shutil.copytree(aoff_run, run)
    content = json.loads((run / SUMMARY_NAME).read_text())
    content["state"] = "running"
    content["records"] = 3
    (run / SUMMARY_NAME).write_text(json.dumps(content))
    dead = read_run(str(run))
    assert dead is not None and (dead.kind, dead.records) == ("tensorboard", 40)
    live = read_run(str(run), live=True)
    assert live is not None and (live.kind, live.records) == ("summary", 3)
    (run / SUMMARY_NAME).write_text("{not json")  # torn: never trusted
    torn = read_run(str(run), live=True)
    assert torn is not None and torn.kind == "tensorboard"


def test_summary_curve_buckets_are_exact_means() -> None:
    """The pump's running summary: exact statistics, and each bucket the mean of the
    finite values of ``stride`` consecutive points, whatever the batch sizes."""
    n = 10_007
    values = np.sin(np.arange(n) / 300.0) * 10
    values[500:520] = math.nan
    acc = RunSummary("unused")
    i = 0
    for size in (1, 7, 4096, 3, 5000, 900):  # uneven batches
        batch = []
        for k in range(i, min(n, i + size)):
            extra = (("sometimes", float(k)),) if k % 2 else ()
            batch.append(StepRecord(k, k, float(k), (("v", float(values[k])), *extra)))
        acc.add(batch)
        i += size
    content = acc.snapshot("finished")
    v = content["tags"]["v"]
    finite = values[np.isfinite(values)]
    assert (v["count"], v["first"], v["last"]) == (n, values[0], values[-1])
    assert (v["min"], v["max"]) == (finite.min(), finite.max())
    stride, curve = v["stride"], v["curve"]
    assert CURVE_POINTS <= len(curve) <= 2 * CURVE_POINTS
    for b, got in enumerate(curve):
        chunk = values[b * stride : (b + 1) * stride]
        chunk = chunk[np.isfinite(chunk)]
        assert got == pytest.approx(chunk.mean(), rel=1e-5, abs=1e-5)
    s = content["tags"]["sometimes"]
    assert (s["count"], s["first"], s["last"]) == (n // 2, 1.0, float(n - 2))
    assert list(content["tags"]) == ["v", "sometimes"]
    assert content["records"] == n and content["step"] == n - 1


def test_ls_follows_symlinks_and_skips_unreadable_folders(aoff_run: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(aoff_run, root / "a")
    elsewhere = tmp_path / "elsewhere" / "b"
    shutil.copytree(aoff_run, elsewhere)
    (root / "b-link").symlink_to(elsewhere, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)  # walked once, not forever
    bad = root / "bad"
    bad.mkdir()
    (bad / "events.out.tfevents.1.x").mkdir()  # an event "file" that cannot be read
    (bad / "metrics.jsonl").mkdir()
    out, err = io.StringIO(), io.StringIO()
    assert run_ls(str(root), out, err) == 0
    names = [line.split()[0] for line in out.getvalue().splitlines()[1:]]
    assert names == ["a", "b-link"]
    assert err.getvalue().count("\n") == 1 and "skipped bad" in err.getvalue()


@pytest.mark.parametrize("command", ["show", "ls"])
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path: Path, command: str) -> None:
    """The reader is held on a FIFO standing in for an event file (the test holds its
    writing end open and writes nothing), then gets SIGINT. The reader process has more
    threads than its main one (numpy's BLAS pool), and the kernel may hand SIGINT to any
    of them: the reader must still stop (it once waited in ``read`` for ever)."""
    run = tmp_path / "run"
    run.mkdir()
    fifo = run / "events.out.tfevents.1.fifo"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer from the start: reads wait
    target = run if command == "show" else tmp_path
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "aoff", command, str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=sigint_as_in_a_shell,  # the test's Ctrl+C must reach it
    )
    try:

        def reading() -> bool:  # the reader has the FIFO open (then it can only wait)
            assert proc.poll() is None, proc.communicate()
            try:
                fds = os.listdir(f"/proc/{proc.pid}/fd")
            except FileNotFoundError:
                return False
            for fd in fds:
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{proc.pid}/fd/{fd}") == str(fifo):
                        return True
            return False

        wait_until(reading, timeout=60, interval=0.02, what="the command to open the FIFO")
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        os.close(writer)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert err == f"aoff {command}: interrupted\n"


def test_a_fifo_without_a_writer_reads_as_empty(tmp_path: Path) -> None:
    """A FIFO among the event files with nobody writing to it does not hold ``ls`` up."""
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "events.out.tfevents.1.fifo")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    got = subprocess.run(
        [sys.executable, "-m", "aoff", "ls", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[1].split()[:2] == ["run", "--"], got.stdout


def test_ls_reads_a_big_run_without_summary_at_its_ends_only(tmp_path: Path) -> None:
    """A killed run's (or another tool's) big event file: ``ls`` reads its first and
    last few megabytes and prints what reading it whole gives; a torn end still shows."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_cli import write_run  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    run = tmp_path / "runs" / "big"
    size = write_run(str(run), 14_000, seed=1, summary=False)
    from aoff._runfolder.tensorboard._scan import TAIL_BYTES

    assert size > 2 * TAIL_BYTES
    whole = read_run(str(run))
    ends = read_run(str(run), ends=True)
    assert whole is not None and ends is not None
    assert (ends.steps, ends.first_time, ends.last_time) == (
        whole.steps,
        whole.first_time,
        whole.last_time,
    )
    assert ends.last("reward/mean") == whole.last("reward/mean")
    assert ends.tags["reward/mean"].count < whole.tags["reward/mean"].count  # the tail only
    out = io.StringIO()
    assert run_ls(str(tmp_path / "runs"), out, io.StringIO()) == 0
    assert out.getvalue().splitlines()[1].split()[1] == f"{whole.steps:,}"
    (event_file,) = run.iterdir()
    with open(event_file, "r+b") as f:
        f.truncate(size - 5)
    out = io.StringIO()
    assert run_ls(str(tmp_path / "runs"), out, io.StringIO()) == 0
    assert out.getvalue().splitlines()[1].endswith("(damaged file: see aoff show)")


def test_a_long_read_shows_a_progress_bar_on_a_terminal_only(
    aoff_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pty

    from rich.console import Console

    from aoff._cli import _progress, _show

    run = tmp_path / "bare"
    shutil.copytree(aoff_run, run)
    (run / SUMMARY_NAME).unlink()  # the event files are read
    monkeypatch.setattr(_progress, "PROGRESS_MIN_BYTES", 0)  # as if they were big
    master, slave = pty.openpty()
    try:
        with open(slave, "w", encoding="utf-8") as tty:
            assert _show.run_show(str(run), Console(file=io.StringIO()), tty) == 0
            tty.flush()
            drawn = os.read(master, 65536).decode("utf-8", "replace")
    finally:
        os.close(master)
    assert "reading event files" in drawn
    piped = io.StringIO()
    assert _show.run_show(str(run), Console(file=io.StringIO()), piped) == 0
    assert piped.getvalue() == ""  # not a terminal: no bar, nothing to say


def test_the_summary_is_refreshed_while_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aoff._runfolder.summary import _writer as _summary

    monkeypatch.setattr(_summary, "SUMMARY_INTERVAL", 0.05)
    path = tmp_path / SUMMARY_NAME
    with OffPolicyLogger(
        log_dir=str(tmp_path),
        log_backend="none",
        backends=("jsonl",),
        pump="thread",  # in this process, where the interval is patched
        display=None,
        console=None,
        max_iterations=1000,
        handle_sigterm=False,
        system_interval=0,
    ) as log:
        deadline = time.monotonic() + 30
        i = 0
        while not path.exists():
            i += 1
            log.log_step(i, {"loss": 1.0 / i}, reward=float(i))
            hold_still(0.01, "a training step takes time")
            assert time.monotonic() < deadline, "no summary while the run goes on"
        running = json.loads(path.read_text())
        assert running["state"] == "running" and 0 < running["records"] <= i
        assert read_run(str(tmp_path), live=True) is not None
    done = json.loads(path.read_text())
    assert done["state"] == "finished" and done["records"] == i
    assert done["tags"]["reward/mean"]["last"] == float(i)


def test_show_stops_at_a_corrupt_record_as_tensorboard_does(aoff_run: Path, tmp_path: Path) -> None:
    """One event parser, two policies: ``show``/``ls`` stop at a corrupt record in the
    middle of a file and name it, seeing what TensorBoard sees; ``read_scalars`` skips
    the record and reads on."""
    import warnings

    import aoff
    from aoff._runfolder.reading._runfind import tb_files

    broken = tmp_path / "broken"
    shutil.copytree(aoff_run, broken)
    (broken / SUMMARY_NAME).unlink()
    (path,) = tb_files(str(broken))  # the run's steps (aoff's HParams file left out)
    data = bytearray(Path(path).read_bytes())
    ends, pos = [], 0
    while pos < len(data):
        pos += 16 + int.from_bytes(data[pos : pos + 8], "little")
        ends.append(pos)
    at = ends[len(ends) // 2]  # the record after this one: its value's byte flipped
    data[ends[len(ends) // 2 + 1] - 6] ^= 0xFF
    Path(path).write_bytes(data)
    scan = scan_files([path])
    assert scan.problems == [(path, f"a corrupt record at byte {at}")]
    want = _tb_scalars(broken)
    assert set(scan.tags) == set(want)
    for tag, (steps, values) in want.items():
        assert scan.tags[tag].steps.tolist() == steps, tag
        assert _same(scan.tags[tag].values, values), tag
    shown = read_run(str(broken))
    assert shown is not None and shown.kind == "tensorboard"
    assert shown.notes == [f"{path}: a corrupt record at byte {at}; read up to it"]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        df = aoff.read_scalars(broken, tags=["train/loss"])
    assert len(df) > len(want["train/loss"][0])  # the points after the record are read
