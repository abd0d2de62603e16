"""Property: a bad argument costs only itself, through every face, in both pump modes.

Random sequences of calls with adversarial values (lone surrogates, ints beyond int64 and
beyond the float range, NaN and infinities, arrays of odd shapes and dtypes, empty and
huge strings) are played through ``OffPolicyLogger``, ``AsyncOffPolicyLogger`` and
``aoff.tensorboard.SummaryWriter``, each writing TensorBoard, JSONL and CSV files. What
must hold, read back from the files: every well-formed step is in every backend, each
call that was refused raised at the call (the writer: exactly where torch's own writer
raises, played alongside), every value the fold skipped is counted, and no backend lost
a record. The expected outcome of each call is written here from
docs/reference/input-handling.md, not taken from aoff.
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import aoff
from aoff.tensorboard import SummaryWriter

from .conftest import read_tensorboard

I64 = (-(2**63), 2**63 - 1)
BAD_KEY = "bad\ud800"
keys = st.sampled_from(["a", "é/ü", BAD_KEY, "", "k" * 300, "s/🚀"])
texts = st.sampled_from(["", "x" * 20_000, "caf\udce9", "ok", "損失"])
values = st.one_of(
    st.floats(),  # NaN and infinities included
    st.integers(-(2**80), 2**80),
    st.sampled_from(
        [10**400, -(10**400), True, np.float32(0.5), np.int64(-3), np.zeros(()), np.zeros(2)]
    ),
    st.sampled_from(["x", None, b"1", [1.0]]),
)
steps = st.one_of(
    st.none(),
    st.integers(-5, 10),
    st.sampled_from([I64[0], I64[1], 2**63, 2**64, I64[0] - 1, -(2**70)]),
)
#: (image, accepted as an HWC image: 1, 3 or 4 channels, uint8 or float, not empty)
IMAGES = [
    (np.zeros((4, 4, 3), np.uint8), True),
    (np.ones((2, 3, 1), np.float32), True),
    (np.zeros((4, 4, 2), np.uint8), False),
    (np.zeros((0, 4, 3), np.uint8), False),
    (np.zeros((4, 4), np.uint8), False),
    (np.zeros((4, 4, 3), np.complex64), False),
]
images = st.sampled_from(IMAGES)
face_calls = st.lists(
    st.one_of(
        st.tuples(st.just("step"), keys, values, steps),
        st.tuples(st.just("step"), keys, values, steps),
        st.tuples(st.just("image"), keys, images, steps),
        st.tuples(st.just("config"), keys, st.one_of(values, texts)),
    ),
    min_size=2,
    max_size=10,
)
#: torch's writer takes ``bytes`` as a number (``float(b"1")``); aoff's refuses them
WRITER_VALUES = values.filter(lambda v: not isinstance(v, bytes))
writer_calls = st.lists(
    st.one_of(
        st.tuples(st.just("add_scalar"), keys, WRITER_VALUES, steps),
        st.tuples(st.just("add_scalar"), keys, WRITER_VALUES, steps),
        st.tuples(st.just("add_text"), keys, texts, steps),
        st.tuples(st.just("add_image"), keys, st.just(np.zeros((4, 4, 3), np.uint8)), steps),
    ),
    min_size=2,
    max_size=10,
)
GOOD_IMG, BAD_IMG = IMAGES[0], IMAGES[2]
#: every kind of bad input at least once, in each pump mode (then random mixes)
FACE_EXAMPLE = [
    ("step", BAD_KEY, 1.0, 2**64),
    ("step", "a", 10**400, -1),
    ("step", "é/ü", float("nan"), None),
    ("step", "k" * 300, np.zeros(2), I64[1]),
    ("step", "", "x", I64[0] - 1),
    ("image", BAD_KEY, GOOD_IMG, 1),
    ("image", "i", GOOD_IMG, 2**63),
    ("image", "i", BAD_IMG, 1),
    ("image", "i", GOOD_IMG, -(2**70)),
    ("image", "i", GOOD_IMG, 3),
    ("config", BAD_KEY, 1),
    ("config", "path", "caf\udce9"),
    ("config", "big", 10**400),
    ("config", "huge", "x" * 20_000),
    ("step", "a", float("inf"), 7),
]
WRITER_EXAMPLE = [
    ("add_scalar", BAD_KEY, 1.0, 1),
    ("add_scalar", "a", 1.0, 2**63),
    ("add_scalar", "a", 10**400, 1),
    ("add_scalar", "a", float("nan"), -1),
    ("add_scalar", "", np.zeros(2), 0),
    ("add_scalar", "a", np.float32(0.5), I64[0]),
    ("add_scalar", "a", 2**80, float("nan")),
    ("add_text", "t", "caf\udce9", 1),
    ("add_text", "t", "x" * 20_000, 2),
    ("add_image", BAD_KEY, GOOD_IMG[0], 1),
    ("add_image", "i", GOOD_IMG[0], -(2**63) - 1),
    ("add_image", "i", GOOD_IMG[0], 4),
    ("add_scalar", "a", float("-inf"), 5),
]
pumps = st.sampled_from(["thread", "thread", "thread", "process"])  # process: ~1 s a run
PROPERTY = settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def valid_key(k: str) -> bool:
    try:
        k.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def a_number(v: object) -> bool:
    """input-handling.md: bool, int, NumPy scalars and 0-d arrays convert with float()."""
    if isinstance(v, str | bytes | list) or v is None:
        return False
    if isinstance(v, np.ndarray) and v.size != 1:
        return False
    try:
        float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def in_i64(step: int | None) -> bool:
    return step is None or I64[0] <= step <= I64[1]


class Expected:
    """What the calls must leave on disk, from the documented rules."""

    def __init__(self) -> None:
        self.n = 0  # log_step calls: each is a step in every backend (its ``n`` is its index)
        self.invalid = 0  # values the fold skips and counts
        self.images = 0
        self.config: set[str] = set()


def play_face_call(log: Any, call: tuple[Any, ...], exp: Expected) -> None:
    kind, key = call[0], call[1]
    if kind == "step":
        value, iteration = call[2], call[3]
        it = 0 if iteration is None else iteration
        log.log_step(it, {"n": float(exp.n), key: value})
        exp.invalid += (not valid_key(key) or not a_number(value)) + (not in_i64(it))
        exp.n += 1
    elif kind == "image":
        (img, ok), step = call[2], call[3]
        if ok and key and valid_key(key) and in_i64(step):
            log.log_image(key, img, step=step)
            exp.images += 1
        else:
            with pytest.raises((TypeError, ValueError), match=r"^log_image: "):
                log.log_image(key, img, step=step)
    else:
        if valid_key(key):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", aoff.AoffWarning)  # a value stored as str()
                log.log_config({key: call[2]})
            exp.config.add(key)
        else:
            with pytest.raises(ValueError, match=r"^log_config: key 'bad\\ud800'"):
                log.log_config({key: call[2]})


def logger_kwargs(folder: Path, pump: str) -> dict[str, Any]:
    return {
        "log_dir": str(folder),
        "log_backend": "tensorboard",
        "backends": ("jsonl", "csv"),
        "display": "none",
        "pump": pump,
        "handle_sigterm": False,
        "system_interval": 0,
    }


def check_face_run(folder: Path, report: aoff.FinishReport, exp: Expected) -> None:
    assert report.complete and report.steps == exp.n, report
    assert report.invalid_values == exp.invalid, report
    assert set(report.backend_lost.values()) == {0}, report
    want = [float(i) for i in range(exp.n)]
    # a run of media calls alone has no train/n at all
    assert [v for _, v in read_tensorboard(folder).get("train/n", [])] == want
    rows = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
    assert [r["train/n"] for r in rows if "train/n" in r] == want
    assert sum("media" in r for r in rows) == exp.images
    with open(folder / "progress.csv", newline="") as f:
        assert [float(r["train/n"]) for r in csv.DictReader(f) if r.get("train/n")] == want
    if exp.config:
        assert exp.config <= set(json.loads((folder / "config.json").read_text()))


@PROPERTY
@given(pump=pumps, calls=face_calls)
@example(pump="thread", calls=FACE_EXAMPLE)
@example(pump="process", calls=FACE_EXAMPLE)
def test_sync_face_a_bad_argument_costs_only_itself(
    tmp_path_factory: pytest.TempPathFactory, pump: str, calls: list[tuple[Any, ...]]
) -> None:
    folder = tmp_path_factory.mktemp("run")
    exp = Expected()
    log = aoff.OffPolicyLogger(**logger_kwargs(folder, pump))
    for c in calls:
        play_face_call(log, c, exp)
    check_face_run(folder, log.finish(), exp)


@PROPERTY
@given(pump=pumps, calls=face_calls)
@example(pump="thread", calls=FACE_EXAMPLE)
@example(pump="process", calls=FACE_EXAMPLE)
def test_async_face_a_bad_argument_costs_only_itself(
    tmp_path_factory: pytest.TempPathFactory, pump: str, calls: list[tuple[Any, ...]]
) -> None:
    folder = tmp_path_factory.mktemp("run")
    exp = Expected()

    async def main() -> aoff.FinishReport:
        async with aoff.AsyncOffPolicyLogger(**logger_kwargs(folder, pump)) as log:
            for c in calls:
                play_face_call(log, c, exp)
                await anyio.lowlevel.checkpoint()
        return await log.afinish()

    check_face_run(folder, anyio.run(main), exp)


def raised(call: Any, *args: Any, **kw: Any) -> bool:
    """Whether ``call`` raised (torch's writer raises ``NotImplementedError`` for some
    values where aoff's raises ``TypeError``: the classes are compared for the cases of
    test_arguments.py's table only)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(*args, **kw)
    except Exception:
        return True
    return False


@PROPERTY
@given(pump=pumps, calls=writer_calls)
@example(pump="thread", calls=WRITER_EXAMPLE)
@example(pump="process", calls=WRITER_EXAMPLE)
def test_summarywriter_a_bad_argument_costs_only_itself(
    tmp_path_factory: pytest.TempPathFactory, pump: Any, calls: list[tuple[Any, ...]]
) -> None:
    """Each call through torch's writer and aoff's: the same ones raise, and
    TensorBoard's reader sees the same points in both folders."""
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    theirs, ours = tmp_path_factory.mktemp("torch"), tmp_path_factory.mktemp("aoff")
    with TorchWriter(str(theirs)) as tw, SummaryWriter(str(ours), pump=pump) as aw:
        for name, tag, value, step in calls:
            kw = {"dataformats": "HWC"} if name == "add_image" else {}
            want = raised(getattr(tw, name), tag, value, step, **kw)
            got = raised(getattr(aw, name), tag, value, step, **kw)
            assert got is want, (name, tag, value, step)
    assert aw.report is not None and set(aw.report.backend_lost.values()) <= {0}, aw.report

    def points(folder: Path) -> dict[str, list[tuple[int, str]]]:
        return {t: [(s, repr(v)) for s, v in p] for t, p in read_tensorboard(folder).items()}

    assert points(ours) == points(theirs)  # (values as text: NaN == NaN)
