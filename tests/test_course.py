"""scripts/course.py, the tasks ./course.sh hands over to: what ``doctor`` says for each
problem (and the README quotes), which passes ``portability`` runs, and that ``lint`` and
``test`` run everything and fail if anything failed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import course

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("version", [(3, 11, 5), (3, 11, 7), (3, 12, 0), (3, 13, 1)])
def test_doctor_takes_python_3_11_5_to_3_13(version):
    assert course.check_python(version).state == "ok"


@pytest.mark.parametrize("version", [(3, 10, 12), (3, 11, 2), (3, 11, 4), (3, 14, 0)])
def test_doctor_refuses_other_pythons_with_the_fix(version):
    check = course.check_python(version)
    assert check.state == "PROBLEM" and "3.11.5 or later, 3.12 or 3.13" in check.text
    assert "Fix: rm -rf" in check.text


def test_doctor_names_the_package_that_needs_3_11_5_and_the_lock_agrees():
    check = course.check_python((3, 11, 2))
    assert "soupsieve 4.1.3 needs 3.11.5" in check.text
    # The reason is the lock's: its soupsieve pin is that version.
    assert "\nsoupsieve==4.1.3 " in (ROOT / "requirements.txt").read_text()


def test_the_cpu_flags_come_from_cpuinfo():
    cpuinfo = "processor : 0\nflags\t\t: fpu sse4_2 avx avx2\nbugs : none\n"
    assert course.cpu_flags(cpuinfo) == {"fpu", "sse4_2", "avx", "avx2"}
    assert course.cpu_flags("") == set()


@pytest.mark.parametrize(
    "status, stderr, expected",
    [
        (0, "", None),
        (132, "", "its wheels need AVX, which this CPU lacks"),
        (1, "compiled to use AVX instructions, but these aren't available", "lacks"),
        (1, "ModuleNotFoundError: No module named 'tensorflow'", "is not installed"),
        (1, "Traceback ...\nImportError: libfoo.so: cannot open", "ImportError: libfoo.so"),
    ],
)
def test_doctor_says_why_tensorflow_does_not_import(status, stderr, expected):
    problem = course.tensorflow_problem(status, stderr, {"sse4_2"})
    if expected is None:
        assert problem is None
    else:
        assert expected in problem and "Fix:" in problem


def test_doctor_finds_the_widgets_extension(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "installed", lambda lock: True)
    assert course.check_widgets(tmp_path).state == "PROBLEM"
    extension = tmp_path / course.WIDGETS_EXTENSION
    extension.mkdir(parents=True)
    (extension / "package.json").write_text("{}")
    assert course.check_widgets(tmp_path).state == "ok"


def test_doctor_finds_chromium_or_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    missing = course.check_chromium()
    assert missing.state == "PROBLEM" and "apt-get install -y chromium" in missing.text
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    assert course.check_chromium().state == "ok"


def test_doctor_checks_the_space_for_the_environment():
    assert course.check_disk(5 * 2**30, is_installed=False).state == "ok"
    short = course.check_disk(int(1.2 * 2**30), is_installed=False)
    assert short.state == "PROBLEM" and "1.2 GB free" in short.text and "VENV=" in short.text
    assert course.check_disk(int(1.2 * 2**30), is_installed=True).state == "ok"


def test_the_readme_quotes_what_doctor_prints(tmp_path, monkeypatch):
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no chromium
    monkeypatch.setattr(course, "VENV", Path(".venv"))
    monkeypatch.setattr(course, "installed", lambda lock: True)
    printed = [
        course.check_disk(int(1.2 * 2**30), is_installed=False),
        course.Check("PROBLEM", course.tensorflow_problem(132, "", set())),
        course.check_widgets(tmp_path / ".venv"),
        course.check_chromium(),
    ]
    readme = (ROOT / "README.md").read_text()
    for check in printed:
        line = str(check).replace(str(tmp_path / ".venv"), ".venv")
        assert check.state == "PROBLEM" and line in readme, line


def test_portability_runs_an_older_cpu_only_on_x86_64(monkeypatch):
    monkeypatch.setattr(course, "avx512_features", lambda: "X86_V4")
    names = [name for name, _ in course.portability_passes("x86_64")]
    assert names == ["an older x86-64 CPU (AVX2, no AVX-512)", "one thread", "eight threads"]
    older = dict(course.portability_passes("x86_64"))["an older x86-64 CPU (AVX2, no AVX-512)"]
    assert older == {"NPY_DISABLE_CPU_FEATURES": "X86_V4", "OPENBLAS_CORETYPE": "Haswell",
                     "ONEDNN_MAX_CPU_ISA": "AVX2"}  # fmt: skip
    assert [n for n, _ in course.portability_passes("aarch64")] == ["one thread", "eight threads"]
    assert dict(course.portability_passes("aarch64"))["one thread"]["OMP_NUM_THREADS"] == "1"
    for name, n in (("one thread", "1"), ("eight threads", "8")):
        settings = dict(course.portability_passes("aarch64"))[name]
        assert settings["GRADIENT_CLINIC_THREADS"] == settings["TF_NUM_INTRAOP_THREADS"] == n


def test_the_thread_passes_give_the_kernel_the_threads_they_name():
    """What helpers.course.threads decides in a kernel started with a pass's settings: the
    pass's count, not the machine's cores nor the cap."""
    from helpers.course import apply_thread_count

    for name, n in (("one thread", "1"), ("eight threads", "8")):
        settings = dict(course.portability_passes("aarch64"))[name]
        only_ours = {"GRADIENT_CLINIC_THREADS": settings["GRADIENT_CLINIC_THREADS"]}
        assert set(apply_thread_count(only_ours).values()) == {n}


def test_lint_runs_every_lint_and_fails_if_any_fails(monkeypatch, capsys):
    ran = []

    def run(*command, env=None):
        ran.append(command)
        return 1 if (Path(command[0]).name, *command[1:2]) == ("ruff", "check") else 0

    monkeypatch.setattr(course, "run", run)
    assert course.lint(Path("/lint/bin")) == 1  # the lint environment's programs
    assert [str(c[0]) for c in ran] == [
        "/lint/bin/ruff",
        "/lint/bin/ruff",
        "/lint/bin/lint-imports",
        "/lint/bin/python",
    ]
    assert "lint FAILED: ruff check ." in capsys.readouterr().out


def test_the_lint_command_uses_its_own_small_environment(monkeypatch):
    linted = []
    monkeypatch.setattr(course, "setup", lambda lock: linted.append(lock))  # never the dev lock
    monkeypatch.setattr(course, "lint_setup", lambda: Path("/lint/bin"))
    monkeypatch.setattr(course, "lint", lambda bin_dir=None: linted.append(bin_dir) or 0)
    assert course.main(["lint"]) == 0
    assert linted == [Path("/lint/bin")]


def test_test_runs_pytest_after_a_failed_lint_and_fails(monkeypatch):
    ran = []
    monkeypatch.setattr(course, "setup", lambda lock: None)
    monkeypatch.setattr(course, "report", lambda checks, quiet=False: True)
    monkeypatch.setattr(course, "lint", lambda: 1)
    monkeypatch.setattr(course, "run", lambda *command, env=None: ran.append(command) or 0)
    assert course.test(["-k", "x"]) == 1
    (pytest_command,) = ran
    assert pytest_command[1:3] == ("-m", "pytest") and pytest_command[-2:] == ("-k", "x")
    assert "--nbval" in pytest_command and "2" in pytest_command  # two workers, strict nbval


def test_doctor_finds_the_course_helpers_or_names_the_other_one(tmp_path):
    ours = course.ROOT / "helpers"
    assert course.check_helpers(is_installed=True).state == "ok"  # this environment's
    assert course.check_helpers(ours, is_installed=True).state == "ok"
    other = course.check_helpers(tmp_path / "site-packages" / "helpers", is_installed=True)
    assert other.state == "PROBLEM"
    assert f"import helpers finds {tmp_path / 'site-packages' / 'helpers'}, not" in other.text
    assert "Fix: give the course its own environment" in other.text
    assert course.check_helpers(is_installed=False).state == "--"


def test_doctor_finds_a_foreign_helpers_first_on_the_path(tmp_path, monkeypatch):
    """A folder named helpers earlier on sys.path (another course's, on a shared kernel)."""
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    found = course.helpers_location()
    assert found == tmp_path / "helpers"
    assert course.check_helpers(found, is_installed=True).state == "PROBLEM"


def test_the_dev_lock_counts_as_the_course_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "VENV", tmp_path)
    assert not course.installed(course.COURSE_LOCK)
    (tmp_path / f".installed-{course.DEV_LOCK.name}").write_text(
        course._fingerprint(course.DEV_LOCK)
    )
    assert course.installed(course.COURSE_LOCK) and course.installed(course.DEV_LOCK)
    (tmp_path / f".installed-{course.DEV_LOCK.name}").write_text("an older lock")
    assert not course.installed(course.COURSE_LOCK)


def test_the_instructor_lock_counts_as_the_course_lock_and_the_dev_lock_as_it(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(course, "VENV", tmp_path)
    assert not course.installed(course.INSTRUCTOR_LOCK)
    stamp = tmp_path / f".installed-{course.INSTRUCTOR_LOCK.name}"
    stamp.write_text(course._fingerprint(course.INSTRUCTOR_LOCK))
    assert course.installed(course.COURSE_LOCK) and not course.installed(course.DEV_LOCK)
    stamp.unlink()
    (tmp_path / f".installed-{course.DEV_LOCK.name}").write_text(
        course._fingerprint(course.DEV_LOCK)
    )
    assert course.installed(course.INSTRUCTOR_LOCK)


def test_contributor_makes_git_diff_a_notebook_as_cells(tmp_path, capsys):
    """The contributor command sets nbdime's drivers in the clone's own configuration; with
    the checkout's .gitattributes, git diff then shows a changed notebook as cells."""
    import shutil
    import subprocess

    import nbformat

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", id="a")])
    nbformat.write(notebook, tmp_path / "n.ipynb")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    notebook.cells[0].source = "x = 2"
    nbformat.write(notebook, tmp_path / "n.ipynb")
    assert course.contributor(tmp_path) == 0
    assert "read notebooks as cells" in capsys.readouterr().out
    settings = subprocess.run(
        [*git, "config", "--local", "--get", "diff.jupyternotebook.command"],
        capture_output=True,
        text=True,
    ).stdout
    assert settings.strip() == f"{course.VENV / 'bin' / 'git-nbdiffdriver'} diff"
    diff = subprocess.run([*git, "diff", "--no-color"], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stderr
    assert "nbdiff" in diff.stdout and "## modified /cells/0/source:" in diff.stdout
    assert '"source"' not in diff.stdout  # cells, not the file's JSON


def test_a_failing_run_ends_by_naming_its_failures(tmp_path):
    """pyproject.toml's options end a red run with pytest's short summary (-rfE)."""
    import subprocess

    (tmp_path / "test_red.py").write_text("def test_red():\n    assert 1 == 2\n")
    pytest = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml")]
    result = subprocess.run(
        [*pytest, "--rootdir", str(tmp_path), "--durations=3", str(tmp_path / "test_red.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    last = result.stdout.strip().splitlines()[-2:]
    assert last[0].startswith("FAILED test_red.py::test_red"), result.stdout[-600:]


def test_ci_reads_pips_pin_with_every_hash_line(tmp_path):
    """.ci/run installs the locked pip from its entry in requirements.txt: the pin line and
    all its hash lines, however many, and nothing after them."""
    line = next(
        text for text in (ROOT / ".ci" / "run").read_text().splitlines() if "'/^pip==/" in text
    )
    command = line.split(" > ", 1)[0].replace("requirements.txt", str(tmp_path / "lock.txt"))
    entry = "pip==26.3 \\\n" + "".join(f"    --hash=sha256:{c * 64} \\\n" for c in "abc")
    entry += "    --hash=sha256:" + "d" * 64 + "\n"
    (tmp_path / "lock.txt").write_text(
        "absl-py==2.5.1 \\\n    --hash=sha256:" + "e" * 64 + "\n" + entry
        + "    # via -r -\nsetuptools==84.2.1 \\\n    --hash=sha256:" + "f" * 64 + "\n"
    )  # fmt: skip
    printed = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
    assert printed.stdout == entry


def test_the_hub_turns_off_nbgraders_authoring_plugins_by_their_real_names():
    """Disabling a plugin name nbgrader does not have succeeds and hides nothing: every name
    ./course.sh hub turns off is one nbgrader's JupyterLab extension registers, and its
    Assignments tab (the exchange, for students) is not among them."""
    nbgrader = Path(sys.prefix) / "share/jupyter/labextensions/@jupyter/nbgrader/static"
    if not nbgrader.is_dir():
        pytest.skip("nbgrader is in requirements-dev.txt")
    registered = "\n".join(path.read_text() for path in nbgrader.glob("*.js"))
    for plugin in course.AUTHORING_PLUGINS:
        assert f'"{plugin}"' in registered, plugin
    assert "@jupyter/nbgrader:assignment-list" not in course.AUTHORING_PLUGINS
    assert "@jupyter/nbgrader:menu" not in course.AUTHORING_PLUGINS  # the way to that tab


def test_the_hub_finds_the_nbgrader_plugins_an_earlier_setup_turned_off(tmp_path):
    """``./course.sh hub`` over an environment an earlier version set up turns back on what
    it no longer turns off: it reads which of nbgrader's plugins the page config disables."""
    page_config = tmp_path / "page_config.json"
    assert course.turned_off_plugins(page_config) == set()
    page_config.write_text(
        '{"disabledExtensions": {"@jupyter/nbgrader:menu": true, '
        '"@jupyter/nbgrader:formgrader": true, "@jupyter/nbgrader:course-list": false, '
        '"@jupyterlab/apputils-extension:announcements": true}}'
    )
    assert course.turned_off_plugins(page_config) == {
        "@jupyter/nbgrader:menu",
        "@jupyter/nbgrader:formgrader",
    }


@pytest.mark.parametrize("as_root", [True, False])
def test_lab_allows_root_only_when_run_as_root(as_root):
    """JupyterLab refuses to start as root ("Running as root is not recommended") unless given
    --allow-root; in a container the user is root, so ``lab`` passes it there, once."""
    workspace = ROOT / "workspace"
    command = course.lab_command(
        workspace, workspace / "00_start_here.ipynb", ["--no-browser"], as_root
    )
    assert command[:4] == [
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={workspace}",
        workspace / "00_start_here.ipynb",
    ]
    assert command[-1] == "--no-browser"
    assert ("--allow-root" in command) == as_root
    given = course.lab_command(ROOT, "notebooks/00_start_here.ipynb", ["--allow-root"], as_root)
    assert given.count("--allow-root") == 1


def test_lab_runs_the_command_it_builds_without_a_backend_that_hides_figures(monkeypatch):
    """The command ``lab_command`` builds; and the kernels do not inherit ``MPLBACKEND``: with
    ``MPLBACKEND=Agg`` (set in some containers) a kernel shows no figure."""
    ran = []
    monkeypatch.setattr(course, "setup", lambda lock: None)
    monkeypatch.setattr(
        course,
        "run",
        lambda *command, env=None: ran.append(list(command)) or ("MPLBACKEND" in os.environ),
    )
    monkeypatch.setattr(course.os, "geteuid", lambda: 0)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    assert course.main(["lab", "--stored", "--no-browser"]) == 0
    assert ran == [
        course.lab_command(ROOT, "notebooks/00_start_here.ipynb", ["--no-browser"], as_root=True)
    ]
    assert "--allow-root" in ran[0]
