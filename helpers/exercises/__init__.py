"""Checked exercises: a checker runs the learner's code and says whether the fix works.

Each notebook ends with exercises. The pattern, the same everywhere:

* a code cell with the starting code defines one function, and carries cell metadata
  ``{"exercise": {"checker": "helpers.exercises.<module>:<check_fn>", "function": "<name>"}}``;
* the next code cell calls the checker on that function; its output is a ``CheckResult``
  ("not yet" plus a hint for the starting code, "solved" for a working fix);
* a Markdown cell holds the solution in a ``<details>`` block with one fenced ``python``
  code block that defines the same function. It is self-contained (its own imports).

``tests/test_exercises.py`` finds every exercise in every notebook and proves that its
checker rejects the starting code and accepts the revealed solution.
"""

from __future__ import annotations

from helpers.course.quiet_tensorflow import import_tensorflow

import_tensorflow()  # first: the checkers use TensorFlow, and its start-up log stays out

import functools
import html
from dataclasses import dataclass

from helpers.course import STATUS_COLOURS

__all__ = ["VERDICT_COLOURS", "CheckResult", "run_check"]

# JupyterLab's theme colours (light and dark alike), the report's own: solved as "ok", not yet
# as "error".
VERDICT_COLOURS = {True: STATUS_COLOURS["ok"], False: STATUS_COLOURS["error"]}


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one exercise: passed or not, what was seen, and a hint if not."""

    exercise: str
    passed: bool
    message: str
    hint: str = ""

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        if self.passed:
            return f"Solved: {self.exercise}. {self.message}"
        return f"Not yet: {self.exercise}. {self.message}\nHint: {self.hint}"

    def _repr_html_(self) -> str:
        colour = VERDICT_COLOURS[self.passed]
        verdict = "Solved" if self.passed else "Not yet"
        hint = "" if self.passed else f"<br><b>Hint:</b> {html.escape(self.hint)}"
        return (
            f"<div style='border-left:4px solid {colour};padding-left:8px'>"
            f"<b style='color:{colour}'>{verdict}:</b> {html.escape(self.exercise)}. "
            f"{html.escape(self.message)}{hint}</div>"
        )


def run_check(exercise: str, function, check, hint: str) -> CheckResult:
    """Call ``check(learner_function)``, which returns ``(passed, message)``. An exception from
    the learner's code becomes a failed result that names it ("Your code raised ..."), instead
    of a traceback; an exception from the checker's own code is named as the checker's.

    The learner's code is the function and everything it calls, and the TensorFlow ops it
    built (a ``tf.errors.OpError`` is raised where a graph runs, not where it was written)."""
    if not callable(function):
        return CheckResult(
            exercise, False, f"Expected a function, got {type(function).__name__}.", hint
        )
    raised: list[BaseException] = []

    @functools.wraps(function)
    def learner_function(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as error:
            raised.append(error)
            raise

    try:
        passed, message = check(learner_function)
    except Exception as error:
        import tensorflow as tf

        if raised or isinstance(error, tf.errors.OpError):
            learner_error = raised[-1] if raised else error
            return CheckResult(
                exercise,
                False,
                f"Your code raised {type(learner_error).__name__}: {learner_error}",
                hint,
            )
        return CheckResult(
            exercise,
            False,
            f"The checker failed (please report): {type(error).__name__}: {error}",
            "This is a bug in the course's checker, not in your code.",
        )
    return CheckResult(exercise, bool(passed), message, hint)
