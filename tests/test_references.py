"""Every ``aoff._…`` module a docstring, comment or page names exists, and the source's
comments say why, not when.

Modules move; prose that names them does not move with them, and a reader who follows a
stale name finds nothing. This reads the text of the source, tests, benchmarks, examples
and docs (no import), and checks each dotted ``aoff._…`` name and each ``_part/_module.py``
path against the files under ``src/aoff``: the longest prefix that is a module must exist,
and what follows it must be a name that module's text defines.

A comment that names the project's issue or stop a line came from tells the reader
nothing the line does not, and goes stale as the code moves on: the comments and
docstrings under ``src/`` may not (another project's issue, ``SB3#1099``, is a fact).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "aoff"
TEXT = ("*.py", "*.md")
WHERE = ("src", "tests", "benchmarks", "examples", "docs", "README.md")

DOTTED = re.compile(r"\baoff((?:\._(?!_)[A-Za-z0-9_]+)(?:\.[A-Za-z0-9_]+)*)")
PATH = re.compile(r"(?<![\w/.])((?:_[a-z0-9_]+/)+_[a-z0-9_]+\.py)\b")


def _files() -> list[Path]:
    out: list[Path] = []
    for where in WHERE:
        top = ROOT / where
        if top.is_file():
            out.append(top)
            continue
        for pattern in TEXT:
            out.extend(p for p in top.rglob(pattern) if p != Path(__file__).resolve())
    return out


def _module(parts: list[str]) -> Path | None:
    here = SRC.joinpath(*parts)
    if here.with_suffix(".py").is_file():
        return here.with_suffix(".py")
    if (here / "__init__.py").is_file():
        return here / "__init__.py"
    return None


def _defines(module: Path, name: str) -> bool:
    text = module.read_text(encoding="utf-8")
    return re.search(
        rf"(?m)^\s*(?:async\s+def|def|class)\s+{name}\b|^\s*{name}\s*[:=]", text
    ) is not None or (re.search(rf"\b(?:import|as)\s+{name}\b|\b{name}\s*,", text) is not None)


def _stale_dotted(name: str) -> str | None:
    parts = name.lstrip(".").split(".")
    for cut in range(len(parts), 0, -1):
        module = _module(parts[:cut])
        if module is None:
            continue
        rest = parts[cut:]
        if rest and not _defines(module, rest[0]):
            return f"aoff{name}: {module.relative_to(ROOT)} defines no {rest[0]!r}"
        return None
    return f"aoff{name}: no such module under src/aoff"


def test_every_named_aoff_module_exists() -> None:
    stale: set[str] = set()
    for file in _files():
        text = file.read_text(encoding="utf-8", errors="replace")
        where = file.relative_to(ROOT)
        for match in DOTTED.finditer(text):
            problem = _stale_dotted(match.group(1))
            if problem:
                stale.add(f"{where}: {problem}")
        for match in PATH.finditer(text):
            if not (SRC / match.group(1)).is_file():
                stale.add(f"{where}: {match.group(1)}: no such file under src/aoff")
    assert not stale, "names of modules that do not exist:\n" + "\n".join(sorted(stale))


def test_the_check_finds_a_stale_name() -> None:
    assert _stale_dotted("._core._state.State") is None
    assert _stale_dotted("._state") is not None
    assert _stale_dotted("._core._state.NoSuchThing") is not None
    assert PATH.search("see _live/_produce.py") is not None


#: the project's own history: "stop 30", "round 4", "issue #12", "(#35)"
HISTORY = re.compile(r"(?i)\b(?:stop|round)\s+\d+\b|\bissues?\s+#?\d+|(?<![\w#&])#\d{1,3}\b")


def _prose(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a module's ``source``, with their first line."""
    out = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((getattr(node, "lineno", 1), doc))
    return out


def _history(source: str) -> list[str]:
    return [
        f"line {line}: {match.group(0)!r}"
        for line, text in _prose(source)
        for match in HISTORY.finditer(text)
    ]


def test_comments_in_src_say_why_not_history() -> None:
    found = [
        f"{file.relative_to(ROOT)} {hit}"
        for file in sorted(SRC.rglob("*.py"))
        for hit in _history(file.read_text(encoding="utf-8"))
    ]
    assert not found, "history in comments (say why instead):\n" + "\n".join(found)


def test_the_history_check_bites() -> None:
    assert _history('"""Done in stop 30."""\nx = 1  # see issue #12\n') == [
        "line 2: 'issue #12'",
        "line 1: 'stop 30'",
    ]
    assert _history("def f():\n    '''Landed in round 4 (#35).'''\n") == [
        "line 1: 'round 4'",
        "line 1: '#35'",
    ]
    assert _history('"""The root of SB3#1099; PR #18567."""\ncolor = "#123"\n') == []
