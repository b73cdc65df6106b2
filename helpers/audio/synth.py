"""The synthesizer that made ``data/``: speech-like clips whose labels are known by construction.

A clip is a list of segments. A voiced segment is a source-filter vowel made by additive
synthesis: harmonics of a fixed f0 with a 1/k source tilt, each weighted by the response of a
cascade of formant resonators (F1, F2, F3). An unvoiced segment is seeded white noise through
two broad resonators (a fricative). A silent segment is exact zeros. Segments get 10 ms
raised-cosine fades. Everything is NumPy/SciPy with seeded generators, so the same spec gives
the same samples on every run (``scripts/make_data.py --check`` proves it against the
manifest's SHA-256).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from scipy import signal

from helpers.audio.signal import SAMPLE_RATE, AudioError
from helpers.course import check_choice

SegmentKind = Literal["voiced", "unvoiced", "silent"]
FADE_SECONDS = 0.010


@dataclass(frozen=True)
class Segment:
    """A stretch of a clip. Frequencies in Hz; f0/F1/F2/F3 are 0 where they do not apply."""

    kind: SegmentKind
    duration: float
    f0: float = 0.0
    f1: float = 0.0
    f2: float = 0.0
    f3: float = 0.0
    level: float = 0.1  # RMS of the segment before fades (0 for silence)

    def __post_init__(self) -> None:
        check_choice(self.kind, ("voiced", "unvoiced", "silent"), "kind")
        if self.duration <= 0:
            raise ValueError(f"segment duration must be positive; got {self.duration}.")
        if self.kind == "voiced" and not (self.f0 > 0 and 0 < self.f1 < self.f2):
            raise ValueError(
                f"a voiced segment needs f0 > 0 and 0 < F1 < F2; got f0={self.f0}, "
                f"F1={self.f1}, F2={self.f2}."
            )
        if self.kind == "unvoiced" and not 0 < self.f1 < self.f2:
            raise ValueError(
                "an unvoiced segment needs its two noise resonances 0 < F1 < F2; "
                f"got F1={self.f1}, F2={self.f2}."
            )

    def to_dict(self) -> dict:
        return asdict(self)


# Vowel formants (Hz) after Peterson & Barney's adult male averages.
VOWELS: dict[str, tuple[float, float, float]] = {
    "a": (730.0, 1090.0, 2440.0),
    "i": (270.0, 2290.0, 3010.0),
    "u": (300.0, 870.0, 2240.0),
}
# Fricative noise resonances (Hz), used as that segment's F1/F2 labels.
FRICATIVES: dict[str, tuple[float, float]] = {"s": (4500.0, 6500.0), "sh": (2500.0, 4000.0)}


def vowel(name: str, f0: float, duration: float, level: float = 0.1) -> Segment:
    f1, f2, f3 = VOWELS[name]
    return Segment("voiced", duration, f0=f0, f1=f1, f2=f2, f3=f3, level=level)


def fricative(name: str, duration: float, level: float = 0.03) -> Segment:
    f1, f2 = FRICATIVES[name]
    return Segment("unvoiced", duration, f1=f1, f2=f2, level=level)


def silence(duration: float) -> Segment:
    return Segment("silent", duration, level=0.0)


def segment_bounds(
    segments: list[Segment], sample_rate: int = SAMPLE_RATE
) -> list[tuple[int, int]]:
    """Sample ranges ``[start, end)`` of each segment (rounded cumulative durations)."""
    edges = np.round(np.cumsum([0.0] + [s.duration for s in segments]) * sample_rate).astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def synthesize(segments: list[Segment], seed: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Render segments into one float32 clip. Same segments and seed, same samples."""
    if not segments:
        raise AudioError("synthesize needs at least one segment.")
    rng = np.random.default_rng(seed)
    bounds = segment_bounds(segments, sample_rate)
    out = np.zeros(bounds[-1][1], dtype=np.float64)
    for segment, (start, end) in zip(segments, bounds):
        n = end - start
        if segment.kind == "voiced":
            piece = _vowel_samples(segment, n, sample_rate, rng)
        elif segment.kind == "unvoiced":
            piece = _fricative_samples(segment, n, sample_rate, rng)
        else:
            continue
        piece *= segment.level / max(np.sqrt(np.mean(piece**2)), 1e-12)
        out[start:end] = piece * _fades(n, sample_rate)
    return out.astype(np.float32)


def _resonator(freq: float, bandwidth: float, sample_rate: int) -> tuple[np.ndarray, np.ndarray]:
    """A two-pole resonator with unit gain at 0 Hz (Klatt's formant filter)."""
    r = np.exp(-np.pi * bandwidth / sample_rate)
    theta = 2 * np.pi * freq / sample_rate
    a = np.array([1.0, -2 * r * np.cos(theta), r * r])
    return np.array([a.sum()]), a


def _bandwidth(freq: float) -> float:
    return 50.0 + 0.05 * freq  # broad enough to sound natural, narrow enough to peak clearly


def _vowel_samples(seg: Segment, n: int, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    harmonics = np.arange(1, int((0.5 * sample_rate - 200.0) // seg.f0) + 1)
    freqs = harmonics * seg.f0
    gain = 1.0 / harmonics  # glottal source tilt
    for formant in (seg.f1, seg.f2, seg.f3):
        if formant > 0:
            b, a = _resonator(formant, _bandwidth(formant), sample_rate)
            _, response = signal.freqz(b, a, worN=freqs, fs=sample_rate)
            gain = gain * np.abs(response)
    phases = rng.uniform(0, 2 * np.pi, size=harmonics.size)
    t = np.arange(n) / sample_rate
    return np.sum(
        gain[:, None] * np.sin(2 * np.pi * freqs[:, None] * t[None, :] + phases[:, None]), axis=0
    )


def _fricative_samples(
    seg: Segment, n: int, sample_rate: int, rng: np.random.Generator
) -> np.ndarray:
    noise = rng.standard_normal(n + 512)  # 512 extra samples let the filters settle
    highpass = signal.butter(4, 1500.0, btype="highpass", fs=sample_rate, output="sos")
    shaped = signal.sosfilt(highpass, noise)
    out = np.zeros_like(shaped)
    for freq in (seg.f1, seg.f2):
        b, a = _resonator(freq, 0.25 * freq, sample_rate)
        out += signal.lfilter(b, a, shaped)
    return out[512:]


def _fades(n: int, sample_rate: int) -> np.ndarray:
    k = min(int(FADE_SECONDS * sample_rate), n // 2)
    envelope = np.ones(n)
    if k > 0:
        ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(k) / k)
        envelope[:k] = ramp
        envelope[n - k :] = ramp[::-1]
    return envelope
