"""The capstone's shipped models (trained on synthetic speech): their weight files
(``data/capstone/``, checked against the SHA-256 in ``data/manifest.json``),
``train_denoiser`` (load or train one) and ``denoise`` (run one on any 16 kHz mono clip).
"""

from __future__ import annotations

import hashlib
import io
import weakref
import zipfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import HOP_LENGTH, SAMPLE_RATE, AudioError, check_audio
from helpers.capstone_data import CAPSTONE_DIR, capstone_manifest
from helpers.capstone_recipe import check_loss_name, make_capstone_model, train_shipped
from helpers.checks import check_int, check_step_model
from helpers.dataset import DATA_DIR
from helpers.denoiser import enhance


def weights_path(loss: str) -> Path:
    return DATA_DIR / CAPSTONE_DIR / f"denoiser_{check_loss_name(loss)}.weights.npz"


def weights_bytes(model: keras.Model) -> bytes:
    """The model's weights as an ``.npz`` whose bytes depend only on the values (fixed zip
    dates), so the same weights always have the same SHA-256."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, variable in enumerate(model.weights):
            array = io.BytesIO()
            np.lib.format.write_array(array, np.asarray(variable.numpy(), dtype=np.float32),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"w{index:02d}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, array.getvalue())
    return buffer.getvalue()


def load_weights(model: keras.Model, path: Path) -> keras.Model:
    """Load ``weights_bytes`` from ``path`` into ``model`` (shapes must match)."""
    with np.load(path, allow_pickle=False) as arrays:
        values = [arrays[f"w{index:02d}"] for index in range(len(arrays.files))]
    if [v.shape for v in values] != [tuple(w.shape) for w in model.weights]:
        raise ValueError(f"{path.name} does not fit this model: expected weights of shapes "
                         f"{[tuple(w.shape) for w in model.weights]}.")
    model.set_weights(values)
    return model


def train_denoiser(loss: str = "masked", seed: int = 0) -> keras.Model:
    """The capstone's denoiser trained with ``loss`` (``"masked"`` or ``"seed"``).

    ``seed=0`` loads the shipped weights (the models notebook 06 compares), after checking
    their SHA-256 against ``data/manifest.json``; another seed trains the shipped recipe
    (``train_shipped``) from scratch, which takes minutes on a CPU.
    """
    check_loss_name(loss)
    if check_int(seed, "seed") != 0:
        return train_shipped(loss, int(seed)).model
    path = weights_path(loss)
    expected = capstone_manifest()["weights"]["sha256"].get(path.name)
    if expected is None or not path.exists():
        raise FileNotFoundError(f"{path} is missing; run python scripts/train_capstone.py")
    if hashlib.sha256(path.read_bytes()).hexdigest() != expected:
        raise ValueError(f"{path.name} does not match its SHA-256 in data/manifest.json; "
                         "run python scripts/train_capstone.py, then scripts/make_data.py.")
    return load_weights(make_capstone_model(0), path)


_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _runner(model: keras.Model):
    """One ``tf.function`` per model, traced once for any clip length."""
    if model not in _RUNNERS:
        _RUNNERS[model] = tf.function(lambda audio: enhance(model, audio), autograph=False,
                                      input_signature=[tf.TensorSpec([None], tf.float32)])
    return _RUNNERS[model]


def denoise(model: keras.Model, noisy: np.ndarray, sample_rate: int = SAMPLE_RATE
            ) -> np.ndarray:
    """Denoise one clip: ``noisy`` is 16 kHz mono float audio ``(samples,)``; returns the
    enhanced clip as float32 ``(samples,)``, the same length."""
    check_step_model(model, "model", "helpers.capstone.train_denoiser()")
    if int(sample_rate) != SAMPLE_RATE:
        raise AudioError(f"noisy has sample rate {sample_rate} Hz; expected {SAMPLE_RATE} Hz. "
                         "Resample first (librosa.resample).")
    check_audio(noisy, "noisy")
    noisy = np.asarray(noisy)
    if len(noisy) < HOP_LENGTH:
        raise AudioError(f"noisy has {len(noisy)} samples; expected at least {HOP_LENGTH}.")
    return _runner(model)(tf.constant(noisy, tf.float32)).numpy()
