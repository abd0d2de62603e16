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

import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

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
    assert sum(run for _, _, run in readme) >= 1  # the training loop


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


#: a site that ``mkdocs build --strict`` has just built from this tree: ``.ci/run`` sets it
#: to its docs stage's output (that stage runs before the tests, and stops CI if the
#: build fails), so that CI builds the site once (~10 s of CPU) rather than twice
BUILT_SITE = "AOFF_DOCS_SITE"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the dev extra)")
    if os.environ.get(BUILT_SITE):
        site = Path(os.environ[BUILT_SITE])
    else:
        site = tmp_path / "site"
        _build_strictly(site)
    assert (site / "reference" / "api" / "index.html").is_file()
    # the hook checked each page as it was built; the built site, read back, agrees
    hooks = _hooks()
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 20
    for page in pages:
        assert hooks.html_problems(page.read_text(encoding="utf-8")) == [], page
    # every public name is on a built reference page, under its public path
    built = "".join(
        (site / "reference" / name / "index.html").read_text(encoding="utf-8") for name in _PAGES
    )
    unrendered = [name for name in _public_names() if f'id="{name}"' not in built]
    assert unrendered == [], f"not rendered on the reference pages: {unrendered}"
    # every public method of every class on the API pages is on its built page
    for name in ("api", "testing"):
        html = (site / "reference" / name / "index.html").read_text(encoding="utf-8")
        for path, cls in _documented_classes(name):
            for method in _public_methods(cls):
                assert f'id="{path}.{method}"' in html, f"{path}.{method} is not on {name}.md"


def _build_strictly(site: Path) -> None:
    # no -q: mkdocs counts warnings for --strict only at its normal log level
    env = dict(_env(), NO_MKDOCS_2_WARNING="1")
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


_PAGES = {"api": ROOT / "docs/reference/api.md", "testing": ROOT / "docs/reference/testing.md"}


def _resolve(path: str) -> Any:
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise AssertionError(f"{path} does not resolve")


def _documented_classes(page: str) -> list[tuple[str, type]]:
    """The classes a reference page renders (its ``::: path`` directives)."""
    paths = re.findall(r"^::: (\S+)$", _PAGES[page].read_text(), re.M)
    objs = [(p, _resolve(p)) for p in paths]
    return [(p, o) for p, o in objs if inspect.isclass(o)]


def _public_methods(cls: type) -> list[str]:
    """``cls``'s public methods and properties that aoff defines (not Python's own)."""
    names = []
    for name in dir(cls):
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if name.startswith("_") or owner is None or not owner.__module__.startswith("aoff"):
            continue
        attr = inspect.getattr_static(cls, name)
        if isinstance(attr, staticmethod | classmethod):
            attr = attr.__func__
        if inspect.isfunction(attr) or isinstance(attr, property):
            names.append(name)
    return names


def public_modules() -> list[str]:
    """``aoff`` and every public module under it, found on disk (a name without a leading
    underscore: ``aoff/x.py`` or a package ``aoff/x/``), so a new one is checked unasked."""
    src = ROOT / "src" / "aoff"
    found = [p.stem for p in src.glob("*.py")]
    found += [p.name for p in src.iterdir() if (p / "__init__.py").is_file()]
    return ["aoff", *sorted(f"aoff.{n}" for n in set(found) if not n.startswith("_"))]


def _directives() -> set[str]:
    """Every ``::: path`` on the reference pages."""
    pages = (ROOT / "docs" / "reference").glob("*.md")
    return {p for page in pages for p in re.findall(r"^::: (\S+)$", page.read_text(), re.M)}


def _public_names() -> list[str]:
    """``module.name`` for each name in each public module's ``__all__``."""
    names = []
    for module in public_modules():
        exported = getattr(importlib.import_module(module), "__all__", None)
        assert exported, f"{module} is public but has no __all__"
        names += [f"{module}.{name}" for name in exported]
    return names


def test_every_public_name_is_on_the_api_pages() -> None:
    modules = public_modules()
    assert {"aoff", "aoff.rules", "aoff.testing", "aoff.ray", "aoff.torchrl"} <= set(modules)
    assert not any(m.split(".")[-1].startswith("_") for m in modules)
    directives = _directives()
    # a name is there by its own directive, or by its module's (which renders its __all__)
    missing = [
        name
        for name in _public_names()
        if name not in directives and name.rsplit(".", 1)[0] not in directives
    ]
    assert missing == [], f"public names missing from docs/reference/*.md: {missing}"
    # and nothing on the pages is stale: each directive is a public module or one of its names
    public = set(_public_names()) | set(modules)
    assert sorted(directives - public) == []


def test_every_public_method_on_the_api_pages_has_a_docstring() -> None:
    import aoff

    protocols = (aoff.Backend, aoff.Display)  # an implementation is documented by them
    missing = []
    for page in _PAGES:
        for path, cls in _documented_classes(page):
            for name in _public_methods(cls):
                attr = inspect.getattr_static(cls, name)
                doc = (
                    attr.fget.__doc__
                    if isinstance(attr, property)
                    else inspect.getdoc(getattr(cls, name))
                )
                doc = doc or next(
                    (getattr(p, name).__doc__ for p in protocols if hasattr(p, name)), None
                )
                if not doc:
                    missing.append(f"{path}.{name}")
    assert missing == [], f"public methods without a docstring: {missing}"
    # the methods the guides tell users to call are among them
    assert {"log_status", "set_collection_sync", "update_staging_pool"} <= set(
        _public_methods(aoff.OffPolicyLogger)
    )


def _hooks() -> Any:
    spec = importlib.util.spec_from_file_location(
        "mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hook_refuses_markdown_that_renders_wrong() -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the dev extra)")
    hooks = _hooks()
    good = "```bash notest\naoff ls\n```\n\n````markdown\n```python {x}\n```\n````\n"
    assert hooks.fence_problems(good) == []
    bad = "text\n```python title=x\nprint()\n```\n~~~ py notest extra\n~~~\n"
    assert hooks.fence_problems(bad) == [
        "line 2: fence info 'python title=x' is not one language word",
        "line 5: fence info 'py notest extra' is not one language word",
    ]
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match=r"guide\.md: line 1"):
        hooks.on_page_markdown("```python ok\n```\n", page=_Page("guide.md"))
    assert hooks.on_page_markdown("```bash notest\nls\n```\n", page=_Page("a.md")) == (
        "```bash\nls\n```\n"
    )
    # what a renderer leaves of a fence or a table it did not parse, in the built page
    spilled = "<p>see <code>```</code></p><p>text\n| <code>a</code> | b |</p>"
    # (code in the text is left out of it)
    assert hooks.html_problems(spilled) == ["a table row in the text: '|  | b |'"]
    assert hooks.html_problems("<h2>ls</h2><p>```bash</p>") == [
        "a literal ``` in the text: '```bash'"
    ]
    fine = "<pre><code>| a | b |\n```</code></pre><table><tr><td>a</td></tr></table>"
    assert hooks.html_problems(fine) == []


class _Page:
    def __init__(self, path: str) -> None:
        self.file = type("File", (), {"src_path": path})()


def test_the_readme_stays_an_overview() -> None:
    # two screens at 1280x800: 55 lines rendered 1,500 px high in headless Chromium,
    # most of it the guide table (one row a line), which may grow by a few rows
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 65, f"README.md has {len(lines)} lines; move detail into docs/"
    assert lines[0] == "# aoff"
    commands = [line for line in lines[:10] if line.startswith("python3 -m venv .venv")]
    assert [c.endswith("# tests") or "aoff demo" in c for c in commands] == [True, True]


def test_getting_started_names_every_extra() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    page = (ROOT / "docs" / "getting-started.md").read_text()
    rows = set(re.findall(r"^\| `([a-z0-9_-]+)` \|", page, re.M))
    missing = sorted(set(project["optional-dependencies"]) - rows)
    assert missing == [], f"extras missing from Getting started's table: {missing}"


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
    # ... and so are the seed parts of run names that aoff compare groups by, and the
    # config key and parameter that name a random seed in Tune's param_space, and that
    # key in a --where filter (config.seed)
    allowed = re.compile(
        r"random\s+seed|--seed|rng_seed|[-_]seed_?\d|\{seed\}|seed_keys|\"seed\"|config\.seed", re.I
    )
    for page in doc_pages():
        text = allowed.sub("", page.read_text())
        hits = [m.start() for m in re.finditer(r"seed", text, re.I)]
        assert not hits, (
            f"{page.relative_to(ROOT)}: 'seed' at {text[hits[0] - 40 : hits[0] + 40]!r}"
        )
