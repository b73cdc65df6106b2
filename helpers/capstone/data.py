"""The capstone's data, as ``helpers.audio.Clip``s, split by utterance AND by noise instance:

* synthetic speech (``helpers.audio.random_utterance``: harmonic vowels, noise fricatives,
  pauses of exact zeros), for training, validation and the synthetic held-back set;
* real speech (CMU ARCTIC, ``data/cmu_arctic/``, unmodified; pauses hold room noise): one
  utterance of each of three speakers held back (``real_held_back_mixtures``), the other three
  for validation only. No real recording is trained on.

All five noise families are generated (``helpers.audio.make_noise``), babble included. One
recorded noise (``recorded_noise``, a running tap) is used only to test, with the held-back
real speech at 0, 5 and 10 dB: never trained on, nothing chosen on it.

Seed ranges: training utterances 1000.., held-back utterances 2000.., validation 2500..;
training noise instances 3000.., held-back noise 5000.., wider held-back noise 7000..,
validation noise 9000... Disjoint ranges: nothing held back is seen in training
(``tests/test_capstone_data.py`` checks the samples too).
"""

from __future__ import annotations

import dataclasses
import numbers
from functools import cache
from pathlib import Path

import numpy as np

from helpers.audio import (
    DATA_DIR,
    MEASURED_LABELS,
    NOISE_FAMILIES,
    SAMPLE_RATE,
    Clip,
    FrameLabels,
    labels_from_segments,
    load_audio,
    make_noise,
    mix,
    num_frames,
    random_utterance,
    read_frame_labels,
    read_manifest,
    sha256,
    synthesize,
)
from helpers.course import check_choice, check_int

CAPSTONE_DIR = "capstone"
CAPSTONE_SNR_DB = 5.0  # the held-back mixtures' SNR
CAPSTONE_TRAIN_SECONDS = 1.5  # every training utterance has this length, so they batch
CAPSTONE_HELD_BACK_SECONDS = 1.6
# Two training talkers per 16 Hz band of talker f0 from 90 to 220 Hz (the range
# random_utterance draws from), each with voiced, unvoiced and silent frames: a model trained
# on low voices only fails on high ones (tests/test_capstone_data.py checks the coverage).
CAPSTONE_TRAIN_SEEDS: tuple[int, ...] = (
    1000,
    1001,
    1002,
    1003,
    1004,
    1005,
    1008,
    1011,
    1012,
    1025,
    1029,
    1031,
    1032,
    1034,
    1048,
    1050,
)
CAPSTONE_HELD_BACK_SEEDS: tuple[int, ...] = (2006, 2007, 2010)  # each has all three kinds
TRAIN_NOISE_SEED = 3000
HELD_BACK_NOISE_SEED = 5000
TRAIN_NOISE_SECONDS = 4.0


def _fixed_length(audio: np.ndarray, seconds: float) -> np.ndarray:
    samples = int(round(seconds * SAMPLE_RATE))
    return np.pad(audio, (0, max(0, samples - len(audio))))[:samples].astype(np.float32)


def capstone_utterance(seed: int, seconds: float) -> tuple[np.ndarray, FrameLabels]:
    """A ``random_utterance`` rendered to exactly ``seconds``, with its labels by construction."""
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
        labels = dataclasses.replace(
            labels,
            **{k: np.pad(getattr(labels, k), (0, pad)) for k in ("voicing", "f0", "f1", "f2")},
        )
    labels = labels.slice(0, n)
    labels.check_fits(int(round(seconds * SAMPLE_RATE)))
    return labels


TRAIN_NOISE_INSTANCES = 100  # instances 0..99 of each family: seeds 3000..3999


def train_noise(family: str, instance: int = 0) -> np.ndarray:
    """A training instance of a noise family (``TRAIN_NOISE_SECONDS`` long, seed
    ``TRAIN_NOISE_SEED + 10 * instance + family``); training crops random windows of it.
    Instance 0 is the one the notebook's live run uses; the shipped weights were trained on
    more. Never used for a held-back or validation mixture (their seeds start at 5000)."""

    index = list(NOISE_FAMILIES).index(check_choice(family, NOISE_FAMILIES, "noise family"))
    check_int(instance, "instance", 0, TRAIN_NOISE_INSTANCES - 1)
    return make_noise(
        family,
        int(TRAIN_NOISE_SECONDS * SAMPLE_RATE),
        TRAIN_NOISE_SEED + 10 * int(instance) + index,
    )


def held_back_noise_seed(utterance_index: int, family: str) -> int:
    """The seed of the noise instance of a held-back mixture (never a training seed)."""
    check_choice(family, NOISE_FAMILIES, "noise family")
    return HELD_BACK_NOISE_SEED + 10 * utterance_index + list(NOISE_FAMILIES).index(family)


def capstone_manifest() -> dict:
    """The ``capstone`` part of ``data/manifest.json``: utterances, mixtures, weights."""
    data = read_manifest()
    if "capstone" not in data:
        raise FileNotFoundError(
            f"{DATA_DIR / 'manifest.json'} has no capstone part; run python -m scripts.make_data"
        )
    return data["capstone"]


def capstone_training_set() -> list[Clip]:
    """Every training utterance (from ``data/``), as clean clips."""
    out = []
    for entry in capstone_manifest()["train"]:
        audio, _ = load_audio(DATA_DIR / entry["file"])
        out.append(
            _clean_clip(
                entry["name"], audio, capstone_labels(entry["seed"], CAPSTONE_TRAIN_SECONDS)
            )
        )
    return out


def _clean_clip(name: str, audio: np.ndarray, labels: FrameLabels) -> Clip:
    return Clip(name, audio, audio, labels)


EXTRA_TRAIN_SEEDS: tuple[int, ...] = tuple(range(1100, 1500))  # training seeds, not shipped


def extra_training_utterances(count: int) -> list[Clip]:
    """``count`` more training utterances as clean clips
    (``EXTRA_TRAIN_SEEDS``, ``CAPSTONE_TRAIN_SECONDS`` long), made here from their seeds, not
    shipped: the offline run that makes the shipped weights trains on them too."""
    check_int(count, "count", 0, len(EXTRA_TRAIN_SEEDS))
    return [
        _clean_clip(f"train_{seed}", *capstone_utterance(seed, CAPSTONE_TRAIN_SECONDS))
        for seed in EXTRA_TRAIN_SEEDS[:count]
    ]


@cache
def _held_back() -> tuple[Clip, ...]:
    entries = capstone_manifest()
    clean = {}
    for entry in entries["held_back"]:
        audio, _ = load_audio(DATA_DIR / entry["file"])
        clean[entry["name"]] = (audio, capstone_labels(entry["seed"], CAPSTONE_HELD_BACK_SECONDS))
    mixtures = []
    for entry in entries["mixtures"]:
        noisy, _ = load_audio(DATA_DIR / entry["file"])
        audio, labels = clean[entry["clean"]]
        mixtures.append(
            _mixture(entry["name"], entry["clean"], entry["noise"], noisy, audio, labels)
        )
    return tuple(mixtures)


def _mixture(
    name: str,
    clean_name: str,
    family: str,
    noisy: np.ndarray,
    clean: np.ndarray,
    labels: FrameLabels,
    snr_db: float = CAPSTONE_SNR_DB,
) -> Clip:
    return Clip(name, noisy, clean, labels, SAMPLE_RATE, snr_db, clean_name, family)


def held_back_mixtures() -> list[Clip]:
    """Every held-back mixture (each held-back utterance with a fresh instance of each noise
    family at ``CAPSTONE_SNR_DB``), from ``data/``."""
    return list(_held_back())


def _generated_mixtures(
    prefix: str, utterance_seeds: tuple[int, ...], noise_seed: int
) -> list[Clip]:
    """Each utterance (from its seed) with a fresh instance of every noise family (seed
    ``noise_seed + 10 * index + family``) at ``CAPSTONE_SNR_DB``, made here, not shipped."""
    mixtures = []
    for index, seed in enumerate(utterance_seeds):
        clean, labels = capstone_utterance(seed, CAPSTONE_HELD_BACK_SECONDS)
        for k, family in enumerate(NOISE_FAMILIES):
            noise = make_noise(family, len(clean), noise_seed + 10 * index + k)
            mixtures.append(
                _mixture(
                    f"{prefix}_{seed}_{family}",
                    f"{prefix}_{seed}",
                    family,
                    mix(clean, noise, CAPSTONE_SNR_DB),
                    clean,
                    labels,
                )
            )
    return mixtures


WIDER_HELD_BACK_SEEDS: tuple[int, ...] = tuple(range(2011, 2023))
WIDER_NOISE_SEED = 7000


def wider_held_back_mixtures() -> list[Clip]:
    """Twelve more held-back utterances (``WIDER_HELD_BACK_SEEDS``), each with a fresh
    instance of every noise family (seeds ``WIDER_NOISE_SEED + 10 * index + family``) at
    ``CAPSTONE_SNR_DB``: sixty mixtures made here from their seeds, not shipped (``data/`` has
    room for three utterances). Neither the utterances nor the noise seeds are used in
    training or in the shipped held-back set."""
    return _generated_mixtures("wider", WIDER_HELD_BACK_SEEDS, WIDER_NOISE_SEED)


VALIDATION_SEEDS: tuple[int, ...] = tuple(range(2500, 2512))
VALIDATION_NOISE_SEED = 9000


def validation_mixtures() -> list[Clip]:
    """The capstone's validation set, where its recipe (training length, learning rate, model
    size) is chosen: twelve utterances (``VALIDATION_SEEDS``), each with a fresh instance of
    every noise family (seeds ``VALIDATION_NOISE_SEED + 10 * index + family``) at
    ``CAPSTONE_SNR_DB``, made here from their seeds, not shipped. Disjoint from training and
    from both held-back sets (utterances and noise instances), so choosing on it says nothing
    about the held-back scores."""
    return _generated_mixtures("validation", VALIDATION_SEEDS, VALIDATION_NOISE_SEED)


REAL_DIR = "cmu_arctic"
# Real speech (data/cmu_arctic/, CMU ARCTIC, unmodified 16 kHz recordings): one utterance of
# each speaker held back, never trained on and never used to choose anything; the other three
# are the real validation set. slt and aew speak US English, axb Indian English.
REAL_HELD_BACK: tuple[str, ...] = (
    "arctic_a0010",
    "cmu_arctic_us_aew_a0002",
    "cmu_arctic_us_axb_a0005",
)
REAL_VALIDATION: tuple[str, ...] = (
    "arctic_a0009",
    "cmu_arctic_us_aew_a0001",
    "cmu_arctic_us_axb_a0004",
)
REAL_SPEAKERS = {
    "arctic_a0009": "slt",
    "arctic_a0010": "slt",
    "cmu_arctic_us_aew_a0001": "aew",
    "cmu_arctic_us_aew_a0002": "aew",
    "cmu_arctic_us_axb_a0004": "axb",
    "cmu_arctic_us_axb_a0005": "axb",
}
REAL_HELD_BACK_NOISE_SEED = 11000
REAL_VALIDATION_NOISE_SEED = 13000


def real_labels_path(name: str, data_dir: Path = DATA_DIR) -> Path:
    """Where a real recording's measured labels are stored (``scripts/make_data.py`` writes
    them, into ``data_dir``)."""
    return Path(data_dir) / REAL_DIR / f"{name}_labels.csv"


@cache
def real_utterance(name: str) -> tuple[np.ndarray, FrameLabels]:
    """A real recording from ``data/cmu_arctic/`` and its labels, measured from the audio by
    ``helpers.audio.labels_from_audio`` (silence = frames near the clip's own
    room-noise floor, not digital zeros) when ``scripts/make_data.py`` made ``data/``, and
    stored beside it (``real_labels_path``), so a notebook never waits for pyin."""
    check_choice(name, tuple(REAL_SPEAKERS), "real utterance")
    audio, sample_rate = load_audio(DATA_DIR / REAL_DIR / f"{name}.wav")
    labels = read_frame_labels(real_labels_path(name), source=MEASURED_LABELS)
    labels.check_fits(len(audio), sample_rate)
    return audio, labels


def _real_mixtures(
    names: tuple[str, ...], noise_seed: int, snr_db: float = CAPSTONE_SNR_DB
) -> list[Clip]:
    mixtures = []
    for index, name in enumerate(names):
        clean, labels = real_utterance(name)
        for k, family in enumerate(NOISE_FAMILIES):
            noise = make_noise(family, len(clean), noise_seed + 10 * index + k)
            mixtures.append(
                _mixture(
                    f"{name}_{family}",
                    name,
                    family,
                    mix(clean, noise, snr_db),
                    clean,
                    labels,
                    snr_db,
                )
            )
    return mixtures


RECORDED_NOISE_DIR = "recorded_noise"
RECORDED_NOISE = "running_tap_20s"  # Speech Commands' running tap, CC BY 4.0, trimmed to 20 s
# Where each recorded-noise window starts (s): non-overlapping for every held-back recording
# (the longest is 4.0 s), the same windows at every SNR.
RECORDED_NOISE_STARTS_S: tuple[float, ...] = (0.0, 5.0, 10.0, 15.0)
NOISE_KINDS = ("generated", "recorded")
TEST_SNRS_DB: tuple[float, ...] = (0.0, 5.0, 10.0)  # the real test set's SNRs (06's table)


def recorded_noise() -> np.ndarray:
    """The recorded noise (``data/recorded_noise/``: a running tap, Speech Commands, CC BY
    4.0, trimmed to 20 s), checked against its SHA-256 in ``data/manifest.json``. Used to
    evaluate only: never trained on, nothing chosen on it."""
    path = DATA_DIR / RECORDED_NOISE_DIR / f"{RECORDED_NOISE}.wav"
    expected = read_manifest().get("recorded_noise", {}).get("sha256")
    if expected is None or sha256(path) != expected:
        raise ValueError(
            f"{path} is missing or does not match its SHA-256 in data/manifest.json; "
            "run python -m scripts.make_data."
        )
    return load_audio(path)[0]


def _recorded_mixtures(names: tuple[str, ...], snr_db: float) -> list[Clip]:
    noise = recorded_noise()
    mixtures = []
    for name in names:
        clean, labels = real_utterance(name)
        for start_s in RECORDED_NOISE_STARTS_S:
            start = int(start_s * SAMPLE_RATE)
            window = noise[start : start + len(clean)]
            mixtures.append(
                _mixture(
                    f"{name}_tap{start_s:g}s",
                    name,
                    "tap",
                    mix(clean, window, snr_db),
                    clean,
                    labels,
                    snr_db,
                )
            )
    return mixtures


@cache
def _real_held_back(snr_db: float, noise: str) -> tuple[Clip, ...]:
    if noise == "recorded":
        return tuple(_recorded_mixtures(REAL_HELD_BACK, snr_db))
    return tuple(_real_mixtures(REAL_HELD_BACK, REAL_HELD_BACK_NOISE_SEED, snr_db))


def real_held_back_mixtures(
    snr_db: float = CAPSTONE_SNR_DB, noise: str = "generated"
) -> list[Clip]:
    """The real-speech test set at ``snr_db``: each ``REAL_HELD_BACK`` recording with, for
    ``noise="generated"``, a fresh instance of every noise family (seeds
    ``REAL_HELD_BACK_NOISE_SEED + 10 * index + family``, the same instances at every SNR):
    fifteen mixtures; for ``noise="recorded"``, four non-overlapping windows of the recorded
    noise (``RECORDED_NOISE_STARTS_S``; family ``"tap"``): twelve. Made here from the shipped
    recordings."""
    check_choice(noise, NOISE_KINDS, "noise")
    if not isinstance(snr_db, numbers.Real) or isinstance(snr_db, bool) or not np.isfinite(snr_db):
        raise ValueError(f"snr_db must be a finite number of dB; got {snr_db!r}.")
    return list(_real_held_back(float(snr_db), noise))


def real_validation_mixtures() -> list[Clip]:
    """The real validation set: each ``REAL_VALIDATION`` recording with fresh noise of every
    family (seeds ``REAL_VALIDATION_NOISE_SEED + ...``) at ``CAPSTONE_SNR_DB``."""
    return _real_mixtures(REAL_VALIDATION, REAL_VALIDATION_NOISE_SEED)
