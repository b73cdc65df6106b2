"""Checkers for the exercises of 05_field_guide.

Each checker calls the learner's function the way the notebook describes, on fixed audio,
and says whether the gradients flow *and* the function still computes the same thing (a
fix that reconnects the tape by changing the result is not a fix).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import tensorflow as tf

from helpers.audio import load_clip
from helpers.diagnosis import gradient_report
from helpers.exercises import CheckResult, run_check

N_FFT = 256
HOP = 128


@cache
def _excerpts() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(noisy, clean) pairs from two clips, of lengths that do not fill the last frame."""
    pairs = []
    for name, start, length in (
        ("utterance_1_snr5", 4000, 2048),
        ("utterance_2_snr15", 6000, 1700),
    ):
        clip = load_clip(name)
        pairs.append(
            (
                clip.audio[start : start + length].astype(np.float32),
                clip.clean[start : start + length].astype(np.float32),
            )
        )
    return tuple(pairs)


def _librosa_spectral_loss(estimate: np.ndarray, reference: np.ndarray) -> float:
    import librosa

    def magnitude(audio):
        return np.abs(
            librosa.stft(audio.astype(np.float32), n_fft=N_FFT, hop_length=HOP, center=False)
        )

    return float(np.mean(np.abs(magnitude(estimate) - magnitude(reference))))


def check_spectral_loss(function) -> CheckResult:
    """``function(estimate, reference)`` returns a scalar loss tensor equal to librosa's
    mean absolute STFT-magnitude difference (n_fft 256, hop 128, center=False), through
    which gradients reach the variables that made ``estimate``."""

    def check(fn):
        for noisy, clean in _excerpts():
            gain = tf.Variable(0.8, name="gain")
            offset = tf.Variable(0.01, name="offset")
            with tf.GradientTape() as tape:
                estimate = gain * tf.constant(noisy) + offset
                loss = fn(estimate, tf.constant(clean))
            if not tf.is_tensor(loss):
                return False, (
                    f"`spectral_loss` returned a {type(loss).__name__}; expected a scalar tensor."
                )
            if loss.shape.rank != 0:
                return False, (
                    f"`spectral_loss` returned shape {tuple(loss.shape)}; expected "
                    "a scalar (reduce with a mean)."
                )
            report = gradient_report(tape.gradient(loss, [gain, offset]), [gain, offset])
            if not report.all("ok"):
                return False, (
                    "Gradients of the loss for the two variables that made the "
                    f"estimate: {report.summary()}."
                )
            expected = _librosa_spectral_loss(estimate.numpy(), clean)
            if not math.isclose(float(loss), expected, rel_tol=1e-3):
                return False, (
                    f"The loss is {float(loss):.5g}, but librosa gives "
                    f"{expected:.5g} for the same audio: keep 256-sample frames, "
                    "hop 128, no centring and a Hann window."
                )
        return True, "Gradients reach both variables, and the value matches librosa's."

    return run_check(
        "Exercise 5.1 (a spectral loss the model can learn from)",
        function,
        check,
        hint="librosa and NumPy work on arrays the tape cannot see, so nothing reaches the "
        "model. TensorFlow has a short-time Fourier transform of its own: given the same "
        "frame length, hop and FFT size, it cuts the same frames as librosa without "
        "centring, with the same periodic Hann window.",
    )


def _shifted(audio: np.ndarray, whole: int) -> np.ndarray:
    return np.concatenate([np.zeros(whole, audio.dtype), audio[: len(audio) - whole]])


def check_delay(function) -> CheckResult:
    """``function(audio, samples)`` delays ``audio`` by a float number of samples in [0, 8):
    exact at whole numbers, between the two neighbouring shifts otherwise, with a gradient
    for ``samples`` that agrees with a finite difference."""

    def check(fn):
        rng = np.random.default_rng(5)
        audio = rng.normal(size=64).astype(np.float32)
        weights = tf.constant(rng.normal(size=64).astype(np.float32))
        for whole in (0, 3, 7):
            out = fn(tf.constant(audio), tf.constant(float(whole)))
            if tuple(out.shape) != audio.shape:
                return False, (
                    f"`delay` returned shape {tuple(out.shape)}; expected "
                    f"{audio.shape}, like its input."
                )
            if not np.allclose(out, _shifted(audio, whole), atol=1e-5):
                return False, (
                    f"A delay of {whole}.0 samples should give the input shifted "
                    f"by {whole}, with {whole} zeros in front."
                )
        for value in (2.25, 5.6):
            samples = tf.Variable(value, name="samples")
            with tf.GradientTape() as tape:
                out = fn(tf.constant(audio), samples)
                loss = tf.reduce_sum(out * weights)
            grad = tape.gradient(loss, samples)
            status = gradient_report([grad], [samples])[0].status
            if status != "ok":
                return False, f"The gradient for a delay of {value} samples is {status}."
            low, high = _shifted(audio, math.floor(value)), _shifted(audio, math.ceil(value))
            if np.any(np.asarray(out) < np.minimum(low, high) - 1e-5) or np.any(
                np.asarray(out) > np.maximum(low, high) + 1e-5
            ):
                return False, (
                    f"A delay of {value} samples should lie between the shifts "
                    f"by {math.floor(value)} and {math.ceil(value)}."
                )
            step = 0.01
            slope = (
                float(tf.reduce_sum(fn(tf.constant(audio), tf.constant(value + step)) * weights))
                - float(tf.reduce_sum(fn(tf.constant(audio), tf.constant(value - step)) * weights))
            ) / (2 * step)
            if not math.isclose(float(grad), slope, rel_tol=0.05, abs_tol=1e-3):
                return False, (
                    f"At {value} samples the gradient is {float(grad):.4g}, but the "
                    f"output changes at a rate of {slope:.4g} per sample."
                )
        return True, (
            "Whole delays are exact, fractional ones lie between their neighbours, "
            "and the gradient matches the slope."
        )

    return run_check(
        "Exercise 5.2 (a delay the model can learn)",
        function,
        check,
        hint="Rounding and the cast to an integer have no gradient. Let the whole part of the "
        "delay pick two neighbouring whole shifts, and mix the two shifted signals by the "
        "fractional part: the fraction is a float computed from the delay, so it carries "
        "the gradient.",
    )
