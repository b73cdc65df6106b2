"""helpers.capstone.model: the shipped weights (checked by SHA-256), load_denoiser (loads them),
train_denoiser (trains, or loads for older code) and denoise, and their bad arguments."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from helpers import capstone
from helpers.audio import DATA_DIR, AudioError
from helpers.capstone import (
    capstone_manifest,
    held_back_mixtures,
)


@pytest.fixture(scope="module")
def models():
    return {
        "question-loss model": capstone.train_denoiser("question"),
        "masked-loss model": capstone.train_denoiser("masked"),
    }


def test_train_denoiser_loads_both_shipped_models_checked_by_sha256(models):
    digests = capstone_manifest()["weights"]["sha256"]
    for loss in capstone.LOSSES:
        path = capstone.weights_path(loss)
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digests[path.name]
    a, b = models["question-loss model"], models["masked-loss model"]
    assert not np.array_equal(a.get_weights()[0], b.get_weights()[0])


def test_denoise_keeps_the_length_and_refuses_bad_input(models):
    model = models["masked-loss model"]
    noisy = held_back_mixtures()[0].audio
    for n in (256, 1001, len(noisy)):
        out = capstone.denoise(model, noisy[:n])
        assert out.shape == (n,) and out.dtype == np.float32 and np.isfinite(out).all()
    with pytest.raises(AudioError, match=r"\(samples,\)"):
        capstone.denoise(model, np.stack([noisy, noisy]))
    with pytest.raises(AudioError, match="floating point"):
        capstone.denoise(model, (noisy * 1000).astype(np.int16))
    with pytest.raises(AudioError, match="NaN"):
        capstone.denoise(model, np.full(1000, np.nan, np.float32))
    with pytest.raises(AudioError, match="expected 16000 Hz"):
        capstone.denoise(model, noisy, sample_rate=8000)
    with pytest.raises(AudioError, match="at least 256"):
        capstone.denoise(model, noisy[:100])
    with pytest.raises(TypeError, match="expected a Keras model"):
        capstone.denoise("model", noisy)


def test_load_denoiser_loads_what_train_denoiser_shipped_gives_and_trains_nothing(monkeypatch):
    from helpers.capstone import model as capstone_model

    def no_training(*args, **kwargs):
        raise AssertionError("load_denoiser trained a model")

    monkeypatch.setattr(capstone_model, "train_shipped", no_training)
    for loss, seed in (("question", 0), ("masked", 2)):
        loaded = capstone.load_denoiser(loss, seed=seed)
        shipped = capstone.train_denoiser(loss, seed=seed)  # the older spelling of the same
        assert all(
            np.array_equal(a, b) for a, b in zip(loaded.get_weights(), shipped.get_weights())
        )
    with pytest.raises(AssertionError, match="trained a model"):
        capstone.train_denoiser("masked", weights="train")
    with pytest.raises(ValueError, match="seed\\(s\\) 0; got seed=1.*weights='train'"):
        capstone.load_denoiser("question", seed=1)
    with pytest.raises(ValueError, match="loss must be one of"):
        capstone.load_denoiser("mse")


def test_train_denoiser_bad_arguments():
    with pytest.raises(ValueError, match="loss must be one of 'masked', 'question', 'masked_bare'"):
        capstone.train_denoiser("mse")
    with pytest.raises(ValueError, match="seed must be an integer"):
        capstone.train_denoiser("masked", seed=0.5)
    with pytest.raises(ValueError, match="weights must be one of 'shipped', 'train'"):
        capstone.train_denoiser("masked", weights="seed")
    with pytest.raises(ValueError, match="trained from seed\\(s\\) 0; got seed=1.*weights='train'"):
        capstone.train_denoiser("question", seed=1)
    with pytest.raises(ValueError, match="seed\\(s\\) 0, 1, 2; got seed=3"):
        capstone.train_denoiser("masked", seed=3)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        capstone.train("masked", steps=0)
    # extra utterances come in batches of the training set's size: a remainder would be
    # dropped without a word
    with pytest.raises(ValueError, match=r"multiple of the batch size \(16"):
        capstone.train("masked", steps=1, extra_utterances=10)
    with pytest.raises(ValueError, match=r"multiple of the batch size \(2"):
        capstone.train("masked", steps=1, clips=2, extra_utterances=3)


def test_the_masked_loss_ships_three_training_seeds_each_its_own_model():
    seeds = capstone.SHIPPED_SEEDS["masked"]
    assert seeds == (0, 1, 2)
    weights = [capstone.train_denoiser("masked", seed=seed).get_weights()[0] for seed in seeds]
    assert capstone.weights_path("masked", 1).name == "denoiser_masked_seed1.weights.npz"
    assert not any(np.array_equal(weights[i], weights[j]) for i, j in ((0, 1), (0, 2), (1, 2)))


def test_the_shipped_weight_files_are_the_manifests_and_small():
    shipped = {p.name for p in (DATA_DIR / "capstone").glob("*.weights.npz")}
    hashed = set(capstone_manifest()["weights"]["sha256"])
    named = {capstone.weights_path(loss, seed).name for loss, seed in capstone.SHIPPED_RUNS}
    # the two compared models and the ablation's three variants, and two more masked seeds
    assert shipped == hashed == named and len(shipped) == 7
    assert all((DATA_DIR / "capstone" / name).stat().st_size < 300_000 for name in shipped)
