"""helpers.capstone.uncertainty: the bootstrap interval, the wins, the best baseline (from
helpers.capstone.evaluation) and the margins of 06's table, on samples whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import capstone
from helpers.capstone import held_back_mixtures
from helpers.capstone.evaluation import Comparison, best_baseline
from helpers.capstone.uncertainty import (
    MarginRow,
    MarginTable,
    bootstrap_ci,
    cluster_bootstrap_ci,
    per_mixture_margins,
    plot_margin_rows,
    utterance_means,
    wins,
)


def test_bootstrap_ci_contains_the_mean_and_narrows_with_more_values():
    rng = np.random.default_rng(1)
    small, large = rng.normal(1.0, 2.0, 12), rng.normal(1.0, 2.0, 400)
    for sample in (small, large):
        low, high = bootstrap_ci(sample)
        assert low < np.mean(sample) < high
    assert np.ptp(bootstrap_ci(large)) < 0.5 * np.ptp(bootstrap_ci(small))
    # about 1.96 standard errors each side of the mean, for a large normal sample
    half = np.ptp(bootstrap_ci(large)) / 2
    assert half == pytest.approx(1.96 * np.std(large) / np.sqrt(len(large)), rel=0.15)
    assert bootstrap_ci(small) == bootstrap_ci(small)  # seeded: the same every time
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)


def test_bootstrap_ci_refuses_bad_input():
    with pytest.raises(ValueError, match="at least 3 finite values"):
        bootstrap_ci([1.0, 2.0])
    with pytest.raises(ValueError, match="at least 3 finite values"):
        bootstrap_ci([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        bootstrap_ci([1.0, 2.0, 3.0], confidence=95)


def test_cluster_bootstrap_counts_a_cluster_once_however_many_copies_it_holds():
    """Perfectly correlated clusters (each pair's three SNR mixtures with one margin): the
    cluster interval is the interval of the cluster means, and the naive bootstrap of the
    pooled values, which takes the 45 as independent, is about 1/sqrt(3) as wide."""
    means = np.random.default_rng(2).normal(0.5, 2.0, 15)
    pooled, pairs = np.repeat(means, 3), np.repeat([f"pair{i}" for i in range(15)], 3)
    cluster = cluster_bootstrap_ci(pooled, pairs)
    assert cluster == pytest.approx(bootstrap_ci(means), abs=1e-9)
    naive = bootstrap_ci(pooled)
    assert np.ptp(cluster) > 1.4 * np.ptp(naive)
    assert np.ptp(naive) == pytest.approx(np.ptp(cluster) / np.sqrt(3), rel=0.2)
    # independent values, one per cluster: the two intervals are the same
    assert cluster_bootstrap_ci(means, np.arange(15)) == pytest.approx(bootstrap_ci(means))
    # unequal clusters: the statistic is the mean over every value resampled
    low, high = cluster_bootstrap_ci([0.0, 0.0, 0.0, 3.0, 1.0, 2.0], ["a", "a", "a", "b", "c", "d"])
    assert low < np.mean([0.0, 0.0, 0.0, 3.0, 1.0, 2.0]) < high
    assert cluster_bootstrap_ci([1.0] * 6, [0, 0, 1, 1, 2, 2]) == (1.0, 1.0)


def test_cluster_bootstrap_ci_refuses_bad_input():
    with pytest.raises(ValueError, match="one cluster per value"):
        cluster_bootstrap_ci([1.0, 2.0, 3.0], [0, 1])
    with pytest.raises(ValueError, match="at least 3 clusters"):
        cluster_bootstrap_ci([1.0, 2.0, 3.0, 4.0], [0, 0, 1, 1])
    with pytest.raises(ValueError, match="finite"):
        cluster_bootstrap_ci([1.0, np.nan, 3.0], [0, 1, 2])


def test_wins_count_only_margins_above_zero():
    assert wins([1.0, -1.0, 0.0, 0.1, -0.2]) == 2
    assert wins(np.zeros(4)) == 0


def test_utterance_means_average_each_utterances_mixtures_in_order():
    mixtures = held_back_mixtures()  # three utterances, five noise families each
    margins = np.repeat([2.0, -1.0, 4.0], 5) + np.tile([0.5, -0.5, 0.0, 1.0, -1.0], 3)
    means = utterance_means(margins, mixtures)
    assert list(means) == list(dict.fromkeys(m.clean_name for m in mixtures))
    assert np.allclose(list(means.values()), [2.0, -1.0, 4.0])
    with pytest.raises(ValueError, match="one margin per mixture"):
        utterance_means(margins[:-1], mixtures)


def _table(mixtures, scores: dict[str, list[float]]) -> Comparison:
    """A comparison whose SI-SDR scores are given (no audio is scored)."""
    comparison = Comparison(mixtures, {s: [m.audio for m in mixtures] for s in scores}, {})
    comparison.__dict__["_scores"] = {"si_sdr": {s: np.array(v) for s, v in scores.items()}}
    return comparison


def test_margins_are_measured_against_the_baseline_best_on_the_mean():
    mixtures = held_back_mixtures()[:4]
    table = _table(
        mixtures,
        {
            "low-pass": [9.0, 1.0, 1.0, 1.0],  # best on one mixture, not on the mean
            "spectral subtraction": [5.0, 6.0, 7.0, 6.0],
            "noisereduce, stationary": [0.0] * 4,
            "noisereduce, non-stationary": [0.0] * 4,
            "model": [6.0, 5.0, 8.0, 6.0],
        },
    )
    assert best_baseline(table) == "spectral subtraction"
    margins = per_mixture_margins(table, "model", "spectral subtraction")
    assert margins.tolist() == [1.0, -1.0, 1.0, 0.0] and wins(margins) == 2
    with pytest.raises(ValueError, match="system must be one of"):
        per_mixture_margins(table, "mdoel", "low-pass")
    with pytest.raises(ValueError, match="no classical baselines"):
        best_baseline(_table(mixtures, {"model": [0.0] * 4}))


def test_a_row_meets_the_target_only_with_its_mean_and_its_interval():
    def row(margins):
        return MarginRow("recorded", "all", "spectral subtraction", {0: np.asarray(margins)})

    firm = row(1.0 + 0.1 * np.arange(12))
    loose = row([9.0, -8.0, 1.0, -1.0, 2.0])
    small = row(0.2 + 0.01 * np.arange(6))
    assert firm.meets_target(0)
    assert loose.mean(0) >= 0.5 and loose.ci(0)[0] < 0 and not loose.meets_target(0)
    assert small.ci(0)[0] > 0 and not small.meets_target(0)  # firm, but below +0.5 dB
    assert plot_margin_rows([firm, loose]).axes[0].get_ylabel().startswith("SI-SDR margin")
    table = MarginTable([firm, loose])
    html = table._repr_html_()
    assert "+1.6 [" in html and "12/12 won" in html and "BCa" in html
    assert "Best baseline on every row: spectral subtraction." in repr(table)
    assert "resamples pairs" not in repr(table)
    firm_line = repr(table).splitlines()[1]  # the text form: one line per row, under the heads
    assert firm_line.startswith("recorded  all") and "+1.6 [" in firm_line and "12/12" in firm_line
    pooled = MarginRow(
        "generated", "all", "low-pass", {0: 1.0 + np.arange(9.0)}, tuple(np.repeat([0, 1, 2], 3))
    )
    assert pooled.ci(0) == pytest.approx(bootstrap_ci([2.0, 5.0, 8.0]))
    mixed = repr(MarginTable([firm, pooled]))
    assert "low-pass" in mixed and "resamples pairs" in mixed


def test_margin_rows_cover_both_noises_at_every_snr_and_pooled():
    model = capstone.train_denoiser("masked")
    rows = capstone.margin_rows({0: model}, snrs=(5.0,))
    assert [(r.noise, r.snr, r.n) for r in rows] == [
        ("generated", "5 dB", 15),
        ("generated", "all", 15),
        ("recorded", "5 dB", 12),
        ("recorded", "all", 12),
    ]
    assert all(r.baseline in capstone.CLASSICAL for r in rows)
    pooled = rows[1]
    assert pooled.clusters == tuple(m.name for m in capstone.real_held_back_mixtures())
    synthetic = capstone.synthetic_margin_row({0: model})
    assert (synthetic.noise, synthetic.snr, synthetic.n, synthetic.clusters) == (
        "synthetic",
        "5 dB",
        15,
        None,
    )
    with pytest.raises(ValueError, match="at least one model"):
        capstone.margin_rows({})
