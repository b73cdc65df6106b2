"""What nbval does not check on its own: that every stored output comes from one clean run,
that nothing noisy was stored, that failing cells are marked, and that nbval really fails
when a cell meant to fail stops failing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOISE = re.compile(r"I0000 |WARNING: All log messages|oneDNN custom operations|"
                   r"cpu_feature_guard|cudart_stub|at 0x[0-9a-f]{6,}|object at 0x")
IDS = [p.stem for p in NOTEBOOKS]


def _code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _output_text(output) -> str:
    parts = [output.get("text", ""), output.get("evalue", "")]
    parts += [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return "".join("".join(p) if isinstance(p, list) else str(p) for p in parts)


def test_the_course_has_its_notebooks():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "00_start_here.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_outputs_come_from_one_clean_top_to_bottom_run(path):
    counts = [c.execution_count for c in _code_cells(path) if c.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), (
        "run scripts/regenerate_outputs.py: some cells are unrun or were run out of order")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_log_noise_or_memory_addresses_in_outputs(path):
    for index, cell in enumerate(_code_cells(path)):
        for output in cell.outputs:
            match = NOISE.search(_output_text(output))
            assert not match, f"code cell {index}: stored output contains {match.group(0)!r}"
            if output.get("name") == "stderr":
                pytest.fail(f"code cell {index} stored stderr: {output['text'][:200]!r}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_errors_only_where_a_cell_is_marked_to_fail(path):
    for index, cell in enumerate(_code_cells(path)):
        marked = "raises-exception" in cell.metadata.get("tags", [])
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if marked:
            assert len(errors) == 1, f"code cell {index} is tagged raises-exception but stored " \
                                     "no error: nbval would compare nothing"
        else:
            assert not errors, f"code cell {index} failed: {errors[0].ename}: {errors[0].evalue}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_opens_and_closes_as_the_course_promises(path):
    notebook = nbformat.read(path, as_version=4)
    opening = notebook.cells[0].source
    assert notebook.cells[0].cell_type == "markdown"
    for phrase in ("You need", "Time"):
        assert phrase in opening, f"the opening cell does not say {phrase!r}"
    first_code = _code_cells(path)[0].source
    first_import = next(line for line in first_code.splitlines()
                        if line.startswith(("import ", "from ")))
    assert first_import.startswith(("import helpers", "from helpers")), \
        "import helpers before TensorFlow: it keeps TensorFlow's start-up log quiet"
    assert "make_deterministic" in first_code
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "## Summary" in text and "## Exercise" in text
    assert notebook.metadata["kernelspec"]["name"] == "python3"


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "```bash\n./course.sh test\n```" in readme
    assert ci.strip().splitlines()[-1] == "./course.sh test"
    assert "rm -rf .venv" in ci  # a fresh environment, so a missing install step shows up


TINY = """{{"cells": [{{"cell_type": "code", "execution_count": 1, "id": "a",
 "metadata": {{"tags": ["raises-exception"]}}, "source": "{source}",
 "outputs": [{{"output_type": "error", "ename": "ValueError", "evalue": "boom",
 "traceback": []}}]}}],
 "metadata": {{"kernelspec": {{"name": "python3", "display_name": "Python 3",
 "language": "python"}}}}, "nbformat": 4, "nbformat_minor": 5}}"""


CASES = {  # notebook name: (the cell's source now, should nbval pass?)
    "still_raises": ("raise ValueError('boom')", True),
    "stopped_raising": ("x = 1  # the fix someone made by accident", False),
    "raises_another_error": ("raise TypeError('boom')", False),
}


def test_nbval_fails_when_a_cell_meant_to_fail_stops_failing(tmp_path):
    for name, (source, _) in CASES.items():
        (tmp_path / f"{name}.ipynb").write_text(TINY.format(source=source))
    result = subprocess.run(  # one nbval run over all three notebooks
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-v",
         "-p", "no:cacheprovider", *sorted(str(p) for p in tmp_path.glob("*.ipynb"))],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    for name, (_, passes) in CASES.items():
        line = next((line for line in result.stdout.splitlines()
                     if line.startswith(f"{name}:") and ("PASSED" in line or "FAILED" in line)),
                    None)
        assert line is not None, result.stdout[-2000:]
        assert ("PASSED" in line) == passes, f"{name}: {line}"
