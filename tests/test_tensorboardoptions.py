"""TensorBoard's options are its own (``backend_options={"tensorboard": {...}}``, the
registry entry's ``TensorBoardOptions``), not fields of the options every backend shares;
``SummaryWriter``'s ``filename_suffix``/``purge_step`` (the ``tb_*`` keywords) convert into
them, and every way to get them wrong is a clear error. (``SummaryWriter(purge_step=)``
read back by TensorBoard's own reader: ``tests/test_summarywriter.py``.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aoff._backends._tensorboard import TensorBoardBackend
from aoff._backends._tensorboardoptions import TensorBoardOptions
from aoff._pump import _registry
from aoff._pump._options import Options


def test_keywords_and_backend_options_merge_into_tensorboards_own(tmp_path: Path) -> None:
    o = Options(
        log_dir=str(tmp_path),
        tb_purge_step=7,
        backend_options={"tensorboard": {"filename_suffix": ".x", "purge_step": 7}},
    )
    assert o.options_of("tensorboard") == TensorBoardOptions(filename_suffix=".x", purge_step=7)
    backend = _registry.entry("tensorboard").build(o)  # type: ignore[misc]
    assert isinstance(backend, TensorBoardBackend)
    assert (backend.filename_suffix, backend.purge_after) == (".x", 6)  # hides 7 on
    # resume_step= sets the purge for the run; nothing given: TensorBoard's defaults
    resumed = Options(log_dir=str(tmp_path), resume_step=3, tb_purge_step=7)
    assert _registry.entry("tensorboard").build(resumed).__dict__["purge_after"] == 3  # type: ignore[misc]
    assert Options().options_of("tensorboard") == TensorBoardOptions()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (
            {"tb_purge_step": 3, "backend_options": {"tensorboard": {"purge_step": 4}}},
            "tb_purge_step=3 and backend_options={'tensorboard': {'purge_step': 4}} disagree",
        ),
        (
            {
                "tb_filename_suffix": ".a",
                "backend_options": {"tensorboard": TensorBoardOptions(filename_suffix=".b")},
            },
            r"backend_options\['tensorboard'\]\.filename_suffix='.b' disagree",
        ),
        (
            {"backend_options": {"tensorboard": {"suffix": ".a"}}},
            r"backend_options\['tensorboard'\]: .*suffix.*; its options are filename_suffix",
        ),
        ({"tb_filename_suffix": f"a{os.sep}b"}, "must not contain a path separator"),
        (
            {"backend_options": {"tensorboard": {"purge_step": True}}},
            "TensorBoard's purge_step must be an int or None",
        ),
    ],
)
def test_each_mistake_is_a_clear_error(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Options(**kwargs)  # type: ignore[arg-type]


def test_summarywriter_keywords_and_backend_options_given_two_ways(tmp_path: Path) -> None:
    from aoff.tensorboard import SummaryWriter

    with pytest.raises(ValueError, match=r"tb_filename_suffix='\.a' and backend_options"):
        SummaryWriter(
            str(tmp_path),
            filename_suffix=".a",
            backend_options={"tensorboard": {"filename_suffix": ".b"}},
        )
