"""How firm notebook 06's win over the classical baselines is: for each kind of noise
(generated, recorded) and SNR, the masked-loss model's SI-SDR margin over the best classical
baseline on every mixture of the held-back real speech, with the number of mixtures it wins,
a bootstrap 95 % confidence interval of the mean margin, and the same for every training seed.

The interval, in words: resample the row's mixtures with replacement 9999 times, take each
resample's mean margin, and keep the middle 95 % of those means, corrected for their skew and
bias (BCa, ``scipy.stats.bootstrap``). A 95 % confidence interval is the output of a method
that, over repeated experiments, holds the true mean in 95 % of them, if the mixtures are
independent draws. A row's mixtures come from three utterances, several each, and three
say little about a fourth: ``utterance_means`` shows how far the margin moves with them.
A row pooling several SNRs holds the same utterance-and-noise pairs at each SNR, so its
mixtures are not independent: ``cluster_bootstrap_ci`` resamples *pairs*, each with all its
SNRs, instead of mixtures (treating the 45 as independent makes the interval too narrow).

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

from helpers.audio import Clip
from helpers.capstone.data import (
    CAPSTONE_SNR_DB,
    TEST_SNRS_DB,
    held_back_mixtures,
    real_held_back_mixtures,
)
from helpers.capstone.evaluation import BEAT_CLASSICAL_DB, Comparison, best_baseline, compare
from helpers.course import check_choice, escape, html_table

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
    the mean of ``values``, taken as independent draws (a 95 % confidence interval). Seeded, so
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


def cluster_bootstrap_ci(
    values: Sequence[float],
    clusters: Sequence[object],
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float]:
    """The cluster bootstrap confidence interval (BCa, ``RESAMPLES`` resamples) of the mean of
    ``values``, where ``clusters[i]`` names the cluster of ``values[i]`` (for 06: the
    utterance-and-noise pair a mixture was made from, the same at every SNR). Each resample
    draws whole clusters with replacement and keeps every value of a drawn cluster together;
    its statistic is the mean over all the values it holds. Values that move together within
    a cluster count once, not once per copy: on clusters of identical values the interval is
    the one of the cluster means, wider than ``bootstrap_ci`` of the pooled values. Seeded."""
    values = np.asarray(values, dtype=np.float64)
    labels = np.asarray(clusters)
    if values.ndim != 1 or not np.isfinite(values).all():
        raise ValueError(
            f"cluster_bootstrap_ci needs a 1-D array of finite values; got shape {values.shape}."
        )
    if labels.shape != values.shape:
        raise ValueError(
            f"clusters must name one cluster per value ({len(values)}); got shape {labels.shape}."
        )
    names, first, index = np.unique(labels, return_index=True, return_inverse=True)
    order = np.empty(len(names), dtype=int)
    order[np.argsort(first)] = np.arange(len(names))
    index = order[index.ravel()]  # clusters numbered in the order they first appear
    if len(names) < 3:
        raise ValueError(f"cluster_bootstrap_ci needs at least 3 clusters; got {len(names)}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1; got {confidence!r}.")
    sums = np.bincount(index, weights=values).astype(np.float64)
    counts = np.bincount(index).astype(np.float64)
    if np.ptp(sums / counts) == 0 and np.ptp(values) == 0:  # every resample has the same mean
        return float(values[0]), float(values[0])

    def pooled_mean(cluster_sums, cluster_counts, axis=-1):
        return np.sum(cluster_sums, axis=axis) / np.sum(cluster_counts, axis=axis)

    result = stats.bootstrap(
        (sums, counts),
        pooled_mean,
        paired=True,
        vectorized=True,
        confidence_level=confidence,
        n_resamples=RESAMPLES,
        method="BCa",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def utterance_means(margins: Sequence[float], mixtures: Sequence[Clip]) -> dict[str, float]:
    """The mean margin over each utterance's mixtures (``mixtures[i].clean_name`` names the
    utterance of ``margins[i]``), in the order the utterances first appear. With three
    utterances an interval over mixtures cannot show how much a speaker moves the margin;
    these means show it."""
    values = np.asarray(margins, dtype=np.float64)
    if values.ndim != 1 or len(values) != len(mixtures):
        raise ValueError(
            f"utterance_means needs one margin per mixture ({len(mixtures)}); "
            f"got shape {values.shape}."
        )
    names = [mixture.clean_name for mixture in mixtures]
    return {
        name: float(np.mean(values[[n == name for n in names]])) for name in dict.fromkeys(names)
    }


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
    there, and the per-mixture margins over it (dB) for each training seed. ``clusters``
    (optional) names each mixture's utterance-and-noise pair: a row pooling SNRs has each pair
    several times, and its interval resamples pairs (``cluster_bootstrap_ci``)."""

    noise: str
    snr: str  # "0 dB", ..., or "all"
    baseline: str
    margins: dict[int, np.ndarray]
    clusters: tuple | None = None

    def __post_init__(self) -> None:
        if self.clusters is None:
            self._ci = {seed: bootstrap_ci(values) for seed, values in self.margins.items()}
        else:
            self._ci = {
                seed: cluster_bootstrap_ci(values, self.clusters)
                for seed, values in self.margins.items()
            }

    @property
    def n(self) -> int:
        return len(next(iter(self.margins.values())))

    def mean(self, seed: int) -> float:
        return float(np.mean(self.margins[seed]))

    def ci(self, seed: int) -> tuple[float, float]:
        """The bootstrap 95 % CI (BCa) of the mean margin: ``bootstrap_ci`` over mixtures, or
        ``cluster_bootstrap_ci`` over pairs when the row has ``clusters``."""
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
        # a mixture's name is its utterance-and-noise pair, the same at every SNR
        pairs = tuple(m.name for c in comparisons for m in c.mixtures)
        for snr, comparison, clusters in zip(
            [f"{snr:g} dB" for snr in snrs] + ["all"],
            comparisons + [_pooled(comparisons)],
            [None] * len(snrs) + [pairs],
        ):
            baseline = best_baseline(comparison)
            margins = {
                seed: per_mixture_margins(comparison, f"seed {seed}", baseline) for seed in models
            }
            rows.append(MarginRow(noise, snr, baseline, margins, clusters))
    return rows


def synthetic_margin_row(
    models: Mapping[int, keras.Model], mixtures: Sequence | None = None
) -> MarginRow:
    """The synthetic held-back set's row (``held_back_mixtures``, 5 dB, one mixture per
    utterance-and-noise pair): the masked-loss model from each training seed (``models``:
    ``{seed: model}``) against the best classical baseline, with the same interval and wins
    as the real-speech rows."""
    if not models:
        raise ValueError("synthetic_margin_row needs at least one model: {training seed: model}.")
    comparison = compare(
        {f"seed {seed}": model for seed, model in models.items()},
        held_back_mixtures() if mixtures is None else mixtures,
    )
    baseline = best_baseline(comparison)
    margins = {seed: per_mixture_margins(comparison, f"seed {seed}", baseline) for seed in models}
    return MarginRow("synthetic", f"{CAPSTONE_SNR_DB:g} dB", baseline, margins)


INTERVAL_NOTE = (
    "Each cell: the mean SI-SDR margin over the best baseline (dB), its bootstrap 95 % "
    "interval (BCa) in brackets, and the mixtures won."
)
POOLED_NOTE = (
    "An 'all' row holds each utterance-and-noise pair at every SNR: its interval resamples "
    "pairs, not mixtures."
)


@dataclass
class MarginTable:
    """``rows`` as a table for a notebook: an HTML table that fits the text column (one column
    per training seed, each cell the mean margin, its interval and the mixtures won on two
    lines; the best baseline said once when every row has the same), and a short text form."""

    rows: Sequence[MarginRow]

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError("a margin table needs at least one MarginRow.")
        self.rows = list(self.rows)

    @property
    def seeds(self) -> list[int]:
        return list(self.rows[0].margins)

    def _one_baseline(self) -> str | None:
        baselines = {row.baseline for row in self.rows}
        return baselines.pop() if len(baselines) == 1 else None

    def _notes(self) -> list[str]:
        notes = []
        if (baseline := self._one_baseline()) is not None:
            notes.append(f"Best baseline on every row: {baseline}.")
        notes.append(INTERVAL_NOTE)
        if any(row.clusters is not None for row in self.rows):
            notes.append(POOLED_NOTE)
        return notes

    @staticmethod
    def _cell(row: MarginRow, seed: int) -> tuple[str, str]:
        low, high = row.ci(seed)
        return f"{row.mean(seed):+.1f} [{low:+.1f}, {high:+.1f}]", f"{row.wins(seed)}/{row.n} won"

    def _labels(self, row: MarginRow) -> list[str]:
        labels = [row.noise, row.snr]
        return labels if self._one_baseline() else [*labels, SHORT_NAMES[row.baseline]]

    def __repr__(self) -> str:
        heads = ["noise", "SNR"] + ([] if self._one_baseline() else ["baseline"])
        heads += [f"seed {seed}" for seed in self.seeds]
        lines = [
            self._labels(row) + [" ".join(self._cell(row, seed)) for seed in self.seeds]
            for row in self.rows
        ]
        widths = [max(len(x) for x in column) for column in zip(heads, *lines)]
        text = [
            "  ".join(f"{x:{w}s}" for x, w in zip(line, widths)).rstrip()
            for line in [heads, *lines]
        ]
        return "\n".join(text + self._notes())

    def _repr_html_(self) -> str:
        heads = ["noise", "SNR"] + ([] if self._one_baseline() else ["best baseline"])
        heads += [f"training seed {seed}" for seed in self.seeds]
        rows = [
            [escape(label) for label in self._labels(row)]
            + ["<br>".join(map(escape, self._cell(row, seed))) for seed in self.seeds]
            for row in self.rows
        ]
        labels = len(heads) - len(self.seeds)
        return html_table(
            heads, rows, align="l" * labels + "r" * len(self.seeds), below=self._notes()
        )


def margin_table(rows: Sequence[MarginRow]) -> MarginTable:
    """``rows`` as a ``MarginTable``: display it (the HTML table), or print it (text)."""
    return MarginTable(rows)


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
