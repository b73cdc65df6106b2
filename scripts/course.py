"""The course's tasks, run by ``./course.sh`` with the course environment's Python.

    ./course.sh doctor        check the setup, one line each, with the fix for each problem
    ./course.sh lab           install the course lock (first time) and open JupyterLab on your
                              workspace (workspace/: your copies, outputs cleared, git-ignored)
    ./course.sh lab --stored  open the course's own notebooks, with their stored outputs
    ./course.sh reset NN_name put the course's version of a notebook in your workspace (asks
                              first if you changed yours; --yes does not ask)
    ./course.sh test          install the dev lock, lint, then pytest: the unit tests, every
                              notebook under strict nbval and the browser tests, two workers
    ./course.sh portability   every notebook under strict nbval as on an older x86-64 CPU, on
                              one thread and on eight threads
    ./course.sh lint          ruff check, ruff format --check, lint-imports and the course's
                              conventions (scripts/lint_course.py), all of them every time,
                              in a small environment of their own (the lint lock, beside .venv)
    ./course.sh regenerate    re-execute the notebooks' stored outputs (all, or those named)
    ./course.sh student [DIR] write the student edition (default student/)
    ./course.sh site          build the course as a static website into site/_build/html
    ./course.sh nbgrader [DIR] write an nbgrader course folder (default nbgrader/): one
                              assignment per class session, from the homework exercises
    ./course.sh lock          re-lock requirements.txt, requirements-instructor.txt,
                              requirements-hub.txt, requirements-dev.txt and
                              requirements-lint.txt with uv
    ./course.sh hub           install the students' environment for a JupyterHub
                              (requirements-hub.txt), nbgrader's authoring tools off
    ./course.sh contributor   install the dev lock and make git diff and merge notebooks as
                              cells (nbdime's drivers, for this clone)

Extra arguments to ``test`` and ``portability`` go to pytest. Only the standard library is
imported here: ``doctor`` must work before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)  # course.sh runs this file with the environment's own Python
COURSE_LOCK = ROOT / "requirements.txt"  # what the course needs to run
DEV_LOCK = ROOT / "requirements-dev.txt"  # the course plus the test and authoring stack
INSTRUCTOR_LOCK = ROOT / "requirements-instructor.txt"  # the course plus nbgrader
LINT_LOCK = ROOT / "requirements-lint.txt"  # ruff and import-linter alone, at the dev versions
LINT_VENV = VENV.with_name(f"{VENV.name}-lint")  # ./course.sh lint's own environment
HUB_LOCK = ROOT / "requirements-hub.txt"  # the course plus a student's server on a JupyterHub
PIP = "pip==26.3"  # the pip that installs the locks (locked with them, hashes included)
NEED_GB = 4  # the environment takes about 3 GB; pip needs about 1 GB more while it installs
WIDGETS_EXTENSION = "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager"
# Strict nbval (every output compared) in a kernel from this environment; the sanitizer only
# hides audio players' base64 bytes. Two workers; --dist loadfile keeps a notebook's cells on
# one worker, in order, in one kernel.
NBVAL = ["--nbval", "--nbval-current-env", f"--nbval-sanitize-with={ROOT}/tests/nbval_sanitize.cfg"]
WORKERS = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]
LINTS = (
    ["ruff", "check", "."],
    ["ruff", "format", "--check", "."],
    ["lint-imports"],
    ["python", "-m", "scripts.lint_course"],  # the standard library only
)


# --------------------------------------------------------------------------- doctor's checks


@dataclass(frozen=True)
class Check:
    """One line of ``doctor``: ``ok``, ``--`` (not installed yet) or ``PROBLEM`` with a fix."""

    state: str
    text: str

    def __str__(self) -> str:
        return f"{self.state:<8} {self.text}"


# The oldest Python the locks install on: the course lock's soupsieve 4.1.3 needs 3.11.5 (Debian
# 12's python3 is 3.11.2). course.sh checks the same before it makes the environment.
OLDEST_PYTHON = (3, 11, 5)
NEWEST_MINOR = (3, 13)


def check_python(version: tuple[int, int, int] = sys.version_info[:3]) -> Check:
    shown = ".".join(map(str, version))
    if OLDEST_PYTHON <= tuple(version) and tuple(version[:2]) <= NEWEST_MINOR:
        return Check(
            "ok", f"Python {shown} in {VENV} (3.11.5 or later, 3.12 and 3.13 run the course)"
        )
    return Check(
        "PROBLEM",
        f"Python: {VENV} has Python {shown}; the course runs on 3.11.5 or later, 3.12 or 3.13 "
        "(the course lock's soupsieve 4.1.3 needs 3.11.5). Fix: rm -rf "
        f"{VENV} && PYTHON=python3.12 ./course.sh lab (a Python from 3.11.5 to 3.13)",
    )


def installed(lock: Path) -> bool:
    """Whether ``lock`` (and this pyproject.toml) was installed into the environment as it is;
    the dev lock holds the other two at their versions, so it counts for them, and the
    instructor lock holds the course lock."""
    stamp = VENV / f".installed-{lock.name}"
    if stamp.is_file() and stamp.read_text() == _fingerprint(lock):
        return True
    holders = {
        COURSE_LOCK: (INSTRUCTOR_LOCK, HUB_LOCK, DEV_LOCK),
        INSTRUCTOR_LOCK: (DEV_LOCK,),
        HUB_LOCK: (DEV_LOCK,),
    }
    return any(installed(holder) for holder in holders.get(lock, ()))


def _fingerprint(lock: Path) -> str:
    return hashlib.sha256(lock.read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()


def tensorflow_problem(status: int, stderr: str, cpu_flags: set[str]) -> str | None:
    """Why ``import tensorflow`` failed, with its fix (None if it did not fail)."""
    if status == 0:
        return None
    if status in (132, -4) or "instructions, but these aren't available" in stderr:
        has = "AVX" if "avx" in cpu_flags else "no AVX"
        return (
            "TensorFlow does not import: its wheels need AVX, which this CPU lacks (it has "
            f"{has}). Fix: none on this machine; run the course on a CPU with AVX (Intel and "
            "AMD since 2011) or on Apple silicon"
        )
    if "No module named 'tensorflow'" in stderr:
        return f"TensorFlow is not installed in {VENV}. Fix: ./course.sh lab"
    last = [line for line in stderr.splitlines() if line.strip()][-1:] or ["no message"]
    return f"TensorFlow does not import: {last[0]}. Fix: rm -rf {VENV} && ./course.sh lab"


def cpu_flags(cpuinfo: str) -> set[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` text (empty where there is none)."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def check_tensorflow() -> Check:
    if not installed(COURSE_LOCK) and not installed(DEV_LOCK):
        return Check("--", "TensorFlow: not installed yet (./course.sh lab installs it)")
    code = "import tensorflow as tf; print(tf.__version__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    cpuinfo = Path("/proc/cpuinfo")
    flags = cpu_flags(cpuinfo.read_text() if cpuinfo.exists() else "")
    problem = tensorflow_problem(result.returncode, result.stderr, flags)
    if problem:
        return Check("PROBLEM", problem)
    return Check("ok", f"TensorFlow {result.stdout.strip()} imports")


def check_widgets(prefix: Path = VENV) -> Check:
    if not installed(COURSE_LOCK) and not installed(DEV_LOCK):
        return Check("--", "ipywidgets' JupyterLab extension: not installed yet")
    if (prefix / WIDGETS_EXTENSION / "package.json").is_file():
        return Check("ok", "ipywidgets' JupyterLab extension is installed")
    return Check(
        "PROBLEM",
        f"ipywidgets' JupyterLab extension is missing from {prefix}: widgets "
        "show as text. Fix: ./course.sh lab (it reinstalls the lock)",
    )


def helpers_location() -> Path | None:
    """Where ``import helpers`` finds its package in the environment, from the notebooks'
    folder (as a kernel does); None if it is not found."""
    code = "import helpers, pathlib; print(pathlib.Path(helpers.__file__).resolve().parent)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT / "notebooks"
    )
    return Path(result.stdout.strip()) if result.returncode == 0 else None


def check_helpers(found: Path | None = None, is_installed: bool | None = None) -> Check:
    """``helpers`` is a common name: another course's package of that name, installed in a
    shared environment or a shared kernel, would be imported instead of this one."""
    done = installed(COURSE_LOCK) if is_installed is None else is_installed
    if not done:
        return Check("--", "helpers: the course's package is not installed yet")
    where = helpers_location() if found is None else found
    ours = ROOT / "helpers"
    if where == ours:
        return Check("ok", f"import helpers finds this course's {ours}")
    return Check(
        "PROBLEM",
        f"import helpers finds {where or 'nothing'}, not this course's {ours}: another "
        f"package named helpers is in {VENV}. Fix: give the course its own environment "
        f"(rm -rf {VENV} && ./course.sh lab), one per course on a shared hub",
    )


def check_chromium(found: str | None = None) -> Check:
    chromium = found or os.environ.get("CHROMIUM") or shutil.which("chromium")
    if chromium and os.access(chromium, os.X_OK):
        return Check("ok", f"Chromium for the browser tests: {chromium}")
    return Check(
        "PROBLEM",
        "Chromium for the browser tests: not found (./course.sh test skips "
        "them without it). Fix: sudo apt-get install -y chromium",
    )


def check_disk(free_bytes: int | None = None, is_installed: bool | None = None) -> Check:
    free = shutil.disk_usage(VENV).free if free_bytes is None else free_bytes
    done = installed(COURSE_LOCK) if is_installed is None else is_installed
    gb = free / 2**30
    if done:
        return Check("ok", f"disk: {gb:.1f} GB free where {VENV} is installed (about 3 GB)")
    if gb >= NEED_GB:
        return Check("ok", f"disk: {gb:.1f} GB free where {VENV} will be installed")
    return Check(
        "PROBLEM",
        f"disk: {gb:.1f} GB free where {VENV} would be installed; it needs "
        f"about {NEED_GB} GB. Fix: VENV=/path/on/a/disk/with/space/.venv "
        "./course.sh lab",
    )


def check_workspace(root: Path = ROOT) -> Check:
    """Where the learner's work lives (``scripts/workspace.py`` makes and keeps it)."""
    folder = root / "workspace"
    if not (folder / ".course.json").is_file():
        return Check("--", f"your work: none yet; ./course.sh lab makes {folder} (git ignores it)")
    mine = len([p for p in folder.glob("[0-9][0-9]_*.ipynb") if ".updated" not in p.name])
    return Check("ok", f"your work lives in {folder}: {mine} notebooks (git ignores it)")


def report(checks: Sequence[Callable[[], Check]], quiet: bool = False) -> bool:
    """Run the checks, print their lines (only problems when quiet); True if none failed."""
    ok = True
    for make in checks:
        check = make()
        ok &= check.state != "PROBLEM"
        if not quiet or check.state == "PROBLEM":
            print(check, flush=True)
    return ok


# --------------------------------------------------------------------------- setup and tasks


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True)


def setup(lock: Path) -> None:
    """Install ``lock`` (hashes required) and the course's own package, once per change."""
    if not report([lambda: check_disk(is_installed=installed(lock))], quiet=True):
        sys.exit(1)
    if not installed(lock):
        try:
            pip("install", "--quiet", "--require-hashes", "--no-deps", "-r", str(lock))
            pip("install", "--quiet", "--no-deps", "--no-build-isolation", "-e", str(ROOT))
        except subprocess.CalledProcessError:
            sys.exit(
                "pip could not install the locked packages (its message is above). 'No "
                "matching distribution found for tensorflow' means TensorFlow 2.21 has no "
                f"wheel for {platform.system()} {platform.machine()}: it has Linux x86-64 "
                "and ARM64 (glibc 2.27+) and Apple-silicon ones."
            )
        (VENV / f".installed-{lock.name}").write_text(_fingerprint(lock))
    if not report([check_tensorflow, check_widgets], quiet=True):
        sys.exit("Stopped: fix the problem above first (./course.sh doctor shows every check).")


def run(*command: str | Path, env: dict[str, str] | None = None, stdin: str | None = None) -> int:
    """Run a command from the environment (its bin/ first on PATH); its exit status."""
    environment = {**os.environ, **(env or {})}
    environment["PATH"] = f"{VENV / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
    command = [str(part) for part in command]
    return subprocess.run(command, cwd=ROOT, env=environment, input=stdin, text=True).returncode


def lab_command(
    root_dir: Path, start: str | Path, args: Sequence[str], as_root: bool | None = None
) -> list[str | Path]:
    """``jupyter lab`` serving ``root_dir`` and opening ``start``, then ``args``. As root (a
    container's usual user) it adds ``--allow-root``: JupyterLab refuses to start without it."""
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    allow_root = ["--allow-root"] if as_root and "--allow-root" not in args else []
    return ["jupyter", "lab", f"--ServerApp.root_dir={root_dir}", start, *allow_root, *args]


def lint(bin_dir: Path = VENV / "bin") -> int:
    """Every lint, with the programs of ``bin_dir``, all of them even when one fails; non-zero
    if any failed."""
    failed = [
        " ".join(command) for command in LINTS if run(bin_dir / command[0], *command[1:]) != 0
    ]
    for command in failed:
        print(f"== lint FAILED: {command}")
    return 1 if failed else 0


def test(args: Sequence[str]) -> int:
    setup(DEV_LOCK)
    report([check_chromium])  # a note: without it the browser tests skip (CI=true fails them)
    linted = lint()
    tested = run(sys.executable, "-m", "pytest", *WORKERS, *NBVAL, "--durations=15", *args)
    return linted or tested


def lint_setup(venv: Path = LINT_VENV) -> Path:
    """The lint environment (made and given the lint lock, hashes required, once per change):
    its bin folder. No TensorFlow: the lints read the code, they do not import it."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    stamp = venv / f".installed-{LINT_LOCK.name}"
    if not stamp.is_file() or stamp.read_text() != _fingerprint(LINT_LOCK):
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "install",
             "--quiet", "--require-hashes", "--no-deps", "-r", str(LINT_LOCK)],
            check=True,
        )  # fmt: skip
        stamp.write_text(_fingerprint(LINT_LOCK))
    return venv / "bin"


def avx512_features() -> str:
    """The AVX-512 groups this numpy dispatches and this CPU has (numpy refuses to disable a
    baseline feature and ignores names it does not dispatch)."""
    code = (
        "from numpy._core._multiarray_umath import __cpu_dispatch__ as dispatch, "
        "__cpu_features__ as features\n"
        "wanted = ['X86_V4', 'AVX512_ICL', 'AVX512_SPR']\n"
        "print(' '.join(f for f in wanted if f in dispatch and features.get(f)))"
    )
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()


def portability_passes(machine: str = platform.machine()) -> list[tuple[str, dict[str, str]]]:
    """The three passes: an older x86-64 CPU (AVX2, no AVX-512; x86-64 only), one thread,
    eight threads (as on a learner's 8-core laptop: TensorFlow splits work by thread count).
    The thread passes set GRADIENT_CLINIC_THREADS, which ``import helpers`` hands to
    TensorFlow (``helpers.course.threads``; not capped), and TensorFlow's own variables."""

    def threads(n: int) -> dict[str, str]:
        names = (
            "GRADIENT_CLINIC_THREADS",
            "TF_NUM_INTRAOP_THREADS",
            "TF_NUM_INTEROP_THREADS",
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
        )
        return {name: str(n) for name in names}

    passes = []
    if machine == "x86_64":
        passes.append(
            (
                "an older x86-64 CPU (AVX2, no AVX-512)",
                {
                    "NPY_DISABLE_CPU_FEATURES": avx512_features(),
                    "OPENBLAS_CORETYPE": "Haswell",
                    "ONEDNN_MAX_CPU_ISA": "AVX2",
                },
            )
        )
    passes += [("one thread", threads(1)), ("eight threads", threads(8))]
    return passes


def portability(args: Sequence[str]) -> int:
    setup(DEV_LOCK)
    paths = [] if any(a.endswith(".ipynb") for a in args) else ["notebooks"]
    results = []
    for number, (name, env) in enumerate(portability_passes(), 1):
        settings = " ".join(f"{k}={v!r}" for k, v in env.items())
        print(f"== portability {number}: {name}: {settings}", flush=True)
        status = run(sys.executable, "-m", "pytest", *WORKERS, *NBVAL, *paths, *args, env=env)
        results.append(f"{name} {'passed' if status == 0 else f'FAILED ({status})'}")
    print("== portability: " + "; ".join(results))
    return 0 if all(r.endswith("passed") for r in results) else 1


def lock() -> int:
    """The five locks with uv, hashes included, for Python 3.11 to 3.13 on every platform
    (``--universal``). uv keeps the versions a lock already has where they still fit; the
    instructor lock keeps the course lock's versions (``-c``), the hub lock both, the dev lock
    the three others', the lint lock (the ``lint`` extra alone) the dev lock's. The stored
    outputs are made with the course lock."""
    import tomllib

    compile_ = [
        "uv",
        "pip",
        "compile",
        "--quiet",
        "--universal",
        "--generate-hashes",
        "--python-version",
        "3.11.7",
        "pyproject.toml",
        "-",
    ]  # "-": the pip pin
    for output, extra in (
        (COURSE_LOCK, []),
        (INSTRUCTOR_LOCK, ["--extra", "instructor", "-c", COURSE_LOCK.name]),
        (HUB_LOCK, ["--extra", "hub", "-c", COURSE_LOCK.name, "-c", INSTRUCTOR_LOCK.name]),
        (
            DEV_LOCK,
            ["--extra", "dev", *("-c", COURSE_LOCK.name, "-c", INSTRUCTOR_LOCK.name)]
            + ["-c", HUB_LOCK.name],
        ),
    ):
        if status := run(*compile_, *extra, "-o", output.name, stdin=PIP):
            return status
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lints = "\n".join([*project["optional-dependencies"]["lint"], PIP])
    linted = [c for c in compile_ if c != "pyproject.toml"]
    return run(*linted, "-c", DEV_LOCK.name, "-o", LINT_LOCK.name, stdin=lints)


# nbgrader's parts a student does not use on a hub, turned off in the hub environment: the
# instructor's tools (the formgrader, "Create Assignment", the course list) and "Validate".
# Its Assignments tab stays (students fetch and submit through the exchange), and so does its
# "Nbgrader" menu: the only way to open that tab, it lists only the commands still there.
AUTHORING_PLUGINS = (
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:validate-assignment",
)
# JupyterLab's question about Jupyter news, which it puts to every new user at load: on a hub,
# to every student at once. Turned off (not locked) in the hub environment.
NEWS_PLUGIN = "@jupyterlab/apputils-extension:announcements"
AUTHORING_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.course_list",
    "nbgrader.server_extensions.validate_assignment",
)


# Every student server started from the hub environment reads this: a kernel idle for an hour
# is shut down even while its notebook's tab is open (cull_connected; without it, an open tab
# keeps a kernel's memory, about 750 MiB after 06, for the whole day).
KERNEL_CULLING = {
    "MappingKernelManager": {
        "cull_idle_timeout": 3600,
        "cull_interval": 300,
        "cull_connected": True,
    }
}
# The students' side of nbgrader's exchange: the course and the exchange folder of the
# instructor's nbgrader_config.py (scripts/nbgrader_course.py COURSE_ID and EXCHANGE_ROOT).
NBGRADER_COURSE_ID = "gradient-clinic"
NBGRADER_EXCHANGE = "/srv/nbgrader/exchange"
STUDENTS_NBGRADER_CONFIG = VENV / "etc" / "jupyter" / "nbgrader_config.py"
KERNEL_CULLING_FILE = VENV / "etc" / "jupyter" / "jupyter_server_config.d" / "gradient-clinic.json"
LAB_PAGE_CONFIG = VENV / "etc" / "jupyter" / "labconfig" / "page_config.json"


def students_nbgrader_config() -> str:
    """The students' nbgrader settings in the hub environment: the course and the exchange."""
    return (
        "# The students' nbgrader settings on the hub (./course.sh hub writes this file): the\n"
        "# course and the exchange of scripts/nbgrader_course.py's nbgrader_config.py.\n"
        f"c.CourseDirectory.course_id = {NBGRADER_COURSE_ID!r}\n"
        f"c.Exchange.root = {NBGRADER_EXCHANGE!r}\n"
    )


def turned_off_plugins(page_config: Path) -> set[str]:
    """nbgrader's lab plugins an environment's ``page_config.json`` turns off."""
    if not page_config.is_file():
        return set()
    disabled = json.loads(page_config.read_text(encoding="utf-8")).get("disabledExtensions", {})
    return {name for name, off in disabled.items() if off and name.startswith("@jupyter/nbgrader:")}


def hub() -> int:
    """The students' environment on a JupyterHub (INSTRUCTORS.md, the hub recipe): the hub lock
    (the course, JupyterHub's single-user server, nbgitpuller, nbgrader for the exchange)
    installed into this environment, and nbgrader's authoring tools turned off in it."""
    setup(HUB_LOCK)
    for plugin in turned_off_plugins(LAB_PAGE_CONFIG) - set(AUTHORING_PLUGINS):
        for action in ("unlock", "enable"):  # an earlier version turned it off
            if status := run("jupyter", "labextension", action, "--level=sys_prefix", plugin):
                return status
    for plugin in AUTHORING_PLUGINS:  # locked too: a student cannot turn it back on
        for action in ("disable", "lock"):
            if status := run("jupyter", "labextension", action, "--level=sys_prefix", plugin):
                return status
    if status := run("jupyter", "labextension", "disable", "--level=sys_prefix", NEWS_PLUGIN):
        return status
    for extension in AUTHORING_SERVER_EXTENSIONS:
        if status := run("jupyter", "server", "extension", "disable", "--sys-prefix", extension):
            return status
    KERNEL_CULLING_FILE.parent.mkdir(parents=True, exist_ok=True)
    KERNEL_CULLING_FILE.write_text(json.dumps(KERNEL_CULLING, indent=2) + "\n")
    STUDENTS_NBGRADER_CONFIG.write_text(students_nbgrader_config())
    print(f"The students' hub environment is ready: {VENV} (its server: jupyterhub-singleuser).")
    return 0


def nbdime_settings(bin_dir: Path = VENV / "bin") -> list[tuple[str, str]]:
    """The git settings that make ``git diff`` and ``git merge`` read a notebook as cells with
    nbdime's drivers (the same as ``nbdime config-git --enable``, with the drivers' full
    paths: git runs them outside the environment). ``.gitattributes`` names the driver."""
    return [
        ("diff.jupyternotebook.command", f"{bin_dir / 'git-nbdiffdriver'} diff"),
        ("merge.jupyternotebook.driver", f"{bin_dir / 'git-nbmergedriver'} merge %O %A %B %L %P"),
        ("merge.jupyternotebook.name", "jupyter notebook merge driver"),
    ]


def contributor(repository: Path = ROOT) -> int:
    """Set nbdime's git drivers in this clone's git configuration (not the global one)."""
    for key, value in nbdime_settings():
        if status := run("git", "-C", repository, "config", "--local", key, value):
            return status
    print("git diff and git merge now read notebooks as cells (nbdime); git diff --no-ext-diff")
    print("shows the JSON.")
    return 0


def main(argv: Sequence[str]) -> int:
    # librosa compiles its numba functions on first use (about 12 s a process) and caches
    # them: keep the cache with the environment it was compiled for, always writable.
    os.environ.setdefault("NUMBA_CACHE_DIR", str(VENV / "numba-cache"))
    command, args = (argv[0], list(argv[1:])) if argv else ("", [])
    if command == "doctor":
        return (
            0
            if report(
                [
                    check_python,
                    check_tensorflow,
                    check_widgets,
                    check_helpers,
                    check_chromium,
                    check_disk,
                    check_workspace,
                ]
            )
            else 1
        )
    if command == "lab":
        setup(COURSE_LOCK)
        os.environ.pop("MPLBACKEND", None)  # the kernels inherit it: Agg shows no figures
        if "--stored" in args:  # the course's notebooks, every output stored: for reading
            args.remove("--stored")
            return run(*lab_command(ROOT, "notebooks/00_start_here.ipynb", args))
        if status := run(sys.executable, "-m", "scripts.workspace", "sync"):
            return status
        workspace = ROOT / "workspace"
        return run(*lab_command(workspace, workspace / "00_start_here.ipynb", args))
    if command == "reset":
        setup(COURSE_LOCK)
        return run(sys.executable, "-m", "scripts.workspace", "reset", *args)
    if command == "test":
        return test(args)
    if command == "portability":
        return portability(args)
    if command == "regenerate":  # nbclient and nbconvert are in the course lock
        setup(COURSE_LOCK)
        return run(sys.executable, "-m", "scripts.regenerate_outputs", *args)
    if command == "student":
        setup(COURSE_LOCK)
        return run(sys.executable, "-m", "scripts.make_student_edition", *args)
    if command == "nbgrader":  # writing needs nbformat only; grading needs nbgrader itself
        setup(INSTRUCTOR_LOCK)
        return run(sys.executable, "-m", "scripts.nbgrader_course", *args)
    if command == "hub":
        return hub()
    if command == "contributor":
        setup(DEV_LOCK)
        return contributor()
    if command == "lint":
        return lint(lint_setup())
    if command == "site":
        setup(DEV_LOCK)
        return run(sys.executable, "-m", "scripts.build_site")
    if command == "lock":
        return lock()
    print(__doc__.split("\n\n")[1])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
