"""Gradient Clinic helpers: the library the notebooks share, one subpackage per concept.

From the bottom layer up (``pyproject.toml`` holds the layers as import contracts):

* ``course``: plumbing every notebook uses: printing numbers, HTML tables, short
  tracebacks, reproducibility, argument checks. Imports no TensorFlow.
* ``audio``: sound in and out: I/O, the STFT, synthesis, noise, per-frame labels, the course
  clips and the classical baselines.
* ``diagnosis``: where gradients are ``None``, zero or NaN: the gradient report, why a
  gradient is ``None``, the pictures, and the locator (``GradientProbe``).
* ``recurrence``: the GRU question's track: threading state through a step model (``unroll``).
* ``voicing``: the voicing-loss question's track: its per-frame loss and the masked fix.
* ``models``: the denoisers the lessons train, how they run on audio, and one training step.
* ``capstone`` and ``lab``: notebook 06's denoiser and its gradient lab.
* ``exercises``: the checkers of every notebook's exercises.

``import helpers`` imports no TensorFlow and never raises on a setting. It sets
``TF_CPP_MIN_LOG_LEVEL=2`` (TensorFlow's info and warning lines hidden, its errors shown: a
course on debugging keeps them) and ``TF_ENABLE_ONEDNN_OPTS=0`` (values already set are
kept), and every subpackage that uses TensorFlow imports it first with
``helpers.course.quiet_tensorflow.import_tensorflow``, so its start-up log stays out of
notebooks and tests. Import a ``helpers`` subpackage before
``tensorflow``: TensorFlow reads ``TF_ENABLE_ONEDNN_OPTS`` when it loads, and
``make_deterministic`` warns when it was loaded first with oneDNN on.

It also sets ``TF_NUM_INTRAOP_THREADS`` and ``TF_NUM_INTEROP_THREADS`` (values already set are
kept) to the CPUs the kernel is given: ``GRADIENT_CLINIC_THREADS`` if a hub sets it, else the
container's CPU quota, else the cores, at most 4 (``helpers.course.threads``). TensorFlow reads
them when it runs its first operation. A malformed ``GRADIENT_CLINIC_THREADS`` gets a warning
and the count from the CPUs.
"""

import importlib.metadata as _metadata
import os as _os
import sys as _sys

# TensorFlow was loaded before this package could turn oneDNN off (make_deterministic warns).
# oneDNN is on by default in TensorFlow's Linux wheels; its macOS wheels are built without it.
ONEDNN_ON_BEFORE_HELPERS = (
    "tensorflow" in _sys.modules
    and _sys.platform != "darwin"
    and _os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").strip().lower() not in ("0", "false")
)

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

# After the names above: helpers.course imports this package back.
from helpers.course.threads import apply_thread_count as _apply_thread_count  # noqa: E402

_apply_thread_count()

# The version is pyproject.toml's, read from the installed package's metadata (one place).
try:
    __version__ = _metadata.version("gradient-clinic")
except _metadata.PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "unknown"
