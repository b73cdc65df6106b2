"""The voiced/unvoiced loss of the voicing-loss question: harmonic and formant errors on STFT
magnitudes, the question's per-frame ``tf.cond`` / ``tf.while_loop`` version
(``cond_loop_voicing_loss``), and the masked, vectorised fix (``masked_voicing_loss``).

Both losses are called ``loss(reference, estimate, labels) -> scalar``: ``reference`` and
``estimate`` are mono ``(samples,)`` audio (arrays, tensors or ``tf.Variable``), ``labels`` a
``helpers.audio.FrameLabels`` with one entry per centred frame. The **harmonic error**
compares the magnitudes at the first ``NUM_HARMONICS`` harmonics of the reference f0, the
**formant error** the mean energy in a band around F1 and F2, both as log levels
``0.5 * log(power + LOG_EPS**2)``, whose slope stays bounded on silent frames. The masked loss
adds a **reconstruction error** on frames that are not voiced, so a file without speech still
says what to output. Labels are NumPy constants: to run a loss inside ``tf.function``, close
over them (``as_tf_function(loss_fn, labels)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from helpers.audio import (
    FRAME_LENGTH,
    HOP_LENGTH,
    LOG_EPS,
    SAMPLE_RATE,
    AudioError,
    FrameLabels,
    LabelError,
    Voicing,
    check_audio,
    check_sample_rate,
    log_compress,
    stft_magnitude,
)

EPSILON = 1e-5  # the question's epsilon, added to every frame's error (a constant: no gradient)
NUM_HARMONICS = 8  # harmonics 1..8 of f0: all below 3.2 kHz for f0 up to 400 Hz
DEFAULT_SILENCE_WEIGHT = 1.0  # default weight of the term that covers silent and unvoiced frames

Compress = Callable[[tf.Tensor], tf.Tensor]


# ------------------------ Log compression and the error terms (all frames at once, TensorFlow ops)


def harmonic_power(
    magnitude: tf.Tensor,
    f0: tf.Tensor,
    sample_rate: int = SAMPLE_RATE,
    frame_length: int = FRAME_LENGTH,
) -> tf.Tensor:
    """Power at harmonics ``k * f0`` (k = 1..NUM_HARMONICS) of each frame, ``(frames, K)``.

    ``magnitude`` is ``(frames, bins)``; the magnitude at a harmonic is linearly interpolated
    between the two nearest bins, then squared.
    """
    bins = tf.shape(magnitude)[-1]
    k = tf.range(1, NUM_HARMONICS + 1, dtype=tf.float32)
    position = tf.expand_dims(f0, -1) * k * (frame_length / sample_rate)
    position = tf.clip_by_value(position, 0.0, tf.cast(bins - 2, tf.float32))
    low = tf.floor(position)
    frac = position - low
    low = tf.cast(low, tf.int32)
    below = tf.gather(magnitude, low, batch_dims=1)
    above = tf.gather(magnitude, low + 1, batch_dims=1)
    return tf.square((1.0 - frac) * below + frac * above)


def harmonic_errors(
    reference_mag: tf.Tensor,
    estimate_mag: tf.Tensor,
    f0: tf.Tensor,
    compress: Compress = log_compress,
    sample_rate: int = SAMPLE_RATE,
    frame_length: int = FRAME_LENGTH,
) -> tf.Tensor:
    """Harmonic error of every frame, ``(frames,)``: mean over harmonics of the squared
    difference of compressed harmonic levels, estimate against reference (reference f0)."""
    f0 = tf.convert_to_tensor(f0, tf.float32)
    ref = compress(harmonic_power(reference_mag, f0, sample_rate, frame_length))
    est = compress(harmonic_power(estimate_mag, f0, sample_rate, frame_length))
    return tf.reduce_mean(tf.square(est - ref), axis=-1)


def formant_bands(
    formants: tf.Tensor,
    num_bins: int,
    sample_rate: int = SAMPLE_RATE,
    frame_length: int = FRAME_LENGTH,
) -> tf.Tensor:
    """0/1 band weights ``(frames, 2, bins)``: bins within ``max(62.5, 0.1 F)`` Hz of F1, F2."""
    freqs = tf.range(num_bins, dtype=tf.float32) * (sample_rate / frame_length)
    half_width = tf.maximum(62.5, 0.1 * formants)
    distance = tf.abs(freqs - tf.expand_dims(formants, -1))
    return tf.cast(distance <= tf.expand_dims(half_width, -1), tf.float32)


def formant_errors(
    reference_mag: tf.Tensor,
    estimate_mag: tf.Tensor,
    formants: tf.Tensor,
    compress: Compress = log_compress,
    sample_rate: int = SAMPLE_RATE,
    frame_length: int = FRAME_LENGTH,
) -> tf.Tensor:
    """Formant error of every frame, ``(frames, 2)``: squared difference of the compressed
    mean band energy around F1 and around F2 (``formants`` is ``(frames, 2)`` in Hz)."""
    formants = tf.convert_to_tensor(formants, tf.float32)
    bands = formant_bands(formants, int(reference_mag.shape[-1]), sample_rate, frame_length)
    count = tf.reduce_sum(bands, axis=-1)  # >= 4 bins for any formant: never zero

    def band_energy(magnitude):
        return tf.einsum("tb,tfb->tf", tf.square(magnitude), bands) / count

    return tf.square(compress(band_energy(estimate_mag)) - compress(band_energy(reference_mag)))


def reconstruction_errors(reference_mag: tf.Tensor, estimate_mag: tf.Tensor) -> tf.Tensor:
    """How far the estimate's spectrum is from the reference's, per frame, ``(frames,)``:
    the log level of the mean squared magnitude error, above the -60 dB floor,
    ``0.5 * log(mean_bins (|E| - |R|)**2 + LOG_EPS**2) - log(LOG_EPS)``.

    It is 0 when the estimate matches, grows by 1 per factor e of error, and its gradient is
    bounded. On a silent reference it is the estimate's own level: it asks for silence. The
    error is squared *before* the log, so a loud error in a few bins (a DC offset, a hum) costs
    as much as it sounds; a mean of per-bin log differences would let a model buy quiet bins
    with a loud DC offset.
    """
    error_power = tf.reduce_mean(tf.square(estimate_mag - reference_mag), axis=-1)
    return log_compress(error_power) - float(np.log(LOG_EPS))


# ------------------------------- Which frames get which term: the question's look-ahead conditions


@dataclass(frozen=True)
class VoicingMasks:
    """Per-frame booleans: which frames get the harmonic term, the formant term and the
    silence term. ``harmonic`` and ``formant`` are the question's conditions, vectorised."""

    harmonic: np.ndarray
    formant: np.ndarray
    silence: np.ndarray

    def counts(self) -> dict[str, int]:
        return {name: int(getattr(self, name).sum()) for name in ("harmonic", "formant", "silence")}


def frame_conditions(voicing: np.ndarray, i: int) -> tuple[bool, bool, bool]:
    """The question's three conditions for frame ``i``, in plain Python (for reading and tests):
    ``(is_voiced_h, is_voiced_f, is_unvoiced_f)``. Frames past the end count as silent."""
    n = len(voicing)

    def v(j: int) -> int:
        return int(voicing[j]) if j < n else int(Voicing.SILENT)

    voiced, unvoiced = int(Voicing.VOICED), int(Voicing.UNVOICED)
    is_voiced_h = i < n - 1 and v(i) == voiced and v(i + 1) == voiced
    is_voiced_f = i < n - 1 and v(i) == voiced and (v(i + 1) == voiced or v(i + 2) == voiced)
    is_unvoiced_f = (
        i < n - 2 and v(i) == unvoiced and (v(i + 1) == unvoiced or v(i + 2) == unvoiced)
    )
    return is_voiced_h, is_voiced_f, is_unvoiced_f


def voicing_masks(labels: FrameLabels) -> VoicingMasks:
    """The question's per-frame conditions for all frames at once, plus the silence-term mask.

    * harmonic: frame ``i`` and frame ``i + 1`` are voiced (and ``i`` is not the last frame);
    * formant: frame ``i`` is voiced and one of the next two is, or frame ``i`` is unvoiced and
      one of the next two is (and ``i < n - 2``);
    * silence: every frame that is not voiced (silent or unvoiced).
    """
    _check_labels(labels)
    v = np.pad(labels.voicing, (0, 2), constant_values=int(Voicing.SILENT))
    n = labels.num_frames
    index = np.arange(n)
    voiced, unvoiced = v == Voicing.VOICED, v == Voicing.UNVOICED
    harmonic = (index < n - 1) & voiced[:n] & voiced[1 : n + 1]
    voiced_f = (index < n - 1) & voiced[:n] & (voiced[1 : n + 1] | voiced[2 : n + 2])
    unvoiced_f = (index < n - 2) & unvoiced[:n] & (unvoiced[1 : n + 1] | unvoiced[2 : n + 2])
    return VoicingMasks(harmonic, voiced_f | unvoiced_f, labels.voicing != Voicing.VOICED)


# -------------------------------------------------------------- Input checks shared by both losses


def check_loss_inputs(
    reference, estimate, labels: FrameLabels, sample_rate: int = SAMPLE_RATE
) -> None:
    """Raise a clear error unless reference and estimate are float ``(samples,)`` audio of the
    same length, at the course sample rate, and ``labels`` fit them frame for frame."""
    _check_labels(labels)
    check_sample_rate(sample_rate, what="the loss input")
    if labels.sample_rate != int(sample_rate):
        raise LabelError(
            f"labels were made at {labels.sample_rate} Hz but the audio is at {sample_rate} Hz."
        )
    shapes = {}
    for name, audio in (("reference", reference), ("estimate", estimate)):
        check_audio(audio, f"{name} (one clip at a time)", values=False)
        shapes[name] = tuple(audio.shape)[0] if hasattr(audio, "shape") else len(audio)
    if (
        shapes["reference"] is not None
        and shapes["estimate"] is not None
        and shapes["reference"] != shapes["estimate"]
    ):
        raise AudioError(
            f"reference has {shapes['reference']} samples but estimate has "
            f"{shapes['estimate']}; expected the same clip length."
        )
    if shapes["reference"] is not None:
        labels.check_fits(shapes["reference"], sample_rate)


def _check_labels(labels: FrameLabels) -> None:
    if not isinstance(labels, FrameLabels):
        raise TypeError(
            f"labels must be helpers.audio.FrameLabels (one entry per frame); got "
            f"{type(labels).__name__}."
        )
    bad = np.flatnonzero((labels.voicing == Voicing.VOICED) & ~(labels.f0 > 0))
    if bad.size:
        raise LabelError(
            f"every voiced frame needs f0 > 0; frames {bad[:5].tolist()} have "
            f"f0 = {labels.f0[bad[:5]].tolist()}."
        )
    if (labels.frame_length, labels.hop_length) != (FRAME_LENGTH, HOP_LENGTH):
        raise LabelError(
            f"labels use frame_length {labels.frame_length} and hop_length "
            f"{labels.hop_length}; the losses use {FRAME_LENGTH} and {HOP_LENGTH}."
        )


def magnitudes(reference, estimate) -> tuple[tf.Tensor, tf.Tensor]:
    """``stft_magnitude`` of reference and estimate: what both losses read."""
    reference = tf.convert_to_tensor(reference, tf.float32)
    estimate = tf.convert_to_tensor(estimate, tf.float32)  # a Variable stays on the tape
    return stft_magnitude(reference), stft_magnitude(estimate)


# ------------------------------------- The question's loss: per-frame tf.cond inside tf.while_loop


def cond_loop_voicing_loss(
    reference,
    estimate,
    labels: FrameLabels,
    *,
    back_prop: bool | None = None,
    else_scale: float | None = None,
    logical_conditions: bool = False,
    pad_lookahead: bool = True,
    sample_rate: int = SAMPLE_RATE,
) -> tf.Tensor:
    """The question's loss, faithfully: a ``tf.while_loop`` over frames whose body decides with
    ``tf.cond`` whether the frame gets a harmonic and a formant error, and writes each frame's
    error (or ``tf.zeros`` + epsilon) to a ``TensorArray``. The question's fixes:
    ``back_prop=True`` ("fix 3", the default anyway), ``else_scale=1e-10`` ("fix 1": the false
    branches return ``reduce_mean(model_frame) * else_scale``) and ``logical_conditions=True``
    ("fix 2": the ``tf.logical_*`` tensors instead of ``tf.cond(..., lambda: True, ...)``).

    On purpose, unlike the question's code: the voicing is padded with two silent frames so
    the look-ahead reads ``speechs[i + 1]``, ``speechs[i + 2]`` stay in bounds
    (``pad_lookahead=False`` reads past the end: TensorFlow raises on a CPU, while on a GPU
    ``tf.gather`` returns 0 for the index out of range); unvoiced is
    ``Voicing.UNVOICED`` (2, not 3); the ``flags`` are left out; f0 comes from the labels.
    """

    check_loss_inputs(reference, estimate, labels, sample_rate)
    ref_mag, est_mag = magnitudes(reference, estimate)
    return cond_loop_loss_on_magnitudes(
        ref_mag,
        est_mag,
        labels,
        back_prop=back_prop,
        else_scale=else_scale,
        logical_conditions=logical_conditions,
        pad_lookahead=pad_lookahead,
        sample_rate=sample_rate,
    )


def _at(values: tf.Tensor, j) -> tf.Tensor:
    """``values[j]`` by ``tf.gather`` (faster in the loop); out of range it raises on a CPU
    and returns 0 on a GPU."""
    return tf.gather(values, j)


def _one(frame_values: tf.Tensor) -> tf.Tensor:
    """A batch of one frame, for the all-frames error functions."""
    return tf.expand_dims(frame_values, 0)


def cond_loop_loss_on_magnitudes(
    ref_mag: tf.Tensor,
    est_mag: tf.Tensor,
    labels: FrameLabels,
    *,
    back_prop: bool | None = None,
    else_scale: float | None = None,
    logical_conditions: bool = False,
    pad_lookahead: bool = True,
    sample_rate: int = SAMPLE_RATE,
) -> tf.Tensor:
    """``cond_loop_voicing_loss`` from STFT magnitudes ``(frames, bins)`` (no input checks)."""
    num_frames = labels.num_frames
    padding = 2 if pad_lookahead else 0
    speechs = tf.constant(np.pad(labels.voicing, (0, padding), constant_values=int(Voicing.SILENT)))
    f0 = tf.constant(labels.f0, tf.float32)
    formants = tf.constant(np.stack([labels.f1, labels.f2], axis=1), tf.float32)
    voiced, unvoiced = int(Voicing.VOICED), int(Voicing.UNVOICED)

    def harmonic_else(model_frame):
        if else_scale is None:
            return tf.zeros((1,), dtype=tf.float32)
        return tf.reduce_mean(model_frame, keepdims=True) * else_scale

    def formant_else(model_frame):
        if else_scale is None:
            return tf.zeros((2,), dtype=tf.float32)
        return tf.tile(tf.reduce_mean(model_frame, keepdims=True) * else_scale, [2])

    def decide(condition):  # the question's code: tf.cond(condition, lambda: True, lambda: False)
        if logical_conditions:  # the answer's "fix 2": the tf.logical_* tensor itself
            return condition
        return tf.cond(condition, lambda: True, lambda: False)

    def body(i, harmonic_errors_ta, formant_errors_ta):
        is_voiced_h = decide(
            tf.logical_and(
                tf.logical_and(i < num_frames - 1, tf.equal(_at(speechs, i), voiced)),
                tf.logical_and(
                    tf.equal(_at(speechs, i), voiced), tf.equal(_at(speechs, i + 1), voiced)
                ),
            )
        )
        is_voiced_f = decide(
            tf.logical_and(
                tf.logical_and(i < num_frames - 1, tf.equal(_at(speechs, i), voiced)),
                tf.logical_or(
                    tf.equal(_at(speechs, i + 1), voiced), tf.equal(_at(speechs, i + 2), voiced)
                ),
            )
        )
        is_unvoiced_f = decide(
            tf.logical_and(
                tf.logical_and(i < num_frames - 2, tf.equal(_at(speechs, i), unvoiced)),
                tf.logical_or(
                    tf.equal(_at(speechs, i + 1), unvoiced), tf.equal(_at(speechs, i + 2), unvoiced)
                ),
            )
        )
        ref_frame, model_frame = _at(ref_mag, i), _at(est_mag, i)
        harmonic_error = (
            tf.cond(
                is_voiced_h,
                lambda: harmonic_errors(
                    _one(ref_frame), _one(model_frame), _one(_at(f0, i)), sample_rate=sample_rate
                ),
                lambda: harmonic_else(model_frame),
            )
            + EPSILON
        )
        formant_error = (
            tf.cond(
                tf.logical_or(is_voiced_f, is_unvoiced_f),
                lambda: tf.reshape(
                    formant_errors(
                        _one(ref_frame),
                        _one(model_frame),
                        _one(_at(formants, i)),
                        sample_rate=sample_rate,
                    ),
                    (2,),
                ),
                lambda: formant_else(model_frame),
            )
            + EPSILON
        )
        return (
            i + 1,
            harmonic_errors_ta.write(i, harmonic_error),
            formant_errors_ta.write(i, formant_error),
        )

    harmonic_ta = tf.TensorArray(tf.float32, size=num_frames, element_shape=(1,))
    formant_ta = tf.TensorArray(tf.float32, size=num_frames, element_shape=(2,))
    extra = {} if back_prop is None else {"back_prop": back_prop}
    _, harmonic_ta, formant_ta = tf.while_loop(
        lambda i, *_: i < num_frames, body, [tf.constant(0), harmonic_ta, formant_ta], **extra
    )
    return tf.reduce_mean(harmonic_ta.stack()) + tf.reduce_mean(formant_ta.stack())


# ----------------- The fix: every frame at once, masks, double where, and a term for silent frames


def masked_voicing_loss(
    reference,
    estimate,
    labels: FrameLabels,
    silence_weight: float = DEFAULT_SILENCE_WEIGHT,
    sample_rate: int = SAMPLE_RATE,
) -> tf.Tensor:
    """The fix: the same harmonic and formant terms on all frames at once, selected by masks.

    * No per-frame loop: one STFT, one gather, one band sum for the whole clip.
    * NaN-safe by the double where: on masked-out frames the inputs of each term are first
      replaced by harmless values (magnitude 1, f0 100 Hz, formants 1 kHz), so no branch that
      ``tf.where`` throws away can produce inf or NaN (whose gradient would poison the sum).
    * ``silence_weight * spectral error`` on every frame that is not voiced (silent and
      unvoiced) tells the model what to do there: reproduce the reference, which on a silent
      file means output silence. With ``silence_weight=0.0`` the value equals
      ``cond_loop_voicing_loss`` (same terms, same epsilon, same averaging).
    """
    check_loss_inputs(reference, estimate, labels, sample_rate)
    if not np.isfinite(silence_weight) or silence_weight < 0:
        raise ValueError(f"silence_weight must be a finite number >= 0; got {silence_weight}.")
    ref_mag, est_mag = magnitudes(reference, estimate)
    return masked_loss_on_magnitudes(ref_mag, est_mag, labels, silence_weight, sample_rate)


def masked_loss_on_magnitudes(
    ref_mag: tf.Tensor,
    est_mag: tf.Tensor,
    labels: FrameLabels,
    silence_weight: float = DEFAULT_SILENCE_WEIGHT,
    sample_rate: int = SAMPLE_RATE,
    voiced_weight: float = 0.0,
) -> tf.Tensor:
    """``masked_voicing_loss`` from STFT magnitudes ``(frames, bins)`` (no input checks).

    ``voiced_weight`` (0 by default: the loss of notebooks 03-05) adds that weight times
    ``reconstruction_errors`` on the voiced frames the harmonic term covers: it scores every
    bin, so also the noise *between* the harmonics, which the harmonic and formant terms never
    see. The capstone's recipe uses it."""
    masks = voicing_masks(labels)
    harmonic_mask = tf.constant(masks.harmonic)
    formant_mask = tf.constant(masks.formant)

    # First where: make the inputs safe on frames the term does not cover.
    h_rows = harmonic_mask[:, None]
    safe_f0 = tf.where(harmonic_mask, tf.constant(labels.f0), 100.0)
    harmonic = harmonic_errors(
        tf.where(h_rows, ref_mag, 1.0),
        tf.where(h_rows, est_mag, 1.0),
        safe_f0,
        sample_rate=sample_rate,
    )
    f_rows = formant_mask[:, None]
    formants = tf.constant(np.stack([labels.f1, labels.f2], axis=1), tf.float32)
    formant = formant_errors(
        tf.where(f_rows, ref_mag, 1.0),
        tf.where(f_rows, est_mag, 1.0),
        tf.where(f_rows, formants, 1000.0),
        sample_rate=sample_rate,
    )
    # Second where: keep the term only where it applies (zeros elsewhere, like the question's code).
    harmonic = tf.where(harmonic_mask, harmonic, 0.0) + EPSILON
    formant = tf.where(f_rows, formant, 0.0) + EPSILON
    loss = tf.reduce_mean(harmonic) + tf.reduce_mean(formant)
    if silence_weight:
        silence = tf.where(tf.constant(masks.silence), reconstruction_errors(ref_mag, est_mag), 0.0)
        loss = loss + silence_weight * tf.reduce_mean(silence)
    if voiced_weight:
        voiced = tf.where(harmonic_mask, reconstruction_errors(ref_mag, est_mag), 0.0)
        loss = loss + voiced_weight * tf.reduce_mean(voiced)
    return loss


# --------------------------------------------------------------- Running a loss inside tf.function

LossFn = Callable[..., tf.Tensor]


def as_tf_function(loss_fn: LossFn, labels: FrameLabels, **loss_kwargs) -> LossFn:
    """``loss_fn`` for one clip's labels, traced once by ``tf.function``.

    Labels are NumPy constants, which ``tf.function`` cannot take as an argument, so they are
    closed over. The result keeps the ``(reference, estimate, labels)`` call shape and refuses
    other labels than the ones it was traced for.
    """
    # autograph=False: the losses have no Python control flow on tensors to convert, and
    # skipping autograph's source transformation makes tracing several times faster.
    graph = tf.function(
        lambda reference, estimate: loss_fn(reference, estimate, labels, **loss_kwargs),
        autograph=False,
    )

    def loss(reference, estimate, labels_: FrameLabels = labels) -> tf.Tensor:
        if labels_ is not labels:
            raise ValueError(
                "this tf.function was traced for other labels; build one per clip "
                "with as_tf_function(loss_fn, labels)."
            )
        return graph(reference, estimate)

    loss.__name__ = f"tf.function({getattr(loss_fn, '__name__', 'loss')})"
    return loss
