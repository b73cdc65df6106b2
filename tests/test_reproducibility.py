"""helpers.course.reproducibility: every notebook's first cell (make_deterministic, versions)."""

import random
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from helpers.course import make_deterministic, versions

ROOT = Path(__file__).resolve().parents[1]


def _pins(lock: str = "requirements-dev.txt") -> dict[str, str]:
    """{name: version} of every pin of a lock that applies here (its marker, if any, holds):
    the dev lock is the test environment, the course lock plus the test stack."""
    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / lock).read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            requirement = Requirement(line.rstrip(" \\"))
            if requirement.marker is None or requirement.marker.evaluate():
                pins[requirement.name] = str(requirement.specifier).removeprefix("==")
    return pins


def _draws():
    """One draw from every random source make_deterministic seeds (NumPy's global state too,
    which is what the legacy call reads)."""
    legacy_numpy = float(np.random.rand())  # noqa: NPY002
    return (
        random.random(),
        legacy_numpy,
        float(tf.random.uniform(())),
        keras.initializers.GlorotUniform()((2, 3)).numpy().tolist(),  # its seed: Python's
    )


def test_make_deterministic_restarts_every_random_sequence():
    make_deterministic(7)
    first = _draws()
    make_deterministic(7)
    assert _draws() == first
    make_deterministic(8)
    assert _draws() != first


def test_versions_names_the_libraries_the_outputs_were_made_with():
    import librosa

    pins = _pins()
    assert versions() == (
        f"TensorFlow {pins['tensorflow']}, Keras {pins['keras']}, librosa {pins['librosa']}"
    )  # the pinned versions, as installed
    assert (tf.__version__, keras.__version__, librosa.__version__) == (
        pins["tensorflow"],
        pins["keras"],
        pins["librosa"],
    )


def test_the_environment_holds_every_pinned_version():
    """The stored outputs were made with the locks' pins, pip, setuptools and wheel included."""
    from importlib.metadata import PackageNotFoundError, version

    pins = _pins()
    assert {"pip", "setuptools", "wheel", "tensorflow", "pytest"} <= set(pins)
    wrong = {}
    for name, pinned in pins.items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = None
        if installed != pinned:
            wrong[name] = (pinned, installed)
    assert not wrong, f"pinned vs installed (reinstall: ./course.sh test): {wrong}"


def test_importing_nbformat_builds_no_parser():
    """The jsonschema pin keeps rfc3987-syntax's parser out (pyproject.toml says why)."""
    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, nbformat, jupyter_server.serverapp; "
            "print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert imported == "[]", f"importing nbformat and Jupyter Server loads {imported}"


def test_the_build_uses_the_pinned_setuptools():
    import tomllib

    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert build == [f"setuptools=={_pins()['setuptools']}"]


def test_the_locks_hold_what_pyproject_asks_for():
    """Each dependency of pyproject.toml (the dev and instructor extras' in their locks) has a
    pin in its lock that its range admits, and the instructor and dev locks keep the course
    lock's versions (the dev lock the instructor and hub locks' too): a lock out of
    date with pyproject.toml fails here (re-lock: ./course.sh lock)."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    course, dev = _all_pins("requirements.txt"), _all_pins("requirements-dev.txt")
    instructor = _all_pins("requirements-instructor.txt")
    hub = _all_pins("requirements-hub.txt")
    for lock, pins, wanted in (
        ("requirements.txt", course, project["dependencies"]),
        (
            "requirements-instructor.txt",
            instructor,
            project["dependencies"] + project["optional-dependencies"]["instructor"],
        ),
        (
            "requirements-hub.txt",
            hub,
            project["dependencies"] + project["optional-dependencies"]["hub"],
        ),
        (
            "requirements-dev.txt",
            dev,
            project["dependencies"] + project["optional-dependencies"]["dev"],
        ),
    ):
        for text in wanted:
            requirement = Requirement(text)
            assert requirement.name in pins, f"{lock} has no pin for {requirement.name}"
            assert requirement.specifier.contains(pins[requirement.name]), (
                f"{lock} pins {requirement.name}=={pins[requirement.name]}, outside {text}"
            )
        assert "pip" in pins and all("--hash=sha256:" in line for line in _entries(lock))
    assert {name: dev[name] for name in course} == course
    assert {name: instructor[name] for name in course} == course
    assert {name: dev[name] for name in instructor} == instructor
    assert {name: hub[name] for name in course} == course
    assert {name: dev[name] for name in hub} == hub
    assert "nbgrader" not in course, "nbgrader is the instructor's, not the learners'"


def test_the_lint_lock_is_the_lint_extra_alone_at_the_dev_versions():
    """./course.sh lint's environment: ruff and import-linter as pyproject.toml asks, at the
    versions the dev lock has, hashes included, and no TensorFlow."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lint, dev = _all_pins("requirements-lint.txt"), _all_pins("requirements-dev.txt")
    for text in project["optional-dependencies"]["lint"]:
        requirement = Requirement(text)
        assert requirement.specifier.contains(lint[requirement.name]), text
        assert text in project["optional-dependencies"]["dev"]  # the same pins as in dev
    assert {name: dev[name] for name in lint} == lint
    assert "tensorflow" not in lint and "pip" in lint
    assert all("--hash=sha256:" in line for line in _entries("requirements-lint.txt"))


def _entries(lock: str) -> list[str]:
    """One string per pinned package of a lock, with its hash lines."""
    import re

    entries = re.split(r"\n(?=\S)", (ROOT / lock).read_text())
    return [entry for entry in entries if "==" in entry and not entry.startswith("#")]


def _all_pins(lock: str) -> dict[str, str]:
    """{name: version} of every pin of a lock, whatever its marker."""
    from packaging.requirements import Requirement

    return {
        (r := Requirement(line.rstrip(" \\"))).name: str(r.specifier).removeprefix("==")
        for line in (ROOT / lock).read_text().splitlines()
        if "==" in line and not line.startswith((" ", "#"))
    }


def _first_cell_after(imports: str, onednn: str | None) -> subprocess.CompletedProcess:
    """A fresh process that runs ``imports`` and then a notebook's first cell, with
    ``TF_ENABLE_ONEDNN_OPTS`` as given (None: unset); warnings are errors there."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env.update({} if onednn is None else {"TF_ENABLE_ONEDNN_OPTS": onednn})
    code = (
        f"{imports}\n"
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "from helpers.course import make_deterministic\n"
        "make_deterministic(seed=0)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )


def test_make_deterministic_warns_when_tensorflow_came_first_with_onednn_on():
    from helpers.course.reproducibility import ONEDNN_WARNING

    first = _first_cell_after("import tensorflow", None)
    if sys.platform == "darwin":  # TensorFlow's macOS wheels have no oneDNN: nothing to say
        assert first.returncode == 0, first.stderr
        return
    assert first.returncode != 0
    assert f"ImportOrderWarning: {ONEDNN_WARNING}" in first.stderr
    assert ONEDNN_WARNING.count(". ") == 0 and ONEDNN_WARNING.endswith(".")  # one sentence


def test_make_deterministic_is_quiet_in_the_course_order_or_with_onednn_off():
    helpers_first = _first_cell_after("import helpers, tensorflow", None)
    assert helpers_first.returncode == 0, helpers_first.stderr
    turned_off = _first_cell_after("import keras", "0")
    assert turned_off.returncode == 0, turned_off.stderr
