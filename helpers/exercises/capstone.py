"""Checkers for the exercises of 06_capstone."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import frame
from helpers.dataset import Clip, ClipExcerpt, clip_excerpt
from helpers.denoiser import enhance, make_conv_denoiser
from helpers.exercises import CheckResult, run_check
from helpers.training import make_train_step
from helpers.voicing_loss import masked_voicing_loss

# The gradient lab's silent and voiced clips (helpers.lab.LAB_CLIPS): 16 frames each.
SILENT_CLIP = ClipExcerpt("silence", 4, 20)
VOICED_CLIP = ClipExcerpt("vowel_a", 10, 26)
EXERCISE_TRAIN_STEPS = 40
EXERCISE_LEARNING_RATE = 0.02
REQUIRED_FALL_DB = 6.0




def _global_norm(grads: list) -> float:
    """Global norm of a gradient list; a None gradient counts as zero."""
    present = [g for g in grads if g is not None]
    return float(tf.linalg.global_norm(present)) if present else 0.0


def _level_db(model: keras.Model, example: Clip):
    """``helpers.training.level_change_db`` on the example's silent frames, as a function of
    no arguments for checking after every training step: the model runs in a graph traced
    once, and the input's energy is measured once."""
    frames = example.labels.silent
    energy_in = float(tf.reduce_sum(tf.square(frame(example.audio)), axis=-1).numpy()[frames].sum())
    run = tf.function(lambda: tf.reduce_sum(tf.square(frame(enhance(model, example.audio))),
                                            axis=-1), autograph=False)

    def level() -> float:
        return float(10 * np.log10(run().numpy()[frames].sum() / energy_in))

    return level


def check_silence_term(function) -> CheckResult:
    """``function(reference, estimate, labels)`` is a loss term for silent frames: a scalar
    tensor with a gradient on the lab's silent clip, nothing to say (no gradient) on a clip
    without silent frames, and, added to the masked loss without its own silence term and
    trained inside ``tf.function`` (Adam, 40 steps), it turns the output on silence down by
    at least 6 dB at some step."""

    def check(fn):
        silent, voiced = clip_excerpt(SILENT_CLIP), clip_excerpt(VOICED_CLIP)
        model = make_conv_denoiser(seed=0)
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            value = fn(silent.clean, enhance(model, silent.audio), silent.labels)
        if not isinstance(value, tf.Tensor):
            return False, (f"it returned a {type(value).__name__}, not a TensorFlow tensor: "
                           "no gradient can flow through it.")
        if value.shape.rank != 0 or not np.isfinite(float(value)):
            return False, f"expected one finite number (a scalar tensor); got {value}."
        grads = tape.gradient(value, variables)
        if all(g is None or not np.any(g.numpy()) for g in grads):
            return False, ("on the silent clip the term has no gradient (None or zero): "
                           "it cannot teach the model anything.")
        silent_norm = _global_norm(grads)
        with tf.GradientTape() as tape:
            on_speech = fn(voiced.clean, enhance(model, voiced.audio), voiced.labels)
        if not np.isfinite(float(on_speech)):
            return False, (f"on a clip with no silent frame the term is {float(on_speech)}: "
                           "an average over no frames must still be a number.")
        speech_norm = _global_norm(tape.gradient(on_speech, variables))
        if not speech_norm <= 1e-6 * silent_norm:
            return False, ("on a clip with no silent frame the term still pulls the output "
                           "(its gradient is not zero there): it would turn speech down too.")

        def loss(reference, estimate, labels):
            return (masked_voicing_loss(reference, estimate, labels, silence_weight=0.0)
                    + fn(reference, estimate, labels))

        # The lowest level within the run, not the last: near silence, Adam on a log-level
        # term (04's own) overshoots and swings back up; falling at all is what is asked.
        level = _level_db(model, silent)
        before = level()
        step = make_train_step(model, keras.optimizers.Adam(EXERCISE_LEARNING_RATE), [silent],
                               loss_fn=loss)
        lowest = before
        for _ in range(EXERCISE_TRAIN_STEPS):
            step()
            lowest = min(lowest, level())
        if not before - lowest >= REQUIRED_FALL_DB:
            direction = "never fell" if lowest >= before else "fell by less than 6 dB"
            return False, (f"in {EXERCISE_TRAIN_STEPS} training steps the output level on silence "
                           f"{direction}: the term must grow when the output there is louder.")
        return True, (f"within {EXERCISE_TRAIN_STEPS} steps inside tf.function the output "
                      f"on the lab's "
                      f"silent clip fell more than {REQUIRED_FALL_DB:.0f} dB below where it "
                      "started, and on speech the term has no gradient.")

    return run_check("Exercise 6.1 (a loss term that teaches silence)", function, check,
                     hint="Build the term from the estimate with TensorFlow operations only, "
                          "on the frames the labels mark silent and nowhere else, so that it "
                          "grows when the output there is louder; and an average over no "
                          "frames must still be a number.")
