"""griffe extension for the API reference: Sphinx roles in docstrings become code spans.

aoff's docstrings name other objects the Sphinx way (``:class:`~aoff.Backend```,
``:meth:`flush```); mkdocstrings renders Markdown, where those roles would show as
raw text. This turns each role into a plain code span (``Backend``, ``flush``), with
the leading ``~`` meaning "last component only", as in Sphinx.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":(?:class|meth|func|attr|mod|data|exc|obj|py:\w+):`(~?)([^`<]+?)`")


def _code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2).strip()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxRoles(Extension):
    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_code, obj.docstring.value)
