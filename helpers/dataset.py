"""The course data set: what is in ``data/``, loading a clip with its labels, and the pieces
of clips the notebooks train on (``crop``, ``excerpt``, ``Example``, batches with fresh noise).

The synthetic clips are defined here (``SYNTHETIC_CLIPS``) and rendered by
``scripts/make_data.py``, which also writes ``data/manifest.json`` (sample rate, duration,
label source and SHA-256 of every file). The real clip is CMU ARCTIC ``arctic_a0009`` with
its phone alignment and licence; its per-frame f0/F1/F2 were measured once by the same
script and stored beside it, so no notebook has to wait for pyin.
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

import numpy as np
import tensorflow as tf

from helpers.audio import SAMPLE_RATE, load_audio, num_frames, stft
from helpers.labels import (
    FrameLabels,
    LabelError,
    labels_from_alignment,
    labels_from_segments,
    read_phone_alignment,
)
from helpers.noise import NOISE_FAMILIES, make_noise, mix, random_utterance
from helpers.synth import Segment, fricative, silence, synthesize, vowel

DATA_DIR = Path(
    os.environ.get("GRADIENT_CLINIC_DATA", Path(__file__).resolve().parents[1] / "data")
)
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


# ---------------------------------------------------------------------------------------------
# Pieces of clips, and what the notebooks train on
# ---------------------------------------------------------------------------------------------

def crop(clip: Clip, seconds: float) -> Clip:
    """The first ``seconds`` of a clip (audio, clean and labels), so a notebook can run an
    eager per-frame loop in a second or two instead of ten."""
    samples = int(round(seconds * clip.sample_rate))
    if not 0 < samples <= len(clip.audio):
        raise ValueError(f"seconds must be in (0, {clip.duration:.3f}] for {clip.name}; "
                         f"got {seconds}.")
    return dataclasses.replace(clip, audio=clip.audio[:samples], clean=clip.clean[:samples],
                               labels=clip.labels.slice(0, num_frames(samples)))


def excerpt(audio: np.ndarray, labels: FrameLabels, start_frame: int, stop_frame: int
            ) -> tuple[np.ndarray, FrameLabels]:
    """Audio and labels of frames ``start_frame .. stop_frame - 1`` of a clip.

    The audio starts at sample ``start_frame * hop`` so the excerpt's centred frames sit on the
    clip's frames, and has ``(stop - start - 1) * hop`` samples, i.e. exactly
    ``stop - start`` frames.
    """
    if not 0 <= start_frame < stop_frame <= labels.num_frames:
        raise LabelError(f"frames {start_frame}..{stop_frame} are not inside the clip's "
                         f"{labels.num_frames} frames.")
    if stop_frame - start_frame < 2:
        raise LabelError("an excerpt needs at least two frames.")
    hop = labels.hop_length
    piece = np.asarray(audio)[start_frame * hop:(stop_frame - 1) * hop]
    new_labels = labels.slice(start_frame, stop_frame)
    new_labels.check_fits(len(piece), labels.sample_rate)
    return piece, new_labels


@dataclass(frozen=True)
class Example:
    """One training example: the denoiser's input, the clean reference, and frame labels.

    A ``Clip`` is a file of ``data/``; an ``Example`` is what a training step sees (often an
    excerpt, with noise added by ``make_example``).
    """

    name: str
    noisy: np.ndarray
    reference: np.ndarray
    labels: FrameLabels

    @property
    def num_frames(self) -> int:
        return self.labels.num_frames

    def describe(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in self.labels.counts().items())
        seconds = len(self.reference) / self.labels.sample_rate
        return f"{self.name}: {seconds:.2f} s, {self.num_frames} frames ({counts})"


def make_example(name: str, reference: np.ndarray, labels: FrameLabels,
                 noise_rms: float = NOISE_RMS, seed: int = 0) -> Example:
    """A denoising example: ``noisy = reference + seeded white noise of RMS noise_rms``."""
    reference = np.asarray(reference, dtype=np.float32)
    labels.check_fits(len(reference), labels.sample_rate)
    noise = np.random.default_rng(seed).standard_normal(len(reference)) * noise_rms
    return Example(name, (reference + noise).astype(np.float32), reference, labels)


def batch_of(clips: Sequence[Clip]) -> tuple[tf.Tensor, tf.Tensor]:
    """The noisy ``stft`` ``(batch, frames, bins)`` and clean audio ``(batch, samples)`` of
    clips of one length (for instance ``crop`` of each): a batch for the GRU denoiser."""
    lengths = {len(c.audio) for c in clips}
    if len(lengths) != 1:
        raise ValueError(f"clips in one batch must have one length; got "
                         f"{ {c.name: len(c.audio) for c in clips} }.")
    noisy = stft(np.stack([c.audio for c in clips]))
    clean = tf.constant(np.stack([c.clean for c in clips]), tf.float32)
    return noisy, clean


def noisy_crops(clips: Sequence[Clip], samples: int, rng: np.random.Generator
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
            raise ValueError(f"samples must be in 1..{len(clip.audio)} for {clip.name}; "
                             f"got {samples}.")
        start = int(rng.integers(0, len(clip.audio) - samples + 1))
        noise = np.roll(clip.audio - clip.clean, int(rng.integers(0, len(clip.audio))))
        clean.append(clip.clean[start:start + samples])
        noisy.append((clip.clean + noise)[start:start + samples].astype(np.float32))
    return stft(np.stack(noisy)), tf.constant(np.stack(clean), tf.float32)


# ---------------------------------------------------------------------------------------------
# The capstone's data: speech-like utterances and realistic noise (helpers.noise), split by
# utterance AND by noise instance
# ---------------------------------------------------------------------------------------------

CAPSTONE_DIR = "capstone"
CAPSTONE_SNR_DB = 5.0  # the held-back mixtures' SNR
CAPSTONE_TRAIN_SECONDS = 1.5  # every training utterance has this length, so they batch
CAPSTONE_HELD_BACK_SECONDS = 1.6
# Seeds: training utterances 1000.., held-back utterances 2000..; training noise instances
# 3000.., held-back noise instances 5000.. Disjoint ranges: nothing held back is seen in
# training (tests/test_capstone.py checks the samples too).
# Two training talkers per 16 Hz band of talker f0 from 90 to 220 Hz (the range
# random_utterance draws from), each with voiced, unvoiced and silent frames: a model trained
# on low voices only fails on high ones (tests/test_capstone.py checks the coverage).
CAPSTONE_TRAIN_SEEDS: tuple[int, ...] = (1000, 1001, 1002, 1003, 1004, 1005, 1008, 1011, 1012,
                                         1025, 1029, 1031, 1032, 1034, 1048, 1050)
CAPSTONE_HELD_BACK_SEEDS: tuple[int, ...] = (2006, 2007, 2010)  # each has all three kinds
TRAIN_NOISE_SEED = 3000
HELD_BACK_NOISE_SEED = 5000
TRAIN_NOISE_SECONDS = 4.0


def _fixed_length(audio: np.ndarray, seconds: float) -> np.ndarray:
    samples = int(round(seconds * SAMPLE_RATE))
    return np.pad(audio, (0, max(0, samples - len(audio))))[:samples].astype(np.float32)


def capstone_utterance(seed: int, seconds: float) -> tuple[np.ndarray, FrameLabels]:
    """A ``random_utterance`` rendered to exactly ``seconds``, with its labels by construction.
    """
    segments = list(random_utterance(seed, seconds))
    audio = _fixed_length(synthesize(segments, seed=seed), seconds)
    return audio, capstone_labels(seed, seconds)


@cache
def capstone_labels(seed: int, seconds: float) -> FrameLabels:
    """The labels of ``capstone_utterance(seed, seconds)``, without rendering it."""
    segments = list(random_utterance(seed, seconds))
    labels = labels_from_segments(segments)
    n = num_frames(int(round(seconds * SAMPLE_RATE)))
    if labels.num_frames < n:  # rounding left the last frame outside the segments: silence
        pad = n - labels.num_frames
        labels = dataclasses.replace(labels, **{k: np.pad(getattr(labels, k), (0, pad))
                                                for k in ("voicing", "f0", "f1", "f2")})
    labels = labels.slice(0, n)
    labels.check_fits(int(round(seconds * SAMPLE_RATE)))
    return labels


TRAIN_NOISE_INSTANCES = 100  # instances 0..99 of each family: seeds 3000..3999


def train_noise(family: str, instance: int = 0) -> np.ndarray:
    """A training instance of a noise family (``TRAIN_NOISE_SECONDS`` long, seed
    ``TRAIN_NOISE_SEED + 10 * instance + family``); training crops random windows of it.
    Instance 0 is the one the notebook's live run uses; the shipped weights were trained on
    more. Never used for a held-back or validation mixture (their seeds start at 5000)."""

    index = list(NOISE_FAMILIES).index(family) if family in NOISE_FAMILIES else None
    if index is None:
        raise ValueError(f"unknown noise family {family!r}; expected one of "
                         f"{', '.join(NOISE_FAMILIES)}.")
    if isinstance(instance, bool) or not isinstance(instance, (int, np.integer)) \
            or not 0 <= instance < TRAIN_NOISE_INSTANCES:
        raise ValueError(f"instance must be an integer in 0..{TRAIN_NOISE_INSTANCES - 1}; "
                         f"got {instance!r}.")
    return make_noise(family, int(TRAIN_NOISE_SECONDS * SAMPLE_RATE),
                      TRAIN_NOISE_SEED + 10 * int(instance) + index)


def held_back_noise_seed(utterance_index: int, family: str) -> int:
    """The seed of the noise instance of a held-back mixture (never a training seed)."""
    if family not in NOISE_FAMILIES:
        raise ValueError(f"unknown noise family {family!r}; expected one of "
                         f"{', '.join(NOISE_FAMILIES)}.")
    return HELD_BACK_NOISE_SEED + 10 * utterance_index + list(NOISE_FAMILIES).index(family)


@dataclass(frozen=True)
class Mixture:
    """A held-back capstone mixture: noisy input, clean reference, labels, noise family."""

    name: str
    utterance: str
    family: str
    noisy: np.ndarray
    clean: np.ndarray
    labels: FrameLabels


@cache
def capstone_manifest() -> dict:
    """The ``capstone`` part of ``data/manifest.json``: utterances, mixtures, weights."""
    path = DATA_DIR / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; run python scripts/make_data.py")
    data = json.loads(path.read_text())
    if "capstone" not in data:
        raise FileNotFoundError(f"{path} has no capstone part; run python scripts/make_data.py")
    return data["capstone"]


def capstone_training_set() -> list[tuple[str, np.ndarray, FrameLabels]]:
    """``(name, clean audio, labels)`` of every training utterance (from ``data/``)."""
    out = []
    for entry in capstone_manifest()["train"]:
        audio, _ = load_audio(DATA_DIR / entry["file"])
        out.append((entry["name"], audio, capstone_labels(entry["seed"],
                                                          CAPSTONE_TRAIN_SECONDS)))
    return out


EXTRA_TRAIN_SEEDS: tuple[int, ...] = tuple(range(1100, 1500))  # training seeds, not shipped


def extra_training_utterances(count: int) -> list[tuple[str, np.ndarray, FrameLabels]]:
    """``(name, clean audio, labels)`` of ``count`` more training utterances
    (``EXTRA_TRAIN_SEEDS``, ``CAPSTONE_TRAIN_SECONDS`` long), made here from their seeds, not
    shipped: the offline run that makes the shipped weights trains on them too."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) \
            or not 0 <= count <= len(EXTRA_TRAIN_SEEDS):
        raise ValueError(f"count must be an integer in 0..{len(EXTRA_TRAIN_SEEDS)}; "
                         f"got {count!r}.")
    return [(f"train_{seed}", *capstone_utterance(seed, CAPSTONE_TRAIN_SECONDS))
            for seed in EXTRA_TRAIN_SEEDS[:count]]


@cache
def _held_back() -> tuple[Mixture, ...]:
    entries = capstone_manifest()
    clean = {}
    for entry in entries["held_back"]:
        audio, _ = load_audio(DATA_DIR / entry["file"])
        clean[entry["name"]] = (audio, capstone_labels(entry["seed"],
                                                       CAPSTONE_HELD_BACK_SECONDS))
    mixtures = []
    for entry in entries["mixtures"]:
        noisy, _ = load_audio(DATA_DIR / entry["file"])
        audio, labels = clean[entry["clean"]]
        mixtures.append(Mixture(entry["name"], entry["clean"], entry["noise"], noisy, audio,
                                labels))
    return tuple(mixtures)


def held_back_mixtures() -> list[Mixture]:
    """Every held-back mixture (each held-back utterance with a fresh instance of each noise
    family at ``CAPSTONE_SNR_DB``), from ``data/``."""
    return list(_held_back())


def _generated_mixtures(prefix: str, utterance_seeds: tuple[int, ...], noise_seed: int
                        ) -> list[Mixture]:
    """Each utterance (from its seed) with a fresh instance of every noise family (seed
    ``noise_seed + 10 * index + family``) at ``CAPSTONE_SNR_DB``, made here, not shipped."""
    mixtures = []
    for index, seed in enumerate(utterance_seeds):
        clean, labels = capstone_utterance(seed, CAPSTONE_HELD_BACK_SECONDS)
        for k, family in enumerate(NOISE_FAMILIES):
            noise = make_noise(family, len(clean), noise_seed + 10 * index + k)
            mixtures.append(Mixture(f"{prefix}_{seed}_{family}", f"{prefix}_{seed}", family,
                                    mix(clean, noise, CAPSTONE_SNR_DB), clean, labels))
    return mixtures


WIDER_HELD_BACK_SEEDS: tuple[int, ...] = tuple(range(2011, 2023))
WIDER_NOISE_SEED = 7000


def wider_held_back_mixtures() -> list[Mixture]:
    """Twelve more held-back utterances (``WIDER_HELD_BACK_SEEDS``), each with a fresh
    instance of every noise family (seeds ``WIDER_NOISE_SEED + 10 * index + family``) at
    ``CAPSTONE_SNR_DB``: sixty mixtures made here from their seeds, not shipped (``data/`` has
    room for three utterances). Neither the utterances nor the noise seeds are used in
    training or in the shipped held-back set."""
    return _generated_mixtures("wider", WIDER_HELD_BACK_SEEDS, WIDER_NOISE_SEED)


VALIDATION_SEEDS: tuple[int, ...] = tuple(range(2500, 2512))
VALIDATION_NOISE_SEED = 9000


def validation_mixtures() -> list[Mixture]:
    """The capstone's validation set, where its recipe (training length, learning rate, model
    size) is chosen: twelve utterances (``VALIDATION_SEEDS``), each with a fresh instance of
    every noise family (seeds ``VALIDATION_NOISE_SEED + 10 * index + family``) at
    ``CAPSTONE_SNR_DB``, made here from their seeds, not shipped. Disjoint from training and
    from both held-back sets (utterances and noise instances), so choosing on it says nothing
    about the held-back scores."""
    return _generated_mixtures("validation", VALIDATION_SEEDS, VALIDATION_NOISE_SEED)
