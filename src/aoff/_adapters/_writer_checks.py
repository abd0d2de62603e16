"""What ``aoff.tensorboard.SummaryWriter``'s calls accept, checked at the call.

torch's writer fails at the call for bad input (it builds the protobuf there); aoff's
builds it in the agent, so everything the agent would refuse is checked here instead,
with a ``TypeError``/``ValueError`` that names the call and the tag: a value that is not
one number (or an int beyond the float range, ``OverflowError``), a string UTF-8 cannot
hold, a step beyond int64, histogram input ``np.histogram`` would refuse,
hyperparameters of the wrong types. Values are also made safe to buffer: NumPy scalars
become Python numbers, one-element tensors are read (or, on a GPU, copied without a
sync), histogram input is copied.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from .._core._capture import activate, capture_tensor
from .._core._convert import encodable, int64_step, unencodable
from .._core._pending import Gather

_NUMERIC_KINDS = frozenset("biuf")


def bad_tag(where: str, tag: object) -> Exception:
    """The error for a tag that is not a ``str``, or a ``str`` UTF-8 cannot hold (a
    lone surrogate: TensorBoard's protobuf would refuse the whole batch later)."""
    if type(tag) is str or isinstance(tag, str):
        return unencodable(where, "tag", tag)
    return TypeError(f"{where}: tag must be a str, got {type(tag).__name__}")


def text(where: str, what: str, s: object) -> str:
    """A ``str`` that UTF-8 can hold (texts, keys, run names), or an error here."""
    if not isinstance(s, str):
        raise TypeError(f"{where}: {what} must be a str, got {type(s).__name__}")
    if not s.isascii() and not encodable(s):
        raise unencodable(where, what, s)
    return str(s)


def step(where: str, step: Any, what: str = "global_step") -> int:
    """``global_step`` as torch's writer reads it (``int(step)``), checked at the call:
    what ``int()`` refuses raises its error here (``TypeError``; ``ValueError`` for NaN,
    ``OverflowError`` for infinity, as torch's call does), and so does a step beyond the
    int64 TensorBoard stores (``ValueError``, torch's ``Value out of range``)."""
    try:
        n = int(step)
    except (TypeError, ValueError, OverflowError) as exc:
        kind = TypeError if isinstance(exc, TypeError) or isinstance(step, str) else type(exc)
        raise kind(f"{where}: {what} must be an integer, got {step!r:.60} ({exc})") from None
    return int64_step(where, n, what)


def walltime(where: str, wall: Any) -> float:
    """``walltime`` as a float (torch's ``TypeError`` for a non-number, ``OverflowError``
    for an int beyond the float range)."""
    if isinstance(wall, str | bytes | bytearray) or wall is None:
        raise TypeError(f"{where}: walltime must be a number, got {type(wall).__name__}")
    try:
        return float(wall)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: walltime must be a number: {exc}") from None
    except OverflowError as exc:
        raise OverflowError(f"{where}: walltime {wall!r:.40}: {exc}") from None


def number(where: str, tag: object, v: Any, g: Gather) -> Any:
    """One value for ``add_scalar``: a number, or a device placeholder added to ``g``.

    Accepts what torch's writer accepts (Python numbers, NumPy scalars and arrays,
    tensors, each of exactly one element); anything else is an error here."""
    if type(v) is float:
        return v
    if type(v) is int or type(v) is bool:
        try:
            float(v)  # torch's writer makes a float of it at the call
        except OverflowError as exc:
            raise OverflowError(f"{where}: value for {tag!r}: {exc}") from None
        return v if type(v) is int else float(v)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        if v.is_complex():
            raise TypeError(f"{where}: tensor for {tag!r} has non-real dtype {v.dtype}")
        if v.is_meta:  # no data: there is no value to log
            raise ValueError(f"{where}: tensor for {tag!r} is on the meta device (no data)")
        activate()
        return capture_tensor(v, g, where, tag)  # numel != 1: ValueError
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.generic) and v.dtype.kind in _NUMERIC_KINDS:
        return v.item()  # a NumPy scalar (e.g. Gymnasium's episode return): immutable
    if np is not None and isinstance(v, np.ndarray | np.generic):
        a = np.asarray(v)
        if a.dtype.kind not in _NUMERIC_KINDS:
            raise TypeError(f"{where}: value for {tag!r} has non-real dtype {a.dtype}")
        if a.size != 1:
            raise ValueError(
                f"{where}: value for {tag!r} has shape {a.shape}; log one number "
                "(a 0-d or one-element array; reduce it first, e.g. .mean())"
            )
        return a.reshape(()).item()
    if v is None or isinstance(v, str | bytes | bytearray | Mapping):
        raise TypeError(
            f"{where}: value for {tag!r} must be a number, a one-element NumPy array or "
            f"tensor, got {type(v).__name__}"
        )
    try:
        return float(v)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: value for {tag!r} is not a number: {type(v).__name__}") from exc
    except OverflowError as exc:
        raise OverflowError(f"{where}: value for {tag!r}: {exc}") from None


def histogram_values(tag: str, values: Any) -> Any:
    """A private float64 1-D copy of ``values`` (torch's ``make_np(values).astype(float)``;
    sequences are accepted too)."""
    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(values, torch.Tensor):
        if values.is_complex():
            raise TypeError(f"add_histogram: tensor for {tag!r} has non-real dtype")
        arr = values.detach().to("cpu", torch.float64).numpy().reshape(-1)
    else:
        if values is None or isinstance(values, str | bytes | bytearray | Mapping):
            raise TypeError(
                f"add_histogram: values for {tag!r} must be a tensor, a NumPy array or a "
                f"sequence of numbers, got {type(values).__name__}"
            )
        try:
            arr = np.array(values, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"add_histogram: values for {tag!r} are not real numbers: {exc}"
            ) from None
    if arr.size == 0:
        raise ValueError(f"add_histogram: values for {tag!r} are empty (nothing to summarise)")
    return arr


_NUMPY_RULES = frozenset(("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"))


def bins(tag: str, arr: Any, bins: Any) -> Any:
    """``bins`` as it travels (a str or int as is, edges as a float64 copy), checked
    with ``arr`` for what would make ``np.histogram`` (and so torch's call) fail: an
    unknown rule, a count < 1, edges that do not increase, a NaN or infinity when the
    range comes from the values, no value within the edges."""
    import numpy as np

    where = f"add_histogram: {tag!r}"
    if isinstance(bins, str) and bins == "tensorflow":
        from .._core._fold_writer import tensorflow_bins

        lo, hi = tensorflow_bins()[0], tensorflow_bins()[-1]
    elif isinstance(bins, str | int) and not isinstance(bins, bool):
        if isinstance(bins, str) and bins not in _NUMPY_RULES:
            rules = ", ".join(sorted(_NUMPY_RULES))
            raise ValueError(f"{where}: bins={bins!r} is not 'tensorflow' nor one of {rules}")
        if isinstance(bins, int) and bins < 1:
            raise ValueError(f"{where}: bins must be >= 1, got {bins}")
        if not np.isfinite(arr).all():
            raise ValueError(
                f"{where}: the values hold NaN or infinity, and bins={bins!r} takes its "
                "range from them (use bins='tensorflow' or explicit edges)"
            )
        return bins
    else:
        try:
            edges = np.array(bins, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: bins must be a str, an int or edges: {exc}") from None
        if edges.size < 2 or not (np.diff(edges) >= 0).all():
            raise ValueError(f"{where}: bin edges must increase (at least two)")
        bins, lo, hi = edges, edges[0], edges[-1]
    if not ((arr >= lo) & (arr <= hi)).any():
        raise ValueError(f"{where}: no value falls within the bins' edges [{lo:g}, {hi:g}]")
    return bins


def hparam(k: str, v: Any) -> Any:
    """One ``add_hparams`` value, checked as torch's ``hparams()`` does."""
    if isinstance(v, str):
        return text("add_hparams", f"the value of {k!r}", v)
    if v is None or isinstance(v, int | float):  # bool is an int (torch: a number)
        return v
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        return float(v.detach().reshape(-1)[0].item())
    raise ValueError(
        f"add_hparams: {k!r}: value should be one of int, float, str, bool, or torch.Tensor, "
        f"got {type(v).__name__}"
    )


def check_discrete(hparams: dict[str, Any], discrete: object) -> dict[str, list[Any]]:
    if discrete is None:
        return {}
    if not isinstance(discrete, dict):
        raise TypeError("add_hparams: hparam_domain_discrete should be a dictionary")
    for k, vs in discrete.items():
        if (
            k not in hparams
            or not isinstance(vs, list)
            or not all(isinstance(d, type(hparams[k])) for d in vs)
        ):
            raise TypeError(
                f"add_hparams: hparam_domain_discrete[{k!r}] should be a list of the same "
                f"type as hparam_dict[{k!r}]"
            )
    return {
        k: [text("add_hparams", "a discrete value", d) if isinstance(d, str) else d for d in vs]
        for k, vs in discrete.items()
    }
