"""One call that makes a notebook or test repeatable: seeds, op determinism, quiet logs."""

from __future__ import annotations

import logging
import warnings

import numpy as np

import helpers
from helpers.course.quiet_tensorflow import import_tensorflow

DEFAULT_SEED = 0
ONEDNN_WARNING = (
    "TensorFlow was imported before helpers, with oneDNN on, so results can differ from the "
    "stored outputs in their last digits; to match them, restart the kernel and run the "
    "first cell (which imports helpers) before importing tensorflow or keras."
)


class ImportOrderWarning(UserWarning):
    """TensorFlow was imported before ``helpers`` turned oneDNN off."""


def onednn_warning() -> str | None:
    """``ONEDNN_WARNING`` if TensorFlow was loaded before ``import helpers`` with oneDNN on."""
    return ONEDNN_WARNING if helpers.ONEDNN_ON_BEFORE_HELPERS else None


def make_deterministic(seed: int = DEFAULT_SEED, *, quiet: bool = True) -> None:
    """Seed Python, NumPy, TensorFlow and Keras, and turn on TensorFlow's op determinism.

    Call it again to restart a random sequence from the same point. With ``quiet`` the
    Python-side TensorFlow logger only reports errors (the C++ side is handled by
    ``helpers.course.quiet_tensorflow``). Warns (``ImportOrderWarning``, one sentence) when
    TensorFlow was imported before ``helpers`` with oneDNN on.
    """
    if message := onednn_warning():
        warnings.warn(message, ImportOrderWarning, stacklevel=2)
    tf = import_tensorflow()
    import keras  # after TensorFlow: keras imports it

    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()
    np.set_printoptions(precision=4, suppress=True)
    if quiet:
        tf.get_logger().setLevel(logging.ERROR)
        logging.getLogger("absl").setLevel(logging.ERROR)
        # tf.function retracing hints name the call site; they are noise in a lesson.
        warnings.filterwarnings("ignore", message=".*retracing.*")


def versions() -> str:
    """The versions the stored outputs were made with, as one line."""
    tf = import_tensorflow()
    import keras
    import librosa

    return f"TensorFlow {tf.__version__}, Keras {keras.__version__}, librosa {librosa.__version__}"
