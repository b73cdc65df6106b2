"""Classical denoisers and the scores the capstone compares them with.

* ``lowpass(noisy, cutoff_hz)``: a fixed 4th-order Butterworth low-pass (``scipy.signal``),
  run forwards and backwards so it adds no delay; ``best_lowpass_cutoff`` picks its cut-off
  on training clips.
* ``spectral_subtraction(noisy, ...)``: power spectral subtraction on a ``scipy.signal.stft``, with
  the noise spectrum estimated from the input itself (the mean power of its quietest frames
  in each bin), a spectral floor, and the noisy phase.
* ``spectral_gating(noisy, stationary)``: ``noisereduce.reduce_noise`` with its defaults.
  Stationary: each bin's threshold is the mean plus 1.5 standard deviations of the whole noisy
  clip's dB spectrogram. Non-stationary: each bin's noise floor is the noisy spectrogram
  smoothed in time (2 s time constant); a sigmoid gate passes bins well above it.
* ``si_sdr``: scale-invariant signal-to-distortion ratio (Le Roux et al., 2019), in dB;
  ``stoi``: short-time objective intelligibility, from the ``pystoi`` package.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from scipy import signal

from helpers.audio.signal import SAMPLE_RATE, AudioError, check_audio, matched_pair

LOWPASS_CANDIDATES_HZ: tuple[float, ...] = (
    1000.0,
    1500.0,
    2000.0,
    3000.0,
    4000.0,
    5000.0,
    6000.0,
    7000.0,
)
# (over_subtraction, quiet_fraction) pairs tried on the training clips
SUBTRACTION_CANDIDATES: tuple[tuple[float, float], ...] = tuple(
    (a, q) for a in (1.0, 2.0, 4.0, 6.0) for q in (0.1, 0.3)
)
STATIONARY_PADDING = 48 + 4 * 256  # zeros on each side (noisereduce's default: 30000)


def _pair(reference, estimate) -> tuple[np.ndarray, np.ndarray]:
    reference, estimate = matched_pair(reference, estimate, ("reference", "estimate"))
    if not np.any(reference):
        raise AudioError("reference is silent, so the score is undefined; expected speech.")
    return reference, estimate


def si_sdr(reference, estimate) -> float:
    """Scale-invariant SDR of ``estimate`` against ``reference``, in dB (higher is better)."""
    reference, estimate = _pair(reference, estimate)
    # np.sum of products, not np.dot: on 1-D float64 a BLAS dot costs 50x more here
    target = reference * (np.sum(estimate * reference) / np.sum(reference * reference))
    distortion = np.sum((estimate - target) ** 2)
    if distortion == 0:
        return float("inf")
    return float(10 * np.log10(max(np.sum(target**2), 1e-30) / distortion))


def stoi(reference, estimate, sample_rate: int = SAMPLE_RATE) -> float:
    """STOI of ``estimate`` against ``reference`` (0..1, higher is better), by ``pystoi``."""
    from pystoi import stoi as _stoi  # imported here: only the capstone needs it

    reference, estimate = _pair(reference, estimate)
    return float(_stoi(reference, estimate, sample_rate, extended=False))


def lowpass(noisy, cutoff_hz: float, sample_rate: int = SAMPLE_RATE, order: int = 4) -> np.ndarray:
    """A fixed Butterworth low-pass at ``cutoff_hz``, zero-phase (``sosfiltfilt``)."""
    check_audio(noisy, "noisy")
    if not 0 < cutoff_hz < sample_rate / 2:
        raise ValueError(
            f"cutoff_hz must be between 0 and {sample_rate / 2:g} Hz; got {cutoff_hz!r}."
        )
    sos = _butter_lowpass(int(order), float(cutoff_hz), int(sample_rate))
    return signal.sosfiltfilt(sos, np.asarray(noisy, dtype=np.float64)).astype(np.float32)


@cache
def _butter_lowpass(order: int, cutoff_hz: float, sample_rate: int) -> np.ndarray:
    return signal.butter(order, cutoff_hz, btype="lowpass", fs=sample_rate, output="sos")


def spectral_subtraction(
    noisy,
    over_subtraction: float = 2.0,
    floor: float = 0.05,
    quiet_fraction: float = 0.1,
    n_fft: int = 512,
    hop_length: int = 128,
) -> np.ndarray:
    """Power spectral subtraction with the noise estimated from the input itself.

    Noise power per bin: the mean over the ``quiet_fraction`` quietest frames of the clip.
    Gain per bin and frame: ``sqrt(max(1 - over_subtraction * noise / power, floor**2))``,
    applied to the noisy STFT (``scipy.signal.stft``, Hann window); ``scipy.signal.istft``
    gives the clip back, same length.
    """
    check_audio(noisy, "noisy")
    if not 0 < quiet_fraction <= 1:
        raise ValueError(f"quiet_fraction must be in (0, 1]; got {quiet_fraction!r}.")
    if over_subtraction <= 0 or not 0 <= floor < 1:
        raise ValueError(
            "over_subtraction must be > 0 and floor in [0, 1); got "
            f"{over_subtraction!r} and {floor!r}."
        )
    noisy = np.asarray(noisy, dtype=np.float64)
    overlap = n_fft - hop_length
    _, _, spectrum = signal.stft(noisy, nperseg=n_fft, noverlap=overlap)
    power = np.abs(spectrum) ** 2
    quiet = np.argsort(power.sum(axis=0))[: max(1, int(round(quiet_fraction * power.shape[1])))]
    noise_power = power[:, quiet].mean(axis=1, keepdims=True)
    gain = np.sqrt(
        np.maximum(1.0 - over_subtraction * noise_power / np.maximum(power, 1e-20), floor**2)
    )
    _, out = signal.istft(gain * spectrum, nperseg=n_fft, noverlap=overlap)
    return np.pad(out, (0, max(0, len(noisy) - len(out))))[: len(noisy)].astype(np.float32)


def spectral_gating(noisy, stationary: bool, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """``noisereduce.reduce_noise`` with its default settings (stationary or not), same
    length out. The noise estimate comes from the noisy clip itself (module docstring)."""
    import noisereduce  # imported here: only the capstone needs it

    check_audio(noisy, "noisy")
    noisy = np.asarray(noisy, dtype=np.float32)
    # Stationary gating shuts every frame of the zero padding (its threshold is at least the
    # quietest level a frame can take), so a shorter padding on the default's frame grid
    # (30000 = 48 mod the hop of 256), still wider than the mask's smoothing, gives the
    # default's output (tests/test_baselines.py) for a third of the work. The non-stationary
    # noise floor decays into the padding: it keeps the default.
    padding = {"padding": STATIONARY_PADDING} if stationary else {}
    out = noisereduce.reduce_noise(
        y=noisy, sr=int(sample_rate), stationary=bool(stationary), **padding
    )
    return np.pad(out, (0, max(0, len(noisy) - len(out))))[: len(noisy)].astype(np.float32)


def best_setting(denoiser, settings: Sequence, pairs: Sequence[tuple[np.ndarray, np.ndarray]]):
    """The setting whose ``denoiser(noisy, setting)`` has the best mean SI-SDR over the
    ``(clean, noisy)`` training pairs (ties: the first)."""
    if not pairs or not settings:
        raise ValueError("best_setting needs at least one setting and one (clean, noisy) pair.")
    scores = [
        np.mean([si_sdr(clean, denoiser(noisy, s)) for clean, noisy in pairs]) for s in settings
    ]
    return settings[int(np.argmax(scores))]
