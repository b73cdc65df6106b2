"""Checkers for the exercises of 05_field_guide.

Each checker calls the learner's function the way the notebook describes, on fixed audio,
and says whether the gradients flow *and* the function still computes the same thing (a
fix that reconnects the tape by changing the result is not a fix).
"""

from __future__ import annotations

import math
from functools import cache

import keras
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


# --------------------------------------------------------------- exercise 5.2: find the cut

FRAME = 256  # samples per frame of the gated denoiser (no overlap: each frame on its own)
SMOOTHING = 0.5  # the smoother's pole: y[t] = (1 - a) x[t] + a y[t - 1], from y[-1] = 0


class Spectrum(keras.layers.Layer):
    """Frames ``(frames, 256)`` -> their complex spectrum ``(frames, 129)``."""

    def call(self, frames):
        return tf.signal.rfft(frames)


class Gate(keras.layers.Layer):
    """A gain in [0, 1] per frame and bin, from the log magnitude: ``sigmoid(slope * log|X| +
    bias)`` with a learned slope and bias per bin."""

    def build(self, input_shape):
        bins = input_shape[-1]
        self.slope = self.add_weight(shape=(bins,), initializer="ones", name="slope")
        self.bias = self.add_weight(shape=(bins,), initializer="zeros", name="bias")

    def call(self, spectrum):
        level = 0.5 * tf.math.log(tf.square(tf.abs(spectrum)) + 1e-6)
        return tf.sigmoid(self.slope * level + self.bias)


class Smoother(keras.layers.Layer):
    """The gain smoothed over time by a one-pole low-pass, so it does not flutter from frame
    to frame (written with SciPy's filter, as a signal-processing habit would)."""

    def call(self, gain):
        from scipy import signal

        smoothed = signal.lfilter([1 - SMOOTHING], [1, -SMOOTHING], np.asarray(gain), axis=0)
        return tf.constant(smoothed, tf.float32)


class GatedDenoiser(keras.Model):
    """Frames in, frames out: the spectrum, a learned gate, the gate smoothed over time, and
    the gated spectrum back to samples. It runs eagerly (one clip at a time)."""

    def __init__(self):
        super().__init__(name="gated_denoiser")
        self.spectrum = Spectrum(name="spectrum")
        self.gate = Gate(name="gate")
        self.smoother = Smoother(name="smoother")

    def call(self, frames):
        spectrum = self.spectrum(frames)
        gain = self.smoother(self.gate(spectrum))
        return tf.signal.irfft(spectrum * tf.cast(gain, tf.complex64), fft_length=[FRAME])


def make_gated_denoiser(seed: int = 0) -> GatedDenoiser:
    """The model of exercise 5.2, built, with its gate's weights from ``seed``."""
    model = GatedDenoiser()
    model(tf.zeros((4, FRAME)))
    rng = np.random.default_rng(seed)
    model.gate.slope.assign(1.0 + 0.3 * rng.standard_normal(model.gate.slope.shape))
    model.gate.bias.assign(0.3 * rng.standard_normal(model.gate.bias.shape))
    return model


@cache
def cut_frames() -> tuple[np.ndarray, np.ndarray]:
    """(noisy, clean) frames ``(24, 256)`` of a course clip: speech and a pause."""
    clip = load_clip("utterance_1_snr5")
    start, count = 1000, 24
    noisy = clip.audio[start : start + count * FRAME].reshape(count, FRAME)
    clean = clip.clean[start : start + count * FRAME].reshape(count, FRAME)
    return noisy.astype(np.float32), clean.astype(np.float32)


def gated_loss(model: GatedDenoiser, noisy, clean) -> tf.Tensor:
    """The mean squared error of the model's output frames against the clean frames."""
    return tf.reduce_mean(tf.square(model(noisy) - clean))


def _fixed_loss(model: GatedDenoiser, noisy, clean) -> tf.Tensor:
    """The same loss with the smoother in TensorFlow: the reference for the checker."""
    spectrum = model.spectrum(noisy)
    gain = tf.scan(
        lambda previous, g: (1 - SMOOTHING) * g + SMOOTHING * previous,
        model.gate(spectrum),
        initializer=tf.zeros_like(spectrum[0], dtype=tf.float32),
    )
    out = tf.signal.irfft(spectrum * tf.cast(gain, tf.complex64), fft_length=[FRAME])
    return tf.reduce_mean(tf.square(out - clean))


def check_find_the_cut(function) -> CheckResult:
    """``function(model, noisy, clean)`` returns ``(where, loss)``: the name of the layer
    whose output the loss no longer reaches (where the tape stops), and the model's loss
    computed with that cut fixed: the same value as the model's own loss, and the gradients
    of every variable equal to the fixed computation's, numerically."""

    def check(fn):
        model = make_gated_denoiser(seed=5)
        noisy, clean = (tf.constant(x) for x in cut_frames())
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            answer = fn(model, noisy, clean)
        if not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], str)):
            return False, f"Return a pair (layer name, loss); got {type(answer).__name__}."
        where, loss = answer
        name = where.strip().strip("'\"").rsplit("/", 1)[-1]
        if name != "smoother":
            if name in ("spectrum", "gate"):
                return False, (
                    f"The variables reach '{name}' on the tape; the path breaks after it, in "
                    "the code that runs between that mark and the next one: the next "
                    "layer's call."
                )
            return False, (
                f"'{where}' is not a layer of this model; mark its layers "
                "(GradientProbe's mark_layers) and ask the locator where the path breaks."
            )
        grads = tape.gradient(loss, variables)
        with tf.GradientTape() as reference_tape:
            expected = _fixed_loss(model, noisy, clean)
        expected_grads = reference_tape.gradient(expected, variables)
        if abs(float(loss) - float(expected)) > 1e-5 * abs(float(expected)):
            return False, (
                f"Your loss is {float(loss):.6g}; the model's is {float(expected):.6g}. A fix "
                "keeps what the model computes (the smoothing included) and lets the tape see it."
            )
        statuses = gradient_report(grads, variables).statuses
        if "none" in statuses:
            return False, (
                "The gradients of the gate are still None: the cut is still there. Asking for "
                "zeros instead of None hides it; it does not fix it."
            )
        if "zero" in statuses:
            return False, (
                "The gate's gradients are zero: a term that only reconnects the graph "
                "(0 x something) gives the look of a gradient, not one. Compute the smoothing "
                "with TensorFlow ops."
            )
        for g, e in zip(grads, expected_grads):
            if not np.allclose(g, e, rtol=1e-3, atol=1e-7):
                return False, (
                    "The loss is right, but the gate's gradients differ from the smoothed "
                    "gain's: the tape sees another computation than the one that made the loss."
                )
        return True, (
            "The cut is the smoother (NumPy inside the layer), and with the smoothing in "
            "TensorFlow every variable gets the gradient of the model's own loss."
        )

    return run_check(
        "Exercise 5.2 (find the cut)",
        function,
        check,
        hint="Mark every layer's output and ask the locator where the path from the "
        "variables to the loss breaks; then read that layer's call. A fix keeps what "
        "the layer computes and keeps it in TensorFlow.",
    )
