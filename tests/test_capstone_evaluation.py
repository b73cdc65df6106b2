"""helpers.capstone.evaluation: the checks notebook 06 asserts, and that the question's loss
fails them."""

from __future__ import annotations

import pytest

from helpers import capstone
from helpers.capstone import held_back_mixtures


@pytest.fixture(scope="module")
def models():
    return {
        "question-loss model": capstone.train_denoiser("question"),
        "masked-loss model": capstone.train_denoiser("masked"),
    }


@pytest.fixture(scope="module")
def comparison(models):
    return capstone.compare(models, classical=False)  # the models' checks; 06 runs the rest


def test_the_question_loss_fails_the_silent_gradient_check_the_masked_loss_passes():
    assert capstone.silent_gradient_norm("question") == 0.0  # zeros inside tf.function
    assert capstone.silent_gradient_norm("masked") > 0.0


def test_the_question_loss_model_fails_the_quiet_on_silence_check(comparison):
    # 06 asserts the masked-loss model is >= 6 dB quieter on held-back silence than the
    # question-loss model, and that it is at least QUIET_ON_SILENCE_DB below its input there;
    # the question-loss model, put through the same check, fails it.
    assert capstone.quieter_on_silence_db(comparison, "masked-loss model") >= 6.0
    assert capstone.quiet_on_silence(comparison, "masked-loss model")
    assert not capstone.quiet_on_silence(comparison, "question-loss model")


def test_the_question_loss_model_fails_the_beats_the_input_check(comparison):
    assert capstone.beats_input(comparison, "masked-loss model")
    assert not capstone.beats_input(comparison, "question-loss model")


def test_ablation_rows_give_each_set_its_mean_si_sdr_and_level_on_pauses():
    mixtures = held_back_mixtures()[:5]
    outputs = {
        "noisy input": [m.audio for m in mixtures],
        "half as loud": [0.5 * m.audio for m in mixtures],
    }
    comparison = capstone.evaluation.Comparison(mixtures, outputs, {})
    rows = capstone.ablation_rows({"synthetic": comparison})
    assert set(rows) == set(outputs)
    assert rows["half as loud"]["synthetic silent"] == pytest.approx(-6.02, abs=0.01)
    # SI-SDR is scale-invariant: turning everything down changes nothing
    assert rows["half as loud"]["synthetic SI-SDR"] == pytest.approx(
        rows["noisy input"]["synthetic SI-SDR"]
    )
    assert capstone.CLASSICAL[2:] == ("noisereduce, stationary", "noisereduce, non-stationary")


def test_goal_margins_and_family_margins_measure_against_the_named_systems():
    mixtures = held_back_mixtures()[:5]
    outputs = {
        "noisy input": [m.audio for m in mixtures],
        "question-loss model": [m.audio for m in mixtures],
        "masked-loss model": [0.5 * m.audio for m in mixtures],
    }
    outputs.update({name: [m.audio for m in mixtures] for name in capstone.CLASSICAL})
    comparison = capstone.evaluation.Comparison(mixtures, outputs, {})
    margins = capstone.evaluation.goal_margins(comparison)
    # half as loud everywhere: the same SI-SDR, 6 dB quieter on pauses
    assert margins["over input"] == pytest.approx(0.0, abs=1e-6)
    assert margins["over the question-loss model"] == pytest.approx(0.0, abs=1e-6)
    assert margins["quieter on pauses than the question-loss model"] == pytest.approx(
        6.02, abs=0.01
    )
    assert margins["quieter on pauses than its input"] == pytest.approx(6.02, abs=0.01)
    best, per_family = capstone.family_margins(comparison)
    assert best in capstone.CLASSICAL and "mean" not in per_family
    assert set(per_family) == {m.family for m in mixtures}
