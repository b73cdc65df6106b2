"""The package as a user installs it: ``pip install .`` gives a wheel that holds exactly the
tracked files of helpers/ and data/ (built from a clean copy of them, so nothing a build left
in the checkout gets in, and nothing is left behind), and ``import helpers`` loads no
TensorFlow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
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
    """With the log level ``import helpers`` sets, which leaves TensorFlow's errors visible."""
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = run_python(
        """
        import helpers.audio, os, sys
        assert 'tensorflow' in sys.modules
        print(os.environ["TF_CPP_MIN_LOG_LEVEL"])
        """,
        env=environ,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.strip() == "2"  # 3 would hide TensorFlow's errors too


def test_the_stderr_filter_drops_the_harmless_line_and_keeps_real_errors():
    """What a kernel's TensorFlow log goes through: the known harmless line is dropped, every
    other line passes, in order, and nothing is lost when it closes."""
    result = run_python("""
        import os
        from helpers.course.quiet_tensorflow import StderrFilter
        stderr = StderrFilter()
        os.write(2, b"E0000 00:00:1.0 1 node_def_util.cc:682] NodeDef mentions attribute "
                    b"use_unbounded_threadpool which is not in the op definition\\n")
        os.write(2, b"E0000 a real error\\nW0000 a warn")
        os.write(2, b"ing\\nno newline at the end")
        stderr.close()
        os.write(2, b"; after close\\n")
    """)
    assert result.returncode == 0
    assert (
        result.stderr == "E0000 a real error\nW0000 a warning\nno newline at the end; after close\n"
    )


def tracked_files(root: Path = ROOT) -> list[str]:
    """The files git tracks in ``root`` that are there now (a deleted one is not)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    return sorted(name for name in listed if name and (root / name).is_file())


def in_the_wheel(tracked: list[str]) -> list[str]:
    """Where each tracked file under helpers/ and data/ belongs in the wheel (data/ is
    installed as helpers/course_data, pyproject.toml's package-dir)."""
    return sorted(
        name if name.startswith("helpers/") else "helpers/course_data/" + name.removeprefix("data/")
        for name in tracked
        if name.startswith(("helpers/", "data/"))
    )


def build_wheel(root: Path, out: Path) -> Path:
    """The wheel ``pip wheel`` builds from a clean copy of ``root``'s tracked files (a build
    in the checkout leaves build/ and an egg-info there, and reuses them next time)."""
    copy = out / "source"
    for name in tracked_files(root):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, copy / name)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    build = subprocess.run(
        [*command, "-w", str(out), str(copy)], capture_output=True, text=True, cwd=out
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = out.glob("gradient_clinic-*.whl")
    return wheel


def wheel_files(wheel: Path) -> list[str]:
    """The wheel's files, its metadata (``*.dist-info``) aside."""
    with zipfile.ZipFile(wheel) as archive:
        return sorted(n for n in archive.namelist() if ".dist-info/" not in n)


def _left_in(root: Path) -> list[str]:
    """What git ignores in ``root`` and a build would leave: build/ and any egg-info."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=root, capture_output=True, text=True
    ).stdout
    return sorted(
        line[3:] for line in status.splitlines() if "build/" in line or "egg-info" in line
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    before = _left_in(ROOT)
    built = build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))
    assert _left_in(ROOT) == before, "the wheel's build left files in the checkout"
    return built


def test_the_wheel_holds_exactly_the_tracked_helpers_and_data(wheel):
    assert wheel_files(wheel) == in_the_wheel(tracked_files())


def test_a_module_deleted_from_helpers_leaves_the_next_wheel(tmp_path):
    """A module added, built, deleted and built again is not in the second wheel; and a
    wheel that still held it would fail the comparison above."""
    checkout = tmp_path / "checkout"
    for name in [n for n in tracked_files() if n.startswith(("helpers/", "data/"))] + [
        "pyproject.toml",
        "README.md",
        "LICENSE",
    ]:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, checkout / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    obsolete = checkout / "helpers" / "course" / "obsolete.py"
    obsolete.write_text('"""Soon gone."""\n')
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "with obsolete.py"], check=True)
    first = wheel_files(build_wheel(checkout, tmp_path / "first"))
    assert "helpers/course/obsolete.py" in first
    subprocess.run([*git, "rm", "-q", str(obsolete)], check=True)
    second = wheel_files(build_wheel(checkout, tmp_path / "second"))
    assert "helpers/course/obsolete.py" not in second
    assert second == in_the_wheel(tracked_files(checkout))
    assert first != in_the_wheel(tracked_files(checkout))


@pytest.fixture(scope="module")
def wheel_install(wheel, tmp_path_factory) -> tuple[str, Path]:
    """The wheel, installed into a fresh environment whose only other packages are the
    course environment's (added as a plain path, so the checkout's editable install is not
    among them)."""
    work = tmp_path_factory.mktemp("install")
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


def test_one_version_named_by_the_changelog():
    """pyproject.toml holds the version; helpers reads it from the installed metadata, and
    CHANGELOG.md's newest section is that release."""
    import importlib.metadata
    import re
    import tomllib

    import helpers

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert helpers.__version__ == importlib.metadata.version("gradient-clinic") == version
    sections = re.findall(r"^## (\d+\.\d+\.\d+)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert sections and sections[0] == version, f"CHANGELOG.md's newest section is {sections[:1]}"
    assert not re.search(r"__version__ = \"\d", (ROOT / "helpers" / "__init__.py").read_text())
