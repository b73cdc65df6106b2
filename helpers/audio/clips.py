"""The course clips: what is in ``data/``, loading a clip with its labels, and the pieces of
clips the notebooks train on (``crop``, ``excerpt``, ``make_example``, batches with fresh noise).

One type, ``Clip``, holds every clip the course uses: the model's input ``audio``, its
``clean`` reference (the same array for a clean clip) and per-frame ``labels``. The synthetic
clips are defined here (``SYNTHETIC_CLIPS``) and rendered by ``scripts/make_data.py``, which
also writes ``data/manifest.json``. The real clip is CMU ARCTIC ``arctic_a0009``; its f0/F1/F2
tracks were measured once by the same script and stored beside it.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from helpers.audio.labels import (
    FrameLabels,
    LabelError,
    labels_from_alignment,
    labels_from_segments,
    read_phone_alignment,
)
from helpers.audio.noise import make_noise, mix
from helpers.audio.signal import SAMPLE_RATE, load_audio, num_frames, stft
from helpers.audio.synth import Segment, fricative, silence, vowel
from helpers.course import check_choice


def _data_dir() -> Path:
    """The course data: ``$GRADIENT_CLINIC_DATA`` if set, else the checkout's ``data/``, else
    the copy a wheel installs inside the package (``helpers/course_data``)."""
    if "GRADIENT_CLINIC_DATA" in os.environ:
        return Path(os.environ["GRADIENT_CLINIC_DATA"])
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "data"
    return checkout if (checkout / "manifest.json").is_file() else package / "course_data"


DATA_DIR = _data_dir()
REAL_CLIP = "arctic_a0009"
NOISE_RMS = 0.01  # the noise make_example adds to make a denoiser's input (-40 dBFS)


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


_UTTERANCE_1 = ClipSpec(
    "utterance_1",
    (
        silence(0.15),
        vowel("a", 120, 0.30),
        fricative("s", 0.15),
        vowel("i", 140, 0.30),
        silence(0.10),
        vowel("u", 110, 0.30),
        silence(0.15),
    ),
    seed=11,
)
_UTTERANCE_2 = ClipSpec(
    "utterance_2",
    (
        silence(0.10),
        vowel("i", 130, 0.25),
        fricative("sh", 0.20),
        vowel("a", 115, 0.35),
        silence(0.15),
        vowel("u", 125, 0.25),
        fricative("s", 0.15),
        silence(0.10),
    ),
    seed=12,
)

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
    """A clip ready to use: the model's input ``audio``, its ``clean`` reference (``audio``
    itself for a clean clip) and per-frame ``labels``. A noisy clip names its clean source
    (``clean_name``) and, for a capstone mixture, its noise ``family``."""

    name: str
    audio: np.ndarray
    clean: np.ndarray
    labels: FrameLabels
    sample_rate: int = SAMPLE_RATE
    snr_db: float | None = None
    clean_name: str | None = None
    family: str | None = None

    @property
    def duration(self) -> float:
        return len(self.audio) / self.sample_rate

    @property
    def num_frames(self) -> int:
        return self.labels.num_frames

    def describe(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in self.labels.counts().items())
        return f"{self.name}: {self.duration:.2f} s, {self.num_frames} frames ({counts})"


class ClipExcerpt(NamedTuple):
    """Frames ``start_frame .. stop_frame - 1`` of the course clip ``name``."""

    name: str
    start_frame: int
    stop_frame: int


def read_manifest() -> dict:
    """``data/manifest.json`` as it is on disk (read once per process)."""
    return _read_manifest(DATA_DIR)


@cache
def _read_manifest(data_dir: Path) -> dict:
    path = data_dir / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; run python -m scripts.make_data")
    return json.loads(path.read_text())


def manifest() -> dict:
    """The course clips of ``data/manifest.json``, keyed by clip name."""
    return {entry["name"]: entry for entry in read_manifest()["clips"]}


def clip_names() -> list[str]:
    """Every clip in the data set, in manifest order."""
    return list(manifest())


def load_clip(name: str) -> Clip:
    """Load a clip by name (see ``clip_names()``), with its labels and clean reference."""
    entries = manifest()
    check_choice(name, entries, "clip name", error=KeyError)
    entry = entries[name]
    audio, sample_rate = load_audio(DATA_DIR / entry["file"])
    if name == REAL_CLIP:
        labels = real_clip_labels(len(audio))
    else:
        segments = [Segment(**s) for s in entry["segments"]]
        labels = labels_from_segments(segments, sample_rate)
    labels.check_fits(len(audio), sample_rate)
    clean = load_clip(entry["clean"]).audio if entry.get("clean") else audio
    return Clip(name, audio, clean, labels, sample_rate, entry.get("snr_db"), entry.get("clean"))


REAL_IN_NOISE_SNR_DB = 5.0
REAL_IN_NOISE_SEEDS = (100, 101, 102)


def real_clip_in_noise(
    snr_db: float = REAL_IN_NOISE_SNR_DB, seeds: Sequence[int] = REAL_IN_NOISE_SEEDS
) -> dict[str, np.ndarray]:
    """The real clip mixed at ``snr_db`` with white and with pink noise, one mixture per
    family and seed, by name (``arctic_a0009_white100``, ...). Its known labels are the clean
    clip's, so measured labels can be scored on real speech in noise (notebook 07 and
    ``scripts/measure_labels.py`` do)."""
    real = load_clip(REAL_CLIP)
    mixtures = {}
    for family in ("white", "pink"):
        for seed in seeds:
            noise = (
                np.random.default_rng(seed).standard_normal(len(real.audio))
                if family == "white"
                else make_noise(family, len(real.audio), seed)
            )
            mixtures[f"{real.name}_{family}{seed}"] = mix(real.audio, noise, snr_db)
    return mixtures


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


# ------------------------------------------------ pieces of clips, what the notebooks train on


def crop(clip: Clip, seconds: float) -> Clip:
    """The first ``seconds`` of a clip (audio, clean and labels), so a notebook can run an
    eager per-frame loop in a second or two instead of ten."""
    samples = int(round(seconds * clip.sample_rate))
    if not 0 < samples <= len(clip.audio):
        raise ValueError(
            f"seconds must be in (0, {clip.duration:.3f}] for {clip.name}; got {seconds}."
        )
    return dataclasses.replace(
        clip,
        audio=clip.audio[:samples],
        clean=clip.clean[:samples],
        labels=clip.labels.slice(0, num_frames(samples)),
    )


def excerpt(
    audio: np.ndarray, labels: FrameLabels, start_frame: int, stop_frame: int
) -> tuple[np.ndarray, FrameLabels]:
    """Audio and labels of frames ``start_frame .. stop_frame - 1`` of a clip.

    The audio starts at sample ``start_frame * hop`` so the excerpt's centred frames sit on the
    clip's frames, and has ``(stop - start - 1) * hop`` samples, i.e. exactly
    ``stop - start`` frames.
    """
    if not 0 <= start_frame < stop_frame <= labels.num_frames:
        raise LabelError(
            f"frames {start_frame}..{stop_frame} are not inside the clip's "
            f"{labels.num_frames} frames."
        )
    if stop_frame - start_frame < 2:
        raise LabelError("an excerpt needs at least two frames.")
    hop = labels.hop_length
    piece = np.asarray(audio)[start_frame * hop : (stop_frame - 1) * hop]
    new_labels = labels.slice(start_frame, stop_frame)
    new_labels.check_fits(len(piece), labels.sample_rate)
    return piece, new_labels


def clip_excerpt(excerpt_of: ClipExcerpt, seed: int = 0) -> Clip:
    """A training clip of frames ``start_frame .. stop_frame - 1`` of a course clip's clean
    audio, with seeded noise (``make_example``), named ``"clip[start:stop]"``."""
    name, start, stop = excerpt_of
    source = load_clip(name)
    return make_example(
        f"{name}[{start}:{stop}]", *excerpt(source.clean, source.labels, start, stop), seed=seed
    )


def make_example(
    name: str, clean: np.ndarray, labels: FrameLabels, noise_rms: float = NOISE_RMS, seed: int = 0
) -> Clip:
    """A training clip: ``audio = clean + seeded white noise of RMS noise_rms``."""
    clean = np.asarray(clean, dtype=np.float32)
    labels.check_fits(len(clean), labels.sample_rate)
    noise = np.random.default_rng(seed).standard_normal(len(clean)) * noise_rms
    return Clip(name, (clean + noise).astype(np.float32), clean, labels, labels.sample_rate)


def batch_of(clips: Sequence[Clip]) -> tuple[tf.Tensor, tf.Tensor]:
    """The noisy ``stft`` ``(batch, frames, bins)`` and clean audio ``(batch, samples)`` of
    clips of one length (for instance ``crop`` of each): a batch for the GRU denoiser."""
    lengths = {len(c.audio) for c in clips}
    if len(lengths) != 1:
        raise ValueError(
            f"clips in one batch must have one length; got "
            f"{ {c.name: len(c.audio) for c in clips} }."
        )
    noisy = stft(np.stack([c.audio for c in clips]))
    clean = tf.constant(np.stack([c.clean for c in clips]), tf.float32)
    return noisy, clean


def noisy_crops(
    clips: Sequence[Clip], samples: int, rng: np.random.Generator
) -> tuple[tf.Tensor, tf.Tensor]:
    """One training batch: a random ``samples``-long window of each clip, with fresh noise.

    The noise of a noisy clip (``audio - clean``) is rolled by a random amount before it is
    added back, so the same noise meets the speech at a new place every step and the model
    cannot learn one noise waveform by heart. Returns ``batch_of``'s two tensors.
    """
    if not clips:
        raise ValueError("noisy_crops needs at least one clip.")
    noisy, clean = [], []
    for clip in clips:
        if not 0 < samples <= len(clip.audio):
            raise ValueError(
                f"samples must be in 1..{len(clip.audio)} for {clip.name}; got {samples}."
            )
        start = int(rng.integers(0, len(clip.audio) - samples + 1))
        noise = np.roll(clip.audio - clip.clean, int(rng.integers(0, len(clip.audio))))
        clean.append(clip.clean[start : start + samples])
        noisy.append((clip.clean + noise)[start : start + samples].astype(np.float32))
    return stft(np.stack(noisy)), tf.constant(np.stack(clean), tf.float32)
