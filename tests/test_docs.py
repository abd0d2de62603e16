"""The documentation cannot rot: the site builds strictly and every example runs.

* ``mkdocs build --strict`` (the site under ``docs/``, ``mkdocs.yml`` at the root) must
  pass: a broken link, a missing page in the nav or an API reference (``::: aoff.X``)
  that no longer resolves fails the test. Skipped only when mkdocs is not installed.
* Every fenced ```` ```python ```` block in ``README.md`` and ``docs/**/*.md`` is run,
  except blocks fenced ```` ```python notest ```` (GPU, cluster, long training; see
  ``docs/contributing.md``). Each block is a complete script, run as ``python block.py``
  in a fresh subprocess (as a reader would run it), one test per page: the page's blocks
  run in order, in one temporary working folder, with the output piped (no terminal: the
  dashboard prints plain lines) and W&B offline.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120  # seconds per block: generous, the CI machine is slow and shared

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """``(first line number, code, runnable)`` of each fenced Python block in ``text``.

    A block is Python when its info string's first word is ``python`` or ``py``; it is
    runnable unless a later word is ``notest``.
    """
    blocks: list[tuple[int, str, bool]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if close and close["fence"].startswith(fence) and not close["info"]:
                break
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        if info and info[0] in ("python", "py"):
            blocks.append((i + 2, textwrap.dedent("\n".join(body)) + "\n", "notest" not in info))
        i = j + 1
    return blocks


def _pages_with_code() -> list[Path]:
    return [p for p in doc_pages() if any(run for _, _, run in python_blocks(p.read_text()))]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "WANDB_API_KEY"):
        env.pop(name, None)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    env.update(
        PYTHONUNBUFFERED="1",
        TERM="dumb",
        COLUMNS="100",
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        MPLBACKEND="Agg",
    )
    return env


def test_the_collector_finds_runnable_and_notest_blocks() -> None:
    text = (
        "```python\na = 1\n```\n"
        "- item\n\n  ```python\n  b = 2\n  ```\n"
        "```python notest\nc = 3\n```\n"
        "````markdown\n```python\nd = 4\n```\n````\n"
        "```bash\necho no\n```\n"
    )
    assert python_blocks(text) == [
        (2, "a = 1\n", True),
        (7, "b = 2\n", True),
        (10, "c = 3\n", False),
    ]
    readme = python_blocks((ROOT / "README.md").read_text())
    assert sum(run for _, _, run in readme) >= 2  # the sync and the async example


@pytest.mark.parametrize("page", _pages_with_code(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_runs(page: Path, tmp_path: Path) -> None:
    rel = page.relative_to(ROOT)
    scripts = []
    for line, code, runnable in python_blocks(page.read_text()):
        if runnable:
            path = tmp_path / f"block_line{line}.py"
            path.write_text(code)
            scripts.append((f"{rel}:{line}", str(path)))
    work = tmp_path / "cwd"
    work.mkdir()
    for label, script in scripts:
        proc = subprocess.run(
            [sys.executable, script],
            cwd=work,
            env=_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert proc.returncode == 0, (
            f"{label} failed (exit {proc.returncode})\n"
            f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
        )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    # no -q: mkdocs counts warnings for --strict only at its normal log level
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the dev extra)")
    env = dict(_env(), NO_MKDOCS_2_WARNING="1")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (site / "reference" / "api" / "index.html").is_file()


def test_the_readme_stays_an_overview() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail into docs/"
    assert lines[0] == "# aoff"
    commands = [line for line in lines[:10] if line.startswith("python3 -m venv .venv")]
    assert [c.endswith("# tests") or "aoff demo" in c for c in commands] == [True, True]


def test_the_dashboard_picture_is_drawn_from_a_real_demo_run(tmp_path: Path) -> None:
    out = tmp_path / "dashboard.svg"
    script = ROOT / "scripts" / "make_dashboard_svg.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--out", str(out), "--iterations", "12", "--iter-ms", "2"],
        cwd=tmp_path,
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    svg = out.read_text()
    assert svg.startswith("<svg") and "Generated with Rich" in svg
    # the frame is the demo's: its header names the simulated run, mid-way
    text = svg.replace("&#160;", " ")
    assert "SAC" in text and "Pendulum-v1" in text and "iter" in text
    assert (ROOT / "docs" / "assets" / "dashboard.svg").read_text().startswith("<svg")


def test_users_never_meet_the_word_seed_for_the_original_logger() -> None:
    # a random seed is a seed; the logger aoff replaces is named on its migration page
    # ... and so are the seed parts of run names that aoff compare groups by
    allowed = re.compile(r"random\s+seed|--seed|rng_seed|[-_]seed_?\d|\{seed\}", re.I)
    for page in doc_pages():
        text = allowed.sub("", page.read_text())
        hits = [m.start() for m in re.finditer(r"seed", text, re.I)]
        assert not hits, (
            f"{page.relative_to(ROOT)}: 'seed' at {text[hits[0] - 40 : hits[0] + 40]!r}"
        )
