"""Grade answers, each in a fresh interpreter of its own (the autograde preprocessor starts this
once per ``nbgrader autograde``):

    python -m gradient_clinic_grading.fresh      # one request a line on stdin, one result a line

A request is ``{"setup": ..., "answer": ..., "checker": "module:check_fn", "function": ...,
"folder": ..., "timeout": seconds}``: the assignment's locked setup cell, the answer cell's
source as submitted, the checker in ``gradient_clinic_grading.checkers``, the function the
answer defines, the submission's folder. Each result is a line: ``RESULT_MARK`` and
``{"passed": bool, "verdict": str}``.

This process imports TensorFlow and every checker once (about 5 CPU-seconds), runs no
student code and no TensorFlow op, and forks a child per answer: each child starts from that
clean state, as a fresh interpreter with the imports done would, and ends after its answer.

In the child, the checker is taken first; then every module of ``helpers.exercises`` and of
this package leaves ``sys.modules``, and an import hook gives the answer (the setup cell, the
answer cell, and the function while the checker calls it) ``helpers.exercises`` without its
``check_*`` and ``reference_*`` and this package not at all. So the answer can neither take a
reference nor replace the checker: the grade is the checker's verdict on the answer's own
code. An answer that fails to run is graded as a function that raises that error: the
checker's own "Not yet", with the exercise's hint.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import os
import pkgutil
import select
import signal
import sys
import time
import types

from gradient_clinic_grading import PROTECTED, RESULT_MARK

COPIES = "gradient_clinic_grading.checkers"  # the grading package's copy of helpers.exercises


def _protected(name: str) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in PROTECTED)


def _withheld(name: str) -> bool:
    """The names an answer does not get: the checkers and their references."""
    return name.startswith(("check_", "reference_"))


def _copy(value) -> bool:
    """Whether ``value`` is a module of the grading package (a submodule as an attribute of
    its package: the answer gets the submodule's view instead, by import)."""
    return isinstance(value, types.ModuleType) and value.__name__.startswith(COPIES)


class AnswerView(types.ModuleType):
    """``helpers.exercises`` (or one of its modules) as an answer sees it while it is graded:
    what an exercise hands the learner (``make_gated_denoiser``, ``cut_frames``, ...), without
    its ``check_*`` and ``reference_*``."""

    def __getattr__(self, name: str):
        raise AttributeError(
            f"{self.__name__}.{name} is not available to an answer when it is graded (the "
            "checkers and their references are not part of an answer): write the function "
            "yourself"
        )


class AnswersImports(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook for the answer: ``helpers.exercises`` and its modules come as views of
    the grading package's copies (``AnswerView``); this package cannot be imported at all."""

    def __init__(self, modules: dict[str, types.ModuleType]):
        self.modules = modules  # {"helpers.exercises.diagnosis": the grading copy, ...}

    def find_spec(self, name, path=None, target=None):
        if name in self.modules:
            package = name == PROTECTED[0]
            return importlib.util.spec_from_loader(name, self, is_package=package)
        if _protected(name):
            raise ImportError(
                f"an answer cannot import {name} when it is graded (the checkers and their "
                "references are not part of an answer): write the function yourself"
            )
        return None

    def create_module(self, spec):
        source = self.modules[spec.name]
        view = AnswerView(spec.name, source.__doc__)
        view.__dict__.update(
            {
                name: value
                for name, value in vars(source).items()
                if not name.startswith("__") and not _withheld(name) and not _copy(value)
            }
        )
        return view

    def exec_module(self, module):
        pass


def grade(setup: str, answer: str, checker: str, function: str) -> tuple[bool, str]:
    """The checker's verdict on the function ``answer`` defines, after ``setup``."""
    module_name, check_name = checker.split(":")
    check = getattr(importlib.import_module(module_name), check_name)
    views = {
        name.replace(COPIES, PROTECTED[0], 1): module
        for name, module in sys.modules.items()
        if name == COPIES or name.startswith(f"{COPIES}.")
    }
    for name in [n for n in sys.modules if _protected(n)]:
        del sys.modules[name]
    helpers = sys.modules.get("helpers")
    if helpers is not None and hasattr(helpers, "exercises"):
        delattr(helpers, "exercises")
    sys.meta_path.insert(0, AnswersImports(views))
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


def _child(request: dict, result: int) -> None:
    """In the forked child: grade, write the result to the ``result`` pipe, end."""
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # what the answer prints stays out of the results
    os.dup2(quiet, 2)
    try:
        os.chdir(request["folder"] or ".")
        passed, verdict = grade(
            **{k: request[k] for k in ("setup", "answer", "checker", "function")}
        )
    except BaseException as error:  # the checker itself failed: never a pass
        passed, verdict = False, f"Not yet: the grading failed: {type(error).__name__}: {error}"
    os.write(result, json.dumps({"passed": passed, "verdict": verdict}).encode())
    os._exit(0)


def grade_apart(request: dict) -> dict:
    """Fork a child that grades ``request``; its result, or a failure after the timeout."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(request, write)
    os.close(write)
    chunks, deadline = [], time.monotonic() + request["timeout"]
    while (left := deadline - time.monotonic()) > 0 and select.select([read], [], [], left)[0]:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    else:
        os.kill(pid, signal.SIGKILL)
    os.close(read)
    os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {
            "passed": False,
            "verdict": "Not yet: the grading of this answer stopped (it took more than "
            f"{request['timeout']} s, or the process ended) before the checker gave a verdict.",
        }


def main() -> int:
    import gradient_clinic_grading.checkers as checkers

    for module in pkgutil.iter_modules(checkers.__path__):
        importlib.import_module(f"{checkers.__name__}.{module.name}")
    for line in sys.stdin:
        result = grade_apart(json.loads(line))
        print(f"{RESULT_MARK}{json.dumps(result)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
