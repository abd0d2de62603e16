"""The architecture as a contract: the import-linter contracts in pyproject.toml hold.

``[tool.importlinter]`` lists aoff's parts from the top down (each may import only the
parts below it) and forbids import circles, between folders and between the modules of
one folder (lazy and typing-only imports count). docs/architecture.md says what each
part owns. The second test proves the check is live: the same contracts, run on a copy
of the package with one import running back up and one circle added, are broken.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import aoff

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE = Path(aoff.__file__).resolve().parent

LINT = (
    "import sys\n"
    "from importlinter.cli import lint_imports\n"
    "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))\n"
)


def lint(src: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package found under ``src``, with aoff's contracts."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [sys.executable, "-c", LINT, str(PYPROJECT)],
        env=env,
        cwd=src,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_parts_import_only_downward_and_in_no_circle() -> None:
    got = lint(PACKAGE.parent)
    assert got.returncode == 0, got.stdout + got.stderr
    declared = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    assert f"{len(declared)} kept, 0 broken" in got.stdout


def test_an_import_running_back_up_or_a_circle_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "src" / "aoff"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    # the transport reaching up into the pump (typing-only, which counts too) ...
    with open(copy / "_transport" / "_wire.py", "a", encoding="utf-8") as f:
        f.write(
            "\nfrom typing import TYPE_CHECKING\n\n"
            "if TYPE_CHECKING:\n    from .._pump._pump import Pump\n"
        )
    # ... and two modules of one folder importing each other (lazily)
    with open(copy / "_pump" / "_runner.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _lazy() -> None:\n    from ._intake import Intake  # noqa: F401\n")
    got = lint(tmp_path / "src")
    assert got.returncode != 0
    out = got.stdout
    assert "Each part imports only the parts below it BROKEN" in out, out
    assert "aoff._transport._wire -> aoff._pump._pump" in out, out
    assert "No import circles, between folders or between the modules of one folder BROKEN" in out
