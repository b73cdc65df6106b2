"""helpers.audio.baselines: SI-SDR, the classical filters and their bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.audio import (
    AudioError,
    baselines,
    best_setting,
    lowpass,
    si_sdr,
    spectral_subtraction,
    stoi,
)
from helpers.capstone import held_back_mixtures


def test_si_sdr_is_scale_invariant_and_ranks_cleaner_higher():
    rng = np.random.default_rng(0)
    clean = rng.standard_normal(16000)
    noise = rng.standard_normal(16000)
    assert si_sdr(clean, 0.3 * clean + 0.1 * noise) == pytest.approx(
        si_sdr(clean, clean + noise / 3)
    )
    assert si_sdr(clean, clean + 0.1 * noise) > si_sdr(clean, clean + noise)
    assert stoi(clean, clean) == pytest.approx(1.0, abs=1e-3)


def test_classical_filters_keep_the_length_and_help_where_they_should():
    mixture = next(m for m in held_back_mixtures() if m.family == "hum")
    out = spectral_subtraction(mixture.audio)
    assert out.shape == mixture.audio.shape
    assert si_sdr(mixture.clean, out) > si_sdr(mixture.clean, mixture.audio) + 3
    assert lowpass(mixture.audio, 2000.0).shape == mixture.audio.shape
    assert best_setting(lambda x, s: x * s, [0.5, 1.0], [(mixture.clean, mixture.audio)]) in (
        0.5,
        1.0,
    )


def test_noisereduce_gating_keeps_the_length_and_turns_noise_only_stretches_down():
    mixture = next(m for m in held_back_mixtures() if m.family == "hum")
    pause = mixture.clean == 0.0  # the synthetic utterance's pauses: noise only
    for stationary in (True, False):
        out = baselines.spectral_gating(mixture.audio, stationary)
        assert out.shape == mixture.audio.shape and out.dtype == np.float32
        assert np.sum(out[pause] ** 2) < 0.5 * np.sum(mixture.audio[pause] ** 2)


def test_stationary_gating_with_the_shorter_padding_is_noisereduces_default():
    import noisereduce

    for mixture in (held_back_mixtures()[0], held_back_mixtures()[-1]):
        default = noisereduce.reduce_noise(y=mixture.audio, sr=16000, stationary=True)
        out = baselines.spectral_gating(mixture.audio, stationary=True)
        assert np.max(np.abs(out - default)) <= 1e-12 * np.max(np.abs(default))
        assert baselines.STATIONARY_PADDING < 30000


def test_baselines_bad_inputs():
    with pytest.raises(ValueError, match="cutoff_hz"):
        lowpass(np.ones(100, np.float32), 9000.0)
    with pytest.raises(ValueError, match="quiet_fraction"):
        spectral_subtraction(np.ones(1000, np.float32), quiet_fraction=0.0)
    with pytest.raises(AudioError, match="same shape"):
        si_sdr(np.ones(10), np.ones(11))
    with pytest.raises(AudioError, match="silent"):
        si_sdr(np.zeros(10), np.ones(10))
    with pytest.raises(AudioError):
        baselines.spectral_gating(np.array([np.nan, 0.0], np.float32), stationary=True)
    with pytest.raises(ValueError, match="at least one"):
        best_setting(lowpass, [], [])
