"""The capstone's shipped models (trained on synthetic speech): their weight files
(``data/capstone/``, checked against the SHA-256 in ``data/manifest.json``), ``load_denoiser``
(load one) and ``train_denoiser`` (train one from a seed, now). ``helpers.models.denoise``
runs one on any 16 kHz mono clip.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import keras
import numpy as np

from helpers.audio import DATA_DIR
from helpers.capstone.data import CAPSTONE_DIR, capstone_manifest
from helpers.capstone.recipe import (
    TRAINED_LOSSES,
    check_loss_name,
    make_capstone_model,
    train_shipped,
)
from helpers.course import check_choice, check_int

# The shipped weight files: every loss from training seed 0, and the masked loss also from
# seeds 1 and 2, for 06's spread over training seeds.
SHIPPED_SEEDS: dict[str, tuple[int, ...]] = {loss: (0,) for loss in TRAINED_LOSSES}
SHIPPED_SEEDS["masked"] = (0, 1, 2)
SHIPPED_RUNS: tuple[tuple[str, int], ...] = tuple(
    (loss, seed) for loss, seeds in SHIPPED_SEEDS.items() for seed in seeds
)


def weights_path(loss: str, seed: int = 0) -> Path:
    """Where the weights trained with ``loss`` from training seed ``seed`` are shipped (seed 0
    has no suffix: ``denoiser_masked.weights.npz``, ``denoiser_masked_seed1.weights.npz``)."""
    check_int(seed, "seed", 0)
    suffix = f"_seed{seed}" if seed else ""
    return DATA_DIR / CAPSTONE_DIR / f"denoiser_{check_loss_name(loss)}{suffix}.weights.npz"


def weights_bytes(model: keras.Model) -> bytes:
    """The model's weights as an ``.npz`` whose bytes depend only on the values (fixed zip
    dates), so the same weights always have the same SHA-256."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, variable in enumerate(model.weights):
            array = io.BytesIO()
            np.lib.format.write_array(
                array, np.asarray(variable.numpy(), dtype=np.float32), allow_pickle=False
            )
            info = zipfile.ZipInfo(f"w{index:02d}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, array.getvalue())
    return buffer.getvalue()


def load_weights(model: keras.Model, path: Path) -> keras.Model:
    """Load ``weights_bytes`` from ``path`` into ``model`` (shapes must match)."""
    with np.load(path, allow_pickle=False) as arrays:
        values = [arrays[f"w{index:02d}"] for index in range(len(arrays.files))]
    if [v.shape for v in values] != [tuple(w.shape) for w in model.weights]:
        raise ValueError(
            f"{path.name} does not fit this model: expected weights of shapes "
            f"{[tuple(w.shape) for w in model.weights]}."
        )
    model.set_weights(values)
    return model


def load_denoiser(loss: str = "masked", *, seed: int = 0) -> keras.Model:
    """The shipped denoiser trained with ``loss`` (``"masked"``, ``"question"`` for the
    voicing-loss question's per-frame loop, or one of the ablation's ``TRAINED_LOSSES``) from
    training seed ``seed`` (``SHIPPED_SEEDS``: 0 for every loss, 0, 1 and 2 for the masked
    loss): its weights, made offline by ``scripts/train_capstone.py``, are loaded after their
    SHA-256 is checked against ``data/manifest.json``. Nothing is trained: the models notebook
    06 compares. ``train_denoiser(loss, weights="train")`` trains one now."""
    check_loss_name(loss)
    seed = check_int(seed, "seed")
    if seed not in SHIPPED_SEEDS[loss]:
        raise ValueError(
            f"the shipped {loss!r} weights were trained from seed(s) "
            f"{', '.join(map(str, SHIPPED_SEEDS[loss]))}; got seed={seed}. To train from "
            "another seed, call train_denoiser(loss, weights='train', seed=seed)."
        )
    path = weights_path(loss, seed)
    expected = capstone_manifest()["weights"]["sha256"].get(path.name)
    if expected is None or not path.exists():
        raise FileNotFoundError(f"{path} is missing; run python -m scripts.train_capstone")
    if hashlib.sha256(path.read_bytes()).hexdigest() != expected:
        raise ValueError(
            f"{path.name} does not match its SHA-256 in data/manifest.json; "
            "run python -m scripts.train_capstone, then python -m scripts.make_data."
        )
    return load_weights(make_capstone_model(0), path)  # initial weights replaced


def train_denoiser(loss: str = "masked", weights: str = "shipped", *, seed: int = 0) -> keras.Model:
    """The capstone's denoiser trained with ``loss`` from training seed ``seed``.

    ``weights="train"`` runs the shipped recipe (``train_shipped``) now, which takes minutes on
    a CPU. ``weights="shipped"`` (the default, kept for code written before ``load_denoiser``)
    trains nothing: it is ``load_denoiser(loss, seed=seed)``, the shipped weights. Call
    ``load_denoiser`` to load, so the name says what happens.
    """
    check_loss_name(loss)
    check_choice(weights, ("shipped", "train"), "weights")
    seed = check_int(seed, "seed")
    if weights == "train":
        return train_shipped(loss, seed).model
    return load_denoiser(loss, seed=seed)
