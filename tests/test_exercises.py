"""Every exercise in every notebook: its checker rejects the starting code and accepts the
solution the learner can reveal (see helpers/exercises/__init__.py for the pattern)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOLUTION = re.compile(r"<details>.*?```python\n(.*?)```.*?</details>", re.S)


def _exercises():
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        for index, cell in enumerate(cells):
            spec = cell.metadata.get("exercise")
            if cell.cell_type != "code" or not spec:
                continue
            solution = next((m.group(1) for c in cells[index + 1:] if c.cell_type == "markdown"
                             for m in [SOLUTION.search(c.source)] if m), None)
            yield pytest.param(path.name, cell.source, solution, spec,
                               id=f"{path.stem}:{spec['function']}")


def _function(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


EXERCISES = list(_exercises())


@pytest.mark.parametrize("notebook, starter, solution, spec", EXERCISES)
def test_checker_rejects_starter_and_accepts_solution(notebook, starter, solution, spec):
    assert solution is not None, (
        f"{notebook}: exercise {spec['function']} has no revealable solution")
    module_name, check_name = spec["checker"].split(":")
    check = getattr(importlib.import_module(module_name), check_name)
    starting = check(_function(starter, spec["function"]))
    assert not starting.passed, f"checker accepted the starting code: {starting}"
    assert starting.hint, "a failed check must give a hint"
    solved = check(_function(solution, spec["function"]))
    assert solved.passed, f"checker rejected the solution: {solved}"


def test_every_notebook_has_exercises():
    with_exercises = {p for p, *_ in (e.values for e in EXERCISES)}
    missing = [p.name for p in NOTEBOOKS if p.name not in with_exercises]
    assert not missing, f"notebooks without checked exercises: {missing}"
