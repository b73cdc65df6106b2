"""nbgrader's autograde with the grade decided apart from the student's kernel.

``nbgrader_config.py`` sets ``Autograde.autograde_preprocessors`` to ``PREPROCESSORS``:
nbgrader's own, with ``SetAsideChecks`` before ``Execute`` and ``GradeApart`` after it.

* ``SetAsideChecks``: each graded check cell runs nothing in the student's kernel (an answer
  cell runs there before it, and could have replaced the checker it imports);
* ``GradeApart``: puts each check cell back and gives it the verdict of a fresh interpreter
  (``gradient_clinic_grading.fresh``) on the answer cell's source: a "Solved" as a stream
  output (full points), anything else as an ``AssertionError`` whose message is the checker's
  (0 points, and the feedback says why).

Which checker grades which answer comes from ``EXERCISES`` (``exercises.json``, written with
this package by ``scripts/nbgrader_course.py``), never from a submitted notebook's metadata.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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

from gradient_clinic_grading import RESULT_MARK

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
        request = {"setup": setup, "answer": answer}
        request |= {key: spec[key] for key in ("checker", "function")}
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]
            ).rstrip(os.pathsep),
        }
        try:
            run = subprocess.run(
                [sys.executable, "-m", "gradient_clinic_grading.fresh"],
                input=json.dumps(request),
                capture_output=True,
                text=True,
                cwd=folder,
                env=env,
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired:
            return False, f"Not yet: the grading of this answer took more than {self.timeout} s."
        lines = [line for line in run.stdout.splitlines() if line.startswith(RESULT_MARK)]
        if run.returncode != 0 or not lines:
            self.log.warning("grading %s failed: %s", spec["function"], run.stderr[-2000:])
            return False, (
                f"Not yet: the answer's grading stopped (exit status {run.returncode}) before "
                f"the checker gave a verdict: {run.stderr.strip().splitlines()[-1:]}"
            )
        result = json.loads(lines[-1].removeprefix(RESULT_MARK))
        return result["passed"], result["verdict"]


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
