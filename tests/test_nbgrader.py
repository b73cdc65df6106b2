"""The nbgrader assignments (``./course.sh nbgrader``, ``scripts/nbgrader_course.py``) grade as
the checkers do: nbgrader itself cuts the solutions and autogrades four submissions of each
assignment. The reference solutions score full marks, the starting code (the released notebook
as a learner gets it) scores 0, and a near miss a learner really writes scores 0 on its
exercise and full marks on the others.

One ``autograde`` per assignment grades its four submissions (both in about 2 minutes on two
cores, 6 while other jobs loaded them: each answer is graded in a fresh interpreter forked from one
that imported the checkers once; nothing of the lessons runs). Three cheats (a reference
imported, a reference assigned, the checker replaced from the answer cell) score 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from scripts import course as tasks
from scripts import nbgrader_course as course
from scripts import notebook_minutes as minutes

ROOT = Path(__file__).resolve().parents[1]

# A near miss per assignment: (exercise, its function as a learner writes it).
NEAR_MISSES = {
    "homework1": (
        "0.1",
        # A NaN-only test: inf passes as "ok".
        """import tensorflow as tf

def gradient_status(gradient):
    if gradient is None:
        return "none"
    gradient = tf.convert_to_tensor(gradient)
    if tf.reduce_any(tf.math.is_nan(gradient)):
        return "nonfinite"
    if tf.reduce_all(gradient == 0):
        return "zero"
    return "ok"
""",
    ),
    "homework2": (
        "3.1",
        # A floor on the loss: a very quiet voiced clip has the silent file's loss.
        """import tensorflow as tf

from helpers.models import enhance
from helpers.voicing import cond_loop_voicing_loss

def train_step_or_skip(model, optimizer, example):
    with tf.GradientTape() as tape:
        estimate = enhance(model, example.audio)
        loss = cond_loop_voicing_loss(example.clean, estimate, example.labels)
    if float(loss) < 1e-4:
        return False
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return True
""",
    ),
}
# Cheats per assignment: (exercise, an answer cell that takes the course's own code), in one
# submission whose other answers are the starting code (which the checkers reject at once).
# Each scores 0, and its feedback says why.
CHEATS = {
    "homework1": (
        (
            "0.1",
            # The checker replaced from the answer cell, with an answer that always says "ok".
            """import helpers.exercises.start_here as start_here
from helpers.exercises import CheckResult

start_here.check_gradient_status = lambda function: CheckResult("Exercise 0.1", True, "ok")

def gradient_status(gradient):
    return "ok"
""",
        ),
        (
            "2.1",
            # The reference imported under the answer's name.
            "from helpers.exercises.gru_state import (\n"
            "    reference_truncated_unroll as truncated_unroll,\n"
            ")\n",
        ),
    ),
    "homework2": (
        (
            "3.1",
            # The reference assigned to the answer's name.
            """from helpers.exercises import voicing_loss

train_step_or_skip = voicing_loss.reference_train_step_or_skip
""",
        ),
    ),
}
STUDENTS = ("reference", "starter", "near-miss", "cheats")


def _nbgrader(folder: Path, *args: str) -> None:
    """Run nbgrader from this environment in the course folder (it calls alembic by name)."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    with (folder / "nbgrader.log").open("a") as log:  # nbgrader logs to stderr
        log.write(result.stderr)
    assert result.returncode == 0, result.stderr[-3000:]


def _grade_id(notebook: nbformat.NotebookNode, exercise: str, kind: str = "exercise") -> int:
    wanted = f"{kind}_{exercise.replace('.', '_')}"
    return next(
        i
        for i, c in enumerate(notebook.cells)
        if c.metadata.get("nbgrader", {}).get("grade_id") == wanted
    )


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The course folder after generate_assignment and autograde of every submission:
    (folder, {assignment: {student: {grade id: score}}})."""
    pytest.importorskip("nbgrader", reason="nbgrader is in requirements-dev.txt")
    folder = tmp_path_factory.mktemp("nbgrader")
    course.write_course(folder)
    scores = {}
    for name in NEAR_MISSES:
        _nbgrader(folder, "generate_assignment", name)
        source = folder / "source" / name / f"{name}.ipynb"
        release = folder / "release" / name / f"{name}.ipynb"
        near = nbformat.read(source, as_version=4)
        exercise, code = NEAR_MISSES[name]
        near.cells[_grade_id(near, exercise)].source = code
        cheats = nbformat.read(release, as_version=4)
        for exercise, code in CHEATS[name]:
            cheats.cells[_grade_id(cheats, exercise)].source = code
        for student, notebook in zip(STUDENTS, (source, release, near, cheats)):
            target = folder / "submitted" / student / name / f"{name}.ipynb"
            target.parent.mkdir(parents=True)
            if isinstance(notebook, Path):
                shutil.copy(notebook, target)
            else:
                nbformat.write(notebook, target)
        _nbgrader(folder, "autograde", name)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gradebook:
        for name in NEAR_MISSES:
            scores[name] = {
                student: {
                    grade.name: grade.score
                    for notebook in gradebook.find_submission(name, student).notebooks
                    for grade in notebook.grades
                }
                for student in STUDENTS
            }
    return folder, scores


def _points(name: str) -> dict[str, float]:
    session = int(name.removeprefix("homework"))
    return {
        f"check_{e.replace('.', '_')}": float(p) for e, _, _, p in minutes.homework_sheet(session)
    }


def _check_outputs(folder: Path, submission: str, name: str, exercise: str) -> list:
    """The outputs autograde stored in ``exercise``'s check cell of ``submission``'s copy of
    assignment ``name``."""
    autograded = nbformat.read(
        folder / "autograded" / submission / name / f"{name}.ipynb", as_version=4
    )
    return autograded.cells[_grade_id(autograded, exercise, "check")].outputs


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_the_reference_solutions_score_full_marks(graded, name):
    _, scores = graded
    assert scores[name]["reference"] == _points(name)


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_the_starting_code_scores_zero_and_the_checker_says_why(graded, name):
    folder, scores = graded
    assert scores[name]["starter"] == dict.fromkeys(_points(name), 0.0)
    for check in _points(name):
        exercise = check.removeprefix("check_").replace("_", ".")
        outputs = _check_outputs(folder, "starter", name, exercise)
        (error,) = [o for o in outputs if o.output_type == "error"]
        assert error.ename == "AssertionError"
        assert error.evalue.startswith("Not yet: Exercise ") and "Hint: " in error.evalue


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_a_near_miss_scores_zero_on_its_exercise_only(graded, name):
    _, scores = graded
    exercise, _ = NEAR_MISSES[name]
    wanted = {**_points(name), f"check_{exercise.replace('.', '_')}": 0.0}
    assert scores[name]["near-miss"] == wanted


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_an_answer_that_takes_the_courses_checker_or_reference_scores_zero(graded, name):
    folder, scores = graded
    assert scores[name]["cheats"] == dict.fromkeys(_points(name), 0.0)
    for exercise, _ in CHEATS[name]:
        (error,) = _check_outputs(folder, "cheats", name, exercise)
        assert error.output_type == "error" and error.ename == "AssertionError"
        assert error.evalue.startswith(f"Not yet: Exercise {exercise} ")
        # What an answer gets of helpers.exercises when it is graded: no reference.
        assert (
            "reference_" not in error.evalue
            or "not available to an answer" in error.evalue
            or ("cannot import name 'reference_" in error.evalue)
        )


def test_nbgrader_prints_no_warning(graded):
    folder, _ = graded
    log = (folder / "nbgrader.log").read_text()
    assert "WARNING" not in log, log


def test_the_grading_package_is_in_the_course_folder_only(graded):
    folder, _ = graded
    package = folder / "grading" / "gradient_clinic_grading"
    assert (package / "checkers" / "start_here.py").is_file()
    assert "helpers.exercises" not in (package / "checkers" / "voicing_loss.py").read_text()
    assert not list((ROOT / "helpers").rglob("gradient_clinic_grading"))


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_the_release_keeps_the_starting_code_and_cuts_the_solution(graded, name):
    folder, _ = graded
    release = nbformat.read(folder / "release" / name / f"{name}.ipynb", as_version=4)
    session = int(name.removeprefix("homework"))
    exercises = {
        e.id: e
        for path in course.edition.course_notebooks()
        for e in course.edition.exercises(path)
    }
    for exercise, *_ in minutes.homework_sheet(session):
        cell = release.cells[_grade_id(release, exercise)]
        assert cell.source == f"{exercises[exercise].starter.source}\n\n\n{course.CODE_STUB}"
        assert exercises[exercise].solution not in json.dumps(release.cells)
        assert "BEGIN SOLUTION" not in cell.source


def test_one_assignment_per_session_with_its_homework_sheet(tmp_path):
    results = course.write_course(tmp_path)
    assert all(written for _, written in results)
    assert not any(written for _, written in course.write_course(tmp_path))
    assert sorted(
        p.relative_to(tmp_path).as_posix()
        for p, _ in results
        if "grading" not in p.relative_to(tmp_path).parts
    ) == [
        "nbgrader_config.py",
        "source/homework1/homework1.ipynb",
        "source/homework2/homework2.ipynb",
    ]
    for session in (1, 2):
        notebook = nbformat.read(tmp_path / f"source/homework{session}/homework{session}.ipynb", 4)
        sheet = notebook.cells[0].source
        for exercise, stem, taking, points in minutes.homework_sheet(session):
            assert f"| {exercise} | `{stem}` | {taking} | {points} |" in sheet
        graded_cells = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert [c.metadata.nbgrader.points for c in graded_cells] == [
            p for *_, p in minutes.homework_sheet(session)
        ]


def test_the_students_hub_settings_name_the_instructors_course_and_exchange():
    assert (tasks.NBGRADER_COURSE_ID, tasks.NBGRADER_EXCHANGE) == (
        course.COURSE_ID,
        course.EXCHANGE_ROOT,
    )
    assert f'c.Exchange.root = "{course.EXCHANGE_ROOT}"' in course.CONFIG


def test_bad_target_says_what_was_expected(tmp_path):
    file = tmp_path / "a_file"
    file.write_text("")
    with pytest.raises(NotADirectoryError, match="expected a folder"):
        course.write_course(file)


def test_the_exchange_from_release_to_export_without_a_warning(tmp_path):
    """INSTRUCTORS.md's commands on a hub, one account playing the instructor and a student:
    release into the exchange, fetch and submit from the student's folder, collect, export."""
    pytest.importorskip("nbgrader", reason="nbgrader is in requirements-dev.txt")
    folder, student, exchange = tmp_path / "course", tmp_path / "student", tmp_path / "exchange"
    student.mkdir()
    exchange.mkdir()
    exchange.chmod(0o777)  # every account reads and writes it
    course.write_course(folder)
    # The student's settings as ./course.sh hub writes them; the exchange here is a temporary one.
    (student / "nbgrader_config.py").write_text(tasks.students_nbgrader_config())
    where = [f"--Exchange.root={exchange}"]
    _nbgrader(folder, "generate_assignment", "homework1")
    _nbgrader(folder, "release_assignment", "homework1", *where)
    _nbgrader(student, "fetch_assignment", "homework1", *where)
    fetched = student / "homework1" / "homework1.ipynb"
    assert fetched.is_file()
    _nbgrader(student, "submit", "homework1", *where)
    _nbgrader(folder, "collect", "homework1", *where)
    (submitted,) = (folder / "submitted").glob("*/homework1/homework1.ipynb")
    assert submitted.read_bytes() == fetched.read_bytes()
    _nbgrader(folder, "export")
    assert (folder / "grades.csv").read_text().startswith("assignment,")
    log = "\n".join((place / "nbgrader.log").read_text() for place in (folder, student))
    assert "WARNING" not in log, log
