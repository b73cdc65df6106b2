"""Write an nbgrader course folder: one assignment per class session, graded by the checkers.

    python -m scripts.nbgrader_course [DIR]     # default: nbgrader/ (git-ignored)
    ./course.sh nbgrader [DIR]                  # the same, with requirements-instructor.txt

``DIR`` gets ``nbgrader_config.py``, ``grading/`` and ``source/homeworkN/homeworkN.ipynb``, one
assignment per session of INSTRUCTORS.md's plan, holding the exercises that session gives as
homework (``notebook_minutes.homework_sheet``: minutes and points, a point per solo minute). The
notebook is the session's homework sheet: a table of its exercises, a setup cell (the course's
first code cell), then each exercise as the course has it (``make_student_edition.exercises``):

* its Markdown, with its points and minutes;
* a solution cell (``nbgrader.solution``): the course's starting code, then the solution the
  course reveals between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, where it redefines the
  function. ``nbgrader generate_assignment`` cuts that region (``ClearSolutions.code_stub`` is a
  comment), so a learner starts from the course's starting code;
* a locked check cell (``nbgrader.grade``, its points): the course's checker on the learner's
  function, their feedback while they work. Under ``autograde`` it runs nothing in the
  learner's kernel: the grading package (``grading/gradient_clinic_grading``, written here
  from ``scripts/gradient_clinic_grading`` and a copy of ``helpers/exercises``; never in the
  students' environment) grades the answer cell's source in a fresh interpreter and gives the
  cell the checker's verdict: full points for "Solved", else an ``AssertionError`` with the
  checker's message and hint, the feedback;
* its hints (words, no code).

Nothing of the lessons is copied: an assignment runs only what its exercises need. Running it
again rewrites only what changed. Then, with nbgrader (INSTRUCTORS.md, "Grading with
nbgrader")::

    cd DIR && nbgrader generate_assignment homework1      # release/: solutions cut
    nbgrader autograde homework1                          # submitted/<student>/homework1/
    nbgrader generate_feedback homework1
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat

from scripts import make_student_edition as edition
from scripts import notebook_minutes as minutes

ROOT = Path(__file__).resolve().parents[1]
COURSE_ID = "gradient-clinic"
EXCHANGE_ROOT = "/srv/nbgrader/exchange"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# What generate_assignment leaves where the solution was: the starting code stays above it.
CODE_STUB = "# Change the function above until the check below says Solved."
CELL_TIMEOUT = 300  # seconds a cell may run under autograde (a checker trains a small model)
GRADING = Path(__file__).resolve().parent / "gradient_clinic_grading"  # the grading package
CONFIG = f'''"""nbgrader's settings for the Gradient Clinic assignments (scripts/nbgrader_course.py
writes this file; run nbgrader from this folder, in the course environment)."""

import sys
from pathlib import Path

# The grading package beside this file (grading/gradient_clinic_grading): the checkers and
# their references, which the students' environment does not hold, and the preprocessors that
# grade each answer in a fresh interpreter on the answer cell alone.
sys.path.insert(0, str(Path(__file__).resolve().parent / "grading"))
from gradient_clinic_grading.autograde import PREPROCESSORS  # noqa: E402

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{COURSE_ID}"
# The exchange on a hub: a folder every account reads and writes (INSTRUCTORS.md); the students'
# side is set in their hub environment by ./course.sh hub.
c.Exchange.root = "{EXCHANGE_ROOT}"
c.Autograde.autograde_preprocessors = PREPROCESSORS
# A solution region follows the course's starting code, which the learner changes.
c.ClearSolutions.code_stub = {{"python": {CODE_STUB!r}}}
c.Execute.timeout = {CELL_TIMEOUT}
# The kernel autograde starts logs errors only: ipykernel warns on every start on 127.0.0.1 that
# TCP is unencrypted (a student's own warnings, Python's, still show in their outputs).
c.Execute.extra_arguments = ["--IPKernelApp.log_level=ERROR"]
'''


def assignment_name(session: int) -> str:
    return f"homework{session}"


def _nbgrader(cell: nbformat.NotebookNode, grade_id: str, **flags) -> nbformat.NotebookNode:
    """``cell`` with nbgrader's metadata (schema 3): a solution, a graded test or locked."""
    cell.metadata["nbgrader"] = {
        "grade": flags.get("grade", False),
        "grade_id": grade_id,
        "locked": flags.get("locked", False),
        "schema_version": 3,
        "solution": flags.get("solution", False),
        **({"points": flags["points"]} if "points" in flags else {}),
    }
    return cell


def sheet_markdown(session: int, rows: list[tuple[str, str, int, int]]) -> str:
    """The homework sheet: the session's exercises with their minutes and points."""
    lines = [
        f"# Homework {session}: the exercises session {session} gives as homework",
        "",
        "Each exercise is the one in its notebook: change the function in its cell until the "
        "check below it says *Solved*. The check is the grade: all its points when it says "
        "*Solved*, none otherwise, and its message says what it saw. Run the setup cell first.",
        "",
        "| exercise | notebook | minutes | points |",
        "|---|---|---|---|",
        *(f"| {e} | `{notebook}` | {m} | {p} |" for e, notebook, m, p in rows),
        f"| total | | {sum(r[2] for r in rows)} | {sum(r[3] for r in rows)} |",
    ]
    return "\n".join(lines)


def assignment(session: int, root: Path = ROOT) -> nbformat.NotebookNode:
    """The assignment notebook of one session (nbgrader's source version: solutions in)."""
    rows = minutes.homework_sheet(session, root)
    if not rows:
        raise ValueError(f"session {session} gives no exercise as homework")
    wanted = {exercise: (minutes_, points) for exercise, _, minutes_, points in rows}
    paths = {p.stem: p for p in edition.course_notebooks(root)}
    first = nbformat.read(paths[rows[0][1]], as_version=4)
    setup = next(c for c in first.cells if c.cell_type == "code")
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": first.metadata["kernelspec"]})
    cells = [
        _nbgrader(
            nbformat.v4.new_markdown_cell(sheet_markdown(session, rows)), "sheet", locked=True
        ),
        _nbgrader(nbformat.v4.new_code_cell(setup.source), "setup", locked=True),
    ]
    for stem in dict.fromkeys(notebook for _, notebook, _, _ in rows):
        for exercise in edition.exercises(paths[stem]):
            if exercise.id not in wanted:
                continue
            minutes_, points = wanted[exercise.id]
            key = exercise.id.replace(".", "_")
            spec = exercise.starter.metadata["exercise"]
            module, check = spec["checker"].split(":")
            title = f"{exercise.title.source}\n\n**{points} points**, about {minutes_} minutes."
            solution = f"{exercise.starter.source}\n\n\n{BEGIN}\n{exercise.solution}{END}"
            test = (
                f"from {module} import {check}\n\n"
                "# Your feedback: the course's checker on your function. The grade is the same\n"
                "# check, run apart on your answer cell alone: all the points for Solved.\n"
                f"{check}({spec['function']})"
            )
            cells += [
                nbformat.v4.new_markdown_cell(title),
                _nbgrader(
                    nbformat.v4.new_code_cell(solution, metadata={"exercise": spec}),
                    f"exercise_{key}",
                    solution=True,
                ),
                _nbgrader(
                    nbformat.v4.new_code_cell(test),
                    f"check_{key}",
                    grade=True,
                    locked=True,
                    points=points,
                ),
                *(nbformat.v4.new_markdown_cell(hint.source) for hint in exercise.hints),
            ]
    notebook.cells = cells
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"{assignment_name(session)}-{index}"  # stable: a rerun changes no byte
    return notebook


def graded_exercises(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """Which checker grades which answer, by the check cell's grade id: the answer cell's grade
    id, the checker in the grading package and the function the answer defines."""
    specs = {}
    for path in edition.course_notebooks(root):
        for exercise in edition.exercises(path):
            key = exercise.id.replace(".", "_")
            spec = exercise.starter.metadata["exercise"]
            specs[f"check_{key}"] = {
                "answer": f"exercise_{key}",
                "checker": spec["checker"].replace(
                    "helpers.exercises", "gradient_clinic_grading.checkers"
                ),
                "function": spec["function"],
            }
    return specs


def grading_package(target: Path, root: Path = ROOT) -> dict[Path, str]:
    """The files of ``grading/gradient_clinic_grading`` in the course folder: the package's
    own modules, ``exercises.json``, and the course's checkers and references as
    ``checkers/`` (every ``helpers.exercises`` renamed ``gradient_clinic_grading.checkers``)."""
    package = target / "grading" / "gradient_clinic_grading"
    files = {package / path.name: path.read_text() for path in sorted(GRADING.glob("*.py"))}
    files[package / "exercises.json"] = json.dumps(graded_exercises(root), indent=1) + "\n"
    for path in sorted((root / "helpers" / "exercises").glob("*.py")):
        text = path.read_text().replace("helpers.exercises", "gradient_clinic_grading.checkers")
        files[package / "checkers" / path.name] = text
    return files


def write_course(target: Path, root: Path = ROOT) -> list[tuple[Path, bool]]:
    """Write the nbgrader course folder into ``target``: ``(path, written)`` per file,
    ``written`` False where the file was already exactly this."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(
            f"expected a folder for the nbgrader course, got the file {target}"
        )
    sessions = sorted({m.session for m in minutes.class_plan(root)})
    sessions = [s for s in sessions if minutes.homework_sheet(s, root)]
    files = {
        target
        / "source"
        / assignment_name(s)
        / f"{assignment_name(s)}.ipynb": edition.notebook_text(assignment(s, root))
        for s in sessions
    }
    files = {target / "nbgrader_config.py": CONFIG, **files, **grading_package(target, root)}
    return [(path, edition.write_if_changed(path, text)) for path, text in files.items()]


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    target = Path(argv[0]) if argv else ROOT / "nbgrader"
    for path, written in write_course(target):
        print(f"{'wrote' if written else 'unchanged'}: {path}")
    print(
        f"Next: cd {target} && nbgrader generate_assignment homework1 (INSTRUCTORS.md, "
        '"Grading with nbgrader").'
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
