"""The models the course trains, named by architecture, and ``enhance``/``denoise``, which
run any of them on a clip.

* **The GRU step model** (the GRU question, notebooks 01, 02 and 06): a spectral-mask
  denoiser that sees one STFT frame at a time, ``[noisy_magnitude, previous_state] ->
  [mask, next_state]`` (log magnitude, one ``GRUCell`` step, a mask in [0, 1] per bin). The
  mask scales the noisy spectrum and ``helpers.audio.istft`` turns it back into audio;
  ``helpers.recurrence.unroll`` runs it over all frames.
* **The conv denoiser** (notebooks 03 and 04): a tiny conv net on raw samples whose
  gradients the voicing-loss notebooks inspect.
* **The dense frame denoiser** (notebook 05) and **the GRU floor step model** (the capstone).

``enhance(model, noisy)`` gives the enhanced clip as a tensor (differentiable: use it inside a
``GradientTape``); ``denoise(model, noisy)`` gives it as a NumPy array (inference).
"""

from __future__ import annotations

import weakref

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import (
    FRAME_LENGTH,
    HOP_LENGTH,
    LOG_EPS,
    SAMPLE_RATE,
    AudioError,
    check_audio,
    istft,
    log_compress,
    stft,
)
from helpers.course import check_int, make_deterministic
from helpers.recurrence import unroll

GRU_UNITS = 32  # GRU state size: small enough to train in seconds on a CPU
BINS = FRAME_LENGTH // 2 + 1  # 257 magnitude bins per frame
# Fixed affine map of the log magnitude to roughly zero mean, unit spread on the course clips,
# so the GRU gates start unsaturated (tests/test_denoiser.py checks it on utterance_1).
FEATURE_OFFSET = -1.2
FEATURE_SCALE = 1.0


class LogMagnitude(keras.layers.Layer):
    """Magnitude spectrum ``(..., bins)`` -> scaled log magnitude ``(..., bins)``.

    ``0.5 * log(|X|^2 + eps^2)`` instead of ``log(|X|)``: finite, with bounded gradients, on
    silent frames, where ``|X|`` is 0 and the gradient of ``log`` is infinite.
    """

    def __init__(
        self,
        eps: float = LOG_EPS,
        offset: float = FEATURE_OFFSET,
        scale: float = FEATURE_SCALE,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.eps, self.offset, self.scale = float(eps), float(offset), float(scale)

    def call(self, magnitude):
        return (log_compress(tf.square(magnitude), self.eps) - self.offset) / self.scale

    def get_config(self):
        return {**super().get_config(), "eps": self.eps, "offset": self.offset, "scale": self.scale}


def _gru_step(units: int, bins: int, seed: int):
    """The part both step models share: the inputs ``[noisy_magnitude, previous_state]``, the
    log-magnitude features and one ``GRUCell`` step (layer names fixed). Checks the sizes, then
    calls ``make_deterministic(seed)``: Keras draws each layer's initial weights from Python's
    global random state when the layer is made, and a kernel's state moves between cells (a
    reconnecting JupyterLab page moves it), so seeding happens here, where they are drawn."""
    units, bins = check_int(units, "units", 1), check_int(bins, "bins", 2)
    make_deterministic(check_int(seed, "seed", 0))
    noisy_magnitude = keras.Input((int(bins),), name="noisy_magnitude")
    previous_state = keras.Input((int(units),), name="previous_state")
    features = LogMagnitude(name="features")(noisy_magnitude)
    gru_output, [next_state] = keras.layers.GRUCell(int(units), name="gru_cell")(
        features, [previous_state]
    )
    return [noisy_magnitude, previous_state], features, gru_output, next_state


def make_gru_step_model(units: int = GRU_UNITS, bins: int = BINS, seed: int = 0) -> keras.Model:
    """The GRU question's step model: ``[noisy_magnitude, previous_state] -> [mask,
    next_state]``.

    Shapes: ``noisy_magnitude`` and ``mask`` are ``(batch, bins)``, the states
    ``(batch, units)``. Five trainable variables: ``gru_cell/{kernel, recurrent_kernel, bias}``
    and ``mask/{kernel, bias}``. Layer names are fixed, so variable names are the same however
    many models a notebook builds. The initial weights come from ``seed`` alone (see
    ``_gru_step``).
    """
    inputs, features, gru_output, next_state = _gru_step(units, bins, seed)
    mask = keras.layers.Dense(int(bins), activation="sigmoid", name="mask")(gru_output)
    return keras.Model(inputs, [mask, next_state], name="gru_step_model")


def apply_masks(masks, noisy_spectrum, length: int) -> tf.Tensor:
    """Masks ``(..., frames, bins)`` in [0, 1] times the noisy ``stft`` -> audio ``(..., length)``.

    All in TensorFlow (``helpers.audio.istft``), so the tape follows it back to the masks.
    """
    noisy_spectrum = tf.convert_to_tensor(noisy_spectrum)
    masks = tf.convert_to_tensor(masks)
    if not masks.shape[-2:].is_compatible_with(noisy_spectrum.shape[-2:]):
        raise ValueError(
            f"masks of shape {tuple(masks.shape)} do not fit the spectrum of shape "
            f"{tuple(noisy_spectrum.shape)}; expected one mask value per frame and "
            "bin."
        )
    return istft(tf.cast(masks, noisy_spectrum.dtype) * noisy_spectrum, length)


def denoising_loss(clean_audio, enhanced_audio) -> tf.Tensor:
    """Mean squared error of each clip, summed over the batch (the GRU question's
    ``total_loss``)."""
    return tf.reduce_sum(tf.reduce_mean(tf.square(clean_audio - enhanced_audio), axis=-1))


# --------------------------------------------------------------------------- conv denoiser


class Gain(keras.layers.Layer):
    """Multiplies its input by one trainable scalar, ``gain`` (starts at 1)."""

    def build(self, input_shape):
        self.gain = self.add_weight(shape=(), initializer="ones", name="gain")

    def call(self, inputs):
        return inputs * self.gain


def make_conv_denoiser(
    kernel_size: int = 33, channels: int = 8, seed: int | None = None
) -> keras.Model:
    """A tiny waveform denoiser: ``estimate = gain * noisy + mix(tanh(filter_bank(noisy)))``.

    A bank of ``channels`` FIR filters, a tanh, a 1x1 mix back to one channel, plus the input
    scaled by a trainable ``gain`` (starts at 1), so an untrained model starts close to passing
    its input through, like a pre-trained model being fine-tuned. Five variables: two kernels,
    two biases and the gain. With ``seed`` the initial weights come from that seed and the
    global random state is left alone; without it they follow ``make_deterministic``.
    """
    noisy = keras.Input(shape=(None, 1), name="noisy")
    hidden = keras.layers.Conv1D(
        channels,
        kernel_size,
        padding="same",
        activation="tanh",
        kernel_initializer=keras.initializers.GlorotUniform(seed=seed),
        name="filter_bank",
    )(noisy)
    correction = keras.layers.Conv1D(
        1, 1, name="mix", kernel_initializer=keras.initializers.RandomNormal(stddev=0.05, seed=seed)
    )(hidden)
    passed = Gain(name="skip")(noisy)
    estimate = keras.layers.Add(name="estimate")([passed, correction])
    return keras.Model(noisy, estimate, name="conv_denoiser")


def make_dense_frame_denoiser(
    seed: int = 0, units: int = 16, frame_length: int = FRAME_LENGTH
) -> keras.Model:
    """A frame-by-frame denoiser small enough to read its gradient report at a glance
    (notebook 05): ``frame_length`` samples in, ``units`` tanh units, ``frame_length`` samples
    out; four variables. Calls ``make_deterministic(seed)`` first, so its weights repeat."""
    if units < 1 or frame_length < 1:
        raise ValueError(f"units and frame_length must be >= 1; got {units}, {frame_length}.")
    make_deterministic(check_int(seed, "seed", 0))
    return keras.Sequential(
        [
            keras.Input((frame_length,)),
            keras.layers.Dense(units, activation="tanh", name="encoder"),
            keras.layers.Dense(frame_length, name="decoder"),
        ],
        name="dense_frame_denoiser",
    )


# --------------------------------------------------------------------------- running either


def is_step_model(model) -> bool:
    """True for a step model (two inputs, ``[frame, state]``), False for a waveform model."""
    if not isinstance(model, keras.Model):
        raise TypeError(
            f"expected a Keras model (make_gru_step_model or make_conv_denoiser); got "
            f"{type(model).__name__}."
        )
    return len(model.inputs) == 2


def enhance(model: keras.Model, noisy_audio, chunk_size: int | None = None) -> tf.Tensor:
    """One ``(samples,)`` noisy clip -> the enhanced ``(samples,)`` clip, all in TensorFlow.

    A step model runs as ``stft`` -> ``unroll`` (masks) -> ``apply_masks``; a waveform model
    runs on the samples directly. Differentiable, and usable inside ``tf.function``.
    ``chunk_size`` (step models only) is ``unroll``'s: truncated backprop at chunk edges.
    """
    check_audio(noisy_audio, "noisy_audio")
    noisy_audio = tf.convert_to_tensor(noisy_audio, tf.float32)
    if not is_step_model(model):
        if chunk_size is not None:
            raise ValueError("chunk_size is for step models; a waveform model has no state.")
        return model(noisy_audio[None, :, None])[0, :, 0]
    spectrum = stft(noisy_audio)[tf.newaxis]
    masks, _ = unroll(model, tf.abs(spectrum), chunk_size=chunk_size)
    length = noisy_audio.shape[-1]  # None in a tf.function traced for any length
    if length is None:
        length = tf.shape(noisy_audio)[-1]
    return apply_masks(masks, spectrum, length)[0]


_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def denoise(
    model: keras.Model, noisy, sample_rate: int = SAMPLE_RATE, chunk_size: int | None = None
) -> np.ndarray:
    """Denoise one clip (inference): ``noisy`` is 16 kHz mono float audio ``(samples,)``;
    returns the enhanced clip as float32 ``(samples,)``, the same length. It runs ``enhance``
    in a ``tf.function`` traced once per model (and ``chunk_size``) for any clip length;
    ``enhance`` itself is the differentiable path, for use inside a ``GradientTape``."""
    is_step_model(model)  # a TypeError for anything but a Keras model
    if int(sample_rate) != SAMPLE_RATE:
        raise AudioError(
            f"noisy has sample rate {sample_rate} Hz; expected {SAMPLE_RATE} Hz. "
            "Resample first (librosa.resample)."
        )
    check_audio(noisy, "noisy")
    noisy = np.asarray(noisy)
    if len(noisy) < HOP_LENGTH:
        raise AudioError(f"noisy has {len(noisy)} samples; expected at least {HOP_LENGTH}.")
    runners = _RUNNERS.setdefault(model, {})
    if chunk_size not in runners:  # chunks need the number of frames when tracing
        signature = [tf.TensorSpec([None], tf.float32)] if chunk_size is None else None
        runners[chunk_size] = tf.function(
            lambda audio: enhance(model, audio, chunk_size),
            autograph=False,
            input_signature=signature,
        )
    return runners[chunk_size](tf.constant(noisy, tf.float32)).numpy()


# --------------------------------------------------------------------------- the capstone's model


class FloorGain(keras.layers.Layer):
    """Mask from how far each bin rises above a noise floor:
    ``sigmoid(slope * (features - floor) + bias)``, with a learned ``slope`` and ``bias`` per
    bin. Inputs ``[features, floor]``, both ``(batch, bins)`` log magnitudes."""

    def build(self, input_shape):
        bins = input_shape[0][-1]
        self.slope = self.add_weight(
            shape=(bins,), name="slope", initializer=keras.initializers.Constant(2.0)
        )
        self.bias = self.add_weight(shape=(bins,), name="bias", initializer="zeros")

    def call(self, inputs):
        features, floor = inputs
        return tf.sigmoid(self.slope * (features - floor) + self.bias)


def make_gru_floor_step_model(
    units: int = GRU_UNITS, bins: int = BINS, seed: int = 0
) -> keras.Model:
    """The capstone's step model, same interface as ``make_gru_step_model`` (``[noisy_magnitude,
    previous_state] -> [mask, next_state]``, runs with ``unroll``): the GRU's output is read
    as a per-bin noise floor (a Dense layer, ``floor``), and the mask is a per-bin gain on how
    far the frame's log magnitude rises above it (``FloorGain``). The gain is one function of
    one bin's height above the floor, so what the model learns about a bin of noise in a
    pause carries over to the bins between the harmonics of a vowel. Seven variables, whose
    initial weights come from ``seed`` alone."""
    inputs, features, gru_output, next_state = _gru_step(units, bins, seed)
    floor = keras.layers.Dense(int(bins), name="floor")(gru_output)
    mask = FloorGain(name="mask")([features, floor])
    return keras.Model(inputs, [mask, next_state], name="gru_floor_step_model")
