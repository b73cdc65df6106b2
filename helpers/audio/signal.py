"""Audio in and out, and the course's one STFT: framing, ``stft``/``istft`` and overlap-add.

Frame ``t`` is centred on sample ``t * hop_length``, exactly like librosa's ``center=True``
frames: the signal is zero-padded by ``frame_length // 2`` on both sides, then framed. A clip
of ``n`` samples therefore has ``1 + n // hop_length`` frames, and every per-frame quantity
of the course (labels, losses, the denoiser's masks, the plots) uses these frames.

* ``stft`` / ``istft``: the analysis/synthesis pair (``tf.signal.stft`` and
  ``tf.signal.inverse_stft``, periodic Hann window on both sides, weighted overlap-add). The
  denoiser, the losses and the spectrogram plot all read their spectra from ``stft``.
* ``frame`` / ``overlap_add``: the same centred frames in the time domain, for models that
  work on raw frames (notebook 05) and for per-frame levels.

Everything here works on NumPy arrays and on tensors, and stays differentiable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
import tensorflow as tf

from helpers.course import check_choice

SAMPLE_RATE = 16_000
FRAME_LENGTH = 512  # 32 ms at 16 kHz
HOP_LENGTH = 256  # 16 ms
LOG_EPS = 1e-3  # floor of the log compression: -60 dB below a magnitude of 1


# These helpers have no tensor-dependent Python control flow, so AutoGraph has nothing to
# convert; skipping it keeps tracing fast and lets AudioError reach the caller unwrapped.
_plain_python = tf.autograph.experimental.do_not_convert


class AudioError(ValueError):
    """Audio that a helper cannot use: wrong rank, empty, NaN, wrong sample rate."""

    # AutoGraph re-raises an error from inside tf.function as its own type only when the
    # type's __init__ is Exception.__init__; otherwise the learner gets a StagingError.
    __init__ = Exception.__init__


@_plain_python
def check_audio(
    audio, name: str = "audio", ranks: tuple[int, ...] = (1,), *, values: bool = True
) -> None:
    """Raise ``AudioError`` unless ``audio`` is non-empty, finite, real audio of an allowed rank.

    ``ranks=(1,)`` means ``(samples,)``; ``(1, 2)`` also allows ``(batch, samples)``.
    ``values=False`` checks only shape and dtype (a loss must still compute on NaN input).
    """
    shape = tuple(audio.shape) if hasattr(audio, "shape") else np.shape(audio)
    if len(shape) not in ranks:
        expected = " or ".join(
            {1: "(samples,)", 2: "(batch, samples)"}.get(r, f"rank {r}") for r in ranks
        )
        raise AudioError(
            f"{name} must have shape {expected}; got shape {shape}. "
            "Stereo or multi-channel audio: mix it down to mono first."
        )
    if 0 in shape:
        raise AudioError(f"{name} is empty (shape {shape}); expected at least one sample.")
    dtype = tf.as_dtype(audio.dtype) if hasattr(audio, "dtype") else tf.float64
    if not dtype.is_floating:
        raise AudioError(
            f"{name} must be floating point in [-1, 1]; got dtype {dtype.name}. "
            "Convert integer PCM with load_audio or divide by 32768."
        )
    if not values or tf.is_symbolic_tensor(audio):
        return  # inside tf.function: shape and dtype are checked, values exist only at run time
    values = audio.numpy() if hasattr(audio, "numpy") else np.asarray(audio)
    finite = np.isfinite(values)
    if not finite.any():
        raise AudioError(f"{name} is all NaN/inf; expected finite samples.")
    if not finite.all():
        raise AudioError(
            f"{name} has {int((~finite).sum())} NaN/inf samples; expected finite "
            "samples (find where they came from before training on them)."
        )


def check_sample_rate(sample_rate: int, expected: int = SAMPLE_RATE, what: str = "audio") -> None:
    """Raise ``AudioError`` unless ``sample_rate`` is the rate the course works at."""
    if int(sample_rate) != int(expected):
        raise AudioError(
            f"{what} has sample rate {sample_rate} Hz; expected {expected} Hz. "
            f"Resample first, e.g. librosa.resample(y, orig_sr={sample_rate}, "
            f"target_sr={expected})."
        )


def load_audio(
    path: str | Path, expected_sample_rate: int | None = SAMPLE_RATE
) -> tuple[np.ndarray, int]:
    """Read a mono WAV file as float32 in [-1, 1]; returns ``(audio, sample_rate)``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no audio file at {path}")
    audio, sample_rate = sf.read(path, dtype="float32", always_2d=True)
    if audio.shape[1] != 1:
        raise AudioError(f"{path.name} has {audio.shape[1]} channels; expected mono.")
    if expected_sample_rate is not None:
        check_sample_rate(sample_rate, expected_sample_rate, what=path.name)
    return audio[:, 0], sample_rate


def save_audio(path: str | Path, audio, sample_rate: int = SAMPLE_RATE) -> Path:
    """Write mono audio as 16-bit PCM WAV (values are clipped to [-1, 1])."""
    values = audio.numpy() if hasattr(audio, "numpy") else np.asarray(audio)
    check_audio(values)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, np.clip(values, -1.0, 1.0), int(sample_rate), subtype="PCM_16")
    return path


def num_frames(num_samples: int, hop_length: int = HOP_LENGTH) -> int:
    """How many centred frames a clip of ``num_samples`` has (librosa's count)."""
    return 1 + int(num_samples) // int(hop_length)


@_plain_python
def frame(audio, frame_length: int = FRAME_LENGTH, hop_length: int = HOP_LENGTH) -> tf.Tensor:
    """Centred frames ``(..., frames, frame_length)`` of ``(samples,)`` or ``(batch, samples)``."""
    _check_frame_params(frame_length, hop_length)
    check_audio(audio, ranks=(1, 2))
    audio = tf.convert_to_tensor(audio, dtype=tf.float32)
    half = frame_length // 2
    paddings = [[0, 0]] * (audio.shape.rank - 1) + [[half, half]]
    padded = tf.pad(audio, paddings)
    return tf.signal.frame(padded, frame_length, hop_length, pad_end=False)


def frame_array(
    audio, frame_length: int = FRAME_LENGTH, hop_length: int = HOP_LENGTH
) -> np.ndarray:
    """``frame``'s centred frames ``(frames, frame_length)`` of ``(samples,)`` audio as a
    float64 NumPy array (a read-only view), for measuring levels and spectra in NumPy."""
    _check_frame_params(frame_length, hop_length)
    check_audio(audio)
    padded = np.pad(np.asarray(audio, dtype=np.float64), frame_length // 2)
    return np.lib.stride_tricks.sliding_window_view(padded, frame_length)[::hop_length]


@_plain_python
def overlap_add(
    frames, hop_length: int = HOP_LENGTH, length: int | None = None, window: str | None = "hann"
) -> tf.Tensor:
    """Rebuild audio from centred frames with ``tf.signal.overlap_and_add``.

    With ``window="hann"`` each frame is multiplied by a periodic Hann window and the sum is
    divided by the summed window, so ``overlap_add(frame(x))`` gives back ``x`` (to float
    precision) for any hop up to half the frame length. ``length`` trims to the clip length.
    """
    frames = tf.convert_to_tensor(frames, dtype=tf.float32)
    if frames.shape.rank not in (2, 3):
        raise AudioError(
            f"frames must have shape (frames, frame_length) or (batch, frames, "
            f"frame_length); got shape {tuple(frames.shape)}."
        )
    frame_length = int(frames.shape[-1])
    _check_frame_params(frame_length, hop_length)
    if check_choice(window, ("hann", None), "window") == "hann":
        if hop_length > frame_length // 2:
            raise AudioError(
                f"hop_length {hop_length} leaves gaps for a Hann window of "
                f"{frame_length}; use hop_length <= {frame_length // 2}."
            )
        w = hann_window(frame_length)
        summed = tf.signal.overlap_and_add(frames * w, hop_length)
        coverage = tf.signal.overlap_and_add(
            tf.tile(w[None, :], [tf.shape(frames)[-2], 1]), hop_length
        )
        audio = summed / tf.maximum(coverage, 1e-3)
    else:
        audio = tf.signal.overlap_and_add(frames, hop_length)
    half = frame_length // 2
    audio = audio[..., half:]
    if length is not None:
        available = audio.shape[-1]  # None inside tf.function when the frame count varies
        if available is not None and length > available:
            raise AudioError(f"asked for {length} samples but the frames cover only {available}.")
        audio = audio[..., :length]
    return audio


def hann_window(frame_length: int = FRAME_LENGTH, dtype: tf.DType = tf.float32) -> tf.Tensor:
    """The periodic Hann window (``scipy.signal.get_window("hann", n)``, librosa's default),
    used for analysis and synthesis alike."""
    return tf.signal.hann_window(frame_length, periodic=True, dtype=dtype)


@_plain_python
def stft(audio, frame_length: int = FRAME_LENGTH, hop_length: int = HOP_LENGTH) -> tf.Tensor:
    """Complex STFT ``(..., frames, frame_length // 2 + 1)`` of ``(samples,)`` or
    ``(batch, samples)`` audio: ``tf.signal.stft`` with a periodic Hann window on librosa's
    centred frames (``librosa.stft(center=True, pad_mode="constant")``, frames on axis -2)."""
    _check_frame_params(frame_length, hop_length)
    check_audio(audio, ranks=(1, 2))
    audio = tf.convert_to_tensor(audio, dtype=tf.float32)
    half = frame_length // 2
    padded = tf.pad(audio, [[0, 0]] * (audio.shape.rank - 1) + [[half, half]])
    return tf.signal.stft(
        padded, frame_length, hop_length, fft_length=frame_length, window_fn=hann_window
    )


@_plain_python
def istft(spectrum, length: int, hop_length: int = HOP_LENGTH) -> tf.Tensor:
    """Audio ``(..., length)`` from a spectrum ``(..., frames, bins)`` made by ``stft``.

    ``tf.signal.inverse_stft`` with the Hann window as synthesis window (weighted
    overlap-add), divided by the summed squared window, as ``librosa.istft`` does. So
    ``istft(stft(x), len(x))`` gives back ``x`` within 1e-5, the last samples included (a clip
    ending just before a hop boundary has its last few samples covered only by a window's tail,
    where float32 roundoff grows to about 1e-4).
    (``tf.signal.inverse_stft_window_fn`` assumes every sample is covered by the same number of
    frames; at the end of a centred clip fewer frames cover it, and its last up to
    ``frame_length - hop_length`` samples would come out scaled wrongly.)
    """
    spectrum = tf.convert_to_tensor(spectrum)
    if not spectrum.dtype.is_complex:
        raise AudioError(
            f"spectrum must be complex (from stft); got dtype {spectrum.dtype.name}."
            " To apply a real mask: istft(tf.cast(mask, tf.complex64) * spectrum, "
            "length)."
        )
    if spectrum.shape.rank not in (2, 3):
        raise AudioError(
            f"spectrum must have shape (frames, bins) or (batch, frames, bins); "
            f"got shape {tuple(spectrum.shape)}."
        )
    frame_length = 2 * (int(spectrum.shape[-1]) - 1)
    _check_frame_params(frame_length, hop_length)
    if hop_length > frame_length // 2:
        raise AudioError(
            f"hop_length {hop_length} leaves gaps for a Hann window of "
            f"{frame_length}; use hop_length <= {frame_length // 2}."
        )
    frames, half = spectrum.shape[-2], frame_length // 2
    if frames is not None and not 0 < length <= (frames - 1) * hop_length + half:
        raise AudioError(
            f"asked for {length} samples but {frames} frames cover "
            f"{(frames - 1) * hop_length + half}; expected the clip length that "
            "stft was given."
        )
    audio = tf.signal.inverse_stft(
        spectrum, frame_length, hop_length, fft_length=frame_length, window_fn=hann_window
    )
    window = hann_window(frame_length)
    coverage = tf.signal.overlap_and_add(
        tf.tile(tf.square(window)[None, :], [tf.shape(spectrum)[-2], 1]), hop_length
    )
    audio = audio / tf.maximum(coverage, 1e-8)
    return audio[..., half : half + length]


@_plain_python
def log_compress(power, eps: float = LOG_EPS) -> tf.Tensor:
    """``0.5 * log(power + eps**2)`` of a squared magnitude ``m**2``: close to ``log(m)`` for
    ``m >> eps``, flat at ``log(eps)`` for ``m -> 0``, so its slope stays bounded on silent
    frames, where the slope of ``log(m)`` is infinite. The model's log-magnitude features and
    the losses' log spectra both use it."""
    return 0.5 * tf.math.log(power + eps**2)


def stft_magnitude(
    audio, frame_length: int = FRAME_LENGTH, hop_length: int = HOP_LENGTH
) -> tf.Tensor:
    """``|stft(audio)|``, ``(..., frames, frame_length // 2 + 1)``."""
    return tf.abs(stft(audio, frame_length, hop_length))


def frame_energies(audio) -> np.ndarray:
    """Energy of each centred frame (the labels' frames), float64."""
    return np.sum(frame_array(audio) ** 2, axis=-1)


def level_change_db(before, after, frames) -> float:
    """How much louder ``after`` is than ``before`` on the chosen frames, in dB (negative:
    quieter): the energy of those centred frames, pooled. ``before`` and ``after`` are clips of
    one length and ``frames`` a boolean mask of their frames, or sequences of such triples
    (pooled over all of them: a level over a whole test set)."""
    if isinstance(before, (np.ndarray, tf.Tensor)):
        before, after, frames = [before], [after], [frames]
    if not len(before) == len(after) == len(frames) > 0:
        raise ValueError(
            "level_change_db needs as many clips after as before, one frame mask "
            f"each; got {len(before)}, {len(after)} and {len(frames)}."
        )
    energy_before = energy_after = 0.0
    for first, second, chosen in zip(before, after, frames):
        first, second = matched_pair(first, second, ("before", "after"))
        chosen = np.asarray(chosen)
        if chosen.dtype != bool or chosen.shape != (num_frames(len(first)),):
            raise ValueError(
                f"frames must be a boolean mask of the clip's "
                f"{num_frames(len(first))} frames; got {chosen.dtype} "
                f"{chosen.shape}."
            )
        energy_after += frame_energies(second)[chosen].sum()
        energy_before += frame_energies(first)[chosen].sum()
    if energy_before <= 0:
        raise ValueError(
            "level_change_db needs chosen frames with energy before; the chosen "
            "frames are empty or silent."
        )
    return float(10 * np.log10(energy_after / energy_before))


def matched_pair(first, second, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Two clips that are compared or mixed sample by sample: each checked as audio
    (``check_audio``), both of one shape, returned as float64 (scores and gains are computed
    in double precision). ``names`` go into the error messages."""
    check_audio(first, names[0])
    check_audio(second, names[1])
    first = np.asarray(first, dtype=np.float64)
    second = np.asarray(second, dtype=np.float64)
    if first.shape != second.shape:
        raise AudioError(
            f"{names[0]} and {names[1]} must have the same shape; got "
            f"{first.shape} and {second.shape}."
        )
    return first, second


def snr_db(clean, noisy) -> float:
    """Signal-to-noise ratio of ``noisy`` against ``clean``, in dB."""
    clean, noisy = matched_pair(clean, noisy, ("clean", "noisy"))
    noise = np.sum((noisy - clean) ** 2)
    signal = np.sum(clean**2)
    if signal == 0:
        raise AudioError("clean is silent, so SNR is undefined; expected a clip with signal.")
    return float("inf") if noise == 0 else float(10 * np.log10(signal / noise))


def _check_frame_params(frame_length: int, hop_length: int) -> None:
    if frame_length <= 0 or frame_length % 2:
        raise AudioError(f"frame_length must be a positive even number; got {frame_length}.")
    if not 0 < hop_length <= frame_length:
        raise AudioError(
            f"hop_length must be in 1..frame_length ({frame_length}); got {hop_length}."
        )
