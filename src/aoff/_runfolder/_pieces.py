"""Pacing for a long encoding, as the run folder's encoders take it.

Why here: the encoders of the run folder's formats (``_encode``, ``lines/_jsonl``) run
in the pump, which may share its process's GIL with a training loop; the pump alone
knows that (``_pump/_turns.py``) and passes the pacing in through the backends
(``BackendContext.pieces``). The type is stated below the encoders so that they need
nothing from the layers above them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .._core._records import Record

__all__ = ["Pieces", "whole"]

#: pacing for a long encoding: a batch's records handed out in pieces, with a pause
#: between two pieces while the process's GIL is shared with a training loop. It returns
#: ``records`` itself when it does not pace them, which is how an encoder knows to take
#: them in one go.
Pieces = Callable[[Sequence[Record]], Iterable[Record]]


def whole(records: Sequence[Record]) -> Sequence[Record]:
    """No pacing: the records as they are (the default)."""
    return records
