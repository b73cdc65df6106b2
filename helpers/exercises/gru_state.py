"""Checkers for the exercises of 01_gru_state_reproduce and 02_gru_state_fix.

Each checker runs the learner's function on a small step model whose weights come from a
local seeded generator (the notebook's global random state is not touched), and compares it
with ``helpers.gru_state.unroll``.
"""

from __future__ import annotations

from functools import cache

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import HOP_LENGTH, stft
from helpers.denoiser import apply_masks, make_gru_step_model
from helpers.exercises import CheckResult, run_check
from helpers.gradients import max_abs_diff, variable_name
from helpers.gru_state import unroll


@cache
def _small_model(units: int, bins: int) -> keras.Model:
    model = make_gru_step_model(units=units, bins=bins)
    rng = np.random.default_rng(1234)
    model.set_weights([0.4 * rng.standard_normal(w.shape).astype(np.float32)
                       for w in model.get_weights()])
    return model


def _frames(steps: int, bins: int, seed: int) -> tf.Tensor:
    rng = np.random.default_rng(seed)
    return tf.constant(0.1 * rng.standard_normal((1, steps, bins)), tf.float32)


def _reference_loss(model, noisy_spectrum, clean):
    masks, _ = unroll(model, tf.abs(noisy_spectrum))
    return tf.reduce_mean((clean - apply_masks(masks, noisy_spectrum, clean.shape[-1])) ** 2)


def check_sequence_loss(function) -> CheckResult:
    """``function(step_model, noisy_spectrum, clean_audio)`` must return the denoising loss
    with the state passed on as a tensor: same value and same gradients as a full unroll."""

    def check(fn):
        model = _small_model(4, 257)
        samples = 5 * HOP_LENGTH  # 6 frames
        rng = np.random.default_rng(6)
        clean = tf.constant(0.1 * rng.standard_normal((1, samples)), tf.float32)
        noisy_spectrum = stft(clean + 0.05 * rng.standard_normal((1, samples)).astype("float32"))
        variables = model.trainable_weights
        with tf.GradientTape() as tape:
            expected = _reference_loss(model, noisy_spectrum, clean)
        expected_grads = tape.gradient(expected, variables)
        with tf.GradientTape() as tape:
            loss = fn(model, noisy_spectrum, clean)
        if not isinstance(loss, tf.Tensor) or loss.shape.rank != 0:
            return False, f"expected a scalar tensor loss; got {type(loss).__name__} " \
                          f"with shape {getattr(loss, 'shape', None)}."
        grads = tape.gradient(loss, variables)
        if abs(float(loss) - float(expected)) > 1e-5 * abs(float(expected)):
            return False, f"your loss is {float(loss):.6g}; a full unroll gives " \
                          f"{float(expected):.6g}. Keep the forward pass as it was."
        missing = [variable_name(v) for g, v in zip(grads, variables) if g is None]
        if missing:
            return False, f"the gradients of {', '.join(missing)} are None."
        differing = []
        for g, e, v in zip(grads, expected_grads, variables):
            if max_abs_diff(g, e) > 1e-5 * (float(tf.reduce_max(tf.abs(e))) + 1e-12):
                differing.append(variable_name(v))
        if differing:
            return False, f"same loss, but the gradients of {', '.join(differing)} differ from " \
                          "a full unroll's: backprop through time is still being cut."
        return True, "same loss and same gradients as a full unroll: the tape sees every step."

    return run_check("Exercise 1.1 (undo the recommended fix)", function, check,
                     hint="The tape follows operations, not variables: a state written into a "
                          "variable and read back at the next frame has no recorded path to the "
                          "frame before. Pass the state on the way suspect 1 of this notebook did.")


def check_stream_denoise(function) -> CheckResult:
    """``function(step_model, frames, chunk_size)`` must process the frames chunk by chunk and
    return the same outputs ``(1, time, features)`` as one full unroll."""

    def check(fn):
        model = _small_model(4, 16)
        frames = _frames(10, 16, seed=7)
        expected, _ = unroll(model, frames)
        for chunk_size in (3, 4, 10):
            got = fn(model, frames, chunk_size)
            got = tf.convert_to_tensor(got)
            if tuple(got.shape) != tuple(expected.shape):
                return False, f"with chunk_size={chunk_size} you returned shape " \
                              f"{tuple(got.shape)}; expected {tuple(expected.shape)}."
            difference = max_abs_diff(got, expected)
            if difference > 1e-5:
                per_frame = tf.reduce_max(tf.abs(got - expected), axis=[0, 2]).numpy()
                first_bad = int(np.flatnonzero(per_frame > 1e-5)[0])
                return False, f"with chunk_size={chunk_size} your outputs differ from one " \
                              f"full unroll by up to {difference:.3g}, first at frame " \
                              f"{first_bad}."
        return True, "chunk by chunk, with the state carried across, equals one full unroll."

    return run_check("Exercise 2.1 (stream with a carried state)", function, check,
                     hint="Each chunk must start from the state the previous chunk ended with. "
                          "Look at everything unroll gives back, and at everything it can take in.")
