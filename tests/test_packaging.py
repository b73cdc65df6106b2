"""The package as a user installs it: ``pip install .`` gives a wheel that holds every
subpackage and the course data, and ``import helpers`` loads no TensorFlow."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def subpackages() -> list[str]:
    """Every package under helpers/ in the source tree, by its dotted name."""
    return sorted(
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in ROOT.glob("helpers/**/__init__.py")
    )


def run_python(code: str, python: str = sys.executable, cwd: Path = ROOT, **kwargs):
    return subprocess.run(
        [python, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True, **kwargs
    )


def test_import_helpers_loads_no_tensorflow():
    result = run_python("""
        import sys
        import helpers, helpers.course, helpers.course.printing
        print(sorted(m for m in ("tensorflow", "keras") if m in sys.modules))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_tensorflow_subpackage_imports_it_without_its_start_up_log():
    result = run_python("import helpers.audio, sys; assert 'tensorflow' in sys.modules")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.fixture(scope="module")
def wheel_install(tmp_path_factory) -> tuple[str, Path]:
    """The wheel ``pip install .`` builds, installed into a fresh environment whose only
    other packages are the course environment's (added as a plain path, so the checkout's
    editable install is not among them)."""
    work = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(work),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = work.glob("gradient_clinic-*.whl")
    env = work / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = str(env / "bin" / "python")
    site = Path(
        run_python("import sysconfig; print(sysconfig.get_path('purelib'))", python).stdout.strip()
    )
    (site / "course_environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    return python, site


def test_the_wheel_imports_every_subpackage_and_finds_the_data(wheel_install, tmp_path):
    python, site = wheel_install
    result = run_python(
        f"""
        import importlib
        for name in {subpackages()!r}:
            module = importlib.import_module(name)
            assert module.__file__.startswith({str(site)!r}), (name, module.__file__)
        from helpers.audio import DATA_DIR, load_clip
        from helpers.capstone import recorded_noise
        from helpers.capstone.model import weights_path
        print(DATA_DIR.relative_to({str(site)!r}))
        print(load_clip("vowel_a").clean.shape, weights_path("masked").is_file())
        print(weights_path("masked", 2).is_file(), recorded_noise().shape)
        """,
        python,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == [
        "helpers/course_data",
        "(16000,) True",
        "True (320000,)",
    ]
