"""helpers.course.reproducibility: every notebook's first cell (make_deterministic, versions)."""

import random
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from helpers.course import make_deterministic, versions
from helpers.models import make_gru_step_model

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    """{name: version} for every exact pin of requirements.txt."""
    return dict(line.split("==", 1) for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))


def _draws():
    """One draw from every random source make_deterministic seeds (NumPy's global state too,
    which is what the legacy call reads)."""
    legacy_numpy = float(np.random.rand())  # noqa: NPY002
    return (random.random(), legacy_numpy, float(tf.random.uniform(())),
            [w.tolist() for w in make_gru_step_model(units=2, bins=3).get_weights()])


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
    assert versions() == (f"TensorFlow {pins['tensorflow']}, Keras {pins['keras']}, "
                          f"librosa {pins['librosa']}")  # the pinned versions, as installed
    assert (tf.__version__, keras.__version__, librosa.__version__) == (
        pins["tensorflow"], pins["keras"], pins["librosa"])


def test_the_environment_holds_every_pinned_version():
    """The stored outputs were made with requirements.txt's pins, setuptools and wheel included
    (a plain `pip freeze` leaves those two out, and pip would then take their newest)."""
    from importlib.metadata import PackageNotFoundError, version

    pins = _pins()
    assert {"setuptools", "wheel", "tensorflow"} <= set(pins)
    wrong = {}
    for name, pinned in pins.items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = None
        if installed != pinned:
            wrong[name] = (pinned, installed)
    assert not wrong, f"pinned vs installed (reinstall: pip install -r requirements.txt): {wrong}"


def test_importing_nbformat_builds_no_parser():
    """The jsonschema pin keeps rfc3987-syntax's parser out (requirements.in says why)."""
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, nbformat, jupyter_server.serverapp; "
         "print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert imported == "[]", f"importing nbformat and Jupyter Server loads {imported}"


def test_the_build_uses_the_pinned_setuptools():
    import tomllib

    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert build == [f"setuptools=={_pins()['setuptools']}"]
