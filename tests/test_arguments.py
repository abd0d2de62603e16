"""A bad argument costs only itself (docs/reference/input-handling.md).

What is proven here, each with the real parts: an argument no format can hold (a lone
surrogate in a key, a step beyond int64) is refused at the call with an error naming
it, on every face; a config text with a lone surrogate is stored with its escape
written out; ``aoff.tensorboard.SummaryWriter`` raises where torch's own writer raises
(each case played through both); a record a backend cannot encode anyway is dropped
alone and the backend goes on (the runner, with the real TensorBoard, JSONL and CSV
backends); a forked child's ``SummaryWriter`` writes its points; the messages name the
public call. The property test in ``test_properties_arguments.py`` plays random mixes.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

import aoff
from aoff._backends._base import Backend, BackendContext
from aoff._backends._csv import CsvBackend
from aoff._backends._jsonl import JsonlBackend
from aoff._backends._tensorboard import TensorBoardBackend
from aoff._core._records import MediaRecord, StepRecord
from aoff._pump._runner import BackendRunner
from aoff.tensorboard import SummaryWriter

from .conftest import read_tensorboard

WAIT = 20.0
IMG = np.zeros((4, 4, 3), np.uint8)


def rec(step: int, tag: str = "a", value: float = 1.0) -> StepRecord:
    return StepRecord(step, step, 1.0e9 + step, ((tag, value),))


def png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(IMG).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.anyio
async def test_a_record_a_backend_cannot_encode_is_dropped_alone_and_the_backend_goes_on(
    tmp_path: Path,
) -> None:
    """Between good records: one with a tag UTF-8 cannot hold (every format refuses it),
    one with a step beyond int64 (TensorBoard's protobuf refuses it; JSON and CSV hold
    it), and a media record with such a step. Each backend drops what it refused, alone,
    says so once per kind of error, and writes every later record."""
    backends: list[Backend] = [
        TensorBoardBackend(tmp_path / "tb"),
        JsonlBackend(tmp_path / "metrics.jsonl"),
        CsvBackend(tmp_path / "progress.csv"),
    ]
    media = MediaRecord("img", 2**63, 1.0e9, "image", (1, 4, 4, 3), 0.0, {"png": png()})
    batch = [rec(0), rec(1, "bad\ud800"), rec(2), rec(2**63), rec(3)]
    runners = []
    lines: list[str] = []
    async with anyio.create_task_group() as tg:
        for b in backends:
            r = BackendRunner(b, say=lines.append, retry_backoff=0.0)
            runners.append(r)
            tg.start_soon(r.run, BackendContext())
            r.offer(batch)
            r.offer([media])
            r.offer([rec(4), rec(5)])
        for r in runners:
            with anyio.fail_after(WAIT):
                await r.request_flush().wait()
            r.close_input()
    tb, jsonl, csv = runners
    assert [r.status for r in runners] == ["closed"] * 3, lines
    # TensorBoard refused the surrogate tag and both int64 overflows; JSON and CSV the tag
    assert (tb.offered, tb.written, tb.lost, tb.refused) == (8, 5, 3, 3)
    assert (jsonl.written, jsonl.lost, jsonl.refused) == (7, 1, 1)
    assert (csv.written, csv.lost, csv.refused) == (7, 1, 1)
    points = read_tensorboard(tmp_path / "tb")
    assert [s for s, _ in points["a"]] == [0, 2, 3, 4, 5]
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "a" in r] == [0, 2, 2**63, 3, 4, 5]
    csv_steps = (tmp_path / "progress.csv").read_text().splitlines()[1:]
    steps = [int(x.split(",")[0]) for x in csv_steps]
    assert steps == [0, 2, 2**63, 3, 2**63, 4, 5]  # the media row in its place
    tb_lines = [x for x in lines if "'tensorboard'" in x]
    assert len(tb_lines) == 2, lines  # UnicodeEncodeError once, ValueError once
    assert all("skipped and counted, the backend goes on" in x for x in lines)
    assert "a record at step 9223372036854775808 (ValueError: Value out of range" in tb_lines[1]


# -- SummaryWriter against torch's own: each case through both --------------------------------
# (call, args, kwargs); the table in docs/migrate/summarywriter.md lists the same cases
VID = np.zeros((1, 2, 3, 4, 4), np.uint8)
WRITER_CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("add_scalar", ("s", 1.0, 2**63), {}),
    ("add_scalar", ("s", 1.0, 2**64), {}),
    ("add_scalar", ("s", 1.0, -(2**63) - 1), {}),
    ("add_scalar", ("s", 1.0, -(2**63)), {}),
    ("add_scalar", ("s", 1.0, 2**63 - 1), {}),
    ("add_scalar", ("s", 1.0, -1), {}),
    ("add_scalar", ("s", 1.0, math.nan), {}),
    ("add_scalar", ("s", 1.0, math.inf), {}),
    ("add_scalar", ("s", 10**400, 1), {}),
    ("add_scalar", ("s", 2**70, 2), {}),
    ("add_scalar", ("s", math.nan, 3), {}),
    ("add_scalar", ("s\ud800", 1.0, 1), {}),
    ("add_scalar", ("", 1.0, 4), {}),
    ("add_scalar", ("s", 1.0, 5), {"walltime": "x"}),
    ("add_scalar", ("s", 1.0, 6), {"walltime": 10**400}),
    ("add_text", ("t", "x\ud800", 1), {}),
    ("add_text", ("t", "x", 2**63), {}),
    ("add_histogram", ("h", np.arange(3.0), 2**64), {}),
    ("add_image", ("i", IMG, 2**63), {"dataformats": "HWC"}),
    ("add_image", ("i", IMG, -(2**63) - 1), {"dataformats": "HWC"}),
    ("add_image", ("i\ud800", IMG, 1), {"dataformats": "HWC"}),
    ("add_image", ("i", IMG, -1), {"dataformats": "HWC"}),
    ("add_video", ("v", VID, 2**63), {}),
    ("add_video", ("v\ud800", VID, 1), {}),
    ("add_scalars", ("m", {"k\ud800": 1.0}, 1), {}),
    ("add_scalars", ("m", {"k": 1.0}, 2**63), {}),
    ("add_hparams", ({"a": 1}, {"m": 1.0}), {"global_step": 2**63, "run_name": "r"}),
    ("add_hparams", ({"a": "x\ud800"}, {"m": 1.0}), {"run_name": "r2"}),
]


def play(writer: Any, name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> type | None:
    """The class of what ``writer``'s call raised (the nearest of TypeError, ValueError,
    OverflowError), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # only what raises is compared here
            getattr(writer, name)(*args, **kw)
    except (TypeError, ValueError, OverflowError) as exc:
        return next(k for k in (OverflowError, TypeError, ValueError) if isinstance(exc, k))
    return None


def test_summarywriter_raises_where_torchs_writer_raises(tmp_path: Path) -> None:
    """Every case is played through torch's ``SummaryWriter`` and aoff's: each raises
    the same class of error (aoff's names the call and the argument), or neither does;
    what both accepted reads back the same through TensorBoard's reader."""
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    theirs, ours = tmp_path / "torch", tmp_path / "aoff"
    with TorchWriter(str(theirs)) as tw, SummaryWriter(str(ours), pump="thread") as aw:
        for name, args, kw in WRITER_CASES:
            want = play(tw, name, args, kw)
            got = play(aw, name, args, kw)
            assert got is want, (name, args, kw)
        tw.add_scalar("after", 1.0, 7)
        aw.add_scalar("after", 1.0, 7)
    assert aw.report is not None and aw.report.backend_lost == {"tensorboard": 0}
    assert points(ours) == points(theirs)


def points(folder: Path) -> dict[str, list[tuple[int, str]]]:
    """Every scalar point TensorBoard's reader sees, values as text (NaN == NaN)."""
    return {t: [(s, repr(v)) for s, v in ps] for t, ps in read_tensorboard(folder).items()}


def test_summarywriter_errors_name_the_call_and_the_argument(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path), pump="thread") as w:
        with pytest.raises(ValueError, match=r"^add_scalar: global_step 9223372036854775808 "):
            w.add_scalar("s", 1.0, 2**63)
        with pytest.raises(ValueError, match=r"^add_image: tag 'i\\ud800' is not valid Unicode"):
            w.add_image("i\ud800", IMG, 1, dataformats="HWC")
        with pytest.raises(OverflowError, match=r"^add_scalar: value for 's': int too large"):
            w.add_scalar("s", 10**400, 1)
        import torch

        # torch's writer reads garbage from a meta tensor; there is no value to log
        with pytest.raises(ValueError, match=r"^add_scalar: tensor for 's' is on the meta device"):
            w.add_scalar("s", torch.tensor(1.0, device="meta"), 1)
    with pytest.warns(aoff.AoffWarning, match=r"^aoff: add_image\(\) called after close\(\)"):
        w.add_image("i", IMG, 1, dataformats="HWC")


def test_summarywriter_takes_a_negative_purge_step_as_torchs_does(tmp_path: Path) -> None:
    """``purge_step=-1``: torch's writer takes it (a restart marker at step -1, which
    hides every earlier point at a step >= -1); so does aoff's, with the same result."""
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    for folder, make in ((tmp_path / "torch", TorchWriter), (tmp_path / "aoff", SummaryWriter)):
        with make(str(folder), filename_suffix=".a") as w:
            w.add_scalar("s", 1.0, 5)
        with make(str(folder), purge_step=-1, filename_suffix=".b") as w:
            w.add_scalar("s", 2.0, 6)
    assert read_tensorboard(tmp_path / "aoff") == read_tensorboard(tmp_path / "torch")
    assert read_tensorboard(tmp_path / "aoff")["s"] == [(6, 2.0)]


# -- the faces: refused at the call, a config text stored escaped ------------------------------
def jsonl_rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]


def test_faces_refuse_what_no_format_holds_and_every_step_is_written(tmp_path: Path) -> None:
    """A config path ``os.fsdecode`` made of a non-UTF-8 name opens every backend, its
    escape written out and said once; keys with a lone surrogate and media steps beyond
    int64 are a ``ValueError`` at the call, on the logger and on its producers; every
    step logged is in TensorBoard, JSONL and CSV."""
    with pytest.warns(aoff.AoffWarning, match=r"'data_dir' \(str, not valid Unicode"):
        log = aoff.OffPolicyLogger(
            log_dir=str(tmp_path),
            log_backend="tensorboard",
            backends=("jsonl", "csv"),
            display="none",
            handle_sigterm=False,
            config={"data_dir": "/data/caf\udce9", "dirs": ["x\udce9"]},
        )
    with log:
        log.log_step(0, {"n": 0.0})
        with pytest.raises(ValueError, match=r"^log_config: key 'bad\\ud800' is not valid"):
            log.log_config({"bad\ud800": 1})
        with pytest.raises(ValueError, match=r"^log_image: key 'i\\ud800' is not valid"):
            log.log_image("i\ud800", IMG)
        with pytest.raises(ValueError, match=r"^log_video: step 9223372036854775808 is out"):
            log.log_video("v", np.zeros((2, 4, 4, 3), np.uint8), step=2**63)
        remote = log.remote("p")
        with pytest.raises(ValueError, match=r"^log_image: step -9223372036854775809 is out"):
            remote.log_image("i", IMG, step=-(2**63) - 1)
        remote.close()
        log.log_image("i", IMG, step=1)
        for i in range(1, 5):
            log.log_step(i, {"n": float(i)})
    report = log.finish()
    assert report.steps == 5 and report.complete, report
    assert report.backend_written == {"tensorboard": 6, "jsonl": 6, "csv": 6}  # + the image
    assert [s for s, _ in read_tensorboard(tmp_path)["train/n"]] == [0, 1, 2, 3, 4]
    assert [r["iteration"] for r in jsonl_rows(tmp_path) if "train/n" in r] == [0, 1, 2, 3, 4]
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["data_dir"] == "/data/caf\\udce9" and config["dirs"] == "['x\\udce9']"


def test_a_forked_childs_summarywriter_writes_its_points(tmp_path: Path) -> None:
    """As ``OffPolicyLogger``'s: into the run as producer ``fork-<pid>`` (TensorBoard
    shows the run folder ``fork-<pid>``), with its own tags and steps."""
    with SummaryWriter(str(tmp_path), backends=("jsonl",)) as w:
        w.add_scalar("parent", 1.0, 0)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                for i in range(100):
                    w.add_scalar("child", float(i), i)
                w.close()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    assert read_tensorboard(tmp_path) == {"parent": [(0, 1.0)]}
    child = read_tensorboard(tmp_path / f"fork-{pid}")
    assert child == {"child": [(i, float(i)) for i in range(100)]}
    rows = [r for r in jsonl_rows(tmp_path) if r.get("producer") == f"fork-{pid}"]
    assert [r["child"] for r in rows] == [float(i) for i in range(100)]


def test_a_backend_that_cannot_open_names_the_cause_and_the_log_dir(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    log_dir = tmp_path / "file" / "run"
    log = aoff.OffPolicyLogger(
        log_dir=str(log_dir),
        log_backend="none",
        backends=("jsonl",),
        display="none",
        pump="thread",
        handle_sigterm=False,
    )
    log.log_step(0, {"n": 0.0})
    report = log.finish()
    error = report.backend_errors["jsonl"]
    assert error.startswith("open failed: NotADirectoryError:"), error
    assert error.endswith(f"(the run's log_dir: {str(log_dir)!r})"), error


def test_a_folder_inside_one_without_permission_is_said_to_be_so(tmp_path: Path) -> None:
    """``aoff show``/``ls``/``attach`` on a folder inside a mode-000 folder: permission
    denied, not "not a folder" (as root, the file-access capabilities are dropped)."""
    import shutil
    import subprocess
    import sys

    inner = tmp_path / "locked" / "inner"
    inner.mkdir(parents=True)
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: permissions are not enforced")
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
        if subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode:
            pytest.skip("running as root, and setpriv cannot drop the capabilities here")
    (tmp_path / "locked").chmod(0)
    try:
        for cmd in ("show", "ls", "attach"):
            got = subprocess.run(
                [*prefix, sys.executable, "-m", "aoff", cmd, str(inner)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert got.returncode == 1, got
            assert got.stderr == f"aoff {cmd}: cannot open {str(inner)!r}: permission denied\n"
    finally:
        (tmp_path / "locked").chmod(0o755)


class TitledBackend:
    """A custom backend that sends the run's title, as UTF-8, when it opens."""

    name = "titled"

    def __init__(self, title: str) -> None:
        self.title = title

    async def open(self, ctx: BackendContext) -> None:
        self.title.encode("utf-8")

    async def write(self, records: Any) -> None:
        pass

    async def flush(self) -> None:
        pass

    async def close(self) -> None:
        pass


@pytest.mark.anyio
async def test_an_open_that_fails_on_a_text_names_the_arguments_that_carry_texts() -> None:
    lines: list[str] = []
    runner = BackendRunner(TitledBackend("caf\udce9"), say=lines.append)
    with anyio.fail_after(WAIT):
        await runner.run(BackendContext())
    assert runner.status == "failed"
    assert runner.error is not None and runner.error.startswith("open failed: UnicodeEncodeError")
    assert runner.error.endswith("look at config=, log_config(), algo_name, env_name)")
