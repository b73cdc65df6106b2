"""Settings every test run needs, for unit tests and for the kernels nbval starts.

Kernels inherit this process's environment, so TensorFlow's start-up noise is silenced there
too. ``MPLBACKEND`` is removed because a kernel with ``MPLBACKEND=Agg`` stores no figures.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # as `import helpers` sets it
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.pop("MPLBACKEND", None)

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
