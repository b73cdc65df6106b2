"""helpers.audio.synth: the synthesizer that made data/ (deterministic, the f0 and formants it was
asked for) and its bad inputs."""

import librosa
import numpy as np
import pytest
from scipy import signal

from helpers.audio import (
    SAMPLE_RATE,
    AudioError,
    labels_from_audio,
    load_clip,
    pitch_track,
)
from helpers.audio.synth import Segment, fricative, silence, synthesize, vowel


@pytest.fixture(scope="module")
def vowel_clips():
    return {name: load_clip(f"vowel_{name}") for name in "aiu"}


def test_synthesizer_is_deterministic_and_seed_sensitive():
    segments = [vowel("a", 120, 0.2), fricative("s", 0.1)]
    a, b = synthesize(segments, seed=7), synthesize(segments, seed=7)
    assert a.tobytes() == b.tobytes()
    assert synthesize(segments, seed=8).tobytes() != a.tobytes()


@pytest.mark.parametrize("name", "aiu")
def test_spectral_envelope_peaks_near_f1(vowel_clips, name):
    clip = vowel_clips[name]
    middle = clip.audio[4000 : 4000 + 1024].astype(np.float64) * np.hamming(1024)
    coefficients = librosa.lpc(middle, order=18)
    freqs, response = signal.freqz([1.0], coefficients, worN=4096, fs=SAMPLE_RATE)
    envelope = 20 * np.log10(np.abs(response))
    peaks, _ = signal.find_peaks(envelope)
    first_peak = freqs[peaks[0]]
    assert first_peak == pytest.approx(clip.labels.f1[0], rel=0.10)


def test_bad_segments_and_audio():
    with pytest.raises(ValueError, match="f0 > 0"):
        Segment("voiced", 0.1, f0=0.0, f1=500, f2=1500)
    with pytest.raises(ValueError, match="positive"):
        silence(0.0)
    with pytest.raises(AudioError, match="at least one segment"):
        synthesize([], seed=0)
    with pytest.raises(AudioError, match="expected 16000 Hz"):
        labels_from_audio(np.ones(2000, np.float32) * 0.1, sample_rate=8000)
    with pytest.raises(AudioError, match="all NaN"):
        labels_from_audio(np.full(2000, np.nan, np.float32))
    with pytest.raises(AudioError, match="at least 512"):
        labels_from_audio(np.ones(100, np.float32) * 0.1)


@pytest.mark.parametrize("name", "aiu")
def test_pyin_recovers_the_synthetic_f0_within_2_percent(vowel_clips, name):
    clip = vowel_clips[name]
    f0, voiced = pitch_track(clip.audio)
    true_f0 = clip.labels.f0[0]
    assert voiced.mean() > 0.9
    assert np.max(np.abs(f0[voiced] / true_f0 - 1)) < 0.02
