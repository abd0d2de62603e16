"""Each file name of a run folder is spelled in one module, its format's in ``_runfolder``.

A name spelled twice drifts: a reader that globs ``aoff-summary*.json`` while the writer
names ``aoff-summary-2.json`` another way, a backend that opens ``metrics.jsonl`` beside
the format module resume cuts. The check reads every module's string literals as code
(docstrings and prose, a string with a space in it, such as a help text or a message, are
left out): a name may appear in exactly one module, the one that owns its format.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "aoff"

#: a piece of a file name -> the one module that may spell it
OWNERS = {
    "metrics.jsonl": "_runfolder/lines/_names.py",
    "progress.csv": "_runfolder/lines/_names.py",
    "aoff-summary": "_runfolder/summary/_file.py",
    "config.json": "_runfolder/_configfile.py",
    "tfevents": "_runfolder/tensorboard/_files.py",
    "aoff-hparams": "_runfolder/tensorboard/_files.py",
}


def _code_strings(tree: ast.AST) -> list[str]:
    """The module's string constants, f-strings' literal parts included, that are not a
    docstring and hold no whitespace (prose)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and not any(c.isspace() for c in node.value)
    ]


def spelled_in(root: Path) -> dict[str, list[str]]:
    """Name piece -> the modules under ``root`` whose code spells it."""
    found: dict[str, list[str]] = {name: [] for name in OWNERS}
    for path in sorted(root.rglob("*.py")):
        strings = _code_strings(ast.parse(path.read_text(encoding="utf-8")))
        for name in OWNERS:
            if any(name in s for s in strings):
                found[name].append(path.relative_to(root).as_posix())
    return found


def test_each_run_folder_file_name_is_spelled_in_its_format_module_only() -> None:
    found = spelled_in(SRC)
    assert found == {name: [owner] for name, owner in OWNERS.items()}


def test_a_second_spelling_is_found(tmp_path: Path) -> None:
    """The check bites: a backend opening ``metrics.jsonl`` itself, even in an f-string,
    is a second spelling; the same name in a message or a docstring is not."""
    (tmp_path / "_runfolder" / "lines").mkdir(parents=True)
    (tmp_path / "_runfolder" / "lines" / "_jsonl.py").write_text('JSONL_NAME = "metrics.jsonl"\n')
    (tmp_path / "_backend.py").write_text(
        '"""Writes metrics.jsonl."""\n'
        'def f(d):\n    return f"{d}/metrics.jsonl"\n'
        'MESSAGE = "could not write metrics.jsonl"\n'
    )
    assert spelled_in(tmp_path)["metrics.jsonl"] == ["_backend.py", "_runfolder/lines/_jsonl.py"]
