"""The README's minutes come from scripts/notebook_minutes.py (issue 12): prose at 150 words a
minute, 20 s per line of code, the run time and the exercises. Fast: nothing is executed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("notebook_minutes",
                                               ROOT / "scripts" / "notebook_minutes.py")
minutes = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = minutes  # dataclasses look their module up there
_spec.loader.exec_module(minutes)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TOLERANCE = 0.30


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_readme_minutes_are_within_30_percent_of_the_measure(path):
    stated = minutes.readme_minutes(ROOT / "README.md")
    assert path.stem in stated, f"README's course map has no row for {path.stem}"
    measured = minutes.notebook_minutes(path).total
    assert abs(stated[path.stem] - measured) <= TOLERANCE * measured, (
        f"README says {stated[path.stem]} minutes for {path.stem}; the measure is "
        f"{measured:.0f} (python scripts/notebook_minutes.py): update the course map")


def _notebook(tmp_path: Path, cells: list[dict]) -> Path:
    path = tmp_path / "99_tiny.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    return path


def test_the_measure_counts_words_code_lines_and_exercises(tmp_path):
    path = _notebook(tmp_path, [
        {"cell_type": "markdown", "metadata": {},
         "source": "# Title words\n\n| a | b |\n|---|---|\n<b>bold</b> `tf.x`\n"
                   "```python\nshown = 1\n\nalso = 2\n```"},  # 7 words, 2 code lines
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1\n\ny = 2\n"},
        {"cell_type": "code", "metadata": {"exercise": {"checker": "m:f", "function": "f"}},
         "outputs": [], "source": "def f():\n    return 1\n"},  # the exercise's own cells
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "check(f)\n"},
        {"cell_type": "markdown", "metadata": {},
         "source": "<details>\n\n```python\ndef f():\n    return 2\n```\n</details>"},
    ])
    measured = minutes.notebook_minutes(path)
    assert (measured.words, measured.code_lines, measured.exercises) == (7, 4, 1)
    expected = (7 / minutes.WORDS_PER_MINUTE + 4 * minutes.SECONDS_PER_CODE_LINE / 60
                + minutes.RUN_MINUTES + minutes.EXERCISE_MINUTES)
    assert measured.total == pytest.approx(expected)


def test_bad_inputs_say_what_was_expected(tmp_path):
    with pytest.raises(ValueError, match="existing .ipynb"):
        minutes.notebook_minutes(tmp_path / "missing.ipynb")
    readme = tmp_path / "README.md"
    readme.write_text("# no course map here\n")
    with pytest.raises(ValueError, match="no course-map rows"):
        minutes.readme_minutes(readme)
