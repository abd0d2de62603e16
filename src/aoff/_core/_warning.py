"""The one warning class aoff issues, at the bottom of the package.

It lives in the core so that the hot path (``_recorder``) can warn without importing a
face; the faces and ``aoff`` re-export it.
"""

from __future__ import annotations

__all__ = ["AoffWarning"]


class AoffWarning(UserWarning):
    """Misuse that aoff answers without raising (e.g. logging after ``finish()``)."""


AoffWarning.__module__ = "aoff"
