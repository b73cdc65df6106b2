"""Write the student edition of the course: every notebook, ready for a class to run.

    python -m scripts.make_student_edition [DIR]     # default: student/ (git-ignored)
    ./course.sh student [DIR]                        # the same, in the course environment

What changes, per notebook (read and written with nbformat, cell by cell):

* every code cell's stored outputs and execution count are cleared, except the outputs of a
  cell tagged ``keep-output`` (a plot a student should compare theirs against);
* every solution is removed: a ``<details>`` block in a Markdown cell that holds a fenced
  ``python`` block (the exercise pattern of ``helpers/exercises/__init__.py``); a Markdown cell
  left empty by that goes too;
* the stored widget state (notebook metadata ``widgets``) goes, as it is output too.

Nothing else changes: code cells keep their source and metadata (tags, the exercise
metadata the checkers use), in the same order; Markdown keeps every other word, hints
included (a ``<details>`` block without Python code stays). The checkers and their hints live
in ``helpers.exercises``, so they work unchanged.

The glossary comes too, as ``GLOSSARY.md`` beside the notebooks, and their links to it
(``../GLOSSARY.md`` in ``notebooks/``) point there: a server opened on the folder cannot reach
the folder above it. Nothing else is copied. The notebooks import ``helpers`` from the course
environment (installed in editable mode), and ``helpers.audio.clips`` finds ``data/`` next to
the ``helpers`` package, not from the working directory; so the student notebooks run from any
folder with the course kernel.

Running it again rewrites a notebook only if the course changed (it prints ``wrote`` or
``unchanged`` for each): the student folder is something to hand out, not to work in.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import NamedTuple

import nbformat

ROOT = Path(__file__).resolve().parents[1]
KEEP_OUTPUT_TAG = "keep-output"
GLOSSARY = "GLOSSARY.md"  # at the course's root
GLOSSARY_LINK = f"](../{GLOSSARY}"  # a course notebook's link to it (or a term), from notebooks/
DETAILS = re.compile(r"<details\b.*?</details>[ \t]*\n?", re.S)
SOLUTION_CODE = re.compile(r"<details>.*?```python\n(.*?)```.*?</details>", re.S)
EXERCISE_TITLE = re.compile(r"^## Exercise (\d+\.\d+):", re.M)


def solution_code(markdown: str) -> str | None:
    """The code of the first solution ``markdown`` reveals (a ``<details>`` block holding a
    fenced ``python`` block), or None when it reveals none."""
    match = SOLUTION_CODE.search(markdown)
    return match.group(1) if match else None


def _is_solution(details_block: str) -> bool:
    return solution_code(details_block) is not None


class Exercise(NamedTuple):
    """One exercise of a notebook, as ``helpers/exercises/__init__.py`` lays it out: its
    Markdown (the ``## Exercise N.M: ...`` cell), the starting code (metadata ``exercise``),
    the checker's cell, the hints (``<details>`` without code) and the solution's code."""

    id: str
    notebook: str
    title: nbformat.NotebookNode
    starter: nbformat.NotebookNode
    checker: nbformat.NotebookNode
    hints: tuple[nbformat.NotebookNode, ...]
    solution: str


def exercises(path: Path) -> list[Exercise]:
    """The exercises of a course notebook, in order."""
    cells = nbformat.read(path, as_version=4).cells
    found = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "code" or not cell.metadata.get("exercise"):
            continue
        title = cells[index - 1]
        number = EXERCISE_TITLE.search(title.source) if title.cell_type == "markdown" else None
        hints, solution = [], None
        for after in cells[index + 2 :]:
            if after.cell_type != "markdown" or not after.source.lstrip().startswith("<details>"):
                break
            solution = solution_code(after.source)
            if solution is not None:
                break
            hints.append(after)
        if number is None or solution is None:
            raise ValueError(
                f"{path.name}: the exercise in cell {index} needs a '## Exercise N.M: ...' cell "
                "before it and a solution after its hints (helpers/exercises/__init__.py)"
            )
        found.append(
            Exercise(
                number.group(1), path.stem, title, cell, cells[index + 1], tuple(hints), solution
            )
        )
    return found


def without_solutions(markdown: str) -> str:
    """``markdown`` with every ``<details>`` block holding Python code cut out."""
    return DETAILS.sub(lambda m: "" if _is_solution(m.group(0)) else m.group(0), markdown)


def without_outputs(
    notebook: nbformat.NotebookNode, keep: str | None = KEEP_OUTPUT_TAG
) -> nbformat.NotebookNode:
    """``notebook`` as a learner gets it before running anything (a new object): no stored
    outputs (except those of cells tagged ``keep``), no execution counts, no widget state.
    The student edition (``keep-output`` kept) and the learner's workspace
    (``scripts/workspace.py``, ``keep=None``: nothing kept) both start here."""
    if notebook.get("nbformat") != 4:
        raise ValueError(
            f"expected an nbformat 4 notebook, got nbformat {notebook.get('nbformat')}"
        )
    cleared = copy.deepcopy(notebook)
    cleared.metadata.pop("widgets", None)
    for cell in cleared.cells:
        if cell.cell_type != "code":
            continue
        cell.execution_count = None
        if keep in cell.metadata.get("tags", []):
            for output in cell.outputs:
                if "execution_count" in output:
                    output.execution_count = None
        else:
            cell.outputs = []
    return cleared


def with_glossary_beside(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``notebook`` (changed in place) with its links to the glossary pointing at
    ``GLOSSARY.md`` in its own folder: where a copy of the notebooks is opened (the workspace,
    the student edition), the glossary is copied beside them (``copy_glossary``)."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace(GLOSSARY_LINK, f"]({GLOSSARY}")
    return notebook


def copy_glossary(folder: Path, root: Path = ROOT) -> tuple[Path, bool]:
    """The course's glossary as ``folder/GLOSSARY.md`` (``write_if_changed``): the file and
    whether it was written."""
    path = Path(folder) / GLOSSARY
    return path, write_if_changed(path, (Path(root) / GLOSSARY).read_text(encoding="utf-8"))


def notebook_text(notebook: nbformat.NotebookNode) -> str:
    """A validated notebook as ``nbformat.write`` writes it (ending in a newline)."""
    nbformat.validate(notebook)
    text = nbformat.writes(notebook)
    return text if text.endswith("\n") else text + "\n"


def student_notebook(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student edition of one notebook (a new object; ``notebook`` is not changed)."""
    student = with_glossary_beside(without_outputs(notebook))
    cells = []
    for cell in student.cells:
        if cell.cell_type == "markdown" and _is_solution(cell.source):
            cell.source = without_solutions(cell.source)
            if not cell.source.strip():
                continue
        cells.append(cell)
    student.cells = cells
    return student


def course_notebooks(root: Path = ROOT) -> list[Path]:
    """The course's notebooks, in order."""
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` (and its folders) unless it already holds exactly that;
    whether it wrote, so that running a script twice changes nothing."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def write_student_edition(target: Path, root: Path = ROOT) -> list[tuple[Path, bool]]:
    """Write the student edition of every course notebook, and the glossary, into ``target``.

    Returns ``(path, written)`` per notebook, then the glossary's: ``written`` is False when
    the file there was already exactly this (so running it twice changes nothing)."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(
            f"expected a folder for the student edition, got the file {target}"
        )
    notebooks = course_notebooks(root)
    if not notebooks:
        raise FileNotFoundError(f"no notebooks/NN_*.ipynb under {root}")
    target.mkdir(parents=True, exist_ok=True)
    results = []
    for path in notebooks:
        text = notebook_text(student_notebook(nbformat.read(path, as_version=4)))
        out = target / path.name
        results.append((out, write_if_changed(out, text)))
    return [*results, copy_glossary(target, root)]


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    target = Path(argv[0]) if argv else ROOT / "student"
    for path, written in write_student_edition(target):
        print(f"{'wrote' if written else 'unchanged'}: {path}")
    print(
        "Run them with the course kernel (./course.sh lab opens the whole course; the "
        "notebooks import helpers/ and find data/ from any folder)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
