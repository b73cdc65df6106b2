"""Which frames of its input a voicing loss reaches (notebook 04's first step). Where the
path breaks, for any model, is ``helpers.probe``'s question.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from helpers.dataset import Clip
from helpers.denoiser import enhance
from helpers.voicing_loss import (
    LossFn,
    cond_loop_loss_on_magnitudes,
    cond_loop_voicing_loss,
    magnitudes,
    masked_loss_on_magnitudes,
    masked_voicing_loss,
)


def frames_reached(model: keras.Model, example: Clip, loss_fn: LossFn = None,
                   **loss_kwargs) -> np.ndarray:
    """Per frame: does the loss depend on that frame of the estimate's STFT magnitude?
    (True where the gradient with respect to the frame is non-zero.) All False when the
    gradient is None."""
    core = _core_of(loss_fn)
    estimate = enhance(model, example.audio)
    ref_mag, est_mag = magnitudes(example.clean, estimate)
    with tf.GradientTape() as tape:
        tape.watch(est_mag)
        loss = core(ref_mag, est_mag, example.labels, **loss_kwargs)
    grad = tape.gradient(loss, est_mag)
    if grad is None:
        return np.zeros(example.num_frames, dtype=bool)
    return tf.reduce_any(tf.not_equal(grad, 0.0), axis=-1).numpy()


def _core_of(loss_fn: LossFn | None) -> LossFn:
    """The ``*_on_magnitudes`` core of a voicing loss (the question's loss when None)."""
    cores = {cond_loop_voicing_loss: cond_loop_loss_on_magnitudes,
             masked_voicing_loss: masked_loss_on_magnitudes}
    core = cores.get(loss_fn or cond_loop_voicing_loss)
    if core is None:
        raise ValueError("frames_reached knows cond_loop_voicing_loss and "
                         f"masked_voicing_loss; got {getattr(loss_fn, '__name__', loss_fn)!r}.")
    return core
