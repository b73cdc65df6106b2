"""The voicing-loss question's track: the question's per-frame ``tf.cond`` loss
(``cond_loop_voicing_loss``) and the masked, vectorised fix (``masked_voicing_loss``).
"""

from helpers.course.quiet_tensorflow import import_tensorflow

import_tensorflow()  # first, so TensorFlow's start-up log stays out

from helpers.voicing.loss import (
    EPSILON,
    LossFn,
    as_tf_function,
    cond_loop_loss_on_magnitudes,
    cond_loop_voicing_loss,
    formant_errors,
    harmonic_errors,
    magnitudes,
    masked_loss_on_magnitudes,
    masked_voicing_loss,
    voicing_masks,
)

__all__ = [
    "EPSILON",
    "LossFn",
    "as_tf_function",
    "cond_loop_loss_on_magnitudes",
    "cond_loop_voicing_loss",
    "formant_errors",
    "harmonic_errors",
    "magnitudes",
    "masked_loss_on_magnitudes",
    "masked_voicing_loss",
    "voicing_masks",
]
