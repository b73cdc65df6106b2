"""Labels measured from any recording (``labels_from_audio``): silence relative to the
clip's own noise floor with hysteresis plus an absolute floor, voicing from ``librosa.pyin``
and the spectral tilt, f0 from pyin, F1/F2 from LPC. The course data ships labels known
exactly; use this on your own clips (notebook 07, an optional appendix). Its rules and
their figures: CONTRIBUTING.md, "Measured decisions". Its agreement on ``arctic_a0009``
(90.7 %) is fitted to that clip, not a test: the voicing-decay rule was written from it.
"""

from __future__ import annotations

import librosa
import numpy as np
import tensorflow as tf

from helpers.audio import (
    FRAME_LENGTH,
    HOP_LENGTH,
    SAMPLE_RATE,
    AudioError,
    check_audio,
    check_sample_rate,
    frame_array,
    hann_window,
)
from helpers.labels import FrameLabels, LabelError, Voicing

SILENCE_RMS = 1e-3  # -60 dBFS: an absolute threshold, so an all-zero file is silent
FLOOR_PERCENTILE = 10  # a clip's noise floor: this percentile of its frame levels
SPEECH_ON_DB = 6.0  # speech starts this far above the floor ...
SPEECH_OFF_DB = 1.0  # ... and lasts until the level falls below floor + this (hysteresis)
MIN_PAUSE_FRAMES = 8  # shorter pauses inside speech (128 ms; stop closures) stay speech
VOICED_TILT_DB = 6.0  # voiced: energy below 1 kHz this far above that above 2 kHz
VOICED_BELOW_PEAK_DB = 30.0  # voiced frames are at most this far below the clip's loud frames
PYIN_SWITCH_PROB = 0.01  # librosa's default: pyin's prior that voicing switches between frames
# labels_from_audio's switch prior: the default keeps whole voiced stretches unvoiced in noise.
MEASURED_SWITCH_PROB = 0.2
# The end of a voiced stretch whose level falls at least this far in one hop (16 ms: the
# amplitude halves) is the voicing decaying into a stop closure or a fricative, which a phone
# alignment already names by the consonant (see ``trim_voicing_decay``). Written from the
# disagreements of ``arctic_a0009``: fitted to that clip, and untested on any other.
VOICING_DECAY_DB = 6.0
# FrameLabels.source of what labels_from_audio measures (and of labels stored from it)
MEASURED_LABELS = ("measured: level above the clip's noise floor (hysteresis), pyin, "
                   "spectral tilt, LPC")


def pitch_track(audio: np.ndarray, sample_rate: int = SAMPLE_RATE, hop_length: int = HOP_LENGTH,
                fmin: float = 60.0, fmax: float = 400.0,
                switch_prob: float = PYIN_SWITCH_PROB) -> tuple[np.ndarray, np.ndarray]:
    """``(f0, voiced)`` per centred frame from ``librosa.pyin`` (f0 is 0 where unvoiced).

    ``switch_prob`` is pyin's prior probability that voicing changes from one frame to the
    next (its HMM decodes the voiced/unvoiced sequence with it). The first call on a fresh
    machine pays numba's compile cost (about 15 s); later calls are fast.
    """
    check_audio(audio)
    check_sample_rate(sample_rate)
    if not 0.0 < switch_prob < 1.0:
        raise ValueError(f"switch_prob must be a probability in (0, 1); got {switch_prob!r}.")
    f0, voiced, _ = librosa.pyin(np.asarray(audio, dtype=np.float32), fmin=fmin, fmax=fmax,
                                 sr=sample_rate, frame_length=1024, hop_length=hop_length,
                                 center=True, pad_mode="constant", switch_prob=switch_prob)
    return np.where(voiced, np.nan_to_num(f0), 0.0), voiced


def formant_track(audio: np.ndarray, sample_rate: int = SAMPLE_RATE,
                  frame_length: int = FRAME_LENGTH, hop_length: int = HOP_LENGTH,
                  order: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(F1, F2)`` per centred frame from LPC roots (0 where no two formants are found)."""
    check_audio(audio)
    audio = np.asarray(audio, dtype=np.float64)
    order = order or 2 + sample_rate // 1000
    emphasised = np.append(audio[0], audio[1:] - 0.63 * audio[:-1])
    frames = frame_array(emphasised, frame_length, hop_length)
    window = np.hamming(frame_length)  # LPC's analysis window; data/'s tracks were made with it
    f1 = np.zeros(len(frames))
    f2 = np.zeros(len(frames))
    for t, frame_ in enumerate(frames):
        x = frame_ * window
        if np.sqrt(np.mean(x**2)) < 1e-5:
            continue
        coefficients = librosa.lpc(x, order=order)
        roots = [r for r in np.roots(coefficients) if np.imag(r) > 0]
        freqs = np.angle(roots) * sample_rate / (2 * np.pi)
        bandwidths = -np.log(np.abs(roots)) * sample_rate / np.pi
        keep = sorted(f for f, b in zip(freqs, bandwidths) if f > 90 and b < 400)
        if len(keep) >= 2:
            f1[t], f2[t] = keep[0], keep[1]
    return f1, f2


def trim_voicing_decay(voiced: np.ndarray, levels_db: np.ndarray,
                       decay_db: float = VOICING_DECAY_DB) -> np.ndarray:
    """``voiced`` without the decay at the end of each voiced stretch: its last frames, as
    long as each is at least ``decay_db`` below the frame before it (the first frame of a
    stretch always stays).

    After a vowel, a stop closure or a fricative starts where the level drops, while the
    vocal folds still ring for a frame or two: pyin hears them as voiced, though a phone
    alignment puts the frame's centre in the consonant. (Where a voiced stretch decays into
    a pause instead, the trimmed frames are silent anyway.) Written from ``arctic_a0009``'s
    disagreements, the only real clip with an alignment: its gain there is a fit, not a test.
    """
    voiced = np.asarray(voiced, dtype=bool)
    levels_db = np.asarray(levels_db, dtype=np.float64)
    if voiced.shape != levels_db.shape or voiced.ndim != 1:
        raise LabelError(f"voiced has shape {voiced.shape} and levels_db {levels_db.shape}; "
                         "expected two 1-D arrays of one value per frame.")
    if not (np.isfinite(decay_db) and decay_db > 0):
        raise LabelError(f"decay_db must be a positive number of dB; got {decay_db!r}.")
    trimmed = voiced.copy()
    drop = np.r_[0.0, levels_db[:-1] - levels_db[1:]]  # how far each frame fell below the last
    for t in range(len(voiced)):
        end = t + 1 == len(voiced) or not voiced[t + 1]
        if voiced[t] and end:  # walk back from the end of a stretch while it decays steeply
            j = t
            while j > 0 and voiced[j - 1] and drop[j] >= decay_db:
                trimmed[j] = False
                j -= 1
    return trimmed


def speech_frames(levels_db: np.ndarray, on_db: float = SPEECH_ON_DB,
                  off_db: float = SPEECH_OFF_DB, min_pause_frames: int = MIN_PAUSE_FRAMES,
                  silence_db: float = 20 * float(np.log10(SILENCE_RMS))) -> np.ndarray:
    """Which frames are speech, from per-frame levels in dB, relative to the clip's own noise
    floor (the ``FLOOR_PERCENTILE``-th percentile of its levels), with hysteresis.

    A stretch of speech is every frame at or above ``floor + off_db`` that is connected to a
    frame at least ``on_db`` above the floor: a double threshold (hysteresis) applied the
    same way in both directions of time, because speech fades in (a breathy onset, an
    ``hh``) as it fades out. Pauses shorter than ``min_pause_frames`` inside speech (stop
    closures) stay speech. A frame below ``silence_db`` (absolute, -60 dBFS) never starts
    speech, so digital silence is silent. A clip whose levels spread less than ``on_db`` from
    the floor to the 90th percentile has no pause to measure a floor in (a sustained vowel):
    all its frames above ``silence_db`` are speech.
    """
    levels_db = np.asarray(levels_db, dtype=np.float64)
    audible = levels_db >= silence_db
    if not audible.any():
        return audible
    floor = np.percentile(levels_db[audible], FLOOR_PERCENTILE)
    if np.percentile(levels_db[audible], 90) - floor < on_db or audible.mean() < 0.9:
        # no noise floor to measure: either no pauses, or pauses of digital silence
        on, off = silence_db, silence_db
    else:
        on, off = floor + on_db, floor + off_db
    speech = np.zeros(len(levels_db), dtype=bool)
    talking = False
    for t, level in enumerate(levels_db):
        talking = level >= on if not talking else level >= off
        speech[t] = talking
    for t in range(len(speech) - 2, -1, -1):  # the same hysteresis backwards: onsets fade in
        speech[t] = speech[t] or (speech[t + 1] and levels_db[t] >= off)
    # fill short pauses between two stretches of speech
    t = 0
    while t < len(speech):
        if speech[t]:
            t += 1
            continue
        stop = t
        while stop < len(speech) and not speech[stop]:
            stop += 1
        if 0 < t and stop < len(speech) and stop - t < min_pause_frames:
            speech[t:stop] = audible[t:stop]
        t = stop
    return speech


def labels_from_audio(audio: np.ndarray, sample_rate: int = SAMPLE_RATE,
                      silence_rms: float = SILENCE_RMS,
                      voicing_decay_db: float | None = VOICING_DECAY_DB) -> FrameLabels:
    """Measure labels for any recording: silence relative to the clip's own noise floor with
    hysteresis (``speech_frames``; ``silence_rms`` stays an absolute floor), voicing where
    pyin finds an f0 (switch prior ``MEASURED_SWITCH_PROB``), the energy above the noise
    floor below 1 kHz exceeds that above 2 kHz by ``VOICED_TILT_DB`` and the frame is within
    ``VOICED_BELOW_PEAK_DB`` of the clip's loud frames; the end of a voiced stretch that
    decays by ``voicing_decay_db`` or more per hop is unvoiced (``trim_voicing_decay``;
    ``None`` turns this off). f0 from pyin, F1/F2 from LPC. On ``arctic_a0009`` they agree
    with the phone alignment on 90.7 % of frames (89.2 % without the decay rule), a figure
    fitted to that clip, whose disagreements the rule was written from: not a test of it."""
    check_audio(audio)
    check_sample_rate(sample_rate)
    audio = np.asarray(audio, dtype=np.float32)
    if len(audio) < FRAME_LENGTH:
        raise AudioError(f"audio has {len(audio)} samples; expected at least {FRAME_LENGTH} "
                         "(one frame) to measure pitch.")
    frames = frame_array(audio)  # (frames, FRAME_LENGTH), float64
    levels_db = 10 * np.log10(np.mean(frames ** 2, axis=1) + 1e-20)
    f0, voiced = pitch_track(audio, sample_rate, switch_prob=MEASURED_SWITCH_PROB)
    f1, f2 = formant_track(audio, sample_rate)
    window = hann_window(FRAME_LENGTH, tf.float64).numpy()
    power = np.abs(np.fft.rfft(frames * window, axis=1)).T ** 2  # (bins, frames)
    # the tilt of what rises above each bin's noise floor, so stationary noise does not tilt it
    power = np.maximum(power - np.percentile(power, FLOOR_PERCENTILE, axis=1, keepdims=True), 0)
    freqs = np.fft.rfftfreq(FRAME_LENGTH, 1.0 / sample_rate)
    tilt_db = 10 * np.log10((power[freqs < 1000].sum(0) + 1e-12)
                            / (power[freqs >= 2000].sum(0) + 1e-12))
    speech = speech_frames(levels_db, silence_db=20 * float(np.log10(silence_rms)))
    loud = np.percentile(levels_db, 95)
    is_voiced = (voiced & (f0 > 0) & (tilt_db > VOICED_TILT_DB)
                 & (levels_db > loud - VOICED_BELOW_PEAK_DB))
    if voicing_decay_db is not None:
        is_voiced = trim_voicing_decay(is_voiced, levels_db, voicing_decay_db)
    voicing = np.where(~speech, Voicing.SILENT,
                       np.where(is_voiced, Voicing.VOICED, Voicing.UNVOICED))
    speech = voicing != Voicing.SILENT
    return FrameLabels(voicing, np.where(voicing == Voicing.VOICED, f0, 0.0),
                       np.where(speech, f1, 0.0), np.where(speech, f2, 0.0),
                       source=MEASURED_LABELS)
