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
  first looks for a GPU.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from types import ModuleType

import helpers  # noqa: F401  (sets the two environment variables)

_HARMLESS_STARTUP_LINES = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called|"
    r"cudart_stub\.cc:\d+\] Could not find cuda drivers|"
    r"cuda_platform\.cc:\d+\] failed call to cuInit"
)


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
    return tensorflow
