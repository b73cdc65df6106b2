"""helpers.capstone.data: the capstone's split by utterance and by noise instance (held-back,
wider, validation and extra training data are disjoint from training), and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from helpers import capstone
from helpers.audio import NOISE_FAMILIES
from helpers.capstone.data import (
    CAPSTONE_HELD_BACK_SEEDS,
    CAPSTONE_TRAIN_SEEDS,
    EXTRA_TRAIN_SEEDS,
    REAL_HELD_BACK,
    REAL_SPEAKERS,
    REAL_VALIDATION,
    TRAIN_NOISE_INSTANCES,
    TRAIN_NOISE_SEED,
    capstone_manifest,
    capstone_training_set,
    extra_training_utterances,
    held_back_mixtures,
    real_held_back_mixtures,
    real_validation_mixtures,
    train_noise,
)


def test_held_back_set_is_split_by_utterance_and_by_noise_instance():
    assert not set(CAPSTONE_TRAIN_SEEDS) & set(CAPSTONE_HELD_BACK_SEEDS)
    mixtures = held_back_mixtures()
    assert {m.family for m in mixtures} == set(NOISE_FAMILIES)
    assert len(mixtures) == len(NOISE_FAMILIES) * len(CAPSTONE_HELD_BACK_SEEDS)
    training = [clip.clean for clip in capstone_training_set()]
    # first differences: brown noise is so smooth that any two 25 ms windows look alike
    noises = np.diff(np.concatenate([train_noise(f) for f in NOISE_FAMILIES]).astype(np.float64))
    energy = np.convolve(noises**2, np.ones(400), "valid")

    def best_match(window):  # highest normalised correlation of window anywhere in noises
        match = np.abs(signal.oaconvolve(noises, window[::-1], "valid"))
        return (match / np.sqrt(np.sum(window**2) * np.maximum(energy, 1e-12))).max()

    assert best_match(noises[70000:70400]) > 0.99  # the check finds a reused window
    for m in mixtures:
        for clean in training:
            n = min(len(clean), len(m.clean))
            assert abs(np.corrcoef(clean[:n], m.clean[:n])[0, 1]) < 0.5
        window = np.diff((m.audio - m.clean).astype(np.float64))[4000:4400]
        assert best_match(window) < 0.9, f"{m.name}: its noise is in the training noise"
    seeds = {e["noise_seed"] for e in capstone_manifest()["mixtures"]}
    assert len(seeds) == len(mixtures)


def test_training_talkers_cover_the_f0_range_of_the_held_back_ones():
    def talker_f0(entry):
        f0s = [s["f0"] for s in entry["segments"] if s["kind"] == "voiced"]
        return sum(f0s) / len(f0s)

    train = sorted(talker_f0(e) for e in capstone_manifest()["train"])
    held_back = [talker_f0(e) for e in capstone_manifest()["held_back"]]
    assert train[0] < 100 and train[-1] > 200
    assert max(np.diff(train)) < 25  # no gap in the voices it learns from
    assert all(train[0] <= f <= train[-1] + 10 for f in held_back)


def test_the_wider_held_back_set_is_disjoint_from_training_and_from_the_shipped_one():
    from helpers.capstone.data import (
        HELD_BACK_NOISE_SEED,
        WIDER_HELD_BACK_SEEDS,
        WIDER_NOISE_SEED,
        _generated_mixtures,
        wider_held_back_mixtures,
    )

    assert not set(WIDER_HELD_BACK_SEEDS) & (
        set(CAPSTONE_TRAIN_SEEDS) | set(CAPSTONE_HELD_BACK_SEEDS)
    )
    last_wider = WIDER_NOISE_SEED + 10 * len(WIDER_HELD_BACK_SEEDS)
    last_shipped = HELD_BACK_NOISE_SEED + 10 * len(CAPSTONE_HELD_BACK_SEEDS)
    assert (
        TRAIN_NOISE_SEED + 10 * TRAIN_NOISE_INSTANCES
        <= HELD_BACK_NOISE_SEED
        < last_shipped
        <= WIDER_NOISE_SEED
    )
    assert last_wider > WIDER_NOISE_SEED
    mixtures = wider_held_back_mixtures()
    assert len(mixtures) == 5 * len(WIDER_HELD_BACK_SEEDS)
    # made again from the seeds (the first utterance's five), the same bytes
    again = _generated_mixtures("wider", WIDER_HELD_BACK_SEEDS[:1], WIDER_NOISE_SEED)
    assert [m.audio.tobytes() for m in again] == [m.audio.tobytes() for m in mixtures[:5]]


def test_the_validation_set_is_disjoint_from_training_and_both_held_back_sets():
    from helpers.capstone.data import (
        HELD_BACK_NOISE_SEED,
        VALIDATION_NOISE_SEED,
        VALIDATION_SEEDS,
        WIDER_HELD_BACK_SEEDS,
        WIDER_NOISE_SEED,
        _generated_mixtures,
        validation_mixtures,
    )

    assert not set(VALIDATION_SEEDS) & (
        set(CAPSTONE_TRAIN_SEEDS) | set(CAPSTONE_HELD_BACK_SEEDS) | set(WIDER_HELD_BACK_SEEDS)
    )
    shipped_stop = HELD_BACK_NOISE_SEED + 10 * len(CAPSTONE_HELD_BACK_SEEDS)
    noise_ranges = [
        (TRAIN_NOISE_SEED, TRAIN_NOISE_SEED + 10 * TRAIN_NOISE_INSTANCES),
        (HELD_BACK_NOISE_SEED, shipped_stop),
        (WIDER_NOISE_SEED, WIDER_NOISE_SEED + 10 * len(WIDER_HELD_BACK_SEEDS)),
    ]
    validation = (VALIDATION_NOISE_SEED, VALIDATION_NOISE_SEED + 10 * len(VALIDATION_SEEDS))
    assert all(validation[0] >= stop or validation[1] <= start for start, stop in noise_ranges)
    mixtures = validation_mixtures()
    assert len(mixtures) == 5 * len(VALIDATION_SEEDS)
    again = _generated_mixtures("validation", VALIDATION_SEEDS[:1], VALIDATION_NOISE_SEED)
    assert [m.audio.tobytes() for m in again] == [m.audio.tobytes() for m in mixtures[:5]]
    shipped = {m.audio[:100].tobytes() for m in held_back_mixtures()}
    assert not shipped & {m.audio[:100].tobytes() for m in mixtures}


def test_the_offline_runs_extra_training_data_is_disjoint_from_every_held_back_set():
    from helpers.capstone.data import VALIDATION_SEEDS, WIDER_HELD_BACK_SEEDS

    held_back = set(CAPSTONE_HELD_BACK_SEEDS) | set(WIDER_HELD_BACK_SEEDS) | set(VALIDATION_SEEDS)
    assert not set(EXTRA_TRAIN_SEEDS) & (held_back | set(CAPSTONE_TRAIN_SEEDS))
    assert capstone.SHIPPED_EXTRA_UTTERANCES <= len(EXTRA_TRAIN_SEEDS)
    assert capstone.SHIPPED_NOISE_INSTANCES <= TRAIN_NOISE_INSTANCES
    (extra,) = extra_training_utterances(1)
    assert extra.name == f"train_{EXTRA_TRAIN_SEEDS[0]}" and extra.audio is extra.clean
    extra.labels.check_fits(len(extra.clean))
    assert len(extra.clean) == len(capstone_training_set()[0].clean)  # batches with the others
    # instance 0 is the live run's noise; the others are new instances, not copies of it
    assert train_noise("pink", 1).shape == train_noise("pink").shape
    assert abs(np.corrcoef(train_noise("pink", 1), train_noise("pink"))[0, 1]) < 0.5
    assert TRAIN_NOISE_SEED + 10 * TRAIN_NOISE_INSTANCES <= min(
        e["noise_seed"] for e in capstone_manifest()["mixtures"]
    )


def test_extra_training_data_bad_arguments():
    with pytest.raises(ValueError, match="count must be an integer"):
        extra_training_utterances(len(EXTRA_TRAIN_SEEDS) + 1)
    with pytest.raises(ValueError, match="instance must be an integer"):
        train_noise("pink", TRAIN_NOISE_INSTANCES)
    with pytest.raises(ValueError, match="noise family must be one of"):
        train_noise("white")


def test_every_held_back_utterance_has_all_three_kinds_of_frame():
    for m in held_back_mixtures():
        counts = m.labels.counts()
        assert min(counts.values()) > 0, (m.name, counts)


def test_real_speech_holds_back_one_utterance_of_each_speaker_with_fresh_noise():
    assert {REAL_SPEAKERS[n] for n in REAL_HELD_BACK} == {"slt", "aew", "axb"}
    assert not set(REAL_HELD_BACK) & set(REAL_VALIDATION)
    held, validation = real_held_back_mixtures(), real_validation_mixtures()
    assert len(held) == len(REAL_HELD_BACK) * len(NOISE_FAMILIES)
    assert {m.clean_name for m in held} == set(REAL_HELD_BACK)
    for mixture in held:
        # real pauses hold room noise, not digital zeros, and the labels still find them
        silent = mixture.labels.silent
        assert silent.any() and mixture.labels.voiced.any()
        assert np.mean(mixture.clean[np.repeat(silent, 256)[: len(mixture.clean)]] == 0) < 0.5
        measured = 10 * np.log10(
            np.mean(mixture.clean**2) / np.mean((mixture.audio - mixture.clean) ** 2)
        )
        assert measured == pytest.approx(5.0, abs=0.01)
    # no noise window of the real test set appears in the training noise or in the real
    # validation set's noise (normalised correlation of first differences, as above)
    others = [train_noise(f) for f in NOISE_FAMILIES] + [m.audio - m.clean for m in validation]
    pool = np.diff(np.concatenate(others).astype(np.float64))
    energy = np.convolve(pool**2, np.ones(400), "valid")
    for mixture in held:
        window = np.diff((mixture.audio - mixture.clean).astype(np.float64))[4000:4400]
        match = np.abs(signal.oaconvolve(pool, window[::-1], "valid"))
        best = (match / np.sqrt(np.sum(window**2) * np.maximum(energy, 1e-12))).max()
        assert best < 0.9, f"{mixture.name}: its noise is in the training or validation noise"


def test_the_recorded_noise_tests_real_speech_at_every_snr_in_disjoint_windows():
    noise = capstone.recorded_noise()
    assert len(noise) == 20 * 16000
    for snr in capstone.TEST_SNRS_DB:
        recorded = real_held_back_mixtures(snr, "recorded")
        generated = real_held_back_mixtures(snr, "generated")
        assert len(recorded) == 4 * len(REAL_HELD_BACK) and len(generated) == 15
        assert {m.family for m in recorded} == {"tap"} and {m.snr_db for m in recorded} == {snr}
        for mixture in recorded + generated:
            measured = 10 * np.log10(
                np.mean(mixture.clean**2) / np.mean((mixture.audio - mixture.clean) ** 2)
            )
            assert measured == pytest.approx(snr, abs=0.01)
    # one recording's windows do not overlap: each starts after the last one ends
    starts = np.array(capstone.RECORDED_NOISE_STARTS_S) * 16000
    longest = max(len(m.clean) for m in real_held_back_mixtures(noise="recorded"))
    assert np.all(np.diff(starts) >= longest) and starts[-1] + longest <= len(noise)
    # the 5 dB generated set is the one 06 has always shown
    assert [m.name for m in real_held_back_mixtures()] == [
        m.name for m in real_held_back_mixtures(5.0, "generated")
    ]


def test_real_held_back_mixtures_bad_arguments():
    with pytest.raises(ValueError, match="noise must be one of 'generated', 'recorded'"):
        real_held_back_mixtures(5.0, "tap")
    with pytest.raises(ValueError, match="snr_db must be a finite number"):
        real_held_back_mixtures(float("nan"))
