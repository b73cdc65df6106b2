"""helpers.capstone.recipe: the training script's reproducibility on a tiny configuration, and
the masked loss's voiced term."""

from __future__ import annotations

from pathlib import Path

from helpers import capstone
from helpers.capstone import (
    held_back_mixtures,
)

ROOT = Path(__file__).resolve().parents[1]


def test_training_script_reproduces_weights_on_a_tiny_configuration():
    from scripts import train_capstone as script

    # the shipped recipe's code path (extra utterances, several noise instances, the decay),
    # shrunk: two steps, two batches of one utterance, two noise instances per family
    tiny = {"steps": 2, "clips": 1, "extra_utterances": 1, "noise_instances": 2}
    first = script.trained_bytes("masked", **tiny)
    assert first == script.trained_bytes("masked", **tiny)
    assert first != capstone.weights_bytes(capstone.recipe.make_capstone_model(0))  # it trained
    # another training seed (the shipped masked-loss seeds 1 and 2): other weights
    assert script.trained_bytes("masked", seed=1, **tiny) != first


def test_the_capstone_masked_loss_also_scores_voiced_frames():
    from helpers.voicing import magnitudes, masked_loss_on_magnitudes

    mixture = held_back_mixtures()[0]
    ref_mag, est_mag = magnitudes(mixture.clean, mixture.audio)
    value = float(capstone.recipe.loss_on_magnitudes("masked", ref_mag, est_mag, mixture.labels))
    assert capstone.CAPSTONE_VOICED_WEIGHT > 0
    assert value == float(
        masked_loss_on_magnitudes(
            ref_mag,
            est_mag,
            mixture.labels,
            capstone.CAPSTONE_SILENCE_WEIGHT,
            voiced_weight=capstone.CAPSTONE_VOICED_WEIGHT,
        )
    )
    assert value > float(
        capstone.recipe.loss_on_magnitudes(
            "masked", ref_mag, est_mag, mixture.labels, voiced_weight=0.0
        )
    )
