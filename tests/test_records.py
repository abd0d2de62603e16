"""The records the backends receive are checked when built (h11's rule): a field of the
wrong type is a ``ValueError`` at construction, never a surprise in a backend; the fold's
own fast path (``step_record``) checks the same fields it can."""

from __future__ import annotations

from typing import Any

import pytest

from aoff import Record, StepRecord, TextRecord, WriterRecord
from aoff._core._records import WriterHParams, scalars_of, step_record


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: StepRecord(1.5, 1, 0.0, ()), "step"),  # type: ignore[arg-type]
        (lambda: StepRecord(True, 1, 0.0, ()), "step"),
        (lambda: StepRecord(1, "1", 0.0, ()), "iteration"),  # type: ignore[arg-type]
        (lambda: StepRecord(1, 1, "now", ()), "wall_time"),  # type: ignore[arg-type]
        (lambda: StepRecord(1, 1, 0.0, [("a", 1.0)]), "scalars"),  # type: ignore[arg-type]
        (lambda: StepRecord(1, 1, 0.0, (("a", "x"),)), "scalars"),  # type: ignore[arg-type]
        (lambda: StepRecord(1, 1, 0.0, ((1, 1.0),)), "scalars"),  # type: ignore[arg-type]
        (lambda: StepRecord(1, 1, 0.0, (), ("h",)), "histograms"),  # type: ignore[arg-type]
        (lambda: StepRecord(1, 1, 0.0, (), producer=3), "producer"),  # type: ignore[arg-type]
        (lambda: WriterRecord(1, 0.0, run=None), "run"),  # type: ignore[arg-type]
        (lambda: WriterRecord(1, 0.0, tensor_style=3), "tensor_style"),
        (lambda: WriterRecord(1, 0.0, hparams={"lr": 1}), "hparams"),  # type: ignore[arg-type]
        (lambda: TextRecord(1, 0.0, (("t", 2),)), "texts"),  # type: ignore[arg-type]
        (lambda: TextRecord(1, 0.0, "text"), "texts"),  # type: ignore[arg-type]
        (lambda: TextRecord(-0.5, 0.0, ()), "step"),  # type: ignore[arg-type]
        (lambda: step_record(1, 1.0, 0.0, ()), "iteration"),  # type: ignore[arg-type]
        (lambda: step_record(1, 1, None, ()), "wall_time"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_field_is_a_value_error_when_built(make: Any, field: str) -> None:
    with pytest.raises(ValueError, match=rf"\.{field} must be"):
        make()


def test_good_records_are_built_and_matched_by_type() -> None:
    hp = WriterHParams({"lr": 0.1}, ("loss",), {})
    records: list[Record] = [
        step_record(4, 1, 10.0, scalars_of(("a",), (1.0,))),
        StepRecord(4, 1, 10, (("a", 1),), producer="actor0"),  # ints are numbers too
        WriterRecord(3, 11.0, (("loss", 0.5),), run="sub", tensor_style=2, hparams=hp),
        TextRecord(5, 12.0, (("note", "hi"),)),
    ]
    kinds = []
    for rec in records:
        match rec:
            case StepRecord(producer=None):
                kinds.append("own step")
            case StepRecord(producer=name):
                kinds.append(f"step of {name}")
            case WriterRecord(run=run):
                kinds.append(f"writer call into {run}")
            case TextRecord(texts=texts):
                kinds.append(f"text {texts[0][1]}")
    assert kinds == ["own step", "step of actor0", "writer call into sub", "text hi"]
    assert [r.iteration for r in records[2:]] == [3, 5]  # one step: a call's, a text's
