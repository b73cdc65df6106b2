"""Settings every test run needs, for unit tests and for the kernels nbval starts.

Kernels inherit this process's environment, so TensorFlow's start-up noise is silenced there
too. ``MPLBACKEND`` is removed because a kernel with ``MPLBACKEND=Agg`` stores no figures.

Kernels start from this run's own IPython directory (``IPYTHONDIR``): a learner's
``~/.ipython`` start-up files cannot change a stored output, and the start-up file written
there (``KERNEL_STARTUP``) gives the kernels the garbage-collector setting below.

The garbage collector: importing TensorFlow creates about a million Python objects, and with
Python's default thresholds the collector scans them again and again while the test processes
import and run, and once more as each exits. A test process lives for a minute, so it scans
less often (``gc.set_threshold``) and leaves what it imported out of later scans
(``gc.freeze``). Results do not change; the CPU seconds of ``./course.sh test`` drop by about
a tenth (CONTRIBUTING.md, "Running the tests").
"""

import atexit
import gc
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.pop("MPLBACKEND", None)

GC_THRESHOLD = (10_000, 10, 10)
gc.set_threshold(*GC_THRESHOLD)
atexit.register(gc.freeze)
# The same in every kernel the run starts (nbval's, the student edition's, the browser tests'):
# an IPython start-up file, which runs in the notebook's namespace, so it leaves no name there.
KERNEL_STARTUP = f"""\
import atexit, gc
gc.set_threshold(*{GC_THRESHOLD!r})
atexit.register(gc.freeze)  # at exit, skip the last scan of every object still alive
del atexit, gc
"""

# One IPython directory for the run: made by the first process (pytest-xdist's workers
# inherit it), removed when that process ends. A learner's kernels never see it.
_inherited = os.environ.get("GRADIENT_CLINIC_TEST_IPYTHONDIR")
if _inherited is None or _inherited != os.environ.get("IPYTHONDIR"):
    _ipython_dir = Path(tempfile.mkdtemp(prefix="clinic-ipython-"))
    _startup = _ipython_dir / "profile_default" / "startup"
    _startup.mkdir(parents=True)
    (_startup / "00-kernel_startup.py").write_text(KERNEL_STARTUP)
    os.environ["IPYTHONDIR"] = os.environ["GRADIENT_CLINIC_TEST_IPYTHONDIR"] = str(_ipython_dir)
    atexit.register(shutil.rmtree, _ipython_dir, ignore_errors=True)


def pytest_collection_finish(session):
    """Everything imported by now lives until the process ends: out of later scans."""
    gc.collect()
    gc.freeze()


_notebook_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Add up each notebook's cell times (setup starts its kernel, so include every phase).

    Under pytest-xdist this runs in each worker and again in the main process, once for every
    report a worker sends; only the main process prints the summary, so nothing is counted
    twice."""
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] = _notebook_seconds.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if _notebook_seconds:
        terminalreporter.section("seconds per notebook (kernel start + every cell)")
        for path, seconds in sorted(_notebook_seconds.items()):
            terminalreporter.write_line(f"{seconds:6.1f} s  {path}")
