"""Strict nbval on a notebook a test wrote, run as ``./course.sh test`` runs it (used by
tests/test_notebooks.py and tests/test_tracebacks.py), not a test module itself: with the
course's sanitizer and its root ``conftest.py`` (a reconnecting page's requests before every
cell)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

SANITIZER = Path(__file__).resolve().parent / "nbval_sanitize.cfg"  # what ./course.sh passes
CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"  # what every run here loads
KERNELSPEC = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}  # for a test's notebook
CELL_OUTCOME = re.compile(r"^\S*::Cell (\d+) (PASSED|FAILED)", re.M)


def cell_outcomes(notebook: Path) -> tuple[dict[int, bool], str]:
    """Run strict nbval (current environment, the course's sanitizer) on ``notebook`` in a
    fresh pytest: ``{cell index: passed}`` and pytest's output, for a failure message. The
    course's ``conftest.py`` goes beside the notebook, so that pytest loads it there too."""
    shutil.copyfile(CONFTEST, notebook.parent / "conftest.py")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "--nbval-current-env",
            f"--nbval-sanitize-with={SANITIZER}",
            f"--rootdir={notebook.parent}",
            "-v",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            str(notebook),
        ],
        cwd=notebook.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    outcomes = {int(m[1]): m[2] == "PASSED" for m in CELL_OUTCOME.finditer(result.stdout)}
    return outcomes, result.stdout
