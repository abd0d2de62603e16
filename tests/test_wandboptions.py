"""W&B's options are its own (``backend_options={"wandb": {...}}``, the registry entry's
``WandbOptions``), not fields of the options every backend shares; the original logger's
``wandb_*`` keywords convert into them, and every way to get them wrong is a clear error.
(A real offline W&B run with both: ``tests/test_wandb.py``.)"""

from __future__ import annotations

import pytest

from aoff._backends._wandb import WandbBackend
from aoff._backends._wandboptions import WandbOptions
from aoff._pump import _registry
from aoff._pump._options import Options


def test_keywords_and_backend_options_merge_into_wandbs_own() -> None:
    o = Options(
        log_backend="wandb",
        wandb_project="p",
        wandb_tags=("a",),
        backend_options={"wandb": {"group": "g", "project": "p"}},  # the same project: fine
    )
    assert o.options_of("wandb") == WandbOptions(project="p", group="g", tags=("a",))
    backend = _registry.entry("wandb").build(o)
    assert isinstance(backend, WandbBackend)
    assert (backend.project, backend.group, backend.tags) == ("p", "g", ["a"])
    # trackio's init is W&B's: it reads the same options
    assert _registry.entry("trackio").build(o).__dict__["project"] == "p"
    # nothing given: W&B's defaults; an options object is taken as it is
    assert Options(log_backend="wandb").options_of("wandb") == WandbOptions()
    given = WandbOptions(name="r")
    assert Options(backend_options={"wandb": given}).options_of("wandb") is given


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (
            {"wandb_name": "a", "backend_options": {"wandb": {"name": "b"}}},
            "wandb_name='a' and backend_options={'wandb': {'name': 'b'}} disagree",
        ),
        (
            {"wandb_name": "a", "backend_options": {"wandb": WandbOptions(name="b")}},
            r"backend_options\['wandb'\]\.name='b' disagree",
        ),
        (
            {"backend_options": {"wandb": {"projekt": "p"}}},
            r"backend_options\['wandb'\]: .*projekt.*; its options are project, entity",
        ),
        ({"backend_options": {"wandb": {"tags": "a,b"}}}, "W&B's tags must be a list of str"),
        ({"backend_options": {"jsonl": {"x": 1}}}, "'jsonl' takes no options .*'wandb'"),
        ({"backend_options": {"parquet": {}}}, "unknown backend 'parquet'"),
    ],
)
def test_each_mistake_is_a_clear_error(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Options(**kwargs)  # type: ignore[arg-type]


def test_backend_options_must_be_a_dict_of_dicts() -> None:
    with pytest.raises(TypeError, match="backend_options must be a dict by backend name"):
        Options(backend_options=[("wandb", {})])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"backend_options\['wandb'\] must be a dict"):
        Options(backend_options={"wandb": "p"})
