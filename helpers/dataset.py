"""The course data set: what is in ``data/``, and loading a clip with its labels.

The synthetic clips are defined here (``SYNTHETIC_CLIPS``) and rendered by
``scripts/make_data.py``, which also writes ``data/manifest.json`` (sample rate, duration,
label source and SHA-256 of every file). The real clip is CMU ARCTIC ``arctic_a0009`` with
its phone alignment and licence; its per-frame f0/F1/F2 were measured once by the same
script and stored beside it, so no notebook has to wait for pyin.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from helpers.audio import SAMPLE_RATE, load_audio
from helpers.labels import (
    FrameLabels,
    LabelError,
    labels_from_alignment,
    labels_from_segments,
    read_phone_alignment,
)
from helpers.synth import Segment, fricative, silence, vowel

DATA_DIR = Path(
    os.environ.get("GRADIENT_CLINIC_DATA", Path(__file__).resolve().parents[1] / "data")
)
REAL_CLIP = "arctic_a0009"


@dataclass(frozen=True)
class ClipSpec:
    """How a synthetic clip is made: its segments and seed, or a clean clip plus noise."""

    name: str
    segments: tuple[Segment, ...]
    seed: int
    clean: str | None = None  # for a noisy clip: the clean clip it was made from
    snr_db: float | None = None


def _noisy(clean: ClipSpec, snr_db: float, seed: int) -> ClipSpec:
    return ClipSpec(f"{clean.name}_snr{snr_db:g}", clean.segments, seed, clean.name, snr_db)


_UTTERANCE_1 = ClipSpec("utterance_1", (
    silence(0.15), vowel("a", 120, 0.30), fricative("s", 0.15), vowel("i", 140, 0.30),
    silence(0.10), vowel("u", 110, 0.30), silence(0.15)), seed=11)
_UTTERANCE_2 = ClipSpec("utterance_2", (
    silence(0.10), vowel("i", 130, 0.25), fricative("sh", 0.20), vowel("a", 115, 0.35),
    silence(0.15), vowel("u", 125, 0.25), fricative("s", 0.15), silence(0.10)), seed=12)

SYNTHETIC_CLIPS: tuple[ClipSpec, ...] = (
    ClipSpec("vowel_a", (vowel("a", 120, 1.0),), seed=1),
    ClipSpec("vowel_i", (vowel("i", 140, 1.0),), seed=2),
    ClipSpec("vowel_u", (vowel("u", 110, 1.0),), seed=3),
    ClipSpec("fricative_s", (fricative("s", 0.5),), seed=4),
    ClipSpec("silence", (silence(0.5),), seed=5),
    _UTTERANCE_1,
    _UTTERANCE_2,
    _noisy(_UTTERANCE_1, 5, seed=21),
    _noisy(_UTTERANCE_1, 15, seed=22),
    _noisy(_UTTERANCE_2, 5, seed=23),
    _noisy(_UTTERANCE_2, 15, seed=24),
)


@dataclass(frozen=True)
class Clip:
    """A clip ready to use: audio, its clean reference (itself unless noisy) and labels."""

    name: str
    audio: np.ndarray
    clean: np.ndarray
    labels: FrameLabels
    sample_rate: int = SAMPLE_RATE
    snr_db: float | None = None

    @property
    def duration(self) -> float:
        return len(self.audio) / self.sample_rate


@cache
def manifest() -> dict:
    """``data/manifest.json`` as a dict keyed by clip name."""
    path = DATA_DIR / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; run python scripts/make_data.py")
    return {entry["name"]: entry for entry in json.loads(path.read_text())["clips"]}


def clip_names() -> list[str]:
    """Every clip in the data set, in manifest order."""
    return list(manifest())


def load_clip(name: str) -> Clip:
    """Load a clip by name (see ``clip_names()``), with its labels and clean reference."""
    entries = manifest()
    if name not in entries:
        raise KeyError(f"no clip named {name!r}; expected one of {', '.join(entries)}.")
    entry = entries[name]
    audio, sample_rate = load_audio(DATA_DIR / entry["file"])
    if name == REAL_CLIP:
        labels = real_clip_labels(len(audio))
    else:
        segments = [Segment(**s) for s in entry["segments"]]
        labels = labels_from_segments(segments, sample_rate)
    labels.check_fits(len(audio), sample_rate)
    clean = load_clip(entry["clean"]).audio if entry.get("clean") else audio
    return Clip(name, audio, clean, labels, sample_rate, entry.get("snr_db"))


def real_clip_labels(num_samples: int) -> FrameLabels:
    """Labels of the real clip: phones from its alignment, f0/F1/F2 from the stored tracks."""
    tracks_path = DATA_DIR / "cmu_arctic" / f"{REAL_CLIP}_tracks.csv"
    with tracks_path.open() as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise LabelError(f"{tracks_path} has no rows.")
    f0, f1, f2 = (np.array([float(r[k]) for r in rows]) for k in ("f0_hz", "f1_hz", "f2_hz"))
    alignment = read_phone_alignment(DATA_DIR / "cmu_arctic" / f"{REAL_CLIP}_phone.lab")
    return labels_from_alignment(alignment, num_samples, f0, f1, f2)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
