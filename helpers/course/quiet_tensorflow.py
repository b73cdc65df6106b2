"""``import_tensorflow()``: TensorFlow, imported once with its start-up log filtered.

Every subpackage of ``helpers`` that uses TensorFlow calls it before importing anything else,
so the start-up log stays out of notebooks and tests:

* ``TF_CPP_MIN_LOG_LEVEL=2`` and ``TF_ENABLE_ONEDNN_OPTS=0`` (``import helpers`` sets both;
  values already in the environment are kept). Both are needed
  (``probes/probe_tf_log_noise.sh``); the second also makes CPU results more reproducible.
  Level 2 hides info and warning lines and leaves TensorFlow's errors visible;
* TensorFlow is imported once, and its devices listed, with the process's stderr captured,
  and every line is written back except three known, harmless ones: on a machine with the
  CUDA toolkit but no GPU driver, TensorFlow logs ``cudart_stub.cc ... Could not find cuda
  drivers`` through absl before any log level applies, and ``failed call to cuInit`` when it
  first looks for a GPU;
* in a Jupyter kernel, TensorFlow's later log lines pass through a filter
  (``StderrFilter``) that drops the one known harmless error line (``model.predict`` on TF
  2.21 logs ``NodeDef mentions attribute use_unbounded_threadpool``) and keeps every other
  line: a course on debugging shows TensorFlow's real errors.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from types import ModuleType

import helpers  # noqa: F401  (sets the two environment variables)

_HARMLESS_STARTUP_LINES = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called|"
    r"cudart_stub\.cc:\d+\] Could not find cuda drivers|"
    r"cuda_platform\.cc:\d+\] failed call to cuInit"
)
# An error TensorFlow 2.21 logs for Keras' own tf.data graphs (model.predict, model.fit), about
# an attribute its op definitions do not know and ignore.
_HARMLESS_LINES = re.compile(
    r"node_def_util\.cc:\d+\] NodeDef mentions attribute use_unbounded_threadpool"
)


class StderrFilter:
    """File descriptor 2 through a pipe that drops the lines ``harmless`` matches and passes
    every other line on, in order, to where fd 2 went before. ``close`` restores fd 2 and
    waits until everything written is passed on. (A Jupyter kernel already sends fd 2 through
    such a pipe to the notebook, so its lines arrive there as before.)"""

    def __init__(self, harmless: re.Pattern[str] = _HARMLESS_LINES) -> None:
        self._harmless = harmless
        sys.stderr.flush()
        self._original = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self._thread = threading.Thread(target=self._pump, args=(read_end,), daemon=True)
        self._thread.start()

    def _pump(self, read_end: int) -> None:
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                *lines, pending = (pending + chunk).split(b"\n")
                kept = [line + b"\n" for line in lines if not self._harmless.search(line.decode(
                    "utf-8", errors="replace"))]  # fmt: skip
                if kept:
                    os.write(self._original, b"".join(kept))
        if pending and not self._harmless.search(pending.decode("utf-8", errors="replace")):
            os.write(self._original, pending)

    def close(self) -> None:
        sys.stderr.flush()
        os.dup2(self._original, 2)  # the pipe's last write end closes: the pump finishes
        self._thread.join()
        os.close(self._original)


_KERNEL_FILTER: list[StderrFilter] = []


def _filter_in_a_kernel() -> None:
    """Install the filter once, in a Jupyter kernel only: a plain process keeps fd 2 as it is,
    so nothing it writes last can be lost at exit."""
    if not _KERNEL_FILTER and "ipykernel" in sys.modules:
        try:
            _KERNEL_FILTER.append(StderrFilter())
        except OSError:  # no usable file descriptor 2
            pass


def import_tensorflow() -> ModuleType:
    """TensorFlow, imported (once) and its devices listed with its stderr captured and written
    back without the harmless start-up lines; later calls return the imported module."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    sys.stderr.flush()
    try:
        saved_fd = os.dup(2)
    except OSError:  # no usable file descriptor 2 (rare embedded interpreters)
        import tensorflow

        return tensorflow
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow

            tensorflow.config.list_physical_devices()  # where it looks for a GPU, and logs
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
            kept = [line for line in text.splitlines() if not _HARMLESS_STARTUP_LINES.search(line)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
    _filter_in_a_kernel()
    return tensorflow
