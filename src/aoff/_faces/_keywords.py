"""A constructor's keywords checked against the public class, before its ``__init__`` runs.

Why here and not Python's own error: both faces share one ``__init__`` (``_face.py``), so
Python's ``TypeError`` for a misspelt keyword names ``Face.__init__``, a name the user never
wrote. The check names the class the user called and the nearest parameter it has.
"""

from __future__ import annotations

import difflib
import functools
import inspect

__all__ = ["check_keywords", "public_signature"]


@functools.cache
def _parameters(init: object) -> tuple[frozenset[str], int] | None:
    """The keyword names ``init`` takes and how many positional arguments after ``self``
    (None: it takes ``**kwargs``, so a subclass's own ``__init__`` decides)."""
    params = list(inspect.signature(init).parameters.values())[1:]  # type: ignore[arg-type]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    keywords = frozenset(p.name for p in params if p.kind is not p.POSITIONAL_ONLY)
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    return keywords, positional


def check_keywords(cls: type, n_positional: int, keywords: tuple[str, ...]) -> None:
    """Raise the ``TypeError`` naming ``cls`` for an unknown keyword or too many
    positional arguments; a call ``cls.__init__`` accepts passes untouched."""
    known = _parameters(getattr(cls, "__init__"))  # noqa: B009 - the class's, not an instance's
    if known is None:
        return
    names, positional = known
    where = f"{cls.__module__.split('.')[0]}.{cls.__qualname__}()"
    for k in keywords:
        if k not in names:
            near = difflib.get_close_matches(k, sorted(names), n=1)
            hint = f" (did you mean {near[0]}=?)" if near else ""
            raise TypeError(f"{where} got an unexpected keyword argument {k!r}{hint}")
    if n_positional > positional:
        raise TypeError(
            f"{where} takes at most {positional} positional arguments ({n_positional} "
            "given); the options after wandb_notes are keyword-only"
        )


def public_signature(cls: type) -> inspect.Signature:
    """``cls(...)``'s signature as its ``__init__`` has it (without ``self``): what
    ``inspect.signature`` and ``help()`` show, rather than the checking ``__new__``'s
    ``(*args, **kwargs)``."""
    sig = inspect.signature(getattr(cls, "__init__"))  # noqa: B009 - the class's
    return sig.replace(parameters=list(sig.parameters.values())[1:])
