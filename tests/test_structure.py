"""The size limits of helpers/ (CONTRIBUTING.md, "Code"), measured so they stay true.

A module is at most 400 lines, a class at most 150, a function body at most 60 (its
docstring excluded), and a docstring at most 15 lines, in every module, the probe package's
included.

One name per concept: one public ``denoise`` (``helpers.capstone.denoise``), and one clip type
(``helpers.dataset.Clip``): no other helper module defines a function ``denoise`` or a class
whose name ends in ``Clip``, ``Example`` or ``Mixture``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "helpers"
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 150
MAX_FUNCTION_BODY_LINES = 60
MAX_DOCSTRING_LINES = 15


def helper_files() -> list[Path]:
    return sorted(HELPERS.rglob("*.py"))


def docstring_lines(node: ast.AST) -> int:
    """Lines of the node's docstring (0 without one)."""
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0].end_lineno - body[0].lineno + 1
    return 0


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement of the body to the last, the docstring excluded."""
    body = node.body[1:] if docstring_lines(node) else node.body
    if not body:
        return 0
    return body[-1].end_lineno - body[0].lineno + 1


def measure(source: str) -> dict[str, list[tuple[str, int]]]:
    """``{"class": [(name, lines)], "function": [...], "docstring": [...]}`` of one module."""
    tree = ast.parse(source)
    found: dict[str, list[tuple[str, int]]] = {"class": [], "function": [], "docstring": []}
    found["docstring"].append(("<module>", docstring_lines(tree)))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            found["class"].append((node.name, node.end_lineno - node.lineno + 1))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found["function"].append((node.name, body_lines(node)))
        else:
            continue
        found["docstring"].append((node.name, docstring_lines(node)))
    return found


LIMITS = {"class": MAX_CLASS_LINES, "function": MAX_FUNCTION_BODY_LINES,
          "docstring": MAX_DOCSTRING_LINES}


def oversized(path: Path, root: Path = ROOT) -> list[str]:
    """What in one module breaks a limit, one line each (empty when it keeps them all)."""
    source = path.read_text()
    name = path.relative_to(root)
    problems = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        problems.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES})")
    for kind, sizes in measure(source).items():
        problems += [f"{name}: {kind} {what} has {n} lines (at most {LIMITS[kind]})"
                     for what, n in sizes if n > LIMITS[kind]]
    return problems


def test_the_measure_counts_what_it_says():
    source = '''"""Doc.

Two more lines.
"""


class Small:
    """One line."""

    def method(self):
        """A docstring
        of two lines."""
        a = 1
        return a


def empty():
    """Only a docstring."""
'''
    found = measure(source)
    assert found["class"] == [("Small", 8)]
    assert dict(found["function"]) == {"method": 2, "empty": 0}
    assert dict(found["docstring"]) == {"<module>": 4, "Small": 1, "method": 2, "empty": 1}


def test_an_oversized_module_is_reported(tmp_path):
    big = tmp_path / "big.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    big.write_text(f"def long():\n{body}\n" + "\n" * 400)
    assert oversized(big, tmp_path) == ["big.py: 462 lines (at most 400)",
                                        "big.py: function long has 61 lines (at most 60)"]
    big.write_text(f"def long():\n{body[:-len(body.splitlines()[-1]) - 1]}\n")
    assert oversized(big, tmp_path) == []


@pytest.mark.parametrize("path", helper_files(), ids=lambda p: str(p.relative_to(HELPERS)))
def test_helper_modules_keep_the_size_limits(path):
    assert not oversized(path), "\n".join(oversized(path))


def definitions(kind: type) -> list[tuple[str, str]]:
    """``(module, name)`` of every top-level function or class of that kind in helpers/."""
    found = []
    for path in sorted(HELPERS.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, kind):
                found.append((str(path.relative_to(HELPERS)), node.name))
    return found


def test_one_public_denoise():
    denoise = [module for module, name in definitions(ast.FunctionDef) if name == "denoise"]
    assert denoise == ["capstone_model.py"], denoise
    import helpers.capstone
    import helpers.capstone_model

    assert helpers.capstone.denoise is helpers.capstone_model.denoise


def test_one_clip_type():
    clip_types = [(module, name) for module, name in definitions(ast.ClassDef)
                  if name.endswith(("Clip", "Example", "Mixture"))]
    assert clip_types == [("dataset.py", "Clip")], clip_types


def test_every_helper_module_has_its_test_file():
    """``helpers/<module>.py`` is tested in ``tests/test_<module>.py``; the exercise checkers
    (the ``helpers.exercises`` package) in ``tests/test_exercises.py``, and each module of the
    ``helpers.probe`` package in ``tests/test_probe_<module>.py`` (its ``__init__`` in
    ``tests/test_probe.py``)."""
    modules = {p.stem for p in HELPERS.glob("*.py") if p.stem != "__init__"} | {"exercises"}
    modules |= {"probe"} | {f"probe_{p.stem}" for p in (HELPERS / "probe").glob("*.py")
                            if p.stem != "__init__"}
    missing = sorted(m for m in modules if not (ROOT / "tests" / f"test_{m}.py").exists())
    assert not missing, f"helper modules without tests/test_<module>.py: {missing}"
