"""nbgrader's autograde with the grade decided apart from the student's kernel.

``nbgrader_config.py`` sets ``Autograde.autograde_preprocessors`` to ``PREPROCESSORS``:
nbgrader's own, with ``SetAsideChecks`` before ``Execute`` and ``GradeApart`` after it.

* ``SetAsideChecks``: each graded check cell runs nothing in the student's kernel (an answer
  cell runs there before it, and could have replaced the checker it imports);
* ``GradeApart``: puts each check cell back and gives it the verdict of a fresh interpreter
  (``gradient_clinic_grading.fresh``: a child forked per answer from a process that imported
  the checkers once) on the answer cell's source: a "Solved" as a stream
  output (full points), anything else as an ``AssertionError`` whose message is the checker's
  (0 points, and the feedback says why).

Which checker grades which answer comes from ``EXERCISES`` (``exercises.json``, written with
this package by ``scripts/nbgrader_course.py``), never from a submitted notebook's metadata.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
from pathlib import Path

from gradient_clinic_grading import RESULT_MARK
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    Execute,
    IgnorePattern,
    LimitOutput,
    NbGraderPreprocessor,
    SaveAutoGrades,
)
from traitlets import Integer

PACKAGE = Path(__file__).resolve().parent
# {"check_0_1": {"answer": "exercise_0_1", "checker": "...:check_...", "function": "..."}}
EXERCISES: dict[str, dict[str, str]] = json.loads((PACKAGE / "exercises.json").read_text())
SETUP_CELL = "setup"  # the grade id of the assignment's locked setup cell
SET_ASIDE = "# Graded apart: the checker, in a fresh interpreter, on the answer cell alone."


def _grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


class SetAsideChecks(NbGraderPreprocessor):
    """Before ``Execute``: a graded check cell's code is kept aside and runs nothing."""

    def preprocess_cell(self, cell, resources, index):
        if utils.is_grade(cell) and _grade_id(cell) in EXERCISES:
            resources.setdefault("set_aside_checks", {})[_grade_id(cell)] = cell.source
            cell.source = SET_ASIDE
        return cell, resources


class GradeApart(NbGraderPreprocessor):
    """After ``Execute``: each check cell's code back, with the fresh interpreter's verdict."""

    timeout = Integer(900, help="Seconds one answer's grading may take").tag(config=True)

    def preprocess(self, nb, resources):
        cells = {_grade_id(cell): cell for cell in nb.cells}
        setup = cells[SETUP_CELL].source if SETUP_CELL in cells else ""
        folder = resources.get("metadata", {}).get("path") or None
        for grade_id, code in resources.get("set_aside_checks", {}).items():
            spec = EXERCISES[grade_id]
            answer = cells[spec["answer"]].source if spec["answer"] in cells else ""
            passed, verdict = self.grade(setup, answer, spec, folder)
            cell = cells[grade_id]
            cell.source = code
            if passed:
                cell.outputs = [new_output("stream", name="stdout", text=verdict + "\n")]
            else:
                cell.outputs = [
                    new_output("error", ename="AssertionError", evalue=verdict, traceback=[])
                ]
        return nb, resources

    def grade(self, setup: str, answer: str, spec: dict[str, str], folder) -> tuple[bool, str]:
        request = {"setup": setup, "answer": answer, "folder": folder, "timeout": self.timeout}
        request |= {key: spec[key] for key in ("checker", "function")}
        grader = _grader()
        grader.stdin.write(json.dumps(request) + "\n")
        grader.stdin.flush()
        for line in grader.stdout:
            if line.startswith(RESULT_MARK):
                result = json.loads(line.removeprefix(RESULT_MARK))
                return result["passed"], result["verdict"]
        raise RuntimeError(
            f"the grading process ended (exit status {grader.wait()}); see {GRADER_LOG}"
        )


GRADER_LOG = PACKAGE.parent / "grading.log"  # the grading process's own errors
_GRADER: list[subprocess.Popen] = []


def _grader() -> subprocess.Popen:
    """The grading process (``gradient_clinic_grading.fresh``), one per autograde run: it
    imports the checkers once and forks a fresh child per answer. Stopped at exit."""
    if not _GRADER or _GRADER[0].poll() is not None:
        path = os.pathsep.join(p for p in (str(PACKAGE.parent), os.environ.get("PYTHONPATH")) if p)
        _GRADER[:] = [
            subprocess.Popen(
                [sys.executable, "-m", "gradient_clinic_grading.fresh"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=GRADER_LOG.open("a"),
                text=True,
                env={**os.environ, "PYTHONPATH": path},
            )
        ]
        atexit.register(_stop, _GRADER[0])
    return _GRADER[0]


def _stop(process: subprocess.Popen) -> None:
    process.stdin.close()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


PREPROCESSORS = [
    SetAsideChecks,
    Execute,
    GradeApart,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]
