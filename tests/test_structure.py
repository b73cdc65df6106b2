"""The package's shape: each concept subpackage states its public API, and each idea has one
implementation (one ``denoise``, one clip type)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
CONCEPTS = sorted(p.parent.name for p in HELPERS.glob("*/__init__.py"))


@pytest.mark.parametrize("name", CONCEPTS)
def test_each_subpackage_exports_its_public_api(name):
    package = importlib.import_module(f"helpers.{name}")
    assert package.__all__, f"helpers.{name} has an empty __all__"
    missing = [n for n in package.__all__ if not hasattr(package, n)]
    assert not missing, f"helpers.{name}.__all__ names what it does not define: {missing}"
    assert len(set(package.__all__)) == len(package.__all__)


def definitions(kind: type) -> list[tuple[str, str]]:
    """``(module, name)`` of every top-level function or class of that kind in helpers/."""
    found = []
    for path in sorted(HELPERS.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, kind):
                found.append((str(path.relative_to(HELPERS)), node.name))
    return found


def test_one_denoise():
    denoise = [module for module, name in definitions(ast.FunctionDef) if name == "denoise"]
    assert denoise == ["models/denoisers.py"], denoise


def test_one_clip_type():
    clip_types = [
        (module, name)
        for module, name in definitions(ast.ClassDef)
        if name.endswith(("Clip", "Example", "Mixture"))
    ]
    assert clip_types == [("audio/clips.py", "Clip")], clip_types


def shown_sources() -> list[tuple[str, str, str]]:
    """``(notebook, "module:function", shown code)`` of every Markdown cell that shows a
    helper's code (metadata ``source_of``)."""
    import json

    found = []
    for path in sorted((HELPERS.parent / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if target := cell.get("metadata", {}).get("source_of"):
                text = "".join(cell["source"])
                found.append(
                    (path.stem, target, text.removeprefix("```python\n").removesuffix("\n```"))
                )
    return found


@pytest.mark.parametrize("notebook, target, shown", shown_sources(), ids=lambda v: str(v)[:40])
def test_code_a_notebook_shows_is_the_helpers_code(notebook, target, shown):
    module, _, name = target.partition(":")
    actual = inspect.getsource(getattr(importlib.import_module(module), name)).rstrip("\n")
    assert shown == actual, f"{notebook} shows an old copy of {target}: copy it again"


def test_the_regeneration_copies_what_the_check_compares(tmp_path):
    """A ``source_of`` cell is refreshed by scripts/regenerate_outputs.py with exactly the
    text the test above compares, for every cell that has one and for a helper none shows."""
    from scripts import regenerate_outputs as regenerate

    shown = shown_sources()
    assert shown, "no notebook shows a helper's code: the test above checks nothing"
    for target in [t for _, t, _ in shown] + ["helpers.course.reproducibility:versions"]:
        module, _, name = target.partition(":")
        actual = inspect.getsource(getattr(importlib.import_module(module), name)).rstrip("\n")
        copied = regenerate.shown_source(target)
        assert copied.removeprefix("```python\n").removesuffix("\n```") == actual


def test_the_developers_guide_names_every_script_and_the_readme_none():
    """CONTRIBUTING.md's layout lists every module of scripts/; the README, for learners,
    lists none (a list there drifted)."""
    root = HELPERS.parent
    scripts = sorted(p.stem for p in (root / "scripts").glob("*.py") if p.stem != "__init__")
    row = next(
        line
        for line in (root / "CONTRIBUTING.md").read_text().splitlines()
        if line.startswith("| `scripts/` |")
    )
    assert [name for name in scripts if f"`{name}`" not in row] == []
    readme = (root / "README.md").read_text()
    assert [name for name in scripts if f"{name}.py" in readme and name != "course"] == []
