"""One call that makes a notebook or test repeatable: seeds, op determinism, quiet logs."""

from __future__ import annotations

import logging
import warnings

import keras
import numpy as np
import tensorflow as tf

DEFAULT_SEED = 0


def make_deterministic(seed: int = DEFAULT_SEED, *, quiet: bool = True) -> None:
    """Seed Python, NumPy, TensorFlow and Keras, and turn on TensorFlow's op determinism.

    Call it again to restart a random sequence from the same point. With ``quiet`` the
    Python-side TensorFlow logger only reports errors (the C++ side is handled by
    ``import helpers``).
    """
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
    import librosa

    return f"TensorFlow {tf.__version__}, Keras {keras.__version__}, librosa {librosa.__version__}"
