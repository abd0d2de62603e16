"""mkdocs hook: fences the site can render, and a page that cannot render wrong in silence.

``notest`` marks a documentation example that the test suite must not run (GPU, cluster,
long training; see ``docs/contributing.md`` and ``tests/test_docs.py``). GitHub reads the
first word of the info string as the language, but pymdownx.superfences does not accept
a bare extra word, so the marker is dropped before the page is rendered, whatever the
language (```` ```bash notest ```` too).

Markdown that a renderer does not understand is shown as text, not refused: a fence it
does not parse swallows the heading after it into a code block and prints a literal
```` ``` ````; a table row after a missing blank line becomes a paragraph of pipes. Both
pass ``mkdocs build --strict``. So this hook refuses them: a fence whose info string is
not one language word (optionally followed by ``notest``), and, in the built HTML, a
```` ``` ```` or a table row (``| a | b |``) in running text, outside code.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from mkdocs.exceptions import PluginError

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
_NOTEST = re.compile(r"^([ \t]*(?:`{3,}|~{3,})[ \t]*[\w+-]+)[ \t]+notest[ \t]*$", re.M)
#: an info string the site renders: one language word, and ``notest`` after it
_KNOWN_INFO = re.compile(r"^[\w+-]+(?:[ \t]+notest)?$")
#: a table row that spilled into text: starts and ends with a pipe, a pipe between
_TABLE_ROW = re.compile(r"^\s*\|.*\|.*\|\s*$", re.M)


def fence_problems(markdown: str) -> list[str]:
    """Each opening fence whose info string the site would not render as meant."""
    problems: list[str] = []
    open_fence: str | None = None
    for number, line in enumerate(markdown.splitlines(), 1):
        m = _FENCE.match(line)
        if m is None:
            continue
        fence, info = m["fence"], m["info"]
        if open_fence is not None:
            if fence.startswith(open_fence) and not info:
                open_fence = None
            continue
        open_fence = fence
        if info and not _KNOWN_INFO.match(info):
            problems.append(f"line {number}: fence info {info!r} is not one language word")
    return problems


class _Text(HTMLParser):
    """The text of a page outside ``<pre>``, ``<code>``, ``<script>`` and ``<style>``,
    one string per block element."""

    _SKIP = frozenset(("pre", "code", "script", "style"))
    _BLOCKS = frozenset(("p", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "div"))

    def __init__(self) -> None:
        super().__init__()
        self.skipping = 0
        self.blocks: list[str] = [""]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in self._BLOCKS:
            self.blocks.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self.skipping = max(self.skipping - 1, 0)
        elif tag in self._BLOCKS:
            self.blocks.append("")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.blocks[-1] += data


def html_problems(html: str) -> list[str]:
    """Markdown that reached the built page as text: a ```` ``` ```` or a table row."""
    parser = _Text()
    parser.feed(html)
    problems: list[str] = []
    for block in parser.blocks:
        if "```" in block:
            problems.append(f"a literal ``` in the text: {block.strip()[:80]!r}")
        row = _TABLE_ROW.search(block)
        if row is not None:
            problems.append(f"a table row in the text: {row.group(0).strip()[:80]!r}")
    return problems


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    problems = fence_problems(markdown)
    if problems:
        raise PluginError(f"{page.file.src_path}: " + "; ".join(problems))
    return _NOTEST.sub(r"\1", markdown)


def on_post_page(output: str, page: Any, **kwargs: Any) -> str:
    problems = html_problems(output)
    if problems:
        raise PluginError(f"{page.file.src_path} renders wrong: " + "; ".join(problems))
    return output
