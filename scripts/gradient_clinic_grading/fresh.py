"""Grade one answer in a fresh interpreter (the autograde preprocessor starts one per answer):

    python -m gradient_clinic_grading.fresh < request.json

The request is ``{"setup": ..., "answer": ..., "checker": "module:check_fn", "function": ...}``:
the assignment's locked setup cell, the answer cell's source as submitted, the checker in
``gradient_clinic_grading.checkers`` and the function the answer defines. The last line of the
output is ``RESULT_MARK`` and ``{"passed": bool, "verdict": str}``.

The checker is imported first; then every module of ``helpers.exercises`` and of this package
leaves ``sys.modules`` and an import hook refuses them, so the answer (the setup cell, the
answer cell, and the function while the checker calls it) can neither import a reference nor
replace the checker: the grade is the checker's verdict on the answer's own code. An answer
that fails to run is graded as a function that raises that error: the checker's own "Not
yet", with the exercise's hint.
"""

from __future__ import annotations

import importlib
import importlib.abc
import json
import sys

from gradient_clinic_grading import PROTECTED, RESULT_MARK


def _protected(name: str) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in PROTECTED)


class RefuseCheckers(importlib.abc.MetaPathFinder):
    """An import hook: the checkers and their references are not part of an answer."""

    def find_spec(self, name, path=None, target=None):
        if _protected(name):
            raise ImportError(
                f"an answer cannot import {name} when it is graded (the checkers and their "
                "references are not part of an answer): write the function yourself"
            )
        return None


def grade(setup: str, answer: str, checker: str, function: str) -> tuple[bool, str]:
    """The checker's verdict on the function ``answer`` defines, after ``setup``."""
    module_name, check_name = checker.split(":")
    check = getattr(importlib.import_module(module_name), check_name)
    for name in [n for n in sys.modules if _protected(n)]:
        del sys.modules[name]
    helpers = sys.modules.get("helpers")
    if helpers is not None and hasattr(helpers, "exercises"):
        delattr(helpers, "exercises")
    sys.meta_path.insert(0, RefuseCheckers())
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(setup, "<setup cell>", "exec"), namespace)
        exec(compile(answer, "<answer cell>", "exec"), namespace)
        learner_function = namespace[function]
    except BaseException as error:  # SystemExit and KeyError (no such function) included
        failure = (
            error
            if not isinstance(error, KeyError)
            else NameError(f"the answer cell defines no function named {function}")
        )

        def learner_function(*args, **kwargs):
            raise failure

    verdict = check(learner_function)
    return bool(verdict), repr(verdict)


def main() -> int:
    request = json.load(sys.stdin)
    passed, verdict = grade(**request)
    print(f"\n{RESULT_MARK}{json.dumps({'passed': passed, 'verdict': verdict})}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
