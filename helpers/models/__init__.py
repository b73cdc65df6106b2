"""The denoisers the lessons train (by architecture), how they run on audio (``enhance``),
and one training step with its Adam bookkeeping.
"""

from helpers.course.quiet_tensorflow import import_tensorflow

import_tensorflow()  # first, so TensorFlow's start-up log stays out

from helpers.models.denoisers import (
    BINS,
    GRU_UNITS,
    LogMagnitude,
    apply_masks,
    denoise,
    denoising_loss,
    enhance,
    is_step_model,
    make_conv_denoiser,
    make_dense_frame_denoiser,
    make_gru_floor_step_model,
    make_gru_step_model,
)
from helpers.models.training import (
    TrainingState,
    graph_gradient_norm,
    make_step,
    make_train_step,
    mean_abs_change,
    optimizer_slot_norm,
    restore_weights,
    snapshot,
    what_one_step_does,
)

__all__ = [
    "BINS",
    "GRU_UNITS",
    "LogMagnitude",
    "apply_masks",
    "denoising_loss",
    "enhance",
    "denoise",
    "is_step_model",
    "make_conv_denoiser",
    "make_dense_frame_denoiser",
    "make_gru_floor_step_model",
    "make_gru_step_model",
    "TrainingState",
    "graph_gradient_norm",
    "make_step",
    "make_train_step",
    "mean_abs_change",
    "optimizer_slot_norm",
    "restore_weights",
    "snapshot",
    "what_one_step_does",
]
