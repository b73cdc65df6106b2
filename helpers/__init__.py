"""Gradient Clinic helpers: the plumbing the notebooks share.

Importing this package keeps TensorFlow's start-up log lines out of notebooks and tests:

* it sets ``TF_CPP_MIN_LOG_LEVEL=3`` and ``TF_ENABLE_ONEDNN_OPTS=0`` (values already in the
  environment are kept). Both are needed (``probes/probe_tf_log_noise.sh``); the second
  also makes CPU results reproducible across machines;
* it imports TensorFlow once with the process's stderr captured, and writes back every line
  except two known, harmless ones. On a machine that has the CUDA toolkit but no GPU driver,
  TensorFlow 2.21 logs ``cudart_stub.cc ... Could not find cuda drivers`` through absl
  before any log level applies (``probes/probe_tf_log_noise.sh`` measures this).

Import ``helpers`` (or any ``helpers.*`` module) before ``tensorflow``.
"""

import os as _os
import re as _re
import sys as _sys
import tempfile as _tempfile

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

__version__ = "0.1.0"

_HARMLESS_STARTUP_LINES = _re.compile(
    r"All log messages before absl::InitializeLog\(\) is called|"
    r"cudart_stub\.cc:\d+\] Could not find cuda drivers"
)


def _import_tensorflow_quietly() -> None:
    if "tensorflow" in _sys.modules:
        return
    _sys.stderr.flush()
    try:
        saved_fd = _os.dup(2)
    except OSError:  # no usable file descriptor 2 (rare embedded interpreters)
        import tensorflow  # noqa: F401

        return
    with _tempfile.TemporaryFile() as captured:
        _os.dup2(captured.fileno(), 2)
        try:
            import tensorflow  # noqa: F401
        finally:
            _os.dup2(saved_fd, 2)
            _os.close(saved_fd)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
            kept = [line for line in text.splitlines() if not _HARMLESS_STARTUP_LINES.search(line)]
            if kept:
                _sys.stderr.write("\n".join(kept) + "\n")


_import_tensorflow_quietly()
