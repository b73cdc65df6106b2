"""Checkers for the exercises of 05_field_guide.

Each checker calls the learner's function the way the notebook describes, on fixed audio,
and says whether the gradients flow *and* the function still computes the same thing (a
fix that reconnects the tape by changing the result is not a fix).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache

import keras
import numpy as np
import tensorflow as tf
from hypothesis import strategies as st
from scipy import signal

from helpers.audio import load_clip
from helpers.diagnosis import gradient_report
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import error_text, first_difference, two_values

N_FFT = 256
HOP = 128


SPECTRAL_CLIPS = ("utterance_1_snr5", "utterance_2_snr15", "vowel_a", "fricative_s", "silence")
LONGEST_CLIP = "arctic_a0009"  # the course's longest clip: 49520 samples, 385 frames here
DITHER = 0.003  # rms of the seeded noise in every estimate: a model's output is never the clean


@dataclass(frozen=True)
class Estimate:
    """``estimate = gain * noisy + offset + noise`` for ``length`` samples of a course clip
    from ``start`` (the noise seeded, rms ``DITHER``: an estimate is never exactly the clean);
    the reference is the clip's clean audio there."""

    clip: str
    start: int
    length: int
    gain: float = 0.8
    offset: float = 0.01

    def audio(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """noisy, clean and the estimate's noise, float32."""
        clip = load_clip(self.clip)
        window = slice(self.start, self.start + self.length)
        noise = DITHER * np.random.default_rng(self.start).standard_normal(self.length)
        return (
            clip.audio[window].astype(np.float32),
            clip.clean[window].astype(np.float32),
            noise.astype(np.float32),
        )

    @property
    def frames(self) -> int:
        return 1 + (self.length - N_FFT) // HOP

    def __repr__(self) -> str:
        whole = " (the whole clip)" if self.length == len(load_clip(self.clip).audio) else ""
        return (
            f"estimate = {self.gain:g} * noisy + {self.offset:g} + noise (rms {DITHER:g}, seed "
            f"{self.start}), {self.length} samples ({self.frames} frames) of {self.clip} from "
            f"sample {self.start}{whole}"
        )


def _librosa_magnitude(audio: np.ndarray, window="hann", center: bool = False) -> np.ndarray:
    """|STFT| ``(frames, bins)`` by librosa: n_fft 256, hop 128."""
    import librosa

    stft = librosa.stft(
        np.asarray(audio, np.float32), n_fft=N_FFT, hop_length=HOP, window=window, center=center
    )
    return np.abs(stft).T


def _librosa_spectral_loss(estimate: np.ndarray, reference: np.ndarray) -> float:
    return float(np.mean(np.abs(_librosa_magnitude(estimate) - _librosa_magnitude(reference))))


def reference_spectral_loss(estimate, reference) -> tf.Tensor:
    """The reference answer to 5.1 in TensorFlow: the frames librosa cuts without centring,
    the same periodic Hann window, the mean absolute magnitude difference."""

    def magnitude(audio):
        return tf.abs(tf.signal.stft(tf.cast(audio, tf.float32), N_FFT, HOP))

    return tf.reduce_mean(tf.abs(magnitude(estimate) - magnitude(reference)))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-9)


def _which_variant(value: float, estimate: np.ndarray, reference: np.ndarray) -> str:
    """What the learner's wrong value is, if it is a known variant of librosa's loss."""
    per_frame = np.mean(
        np.abs(_librosa_magnitude(estimate) - _librosa_magnitude(reference)), axis=-1
    )
    prefix = np.cumsum(per_frame) / np.arange(1, len(per_frame) + 1)
    for count in range(1, len(per_frame)):
        if _close(value, prefix[count - 1]):
            return (
                f" Your value is librosa's over the first {count} frames only: compare every "
                f"frame ({len(per_frame)} here), however long the clip."
            )
    variants = {
        " Your value is that of a symmetric Hann window (periodic=False); librosa's, and "
        "tf.signal.stft's default, is periodic.": {"window": signal.windows.hann(N_FFT, sym=True)},
        " Your value is that of frames without a window; librosa multiplies each frame by a "
        "periodic Hann window.": {"window": "boxcar"},
        " Your value is that of centred frames (librosa's center=True pads half a frame at "
        "each end); here the first frame starts at sample 0.": {"center": True},
    }
    for text, options in variants.items():
        loss = np.mean(
            np.abs(
                _librosa_magnitude(estimate, **options) - _librosa_magnitude(reference, **options)
            )
        )
        if _close(value, float(loss)):
            return text
    padded = float(
        tf.reduce_mean(
            tf.abs(
                tf.abs(tf.signal.stft(estimate, N_FFT, HOP, pad_end=True))
                - tf.abs(tf.signal.stft(reference, N_FFT, HOP, pad_end=True))
            )
        )
    )
    if _close(value, padded):
        return (
            " Your value counts an extra frame padded with zeros at the end (pad_end=True); "
            "librosa without centring keeps only whole frames."
        )
    return " Keep 256-sample frames, hop 128, no centring and a periodic Hann window."


def _python_function_inside(fn, *args) -> bool:
    """Whether ``fn(*args)``, traced, runs Python code through tf.py_function or
    tf.numpy_function (False when it cannot be traced)."""
    try:
        graph = tf.function(fn).get_concrete_function(*args).graph
    except Exception:
        return False
    return any(
        op.type in {"EagerPyFunc", "PyFunc", "PyFuncStateless"} for op in graph.get_operations()
    )


def _gradient_error(fn, error: Exception, args) -> str:
    """A plain message for an error TensorFlow raised while differentiating the learner's code."""
    if _python_function_inside(fn, *args):
        return (
            f"asking the tape for its gradient raised {type(error).__name__} inside "
            "TensorFlow. Your code runs Python through tf.py_function (or tf.numpy_function): the "
            "tape cannot see inside it, so no true gradient comes out of it. Compute the loss "
            "with TensorFlow operations."
        )
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", error_text(error))
    return (
        f"asking the tape for its gradient raised {text}: a step of your computation has "
        "no gradient TensorFlow can compute. Compute the loss with TensorFlow operations."
    )


def _kink_frames(estimate: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The frames where the loss has no gradient, to rounding: a bin whose estimate magnitude
    equals the reference's (the kink of |x|) or is 0 (the cone of |X|), within 8 times what
    librosa and TensorFlow differ by on the reference."""
    estimate_mag = tf.abs(tf.signal.stft(estimate, N_FFT, HOP)).numpy()
    reference_mag = tf.abs(tf.signal.stft(reference, N_FFT, HOP)).numpy()
    rounding = float(np.max(np.abs(reference_mag - _librosa_magnitude(reference))))
    tolerance = 8 * rounding + 1e-7
    near = (np.abs(estimate_mag - reference_mag) <= tolerance) | (estimate_mag <= tolerance)
    return np.flatnonzero(near.any(axis=-1))


def _spectral_fault(fn, case: Estimate, judged: list[int]) -> str | None:
    """How the learner's loss differs from librosa's value and the reference's gradients.
    ``judged`` gets the number of samples whose gradient was compared, and of all samples."""
    noisy, clean, noise = case.audio()
    gain = tf.Variable(case.gain, name="gain")
    offset = tf.Variable(case.offset, name="offset")
    variables = [gain, offset]
    where = f"On {case!r}"
    with tf.GradientTape(persistent=True) as tape:
        estimate = gain * tf.constant(noisy) + offset + tf.constant(noise)
        tape.watch(estimate)
        try:
            loss = fn(estimate, tf.constant(clean))
        except Exception as error:
            return f"{where}, your code raised {error_text(error)}."
        expected = reference_spectral_loss(estimate, tf.constant(clean))
    if not tf.is_tensor(loss):
        return (
            f"{where}, `spectral_loss` returned a {type(loss).__name__}; expected a scalar tensor."
        )
    if loss.shape.rank != 0:
        return (
            f"{where}, `spectral_loss` returned shape {tuple(loss.shape)}; expected a scalar "
            "(reduce with a mean)."
        )
    try:
        grads = tape.gradient(loss, variables)
        got_grad = tape.gradient(loss, estimate)
    except Exception as error:
        return f"{where}, your loss computes, but " + _gradient_error(
            fn, error, (tf.constant(estimate), tf.constant(clean))
        )
    report = gradient_report(grads, variables)
    expected_report = gradient_report(tape.gradient(expected, variables), variables)
    if report.statuses != expected_report.statuses:
        return (
            f"{where}, the gradients of the loss for the two variables that made the "
            f"estimate: {report.summary()}; the reference's: {expected_report.summary()}."
        )
    estimate_audio = estimate.numpy()
    value = _librosa_spectral_loss(estimate_audio, clean)
    if not math.isclose(float(loss), value, rel_tol=1e-3):
        got, want = two_values(loss, value)
        variant = _which_variant(float(loss), estimate_audio, clean)
        return f"{where}, the loss is {got}, but librosa gives {want} for the same audio.{variant}"
    # The gradient is compared on the samples of frames where it is defined.
    compared = np.ones(case.length, dtype=bool)
    for index in _kink_frames(estimate_audio, clean):
        compared[index * HOP : index * HOP + N_FFT] = False
    judged.append((int(compared.sum()), case.length))
    if not compared.any():
        return None
    got_grad = tf.convert_to_tensor(got_grad).numpy()[compared]
    want_grad = tape.gradient(expected, estimate).numpy()[compared]
    scale = float(np.max(np.abs(want_grad)))
    if not np.allclose(got_grad, want_grad, rtol=1e-2, atol=1e-3 * scale):
        ratio = float(np.max(np.abs(got_grad))) / scale if scale else math.inf
        return (
            f"{where}, the value is librosa's, but the gradient with respect to the estimate "
            f"is not the loss's own (its largest value is {ratio:.2g} times the true one's): "
            "part of the value does not come from the estimate through TensorFlow (a "
            "constant value plus a small or straight-through term only looks connected). "
            "Compute the loss itself in TensorFlow."
        )
    return None


@st.composite
def _estimates(draw) -> Estimate:
    clip = draw(st.sampled_from(SPECTRAL_CLIPS))
    total = len(load_clip(clip).audio)
    # a share of the clip, not a count of samples: lengths spread from one frame to all
    length = N_FFT + int(draw(st.floats(0.0, 1.0)) * (total - N_FFT))
    start = draw(st.integers(0, total - length))
    gain = draw(st.sampled_from([0.8, 0.5, 1.0, 1.5]))
    offset = draw(st.sampled_from([0.01, 0.0, -0.02]))
    return Estimate(clip, start, length, gain, offset)


# Tried first: two stretches of speech whose lengths do not fill the last frame. Then the
# boundaries: one frame, and whole clips up to the course's longest.
SPECTRAL_TRAPS = (
    Estimate("utterance_1_snr5", 4000, 2048),
    Estimate("utterance_2_snr15", 6000, 1700),
)
SPECTRAL_BOUNDARIES = (
    Estimate("utterance_1_snr5", 8000, N_FFT),
    Estimate("utterance_2_snr15", 0, len(load_clip("utterance_2_snr15").audio), 1.0, 0.0),
    Estimate(LONGEST_CLIP, 0, len(load_clip(LONGEST_CLIP).audio), 0.5, 0.0),
)
SPECTRAL_EXAMPLES = 6  # generated stretches, after the fixed ones


def check_spectral_loss(function) -> CheckResult:
    """``function(estimate, reference)`` returns a scalar loss tensor equal to librosa's
    mean absolute STFT-magnitude difference (n_fft 256, hop 128, center=False), whose
    gradient with respect to the estimate is the loss's own (compared numerically with the
    reference's wherever it is defined: the samples of frames where a bin sits within
    rounding of the kink of |x| are left out).

    The domain: an estimate (gain x noisy + offset + a little noise: never exactly the clean)
    against the clean audio, from one frame to a whole clip. Tried on the traps above, then
    the boundaries (one frame; the whole of utterance_2_snr15 and of the course's longest clip,
    arctic_a0009), then ``SPECTRAL_EXAMPLES`` generated stretches of the course's clips."""

    def check(fn):
        judged: list[tuple[int, int]] = []
        difference = first_difference(
            _estimates(), lambda case: _spectral_fault(fn, case, judged),
            traps=SPECTRAL_TRAPS, boundaries=SPECTRAL_BOUNDARIES, examples=SPECTRAL_EXAMPLES,
            runs=20,
        )  # fmt: skip
        if difference is not None:
            return False, difference.message
        fixed = len(SPECTRAL_TRAPS + SPECTRAL_BOUNDARIES)
        generated = [1 + (samples - N_FFT) // HOP for _, samples in judged[fixed:]]
        return True, (
            f"Librosa's value on {fixed} fixed stretches (one frame to the whole of "
            f"{LONGEST_CLIP}, {SPECTRAL_BOUNDARIES[-1].frames} frames) and "
            f"{len(judged) - fixed} generated ones of {min(generated)} to {max(generated)} "
            "frames, and the loss's own gradient on the "
            f"{sum(c for c, _ in judged)} of their {sum(t for _, t in judged)} samples where it "
            "is defined (no bin within rounding of the kink of |x|): gradients reach both "
            "variables that made the estimate."
        )

    return run_check(
        "Exercise 5.1 (a spectral loss the model can learn from)",
        function,
        check,
        hint="librosa and NumPy work on arrays the tape cannot see, so nothing reaches the "
        "model, and a number added on top only looks connected. TensorFlow has a short-time "
        "Fourier transform of its own: given the same frame length, hop and FFT size, it cuts "
        "the same frames as librosa without centring, with the same periodic Hann window.",
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
    noisy, clean = GatedCase(5, 1000, 24).frames_of()
    return noisy.numpy(), clean.numpy()


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


@dataclass(frozen=True)
class GatedCase:
    """``make_gated_denoiser(seed)`` on ``frames`` frames of ``utterance_1_snr5`` from sample
    ``start`` (noisy and clean)."""

    seed: int
    start: int
    frames: int

    def frames_of(self) -> tuple[tf.Tensor, tf.Tensor]:
        clip = load_clip("utterance_1_snr5")
        window = slice(self.start, self.start + self.frames * FRAME)
        noisy = clip.audio[window].reshape(self.frames, FRAME).astype(np.float32)
        clean = clip.clean[window].reshape(self.frames, FRAME).astype(np.float32)
        return tf.constant(noisy), tf.constant(clean)

    def __repr__(self) -> str:
        return (
            f"the gated denoiser (seed {self.seed}) on {self.frames} frames of "
            f"utterance_1_snr5 from sample {self.start}"
        )


def _cut_fault(fn, case: GatedCase) -> str | None:
    """How the learner's answer differs from the reference's (``"smoother"`` and the loss
    with the smoothing in TensorFlow) on one model and stretch of audio, or None."""
    model = make_gated_denoiser(seed=case.seed)
    noisy, clean = case.frames_of()
    variables = model.trainable_variables
    where = f"On {case!r}"
    with tf.GradientTape() as tape:
        try:
            answer = fn(model, noisy, clean)
        except Exception as error:
            return f"{where}, your code raised {error_text(error)}."
    if not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], str)):
        return f"{where}: return a pair (layer name, loss); got {type(answer).__name__}."
    named, loss = answer
    name = named.strip().strip("'\"").rsplit("/", 1)[-1]
    if name != "smoother":
        if name in ("spectrum", "gate"):
            return (
                f"The variables reach '{name}' on the tape; the path breaks after it, in the "
                "code that runs between that mark and the next one: the next layer's call."
            )
        return (
            f"'{named}' is not a layer of this model; mark its layers (GradientProbe's "
            "mark_layers) and ask the locator where the path breaks."
        )
    try:
        grads = tape.gradient(loss, variables)
    except Exception as error:
        return f"{where}, your loss computes, but " + _gradient_error(
            fn, error, (model, noisy, clean)
        )
    with tf.GradientTape() as reference_tape:
        expected = _fixed_loss(model, noisy, clean)
    expected_grads = reference_tape.gradient(expected, variables)
    if abs(float(loss) - float(expected)) > 1e-5 * abs(float(expected)):
        got, want = two_values(loss, expected)
        return (
            f"{where}, your loss is {got}; the model's is {want}. A fix keeps what the model "
            "computes (the smoothing included) and lets the tape see it."
        )
    statuses = gradient_report(grads, variables).statuses
    if "none" in statuses:
        return (
            f"{where}, the gradients of the gate are still None: the cut is still there. "
            "Asking for zeros instead of None hides it; it does not fix it."
        )
    if "zero" in statuses:
        return (
            f"{where}, the gate's gradients are zero: a term that only reconnects the graph "
            "(0 x something) gives the look of a gradient, not one. Compute the smoothing "
            "with TensorFlow ops."
        )
    for g, e in zip(grads, expected_grads):
        scale = float(np.max(np.abs(e)))
        if not np.allclose(g, e, rtol=1e-3, atol=1e-4 * scale):
            return (
                f"{where}, the loss is right, but the gate's gradients differ from the "
                "smoothed gain's: the tape sees another computation than the one that made "
                "the loss."
            )
    return None


GATED_CLIP_SAMPLES = 23200  # utterance_1_snr5: 90 whole frames
WHOLE_CLIP_FRAMES = GATED_CLIP_SAMPLES // FRAME


@st.composite
def _gated_cases(draw) -> GatedCase:
    frames = draw(st.integers(1, WHOLE_CLIP_FRAMES))
    start = draw(st.integers(0, GATED_CLIP_SAMPLES - frames * FRAME))
    return GatedCase(draw(st.integers(0, 20)), start, frames)


# The notebook's model and frames first; then the boundaries: one frame, the whole clip.
GATED_FIXED = (
    GatedCase(5, 1000, 24),
    GatedCase(3, GATED_CLIP_SAMPLES - FRAME, 1),
    GatedCase(0, 0, WHOLE_CLIP_FRAMES),
)
GATED_EXAMPLES = 5  # generated models and stretches, after the fixed ones


def check_find_the_cut(function) -> CheckResult:
    """``function(model, noisy, clean)`` returns ``(where, loss)``: the name of the layer
    whose output the loss no longer reaches (where the tape stops), and the model's loss
    computed with that cut fixed: the same value as the model's own loss, and the gradients
    of every variable equal to the reference's (the smoothing in TensorFlow), numerically.

    The domain: the model (any seed) on any stretch of whole frames of utterance_1_snr5, from
    one frame to the whole clip (90 frames). Tried on the notebook's model and frames, then the
    boundaries (one frame, the whole clip), then ``GATED_EXAMPLES`` generated models and
    stretches."""

    def check(fn):
        tried: list[GatedCase] = []

        def differs(case: GatedCase) -> str | None:
            tried.append(case)
            return _cut_fault(fn, case)

        difference = first_difference(
            _gated_cases(),
            differs,
            traps=GATED_FIXED[:1],
            boundaries=GATED_FIXED[1:],
            examples=GATED_EXAMPLES,
            runs=15,
        )
        if difference is not None:
            return False, difference.message
        return True, (
            "The cut is the smoother (NumPy inside the layer), and with the smoothing in "
            "TensorFlow every variable gets the gradient of the model's own loss, on "
            f"{len(tried)} models and stretches of utterance_1_snr5 ("
            f"{min(c.frames for c in tried)} to {max(c.frames for c in tried)} frames, the "
            "whole clip included)."
        )

    return run_check(
        "Exercise 5.2 (find the cut)",
        function,
        check,
        hint="Mark every layer's output and ask the locator where the path from the "
        "variables to the loss breaks; then read that layer's call. A fix keeps what "
        "the layer computes and keeps it in TensorFlow.",
    )
