"""How far back from a voicing loss the gradient reaches, checkpoint by checkpoint and frame by
frame (notebook 04's first step). The general tool for any model is ``helpers.probe``.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from helpers.dataset import Example
from helpers.denoiser import enhance
from helpers.gradients import gradient_report
from helpers.voicing_loss import (
    LossFn,
    check_loss_inputs,
    cond_loop_loss_on_magnitudes,
    cond_loop_voicing_loss,
    magnitudes,
    masked_loss_on_magnitudes,
    masked_voicing_loss,
)


class _Checkpoint:
    """A named place in the forward pass, for a gradient report row."""

    def __init__(self, name: str, shape: tuple[int, ...]):
        self.name = name
        self.shape = shape


def locate_break(model: keras.Model, example: Example, loss_fn: LossFn = None,
                 **loss_kwargs):
    """How far back from the loss the gradient reaches, as a gradient report.

    Rows: each model variable, then the model output (``estimate``), then the estimate's STFT
    magnitudes, then one row per kind of frame term the loss can reach. A row is ``none`` when
    the loss does not depend on it at all. Reading from the bottom up, the first ``none`` row
    is where the path breaks. ``loss_fn`` is ``cond_loop_voicing_loss`` (default) or
    ``masked_voicing_loss``.
    """
    core = _core_of(loss_fn)
    check_loss_inputs(example.reference, example.noisy, example.labels)
    variables = list(model.trainable_variables)
    with tf.GradientTape() as tape:
        estimate = enhance(model, example.noisy)
        ref_mag, est_mag = magnitudes(example.reference, estimate)
        tape.watch(est_mag)
        loss = core(ref_mag, est_mag, example.labels, **loss_kwargs)
    grads = tape.gradient(loss, [*variables, estimate, est_mag])
    checkpoints = [*variables,
                   _Checkpoint("estimate (model output)", tuple(estimate.shape)),
                   _Checkpoint("|STFT| of estimate", tuple(est_mag.shape))]
    return gradient_report(grads, checkpoints)


def frames_reached(model: keras.Model, example: Example, loss_fn: LossFn = None,
                   **loss_kwargs) -> np.ndarray:
    """Per frame: does the loss depend on that frame of the estimate's STFT magnitude?
    (True where the gradient with respect to the frame is non-zero.) All False when the
    gradient is None."""
    core = _core_of(loss_fn)
    estimate = enhance(model, example.noisy)
    ref_mag, est_mag = magnitudes(example.reference, estimate)
    with tf.GradientTape() as tape:
        tape.watch(est_mag)
        loss = core(ref_mag, est_mag, example.labels, **loss_kwargs)
    grad = tape.gradient(loss, est_mag)
    if grad is None:
        return np.zeros(example.num_frames, dtype=bool)
    return tf.reduce_any(tf.not_equal(grad, 0.0), axis=-1).numpy()


def _core_of(loss_fn: LossFn | None) -> LossFn:
    """The ``*_on_magnitudes`` core of a voicing loss (the seed's loss when None)."""
    cores = {cond_loop_voicing_loss: cond_loop_loss_on_magnitudes,
             masked_voicing_loss: masked_loss_on_magnitudes}
    core = cores.get(loss_fn or cond_loop_voicing_loss)
    if core is None:
        raise ValueError("locate_break and frames_reached know cond_loop_voicing_loss and "
                         f"masked_voicing_loss; got {getattr(loss_fn, '__name__', loss_fn)!r}.")
    return core
