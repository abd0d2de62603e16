"""``RunView`` is generated from ``State``'s shown fields, and stays a read-only subset.

``python -m tests.test_view`` rewrites ``src/aoff/_core/_view.py`` after a field of
``State`` was made (or unmade) ``shown``; the test fails while the file is out of date.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import textwrap
from pathlib import Path

from aoff._core import _state
from aoff._core._state import SHOWN_METHODS, State
from aoff._core._view import RunView

VIEW_FILE = Path(_state.__file__).with_name("_view.py")

#: a container's read-only type, as a display sees it
_READ_ONLY = (
    (re.compile(r"^dict\["), "Mapping["),
    (re.compile(r"^deque\["), "Sequence["),
    (re.compile(r"^set\["), "AbstractSet["),
    (re.compile(r"^tuple\[(\w+), \.\.\.\]$"), r"Sequence[\1]"),
)

_HEAD = '''"""``RunView``: what a display may read of the run, and nothing it may change.

Why: the fold's ``State`` (``_state.py``) is a mutable dataclass with its own
bookkeeping (throughput counters, what an earlier session carried over, the total a
producer's count is added to). A display, ours or one a user writes, is handed a
snapshot of it on every frame; typed as this read-only Protocol it can read what the
dashboard shows and a type checker refuses a write or a read of the fold's bookkeeping.
The snapshot itself is unchanged (the same copy, no wrapper), so a frame costs what it
did.

Generated from ``State``'s fields made with ``shown`` and its ``SHOWN_METHODS`` by
``python -m tests.test_view``: do not edit by hand (``tests/test_view.py`` fails while
this file is out of date).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._records import RunConfig
    from ._rules import Alert
    from ._state import ProducerInfo

__all__ = ["RunView"]


class RunView(Protocol):
    """What a display is handed by :meth:`~aoff.Display.open`, ``update`` and ``close``:
    a snapshot of the run, read-only (it is safe to keep; it never changes after)."""
'''


def _read_only(annotation: str) -> str:
    for pattern, replacement in _READ_ONLY:
        if pattern.match(annotation):
            return pattern.sub(replacement, annotation)
    return annotation


def _docstring(text: str) -> str:
    lines = textwrap.wrap(text, 84, break_long_words=False)
    body = "\n        ".join(lines)
    return f'        """{body}"""\n'


def view_source() -> str:
    """The text of ``_view.py`` for ``State`` as it is."""
    parts = [_HEAD]
    for f in dataclasses.fields(State):
        doc = f.metadata.get("shown")
        if doc is None:
            continue
        parts.append(f"\n    @property\n    def {f.name}(self) -> {_read_only(str(f.type))}:\n")
        parts.append(_docstring(doc))
    for name in SHOWN_METHODS:
        method = getattr(State, name)
        returns = method.__annotations__["return"]
        doc = inspect.getdoc(method) or name
        parts.append(f"\n    def {name}(self) -> {returns}:\n")
        parts.append(_docstring(" ".join(doc.split())))
    return "".join(parts)


def test_run_view_is_generated_from_the_shown_fields_of_state() -> None:
    assert VIEW_FILE.read_text() == view_source(), (
        "src/aoff/_core/_view.py is out of date: run python -m tests.test_view"
    )


def test_run_view_is_a_read_only_subset_of_state() -> None:
    """Every name a display may read is on ``State``, read-only (a property), and a
    snapshot has it; the fold's bookkeeping is not on ``RunView``."""
    members = {n: v for n, v in vars(RunView).items() if not n.startswith("_")}
    state_fields = {f.name for f in dataclasses.fields(State)}
    assert members and set(members) <= state_fields | set(SHOWN_METHODS)
    assert all(isinstance(members[n], property) for n in set(members) - set(SHOWN_METHODS))
    assert not {"throughput_steps", "own_total_steps", "dropped_before"} & set(members)
    view: RunView = State(iteration=3).snapshot()  # a State is a RunView to mypy too
    assert view.iteration == 3 and all(hasattr(view, n) for n in members)


if __name__ == "__main__":
    VIEW_FILE.write_text(view_source())
    sys.stdout.write(f"wrote {VIEW_FILE}\n")
