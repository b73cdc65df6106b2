"""How long a notebook takes a learner, from the notebook itself (no execution).

    minutes = prose words / WORDS_PER_MINUTE          (150: technical reading)
            + code lines x SECONDS_PER_CODE_LINE      (20 s: reading a line of code)
            + RUN_MINUTES                             (running it)
            + EXERCISE_MINUTES per checked exercise   (10: the task, the starting code,
                                                      writing, the checker, its hint and
                                                      the solution)

* Prose is every Markdown cell without its fenced code blocks, HTML tags and table rules;
  a word is a run of letters or digits (``tf.GradientTape`` is two words).
* Code lines are the non-blank lines of the code cells and of the fenced code blocks in
  Markdown, except the exercises' own (the starting code, the checker cell and what sits in
  ``<details>``: the hints and the solution), which the exercise time covers. Outputs are not
  counted: reading a gradient report is part of reading the prose around it.
* The run time is a constant, not a measurement: every notebook runs in well under a minute
  on two cores (README), so one minute is an upper bound, a few per cent of any notebook's
  time, and a constant keeps this check deterministic, instant and free of execution. A
  stored per-machine measurement would drift with the machine and say no more.

``python scripts/notebook_minutes.py`` prints the measure of every notebook next to the
README's course map; ``tests/test_minutes.py`` fails when a map entry is more than 30 % off.
After changing a notebook, rerun it and put the rounded total in the README's map (and in the
notebook's own "Time" line).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

WORDS_PER_MINUTE = 150
SECONDS_PER_CODE_LINE = 20
RUN_MINUTES = 1.0
EXERCISE_MINUTES = 10.0

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"```.*?```", re.S)
DETAILS = re.compile(r"<details>.*?</details>", re.S)
TAG = re.compile(r"<[^>]+>")
WORD = re.compile(r"[A-Za-z0-9]+")
MAP_ROW = re.compile(r"^\|\s*\[`(\d\d_\w+)`\]\([^)]*\)\s*\|.*\|\s*(\d+)\s*\|\s*$", re.M)


@dataclass(frozen=True)
class Minutes:
    """The parts of a notebook's time, in minutes, and their total."""

    notebook: str
    words: int
    code_lines: int
    exercises: int

    @property
    def reading(self) -> float:
        return self.words / WORDS_PER_MINUTE

    @property
    def code(self) -> float:
        return self.code_lines * SECONDS_PER_CODE_LINE / 60

    @property
    def total(self) -> float:
        return self.reading + self.code + RUN_MINUTES + self.exercises * EXERCISE_MINUTES


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _code_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def notebook_minutes(path: str | Path) -> Minutes:
    """Measure one notebook (``.ipynb``): prose words, code lines and checked exercises."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"expected the path of an existing .ipynb notebook, got {path}")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    words = code_lines = exercises = 0
    checker_cell_next = False
    for cell in cells:
        text = _source(cell)
        if cell["cell_type"] == "markdown":
            outside_details = DETAILS.sub(" ", text)
            code_lines += sum(_code_lines(block.strip("`").partition("\n")[2])
                              for block in FENCE.findall(outside_details))
            prose = TAG.sub(" ", FENCE.sub(" ", text))
            prose = re.sub(r"^\|[-|: ]+\|$", " ", prose, flags=re.M)  # table rules
            words += len(WORD.findall(prose))
        elif cell["cell_type"] == "code":
            if cell.get("metadata", {}).get("exercise"):
                exercises += 1
                checker_cell_next = True
            elif checker_cell_next:
                checker_cell_next = False
            else:
                code_lines += _code_lines(text)
    return Minutes(path.stem, words, code_lines, exercises)


def readme_minutes(readme: str | Path = ROOT / "README.md") -> dict[str, int]:
    """The minutes column of the README's course map: {notebook stem: minutes}."""
    rows = MAP_ROW.findall(Path(readme).read_text(encoding="utf-8"))
    if not rows:
        raise ValueError(f"no course-map rows ('| [`NN_name`](...) | ... | minutes |') in {readme}")
    return {name: int(minutes) for name, minutes in rows}


def main() -> int:
    stated = readme_minutes()
    print(f"{'notebook':28s} {'words':>6s} {'code':>5s} {'ex':>3s} {'measure':>8s} {'README':>7s}")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        m = notebook_minutes(path)
        print(f"{m.notebook:28s} {m.words:6d} {m.code_lines:5d} {m.exercises:3d} "
              f"{m.total:8.1f} {stated.get(m.notebook, '-'):>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
