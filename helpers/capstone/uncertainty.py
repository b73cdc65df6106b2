"""How firm notebook 06's win over the classical baselines is: for each kind of noise
(generated, recorded) and SNR, the masked-loss model's SI-SDR margin over the best classical
baseline on every mixture of the held-back real speech, with the number of mixtures it wins,
a bootstrap 95 % confidence interval of the mean margin, and the same for every training seed.

A margin is per mixture: the model's SI-SDR minus the best baseline's on the same mixture,
the best baseline being the classical system (``CLASSICAL``) with the highest mean SI-SDR on
that row's mixtures (so the model is measured against the filter a user would have picked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import keras
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from helpers.capstone.data import TEST_SNRS_DB, real_held_back_mixtures
from helpers.capstone.evaluation import BEAT_CLASSICAL_DB, Comparison, best_baseline, compare
from helpers.course import check_choice

CONFIDENCE = 0.95
RESAMPLES = 9999
TARGET_MARGIN_DB = BEAT_CLASSICAL_DB  # the same goal, on real recordings with recorded noise
SHORT_NAMES = {  # how the table names a baseline
    "low-pass": "low-pass",
    "spectral subtraction": "spectral subtr.",
    "noisereduce, stationary": "noisereduce st.",
    "noisereduce, non-stationary": "noisereduce n-st.",
}


def bootstrap_ci(
    values: Sequence[float], confidence: float = CONFIDENCE, seed: int = 0
) -> tuple[float, float]:
    """The bootstrap confidence interval (BCa, ``RESAMPLES`` resamples, ``scipy.stats``) of
    the mean of ``values``: where the mean of more mixtures like these would fall. Seeded, so
    the same values give the same interval."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or len(values) < 3 or not np.isfinite(values).all():
        raise ValueError(
            f"bootstrap_ci needs a 1-D array of at least 3 finite values; got shape {values.shape}."
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1; got {confidence!r}.")
    if np.ptp(values) == 0:  # every resample has the same mean
        return float(values[0]), float(values[0])
    result = stats.bootstrap(
        (values,),
        np.mean,
        confidence_level=confidence,
        n_resamples=RESAMPLES,
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def wins(margins: Sequence[float]) -> int:
    """How many mixtures the model wins: margins above zero (a tie is not a win)."""
    return int(np.sum(np.asarray(margins) > 0))


def per_mixture_margins(comparison: Comparison, system: str, baseline: str) -> np.ndarray:
    """``system``'s SI-SDR minus ``baseline``'s, on each mixture (dB)."""
    scores = comparison.scores("si_sdr")
    for name in (system, baseline):
        check_choice(name, tuple(scores), "system")
    return scores[system] - scores[baseline]


@dataclass
class MarginRow:
    """One row of 06's table: a kind of noise at one SNR (or every SNR), the best baseline
    there, and the per-mixture margins over it (dB) for each training seed."""

    noise: str
    snr: str  # "0 dB", ..., or "all"
    baseline: str
    margins: dict[int, np.ndarray]

    def __post_init__(self) -> None:
        self._ci = {seed: bootstrap_ci(values) for seed, values in self.margins.items()}

    @property
    def n(self) -> int:
        return len(next(iter(self.margins.values())))

    def mean(self, seed: int) -> float:
        return float(np.mean(self.margins[seed]))

    def ci(self, seed: int) -> tuple[float, float]:
        """The bootstrap 95 % CI of the mean margin (``bootstrap_ci``)."""
        return self._ci[seed]

    def wins(self, seed: int) -> int:
        return wins(self.margins[seed])

    def meets_target(self, seed: int, target: float = TARGET_MARGIN_DB) -> bool:
        """A mean margin of at least ``target`` dB, with its 95 % CI above zero."""
        return self.mean(seed) >= target and self.ci(seed)[0] > 0


def _pooled(comparisons: Sequence[Comparison]) -> Comparison:
    systems = comparisons[0].outputs
    return Comparison(
        [m for c in comparisons for m in c.mixtures],
        {s: [o for c in comparisons for o in c.outputs[s]] for s in systems},
        comparisons[0].settings,
    )


def margin_rows(
    models: Mapping[int, keras.Model], snrs: Sequence[float] = TEST_SNRS_DB
) -> list[MarginRow]:
    """The table's rows: for generated and then recorded noise, one row per SNR in ``snrs``
    and one pooling them, each comparing the masked-loss model trained from each seed
    (``models``: ``{seed: model}``) with the classical baselines on the held-back real speech
    (``real_held_back_mixtures``)."""
    if not models:
        raise ValueError("margin_rows needs at least one model: {training seed: model}.")
    named = {f"seed {seed}": model for seed, model in models.items()}
    rows = []
    for noise in ("generated", "recorded"):
        comparisons = [compare(named, real_held_back_mixtures(snr, noise)) for snr in snrs]
        for snr, comparison in zip(
            [f"{snr:g} dB" for snr in snrs] + ["all"], comparisons + [_pooled(comparisons)]
        ):
            baseline = best_baseline(comparison)
            margins = {
                seed: per_mixture_margins(comparison, f"seed {seed}", baseline) for seed in models
            }
            rows.append(MarginRow(noise, snr, baseline, margins))
    return rows


def print_margin_rows(rows: Sequence[MarginRow]) -> None:
    """The rows as one table: for each training seed, the mean margin, its 95 % CI and the
    mixtures won."""
    seeds = list(rows[0].margins)
    cells = {}
    for row in rows:
        for seed in seeds:
            low, high = row.ci(seed)
            cells[id(row), seed] = (
                f"{row.mean(seed):+.1f} [{low:+.1f}, {high:+.1f}] {row.wins(seed)}/{row.n}"
            )
    width = max(len(cell) for cell in cells.values()) + 2
    print("SI-SDR margin over the best baseline (dB): mean [95% CI] mixtures won")
    heads = "".join(f"{'training seed ' + str(seed):{width}s}" for seed in seeds)
    print(f"{'noise':10s}{'SNR':>5s}  {'best baseline':17s}{heads}".rstrip())
    for row in rows:
        line = "".join(f"{cells[id(row), seed]:{width}s}" for seed in seeds)
        print(f"{row.noise:10s}{row.snr:>5s}  {SHORT_NAMES[row.baseline]:17s}{line}".rstrip())


SEED_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")


def plot_margin_rows(rows: Sequence[MarginRow]) -> Figure:
    """One column per row: every mixture's margin (dots) and the mean with its 95 % CI (bar),
    side by side for each training seed; a line at 0 (the best baseline) and at the target."""
    seeds = list(rows[0].margins)
    if len(seeds) > len(SEED_COLOURS):
        raise ValueError(f"plot_margin_rows draws at most {len(SEED_COLOURS)} seeds.")
    fig, ax = plt.subplots(figsize=(9.0, 4.2), layout="constrained")
    width = 0.8 / len(seeds)
    for i, row in enumerate(rows):
        for k, seed in enumerate(seeds):
            x = i - 0.4 + width * (k + 0.5)
            jitter = np.linspace(-0.3, 0.3, row.n) * width
            colour = SEED_COLOURS[k]
            ax.scatter(x + jitter, row.margins[seed], s=8, color=colour, alpha=0.35, lw=0)
            low, high = row.ci(seed)
            mean = row.mean(seed)
            ax.errorbar(
                x,
                mean,
                yerr=[[mean - low], [high - mean]],
                fmt="o",
                color=colour,
                capsize=3,
                label=f"training seed {seed}: mean, 95% CI" if i == 0 else None,
            )
    ax.axhline(0, color="black", lw=0.8)
    for i in range(1, len(rows)):  # a faint line where the kind of noise changes
        if rows[i].noise != rows[i - 1].noise:
            ax.axvline(i - 0.5, color="lightgrey", lw=0.8)
    ax.axhline(TARGET_MARGIN_DB, color="grey", lw=0.8, ls="--", label="target +0.5 dB")
    ax.set_xticks(range(len(rows)), [f"{r.noise}\n{r.snr}" for r in rows])
    ax.set_ylabel("SI-SDR margin over the best baseline (dB)")
    ax.set_title("masked-loss model against the best classical baseline, real held-back speech")
    fig.legend(loc="outside lower center", ncols=len(seeds) + 1, fontsize="small")
    return fig
