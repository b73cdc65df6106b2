"""Grading that the students' environment does not hold: ``scripts/nbgrader_course.py`` copies
this package into the nbgrader course folder (``grading/gradient_clinic_grading``), with
``checkers/``: the course's checkers and their references (``helpers.exercises``) under this
package's name. It is never in the student edition, the students' lock or their hub
environment.

* ``autograde``: the two nbgrader preprocessors ``nbgrader_config.py`` puts around
  ``Execute``: a check cell runs nothing in the student's kernel, then each answer is graded
  apart;
* ``fresh``: the grading of one answer in a fresh interpreter, on the answer cell's source
  alone, where neither ``helpers.exercises`` nor this package can be imported by the answer.
"""

PROTECTED = ("helpers.exercises", "gradient_clinic_grading")  # what an answer cannot import
RESULT_MARK = "gradient-clinic-grade: "  # the line of ``fresh``'s output that holds the grade
