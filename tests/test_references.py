"""Every ``aoff._…`` module a docstring, comment or page names exists.

Modules move; prose that names them does not move with them, and a reader who follows a
stale name finds nothing. This reads the text of the source, tests, benchmarks, examples
and docs (no import), and checks each dotted ``aoff._…`` name and each ``_part/_module.py``
path against the files under ``src/aoff``: the longest prefix that is a module must exist,
and what follows it must be a name that module's text defines.
"""

from __future__ import annotations

import re
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
