"""Realistic noise for the capstone: five families, each reproducible from a seed.

``make_noise(family, num_samples, seed)`` returns float32 noise of unit RMS; ``mix(clean, noise,
snr_db)`` scales it to an exact SNR against a clean clip. The same family, length and seed give
the same samples on every run (NumPy/SciPy with seeded generators only). The families:

* ``pink``: 1/f power spectrum (equal energy per octave), like fans, rain and room noise;
* ``brown``: 1/f**2 power spectrum, a low rumble (traffic, wind on a microphone);
* ``hum``: mains hum, 50 or 60 Hz and its harmonics with random levels, plus a faint hiss;
* ``bursts``: white noise switched on and off in bursts of 50-300 ms (doors, clatter, typing);
* ``babble``: four to six speech-like talkers (``random_utterance`` clips) talking at once.

``random_utterance(seed, duration)`` makes the speech-like clips (vowels, fricatives, pauses
as ``helpers.audio.synth`` segments); the capstone's utterances come from it too, with other seeds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from helpers.audio.signal import SAMPLE_RATE, AudioError, matched_pair
from helpers.audio.synth import Segment, synthesize
from helpers.course import check_choice, check_int

NOISE_FAMILIES: dict[str, str] = {
    "pink": "1/f power spectrum, equal energy per octave (fans, rain, room noise)",
    "brown": "1/f^2 power spectrum, a low rumble (traffic, wind on a microphone)",
    "hum": "mains hum: 50 or 60 Hz and its harmonics at random levels, plus faint hiss",
    "bursts": "white noise switched on and off in bursts of 50-300 ms (doors, clatter)",
    "babble": "four to six speech-like talkers at once (random_utterance clips)",
}

# Peterson & Barney adult male averages (F1, F2, F3 in Hz), ten English vowels.
VOWEL_FORMANTS: tuple[tuple[float, float, float], ...] = (
    (270, 2290, 3010),
    (390, 1990, 2550),
    (530, 1840, 2480),
    (660, 1720, 2410),
    (730, 1090, 2440),
    (570, 840, 2410),
    (440, 1020, 2240),
    (300, 870, 2240),
    (640, 1190, 2390),
    (490, 1350, 1690),
)
# Fricative noise resonances (Hz): s, sh, f, th-like.
FRICATIVE_RESONANCES: tuple[tuple[float, float], ...] = (
    (4500, 6500),
    (2500, 4000),
    (3500, 7000),
    (5000, 7200),
)


def _check_length(num_samples: int) -> int:
    return check_int(num_samples, "num_samples", 1)


def _unit_rms(x: np.ndarray) -> np.ndarray:
    return (x / max(float(np.sqrt(np.mean(np.square(x)))), 1e-12)).astype(np.float32)


def _coloured(
    num_samples: int, rng: np.random.Generator, exponent: float, sample_rate: int
) -> np.ndarray:
    """White noise shaped to a ``1/f**exponent`` power spectrum (flat below 20 Hz)."""
    spectrum = np.fft.rfft(rng.standard_normal(num_samples))
    freqs = np.fft.rfftfreq(num_samples, 1.0 / sample_rate)
    spectrum *= np.maximum(freqs, 20.0) ** (-exponent / 2)
    spectrum[0] = 0.0
    return np.fft.irfft(spectrum, num_samples)


def pink(num_samples: int, seed: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Pink noise, unit RMS."""
    rng = np.random.default_rng(seed)
    return _unit_rms(_coloured(_check_length(num_samples), rng, 1.0, sample_rate))


def brown(num_samples: int, seed: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Brown (red) noise, unit RMS."""
    rng = np.random.default_rng(seed)
    return _unit_rms(_coloured(_check_length(num_samples), rng, 2.0, sample_rate))


def hum(num_samples: int, seed: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Mains hum: 50 or 60 Hz (seeded), harmonics 1..10 with random levels and phases, a slow
    level wobble, and white hiss 30 dB below the hum. Unit RMS."""
    n = _check_length(num_samples)
    rng = np.random.default_rng(seed)
    mains = float(rng.choice([50.0, 60.0]))
    t = np.arange(n) / sample_rate
    out = np.zeros(n)
    for k in range(1, 11):
        level = rng.uniform(0.2, 1.0) / k ** rng.uniform(0.3, 1.0)
        out += level * np.sin(2 * np.pi * k * mains * t + rng.uniform(0, 2 * np.pi))
    out *= 1.0 + 0.1 * np.sin(2 * np.pi * rng.uniform(0.2, 1.0) * t + rng.uniform(0, 2 * np.pi))
    out = _unit_rms(out).astype(np.float64)
    return _unit_rms(out + 10 ** (-30 / 20) * rng.standard_normal(n))


def bursts(num_samples: int, seed: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """White noise gated on in bursts of 50-300 ms (5 ms raised-cosine edges), on about half
    the time, over a floor 30 dB down. Unit RMS."""
    n = _check_length(num_samples)
    rng = np.random.default_rng(seed)
    gate = np.full(n, 10 ** (-30 / 20))
    position = int(rng.integers(0, int(0.2 * sample_rate)))
    edge = int(0.005 * sample_rate)
    ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(edge) / edge)
    while position < n:
        length = int(rng.uniform(0.05, 0.3) * sample_rate)
        envelope = np.ones(length) * rng.uniform(0.5, 1.0)
        envelope[:edge] *= ramp
        envelope[-edge:] *= ramp[::-1]
        stop = min(position + length, n)
        gate[position:stop] = np.maximum(gate[position:stop], envelope[: stop - position])
        position = stop + int(rng.uniform(0.05, 0.3) * sample_rate)
    return _unit_rms(gate * rng.standard_normal(n))


def random_utterance(
    seed: int, duration: float, sample_rate: int = SAMPLE_RATE
) -> tuple[Segment, ...]:
    """Segments of a speech-like clip of ``duration`` seconds: short pauses at both ends and
    in between, vowels (random Peterson & Barney vowel, f0 around a talker's own 90-220 Hz)
    and fricatives. Render with ``helpers.audio.synthesize``."""
    if not duration >= 0.3:
        raise ValueError(f"duration must be at least 0.3 s; got {duration!r}.")
    rng = np.random.default_rng(seed)
    talker_f0 = rng.uniform(90.0, 220.0)
    segments: list[Segment] = [Segment("silent", round(rng.uniform(0.06, 0.15), 3), level=0.0)]
    end_pause = round(rng.uniform(0.06, 0.15), 3)
    left = duration - segments[0].duration - end_pause
    while left > 0.05:
        kind = rng.choice(["voiced", "voiced", "voiced", "unvoiced", "silent"])
        length = round(
            min(left, rng.uniform(0.12, 0.3) if kind == "voiced" else rng.uniform(0.06, 0.18)), 3
        )
        if kind == "voiced":
            f1, f2, f3 = VOWEL_FORMANTS[int(rng.integers(len(VOWEL_FORMANTS)))]
            f0 = round(talker_f0 * rng.uniform(0.85, 1.15), 1)
            segments.append(
                Segment(
                    "voiced",
                    length,
                    f0=f0,
                    f1=f1,
                    f2=f2,
                    f3=f3,
                    level=round(rng.uniform(0.05, 0.15), 3),
                )
            )
        elif kind == "unvoiced":
            f1, f2 = FRICATIVE_RESONANCES[int(rng.integers(len(FRICATIVE_RESONANCES)))]
            segments.append(
                Segment("unvoiced", length, f1=f1, f2=f2, level=round(rng.uniform(0.015, 0.04), 3))
            )
        else:
            segments.append(Segment("silent", length, level=0.0))
        left -= length
    segments.append(Segment("silent", round(end_pause + max(left, 0.0), 3), level=0.0))
    return tuple(segments)


def babble(num_samples: int, seed: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Four to six ``random_utterance`` talkers at random levels (within 6 dB), each looped and
    started at a random offset, summed. Unit RMS."""
    n = _check_length(num_samples)
    rng = np.random.default_rng(seed)
    out = np.zeros(n)
    for _ in range(int(rng.integers(4, 7))):
        talker_seed = int(rng.integers(1 << 31))
        talker = synthesize(
            list(random_utterance(talker_seed, 2.0, sample_rate)),
            seed=talker_seed,
            sample_rate=sample_rate,
        ).astype(np.float64)
        talker = np.tile(talker, n // len(talker) + 2)
        start = int(rng.integers(0, len(talker) - n))
        out += _unit_rms(talker[start : start + n]) * 10 ** (rng.uniform(-6, 0) / 20)
    return _unit_rms(out)


_MAKERS: dict[str, Callable[..., np.ndarray]] = {
    "pink": pink,
    "brown": brown,
    "hum": hum,
    "bursts": bursts,
    "babble": babble,
}


def make_noise(
    family: str, num_samples: int, seed: int, sample_rate: int = SAMPLE_RATE
) -> np.ndarray:
    """``num_samples`` of noise of one family (see ``NOISE_FAMILIES``), unit RMS, float32."""
    check_choice(family, NOISE_FAMILIES, "noise family")
    return _MAKERS[family](num_samples, check_int(seed, "seed"), sample_rate)


def mix(clean: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    """``clean + g * noise`` with ``g`` chosen so the SNR is exactly ``snr_db``; float32."""
    clean, noise = matched_pair(clean, noise, ("clean", "noise"))
    if not np.isfinite(snr_db):
        raise ValueError(f"snr_db must be a finite number; got {snr_db!r}.")
    signal_power, noise_power = np.mean(clean**2), np.mean(noise**2)
    if signal_power == 0 or noise_power == 0:
        raise AudioError("cannot set an SNR with a silent clean clip or silent noise.")
    gain = np.sqrt(signal_power / noise_power / 10 ** (snr_db / 10))
    return (clean + gain * noise).astype(np.float32)
