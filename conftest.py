"""Settings every test run needs, for unit tests and for the kernels nbval starts.

Kernels inherit this process's environment, so TensorFlow's start-up noise is silenced there
too. ``MPLBACKEND`` is removed because a kernel with ``MPLBACKEND=Agg`` stores no figures.

Strict nbval here runs every cell as a learner's JupyterLab may: before each cell the kernel
answers a ``kernel_info`` and a ``comm_info`` request, which a page sends when it reconnects
(a reload, a laptop waking). Each moves the kernel's global Python ``random`` state, from which
Keras draws an unseeded initializer's seed, so a stored output that depends on how many
messages the kernel received fails here.
"""

import os

from nbval.kernel import RunningKernel

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # as `import helpers` sets it
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.pop("MPLBACKEND", None)

RECONNECT_REPLY_TIMEOUT = 60  # seconds; the kernel answers between cells in milliseconds
_execute_cell_input = RunningKernel.execute_cell_input


def _reconnect_then_execute(kernel: RunningKernel, cell_input, allow_stdin=None):
    """nbval's own execution of a cell, after the requests of a page that reconnects."""
    for request in (kernel.kc.kernel_info, kernel.kc.comm_info):
        kernel.await_reply(request(), timeout=RECONNECT_REPLY_TIMEOUT)
    return _execute_cell_input(kernel, cell_input, allow_stdin)


RunningKernel.execute_cell_input = _reconnect_then_execute

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
