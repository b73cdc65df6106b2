"""helpers.audio.noise: every family reproducible from a seed, with the spectrum it claims; mix."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.audio import NOISE_FAMILIES, AudioError, make_noise, mix, random_utterance

N = 32000


@pytest.mark.parametrize("family", list(NOISE_FAMILIES))
def test_each_family_is_reproducible_seed_sensitive_and_unit_rms(family):
    a, b = make_noise(family, N, seed=3), make_noise(family, N, seed=3)
    assert a.dtype == np.float32 and a.shape == (N,)
    assert a.tobytes() == b.tobytes()
    assert make_noise(family, N, seed=4).tobytes() != a.tobytes()
    assert abs(np.sqrt(np.mean(a.astype(np.float64) ** 2)) - 1) < 1e-3


def _band_power(x, low, high):
    spectrum = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / 16000)
    return spectrum[(freqs >= low) & (freqs < high)].mean()


def test_coloured_noise_slopes():
    # power per Hz falls by 2x (pink) and 4x (brown) per octave: 3 and 6 dB
    for family, slope_db in (("pink", 3.0), ("brown", 6.0)):
        x = make_noise(family, N, seed=1)
        drop = 10 * np.log10(_band_power(x, 500, 1000) / _band_power(x, 1000, 2000))
        assert abs(drop - slope_db) < 1.0, (family, drop)


def test_hum_is_harmonics_of_the_mains():
    x = make_noise("hum", N, seed=2)
    spectrum = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(N, 1 / 16000)
    on_harmonics = sum(
        spectrum[np.abs(freqs - k * f).argmin()] for f in (50.0, 60.0) for k in range(1, 11)
    )
    assert on_harmonics > 0.9 * spectrum.sum()


def test_bursts_switch_on_and_off():
    x = make_noise("bursts", N, seed=5).astype(np.float64)
    levels = 10 * np.log10(np.mean(x[: N // 160 * 160].reshape(-1, 160) ** 2, axis=1))
    assert np.percentile(levels, 90) - np.percentile(levels, 10) > 20


def test_babble_is_speech_like_and_utterances_are_reproducible():
    x = make_noise("babble", N, seed=6)
    assert _band_power(x, 100, 1000) > 10 * _band_power(x, 4000, 8000)
    segments = random_utterance(9, 1.5)
    assert segments == random_utterance(9, 1.5)
    assert abs(sum(s.duration for s in segments) - 1.5) < 0.01
    assert {s.kind for s in segments} >= {"voiced", "silent"}


def test_mix_sets_the_snr_exactly():
    rng = np.random.default_rng(0)
    clean = rng.standard_normal(N).astype(np.float32) * 0.1
    noisy = mix(clean, make_noise("pink", N, 1), 5.0)
    snr = 10 * np.log10(
        np.sum(clean.astype(np.float64) ** 2) / np.sum((noisy - clean).astype(np.float64) ** 2)
    )
    assert abs(snr - 5.0) < 0.01


def test_bad_inputs_get_clear_errors():
    with pytest.raises(ValueError, match="noise family must be one of 'pink', .*; got 'white'"):
        make_noise("white", N, 0)
    with pytest.raises(ValueError, match="positive integer"):
        make_noise("pink", 0, 0)
    with pytest.raises(ValueError, match="seed must be an integer"):
        make_noise("pink", N, 1.5)
    with pytest.raises(AudioError, match="same shape"):
        mix(np.ones(10, np.float32), np.ones(11, np.float32), 5.0)
    with pytest.raises(AudioError, match="silent"):
        mix(np.zeros(10, np.float32), np.ones(10, np.float32), 5.0)
    with pytest.raises(ValueError, match="finite"):
        mix(np.ones(10, np.float32), np.ones(10, np.float32), float("nan"))
    with pytest.raises(ValueError, match="at least 0.3 s"):
        random_utterance(0, 0.1)
