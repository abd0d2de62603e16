"""mkdocs hook: let ```` ```python notest ```` fences render as Python.

``notest`` marks a documentation example that the test suite must not run (GPU, cluster,
long training; see ``docs/contributing.md`` and ``tests/test_docs.py``). GitHub reads the
first word of the info string as the language, but pymdownx.superfences does not accept
a bare extra word, so the marker is dropped before the page is rendered.
"""

from __future__ import annotations

import re
from typing import Any

_NOTEST = re.compile(r"^([ \t]*(?:`{3,}|~{3,})[ \t]*(?:python|py))[ \t]+notest[ \t]*$", re.M)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return _NOTEST.sub(r"\1", markdown)
