"""course.sh and .ci/run, run for real against stand-ins for the programs they start: which
Python course.sh takes, what `doctor` says (and the README quotes), what `test`, `portability`
and CI run, with which settings, and that any failure (pytest's exit 5, no tests, included)
fails them."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
SANITIZER = ROOT / "tests" / "nbval_sanitize.cfg"  # what ./course.sh passes to nbval
MANAGER = "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager"

# A stand-in for the environment's python (and ruff): answers course.sh's probes (numpy's CPU
# features, its version, TensorFlow's import), logs every other call with the settings it sees,
# and exits with the next of the codes in $STUB_EXIT_CODES (then 0).
STUB = """#!/usr/bin/env bash
if [ "${1:-}" = -c ]; then
  case "$2" in
    *__cpu_dispatch__*) echo "X86_V4 AVX512_ICL" ;;
    *version_info*) echo "${STUB_VERSION:-3.11.7}" ;;
    *tensorflow*)
      echo import >> "$STUB_LOG.tensorflow"
      printf '%b' "${STUB_TF_STDERR:-}" >&2
      [ -z "${STUB_TF_EXIT:-}" ] || exit "$STUB_TF_EXIT"
      echo 2.21.0 ;;
  esac
  exit 0
fi
printf '%s|%s|%s|%s\\n' "$(basename "$0") $*" "${NPY_DISABLE_CPU_FEATURES-unset}" \\
    "${TF_NUM_INTRAOP_THREADS-unset}" "${NUMBA_CACHE_DIR-unset}" >> "$STUB_LOG"
read -r code rest < "$STUB_EXIT_CODES"
echo "${rest:-0}" > "$STUB_EXIT_CODES"
exit "$code"
"""

# A stand-in interpreter on PATH: says its version, has ensurepip (exit 0) or not, and makes a
# stand-in environment (its python and ruff the stub above, the widgets' extension in place).
INTERPRETER = """#!/usr/bin/env bash
case "${1:-} ${2:-}" in
  "-c "*version_info*) echo @VERSION@ ;;
  "-c "*ensurepip*) exit @ENSUREPIP_EXIT@ ;;
  "-m venv")
    mkdir -p "$3/bin" "$3/@MANAGER@"
    cp "@STUB@" "$3/bin/python"; cp "@STUB@" "$3/bin/ruff"
    echo '{"version": "5.0.16"}' > "$3/@MANAGER@/package.json"
    echo "venv made by $(basename "$0")" >> "$STUB_LOG" ;;
  *) exit 1 ;;
esac
"""

# The programs course.sh may run, linked into a folder that becomes its whole PATH (with the
# stand-ins), so that no python, chromium or apt-get of this machine is seen.
TOOLS = ["bash", "env", "dirname", "basename", "cat", "grep", "cut", "tr", "sed", "awk", "head",
         "tail", "uname", "mktemp", "rm", "touch", "mkdir", "cp", "ls"]
TF_UNUSED = ("To enable the following instructions: AVX2 FMA, in other operations, rebuild "
             "TensorFlow with the appropriate compiler flags.\\n")
TF_NO_AVX = ("F0000 cpu_feature_guard.cc] The TensorFlow library was compiled to use AVX "
             "instructions, but these aren't available on your machine.\\n")


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


class Machine:
    """A copy of course.sh in ``tmp_path`` (so its default ``.venv`` is a stand-in one) and a
    PATH holding only the basic tools and the stand-ins each test asks for."""

    def __init__(self, tmp_path: Path):
        self.root = tmp_path / "course"
        self.root.mkdir()
        for name in ("course.sh", "requirements.txt", "pyproject.toml"):
            shutil.copy2(ROOT / name, self.root / name)
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for tool in TOOLS:
            (self.bin / tool).symlink_to(shutil.which(tool))
        self.stub = _script(tmp_path / "stub", STUB)
        self.log = tmp_path / "log"
        (tmp_path / "exit_codes").write_text("0")
        self.cpuinfo = tmp_path / "cpuinfo"
        self.cpu_flags("fpu sse4_2 avx avx2 fma")
        self.free_gb(50.0)
        self.env = {"PATH": str(self.bin), "HOME": str(tmp_path), "STUB_LOG": str(self.log),
                    "STUB_EXIT_CODES": str(tmp_path / "exit_codes"),
                    "CPUINFO": str(self.cpuinfo), "STUB_TF_STDERR": TF_UNUSED}

    def venv(self, version: str = "3.11.7", widgets: bool = True) -> Machine:
        """An installed .venv whose python is ``version``."""
        venv = self.root / ".venv"
        (venv / "bin").mkdir(parents=True, exist_ok=True)
        for program in ("python", "ruff"):
            shutil.copy2(self.stub, venv / "bin" / program)
        if widgets:
            (venv / MANAGER).mkdir(parents=True, exist_ok=True)
            (venv / MANAGER / "package.json").write_text('{\n  "version": "5.0.16"\n}\n')
        (venv / ".installed").touch()
        os.utime(venv / ".installed", (2**31, 2**31))  # newer than requirements.txt: no install
        self.env["STUB_VERSION"] = version
        return self

    def python(self, name: str, version: str, ensurepip: bool = True) -> Path:
        text = INTERPRETER
        for key, value in [("@VERSION@", version), ("@ENSUREPIP_EXIT@", "0" if ensurepip else "1"),
                           ("@MANAGER@", MANAGER), ("@STUB@", str(self.stub))]:
            text = text.replace(key, value)
        return _script(self.bin / name, text)

    def program(self, name: str) -> Path:
        return _script(self.bin / name, "#!/usr/bin/env bash\nexit 0\n")

    def cpu_flags(self, flags: str) -> None:
        self.cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")

    def free_gb(self, gigabytes: float) -> None:
        kilobytes = int(gigabytes * 2**20)
        _script(self.bin / "df", "#!/usr/bin/env bash\necho 'Filesystem 1024-blocks Used "
                f"Available Capacity Mounted on'\necho '/dev/x 1 1 {kilobytes} 1% /'\n")

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.root / "course.sh"), *args], env={**self.env, **env},
                              capture_output=True, text=True, timeout=60)

    def doctor(self, **env: str) -> dict[str, str]:
        """doctor's lines, by the check each belongs to."""
        result = self.run("doctor", **env)
        lines = result.stdout.splitlines()
        assert len(lines) == 5, result.stdout + result.stderr
        return dict(zip(["python", "tensorflow", "widgets", "chromium", "disk"], lines))

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def tensorflow_imports(self) -> int:
        imports = Path(f"{self.log}.tensorflow")
        return len(imports.read_text().split()) if imports.exists() else 0


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


# Python: 3.11, 3.12 and 3.13 accepted, 3.11 preferred, others refused with a sentence.
@pytest.mark.parametrize("name, version", [("python3.11", "3.11.9"), ("python3.12", "3.12.3"),
                                           ("python3.13", "3.13.0"), ("python3", "3.13.1")])
def test_course_sh_makes_its_environment_with_python_3_11_to_3_13(machine, name, version):
    machine.python(name, version)
    assert machine.doctor()["python"] == (
        f"ok       Python {version} ({name}) will make .venv (3.11, 3.12 and 3.13 run the course;"
        " CI tests 3.11)")
    result = machine.run("test")
    assert result.returncode == 0, result.stdout + result.stderr
    assert machine.calls()[0] == f"venv made by {name}"
    assert " -m pytest " in machine.calls()[-1]  # then installed and ran the tests in it


def test_course_sh_prefers_python_3_11_where_several_are_present(machine):
    for name, version in [("python3", "3.12.3"), ("python3.13", "3.13.0"),
                          ("python3.12", "3.12.3"), ("python3.11", "3.11.9")]:
        machine.python(name, version)
    assert machine.run("lab").returncode != 0  # no jupyter in the stand-in environment
    assert machine.calls()[0] == "venv made by python3.11"


@pytest.mark.parametrize("version", ["3.10.12", "3.14.0"])
def test_course_sh_refuses_other_pythons_with_a_sentence(machine, version):
    machine.python("python3", version)
    machine.program("apt-get")
    line = ("PROBLEM  Python: the course runs on Python 3.11, 3.12 or 3.13, and this machine has"
            f" none (python3 is {version}). Fix: sudo apt-get install -y python3.11-venv")
    assert machine.doctor()["python"] == line
    for command in ("lab", "test"):
        result = machine.run(command)
        assert result.returncode == 1
        assert result.stdout.splitlines()[0] == line and "Stopped" in result.stdout
        assert "Traceback" not in result.stdout + result.stderr
    assert not (machine.root / ".venv").exists() and machine.calls() == []


def test_an_explicit_python_is_refused_not_passed_over(machine):
    machine.python("python3.11", "3.11.9")
    wrong = machine.python("python3.10", "3.10.12")
    result = machine.run("lab", PYTHON=str(wrong))
    assert result.returncode == 1 and machine.calls() == []
    assert result.stdout.startswith(f"PROBLEM  PYTHON={wrong} is Python 3.10.12; the course runs"
                                    " on Python 3.11, 3.12 or 3.13. Fix: ")


def test_doctor_says_when_python_cannot_make_an_environment(machine):
    machine.python("python3", "3.12.3", ensurepip=False)
    assert machine.doctor()["python"] == (
        "PROBLEM  Python 3.12.3 (python3) cannot make a virtual environment (it has no"
        " ensurepip). Fix: sudo apt-get install -y python3.12-venv")


def test_doctor_checks_the_python_of_an_existing_environment(machine):
    machine.venv("3.12.3")
    assert machine.doctor()["python"] == (
        "ok       Python 3.12.3 in .venv (3.11, 3.12 and 3.13 run the course; CI tests 3.11)")
    machine.env["STUB_VERSION"] = "3.10.12"
    assert machine.doctor()["python"] == (
        "PROBLEM  Python: .venv has Python 3.10.12; the course runs on 3.11, 3.12 or 3.13."
        " Fix: rm -rf .venv && ./course.sh lab")
    python = machine.root / ".venv" / "bin" / "python"
    python.unlink()
    python.symlink_to(machine.root / "gone" / "python3.12")
    assert machine.doctor()["python"] == (
        "PROBLEM  Python: the Python that made .venv is gone (removed or upgraded)."
        " Fix: rm -rf .venv && ./course.sh lab")


def test_pyproject_admits_the_pythons_course_sh_accepts():
    text = (ROOT / "pyproject.toml").read_text()
    spec = SpecifierSet(re.search(r'^requires-python = "(.*)"$', text, re.M).group(1))
    accepted = re.search(r'^ACCEPTED_PYTHONS="(.*)"', (ROOT / "course.sh").read_text(),
                         re.M).group(1).split()
    assert accepted == ["3.11", "3.12", "3.13"]
    assert [v for v in ["3.10.12", "3.11.0", "3.12.3", "3.13.9", "3.14.0"] if v in spec] == [
        "3.11.0", "3.12.3", "3.13.9"]


# TensorFlow: imports, with its version and the CPU features it needs.
def test_doctor_names_the_cpu_features_tensorflow_needs(machine):
    machine.venv()
    assert machine.doctor()["tensorflow"] == (
        "ok       TensorFlow 2.21.0 imports; it needs AVX and this CPU has AVX AVX2 FMA")


@pytest.mark.parametrize("stderr, status", [(TF_NO_AVX, "134"), ("", "132")])
def test_doctor_says_which_cpu_feature_stops_tensorflow(machine, stderr, status):
    machine.venv()
    machine.cpu_flags("fpu sse4_2")
    line = machine.doctor(STUB_TF_STDERR=stderr, STUB_TF_EXIT=status)["tensorflow"]
    needs = "AVX" if stderr else "an instruction"  # SIGILL: TensorFlow died before naming it
    assert line == (
        f"PROBLEM  TensorFlow does not import: it needs {needs}, which this CPU lacks (it has none"
        " of AVX and later). Fix: none on this machine; run the course on a CPU with it (AVX:"
        " Intel and AMD since 2011) or on Apple silicon")


def test_doctor_says_how_to_reinstall_a_missing_tensorflow(machine):
    machine.venv()
    line = machine.doctor(STUB_TF_STDERR="ModuleNotFoundError: No module named 'tensorflow'\\n",
                          STUB_TF_EXIT="1")["tensorflow"]
    assert line == ("PROBLEM  TensorFlow is not installed in .venv."
                    " Fix: rm .venv/.installed && ./course.sh lab")


def test_lab_and_test_stop_with_the_line_instead_of_a_stack_trace(machine):
    machine.venv()
    machine.cpu_flags("fpu sse4_2")
    for command in ("lab", "test"):
        result = machine.run(command, STUB_TF_STDERR=TF_NO_AVX, STUB_TF_EXIT="134")
        assert result.returncode == 1
        assert result.stdout.startswith("PROBLEM  TensorFlow does not import: it needs AVX")
    assert machine.calls() == []  # neither ruff nor pytest nor jupyter ran


def test_test_imports_tensorflow_for_its_check_once_per_install(machine):
    machine.venv()
    for _ in range(2):
        assert machine.run("test").returncode == 0
    assert machine.tensorflow_imports() == 1  # the second run trusted the first
    assert machine.doctor()["tensorflow"].startswith("ok       TensorFlow 2.21.0 imports")
    assert machine.tensorflow_imports() == 2  # doctor always imports
    machine.cpu_flags("fpu sse4_2 avx")  # another CPU (the environment moved): checked again
    assert machine.run("test").returncode == 0 and machine.tensorflow_imports() == 3
    (machine.root / ".venv" / ".installed").unlink()  # a new install: checked again
    assert machine.run("test").returncode == 0 and machine.tensorflow_imports() == 4
    assert machine.run("test").returncode == 0 and machine.tensorflow_imports() == 4


def test_a_failed_install_ends_with_a_sentence(machine):
    machine.venv()
    (machine.root / ".venv" / ".installed").unlink()
    Path(machine.env["STUB_EXIT_CODES"]).write_text("0 1")  # pip upgrades itself, then fails
    result = machine.run("lab")
    assert result.returncode == 1 and not (machine.root / ".venv" / ".installed").exists()
    assert result.stderr.startswith("pip could not install the pinned packages")
    assert [call.split("|")[0] for call in machine.calls()] == [
        "python -m pip install --quiet --upgrade pip",
        "python -m pip install --quiet -r requirements.txt"]


# ipywidgets' JupyterLab extension.
def test_doctor_finds_the_widgets_extension_or_says_how_to_reinstall_it(machine):
    machine.venv()
    assert machine.doctor()["widgets"] == ("ok       ipywidgets' JupyterLab extension is installed"
                                           " (@jupyter-widgets/jupyterlab-manager 5.0.16)")
    shutil.rmtree(machine.root / ".venv" / MANAGER)
    pin = re.search(r"^jupyterlab_widgets==\S+$", (ROOT / "requirements.txt").read_text(),
                    re.M).group(0)
    line = machine.doctor()["widgets"]
    assert line == ("PROBLEM  ipywidgets' JupyterLab extension is missing from .venv: widgets"
                    " show as text. Fix: .venv/bin/python -m pip install --force-reinstall"
                    f" --no-deps {pin}")
    assert machine.run("lab").stdout.splitlines()[0] == line


# Chromium for the browser tests.
def test_doctor_finds_chromium_or_says_how_to_install_it(machine):
    machine.venv()
    chromium = machine.program("chromium")
    assert machine.doctor()["chromium"] == f"ok       Chromium for the browser tests: {chromium}"
    chromium.unlink()
    line = ("PROBLEM  Chromium for the browser tests: not found (./course.sh test skips them"
            " without it). Fix: sudo apt-get install -y chromium")
    assert machine.doctor()["chromium"] == line
    result = machine.run("test")  # a note there: the browser tests skip themselves
    assert result.returncode == 0 and line in result.stdout
    assert " -m pytest " in machine.calls()[-1]


# Disk space for the environment.
def test_doctor_checks_the_space_for_the_environment(machine):
    machine.python("python3.11", "3.11.9")
    assert machine.doctor()["disk"] == (
        "ok       disk: 50.0 GB free where .venv will be installed (it needs about 4 GB)")
    machine.free_gb(1.2)
    line = ("PROBLEM  disk: 1.2 GB free where .venv would be installed; it needs about 4 GB."
            " Fix: VENV=/path/on/a/disk/with/space/.venv ./course.sh lab")
    assert machine.doctor()["disk"] == line
    result = machine.run("lab")
    assert result.returncode == 1 and result.stdout.splitlines()[0] == line
    assert not (machine.root / ".venv").exists()
    machine.venv()  # once installed, the space it took is no problem
    assert machine.doctor()["disk"] == (
        "ok       disk: 1.2 GB free where .venv is installed (it takes about 3 GB)")


def test_doctor_passes_on_a_machine_with_everything(machine):
    machine.venv()
    machine.program("chromium")
    result = machine.run("doctor")
    assert result.returncode == 0 and "PROBLEM" not in result.stdout
    machine.cpu_flags("fpu sse4_2")
    assert machine.run("doctor", STUB_TF_STDERR=TF_NO_AVX, STUB_TF_EXIT="134").returncode == 1


def test_the_readme_quotes_what_doctor_prints_for_each_failure(machine):
    """The README's "When something goes wrong" lines are doctor's, for the same failures."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## When something goes wrong", 1)[1].split("\n## ", 1)[0]
    quoted = [line.strip() for line in section.splitlines() if line.strip().startswith("PROBLEM")]
    machine.python("python3", "3.10.12")
    machine.program("apt-get")
    machine.free_gb(1.2)
    printed = [machine.doctor()["python"], machine.doctor()["disk"]]
    machine.python("python3", "3.12.3", ensurepip=False)
    printed.append(machine.doctor()["python"])
    machine.venv()
    machine.cpu_flags("fpu sse4_2")
    doctor = machine.doctor(STUB_TF_STDERR=TF_NO_AVX, STUB_TF_EXIT="134")
    printed += [doctor["tensorflow"], doctor["chromium"]]
    shutil.rmtree(machine.root / ".venv" / MANAGER)
    printed.append(machine.doctor()["widgets"])
    assert all(line.startswith("PROBLEM  ") for line in printed)
    assert sorted(quoted) == sorted(printed)


# What `test` and `portability` run (against the repository's own course.sh).
def _run_course(tmp_path, *args, exit_codes="0"):
    """Run course.sh against a stand-in environment whose python and ruff log their
    arguments and the settings they see, and exit with the next of ``exit_codes``."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for program in ("python", "ruff"):
        _script(venv / "bin" / program, STUB)
    _script(venv / MANAGER / "package.json", '{"version": "5.0.16"}')
    (venv / ".installed").touch()
    os.utime(venv / ".installed", (2**31, 2**31))  # newer than requirements.txt: no install
    (tmp_path / "exit_codes").write_text(exit_codes)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPY_", "TF_NUM_", "NUMBA_"))}
    env.update(VENV=str(venv), STUB_LOG=str(tmp_path / "log"),
               STUB_EXIT_CODES=str(tmp_path / "exit_codes"))
    result = subprocess.run([str(ROOT / "course.sh"), *args], env=env, capture_output=True,
                            text=True, timeout=60)
    calls = (tmp_path / "log").read_text().splitlines() if (tmp_path / "log").exists() else []
    return result, [call.split("|") for call in calls]


def test_the_test_commands_use_the_sanitizer_test_notebooks_checks():
    course = (ROOT / "course.sh").read_text()
    assert '--nbval-sanitize-with="$PWD/tests/nbval_sanitize.cfg"' in course
    assert SANITIZER.is_file()


def test_course_test_runs_ruff_then_pytest_on_two_workers_with_the_sanitizer(tmp_path):
    result, calls = _run_course(tmp_path, "test", "-x")
    assert result.returncode == 0, result.stdout + result.stderr
    assert [call[0].split()[0] for call in calls] == ["ruff", "python"]
    pytest_args = calls[1][0].split()
    assert pytest_args[1:3] == ["-m", "pytest"] and pytest_args[-1] == "-x"
    for option in ("-n 2 --dist loadfile", "--nbval --nbval-current-env",
                   f"--nbval-sanitize-with={SANITIZER}"):
        assert option in calls[1][0]
    assert calls[1][3] == str(tmp_path / "venv" / "numba-cache")  # writable, kept with .venv


def test_course_test_fails_when_pytest_collects_nothing(tmp_path):
    result, _ = _run_course(tmp_path, "test", exit_codes="0 5")
    assert result.returncode == 5


@pytest.mark.parametrize("exit_codes", ["0 0 0", "5 0 0", "0 1 0", "0 0 1"])
def test_portability_runs_all_three_passes_and_fails_if_any_fails(tmp_path, exit_codes):
    result, calls = _run_course(tmp_path, "portability", exit_codes=exit_codes)
    assert (result.returncode == 0) == (exit_codes == "0 0 0"), result.stdout
    passes = [call for call in calls if " -m pytest " in call[0]]
    if platform.machine() != "x86_64":
        passes.insert(0, None)  # the older-CPU pass is x86-64 only
    older, one_thread, eight_threads = passes
    for command, *_ in [p for p in passes if p]:
        assert f"--nbval-sanitize-with={SANITIZER}" in command
        assert "-n 2 --dist loadfile" in command and command.endswith(" notebooks")
    if older:  # the stand-in numpy reports X86_V4 and AVX512_ICL: exactly those are disabled
        assert older[1:3] == ["X86_V4 AVX512_ICL", "unset"]
    assert one_thread[1:3] == ["unset", "1"]
    assert eight_threads[1:3] == ["unset", "8"]


# .ci/run: the wheel check for 3.12 and 3.13, then exactly the README's test command, then the
# portability proof; any failure fails CI, after everything has run.
def test_ci_runs_exactly_the_readme_test_command_then_the_portability_proof():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "```bash\n./course.sh test\n```" in readme
    commands = [line for line in ci.splitlines() if line.strip() and not line.startswith("#")]
    assert commands[-4:] == ["rm -rf .venv", "./course.sh test", "./course.sh portability",
                             'exit "$failed"']  # a fresh environment: a missing step shows
    assert "trap 'failed=1' ERR" in ci  # any failing command fails CI, after all have run
    assert "for version in 3.12 3.13; do" in ci


def _ci_copy(tmp_path, requirements: str) -> Path:
    """.ci/run in a folder of its own, with ``requirements`` and a stand-in course.sh that logs
    its command and exits with $CODE_<command>."""
    ci = _script(tmp_path / ".ci" / "run", (ROOT / ".ci" / "run").read_text())
    _script(tmp_path / "course.sh", '#!/usr/bin/env bash\necho "$1" >> log\n'
                                    'var="CODE_$1"; exit "${!var:-0}"\n')
    (tmp_path / "requirements.txt").write_text(requirements)
    return ci


def _ci_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    wheels = extra.pop("wheels", None)
    if wheels:  # pip sees only this folder: no configuration file, no index
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=wheels)
    return {**env, "PYTHON": sys.executable, "CHROMIUM": "/usr/bin/chromium", **extra}


def _wheel(folder: Path, name: str, tag: str) -> None:
    """A minimal installable wheel of ``name`` 1.0 for ``tag`` (say cp312-none-any)."""
    folder.mkdir(exist_ok=True)
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(folder / f"{name}-1.0-{tag}.whl", "w") as wheel:
        wheel.writestr(f"{name}/__init__.py", "")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        wheel.writestr(f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: test\n"
                                        f"Root-Is-Purelib: true\nTag: {tag}\n")
        wheel.writestr(f"{info}/RECORD", "")


def test_ci_fails_when_a_pin_has_no_wheel_for_3_13_and_still_runs_the_tests(tmp_path):
    """A fake index: `everywhere` has a wheel for any Python 3, `until312` for 3.11 and 3.12
    only. The check passes 3.12 (so nothing but the missing wheel fails 3.13), fails 3.13
    naming `until312`, and test and portability still run."""
    wheels = tmp_path / "wheels"
    _wheel(wheels, "everywhere", "py3-none-any")
    for tag in ("cp311-none-any", "cp312-none-any"):
        _wheel(wheels, "until312", tag)
    ci = _ci_copy(tmp_path, "# pins\neverywhere==1.0\nuntil312==1.0\n")
    result = subprocess.run(["bash", str(ci)], capture_output=True, text=True, timeout=300,
                            env=_ci_env(wheels=str(wheels)))
    out = result.stdout + result.stderr
    assert "== Python 3.12: every pin has a wheel" in out
    assert "== Python 3.13: FAILED" in out and "until312==1.0" in out
    assert (tmp_path / "log").read_text().split() == ["test", "portability"]
    assert result.returncode == 1


# A stand-in Python for the wheel check: its environment's pip finds every wheel.
PIP_FINDS_ALL = """#!/usr/bin/env bash
if [ "${1:-} ${2:-}" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi
"""


def test_ci_fails_if_either_command_fails_and_always_runs_both(tmp_path):
    ci = _ci_copy(tmp_path, "everywhere==1.0\n")
    python = _script(tmp_path / "python", PIP_FINDS_ALL)
    for test_code, portability_code in [(0, 0), (5, 0), (0, 5), (1, 1)]:
        (tmp_path / "log").unlink(missing_ok=True)
        result = subprocess.run(["bash", str(ci)], capture_output=True, text=True, timeout=60,
                                env=_ci_env(PYTHON=str(python), CODE_test=str(test_code),
                                            CODE_portability=str(portability_code)))
        assert (tmp_path / "log").read_text().split() == ["test", "portability"]
        assert (result.returncode == 0) == (test_code == portability_code == 0)


def test_ci_says_where_the_screenshots_are_and_copies_them_to_ci_artifacts(tmp_path):
    """The browser tests leave screenshots; .ci/run names their folder at the end and copies
    it to $CI_ARTIFACTS when set, without changing its exit code."""
    ci = _ci_copy(tmp_path, "everywhere==1.0\n")
    python = _script(tmp_path / "python", PIP_FINDS_ALL)
    shots = tmp_path / "tests" / "browser" / "artifacts" / "screenshots"
    shots.mkdir(parents=True)
    (shots / "notebook-00_start_here.png").write_bytes(b"png")
    kept = tmp_path / "kept"
    for code in (0, 1):
        result = subprocess.run(["bash", str(ci)], capture_output=True, text=True, timeout=60,
                                env=_ci_env(PYTHON=str(python), CODE_test=str(code),
                                            CI_ARTIFACTS=str(kept)))
        assert result.returncode == code
        assert ("== Screenshots of the notebooks and the lab: "
                "tests/browser/artifacts/screenshots") in result.stdout
        assert (kept / "screenshots" / "notebook-00_start_here.png").read_bytes() == b"png"
