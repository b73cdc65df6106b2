"""Seconds each exercise's checker takes on the solution a learner can reveal, on its first
call in a fresh process, as a learner meets it: goal at most 10 s each on two cores.

    python benchmarks/bench_checkers.py [EXERCISE ...]     # e.g. 1.1 2.1; default: all

The exercises are found in the notebooks as ``tests/test_exercises.py`` finds them (the
exercise metadata names the checker and the function; the revealed solution is the code of
the ``<details>`` block after the hints). Each runs in its own Python process, in an empty
temporary folder: the process imports the checker's module (timed apart: TensorFlow's import
is the same for every checker), defines the solution, then times the checker's first call
(traced functions, cached clips and models included) and a second call. Each row also says
whether the checker passed the solution and lists any file the run left in the folder (a
checker writes nothing).

The machine may be shared: the load average before and after each run is printed beside it,
and the first call's CPU time (all threads of the process) beside its wall time. The last
line is ``slowest: N.N s (exercise M.K)``, the largest first call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tools are the package ``scripts`` at the root
from scripts import make_student_edition as edition  # noqa: E402

GOAL_SECONDS = 10.0


def exercises() -> list[edition.Exercise]:
    """Every exercise of every course notebook, in the course's order."""
    return [
        exercise for path in edition.course_notebooks(ROOT) for exercise in edition.exercises(path)
    ]


def run_one(spec: dict, solution: str) -> dict:
    """In this process: import the checker, define the solution, time two calls."""
    import importlib

    start = time.perf_counter()
    module_name, check_name = spec["checker"].split(":")
    check = getattr(importlib.import_module(module_name), check_name)
    imported = time.perf_counter() - start
    namespace: dict = {}
    exec(compile(solution, f"<{spec['function']}>", "exec"), namespace)
    function = namespace[spec["function"]]
    times, cpu_times, verdicts = [], [], []
    for _ in range(2):
        start, cpu_start = time.perf_counter(), time.process_time()
        result = check(function)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
        verdicts.append(bool(result.passed))
    return {
        "import": imported,
        "first": times[0],
        "first cpu": cpu_times[0],
        "second": times[1],
        "passed": all(verdicts),
        "message": repr(result),
    }


def measure(exercise: edition.Exercise) -> dict:
    """``run_one`` for ``exercise`` in a fresh process and an empty folder."""
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]  # this checkout's helpers first
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    spec = dict(exercise.starter.metadata.exercise)
    request = json.dumps({"spec": spec, "solution": exercise.solution})
    with tempfile.TemporaryDirectory(prefix="checker-") as folder:
        load_before = os.getloadavg()[0]
        finished = subprocess.run(
            [sys.executable, __file__, "--one"],
            input=request,
            capture_output=True,
            text=True,
            cwd=folder,
            env=environment,
            check=False,
        )
        load_after = os.getloadavg()[0]
        left = sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*"))
    if finished.returncode != 0:
        raise RuntimeError(f"exercise {exercise.id} failed to run:\n{finished.stderr[-2000:]}")
    row = json.loads(finished.stdout.strip().splitlines()[-1])
    return {**row, "load": (load_before, load_after), "left": left}


def main(wanted: list[str]) -> None:
    rows = [(e, measure(e)) for e in exercises() if not wanted or e.id in wanted]
    print(f"{os.cpu_count()} cores; goal: first call at most {GOAL_SECONDS:g} s")
    print(
        f"{'exercise':<9}{'notebook':<28}{'import s':>9}{'first s':>9}{'CPU s':>7}{'second s':>9}"
        f"  {'load before/after':<18}{'solution':<10}files left"
    )
    for exercise, row in rows:
        load = f"{row['load'][0]:.1f} / {row['load'][1]:.1f}"
        print(
            f"{exercise.id:<9}{exercise.notebook:<28}{row['import']:>9.1f}{row['first']:>9.1f}"
            f"{row['first cpu']:>7.1f}{row['second']:>9.1f}  {load:<18}"
            f"{'passed' if row['passed'] else 'REJECTED':<10}"
            f"{', '.join(row['left']) or 'none'}"
        )
    for exercise, row in rows:
        if not row["passed"]:
            print(f"{exercise.id}: {row['message']}")
    slowest, row = max(rows, key=lambda pair: pair[1]["first"])
    print(f"slowest: {row['first']:.1f} s (exercise {slowest.id})")


if __name__ == "__main__":
    if sys.argv[1:] == ["--one"]:
        request = json.loads(sys.stdin.read())
        print(json.dumps(run_one(request["spec"], request["solution"])))
    else:
        main(sys.argv[1:])
