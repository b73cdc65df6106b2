"""The capstone's comparison (notebook 06): every system on a set of held-back mixtures (the
synthetic held-back set by default, or real speech: ``capstone_data.real_held_back_mixtures``),
scored by SI-SDR, SNR and STOI, the output level on each kind of frame, and the checks 06
asserts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import (
    LOWPASS_CANDIDATES_HZ,
    NOISE_FAMILIES,
    SUBTRACTION_CANDIDATES,
    Clip,
    best_setting,
    level_change_db,
    load_clip,
    lowpass,
    make_example,
    mix,
    si_sdr,
    snr_db,
    spectral_gating,
    spectral_subtraction,
    stft,
    stoi,
)
from helpers.capstone.data import (
    CAPSTONE_SNR_DB,
    capstone_training_set,
    held_back_mixtures,
    train_noise,
)
from helpers.capstone.recipe import check_loss_name, loss_on_magnitudes, make_capstone_model
from helpers.course import check_choice
from helpers.models import denoise, graph_gradient_norm

# The baselines a user would pick: the two filters with settings chosen on the training
# clips, and noisereduce's spectral gating with its default settings (nothing tuned).
CLASSICAL = (
    "low-pass",
    "spectral subtraction",
    "noisereduce, stationary",
    "noisereduce, non-stationary",
)
SYSTEMS = ("noisy input", *CLASSICAL, "question-loss model", "masked-loss model")


def training_pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    """``(clean, noisy)`` training clips at the held-back SNR (5 dB), each utterance with the
    start of one training noise instance (families in turn): where the classical filters'
    settings are chosen. No held-back clip or noise is used."""
    families = list(NOISE_FAMILIES)
    noises = {family: train_noise(family) for family in families}
    pairs = []
    for index, clip in enumerate(capstone_training_set()):
        noise = noises[families[index % len(families)]][: len(clip.clean)]
        pairs.append((clip.clean, mix(clip.clean, noise, CAPSTONE_SNR_DB)))
    return pairs


def classical_settings() -> dict[str, object]:
    """The low-pass cut-off (Hz) and the spectral subtraction's ``(over_subtraction,
    quiet_fraction)`` with the best mean SI-SDR on ``training_pairs``."""
    return dict(_classical_settings())


@cache
def _classical_settings() -> tuple[tuple[str, object], ...]:  # the same data: chosen once
    pairs = training_pairs()
    return (
        ("low-pass", best_setting(lowpass, LOWPASS_CANDIDATES_HZ, pairs)),
        (
            "spectral subtraction",
            best_setting(
                lambda noisy, s: spectral_subtraction(noisy, s[0], quiet_fraction=s[1]),
                SUBTRACTION_CANDIDATES,
                pairs,
            ),
        ),
    )


@dataclass
class Comparison:
    """Every system's output and scores on every held-back mixture."""

    mixtures: list[Clip]
    outputs: dict[str, list[np.ndarray]]
    settings: dict[str, object]

    def scores(self, metric: str) -> dict[str, np.ndarray]:
        """``{system: (mixtures,) scores}`` for ``metric`` in ``si_sdr``, ``snr``, ``stoi``."""
        metrics = {"si_sdr": si_sdr, "snr": snr_db, "stoi": stoi}
        function = metrics[check_choice(metric, metrics, "metric")]
        cache = self.__dict__.setdefault("_scores", {})
        if metric not in cache:
            cache[metric] = {
                system: np.array([function(m.clean, out) for m, out in zip(self.mixtures, outputs)])
                for system, outputs in self.outputs.items()
            }
        return cache[metric]

    def by_family(self, metric: str) -> dict[str, dict[str, float]]:
        """``{system: {family: mean score, ..., "mean": mean over all mixtures}}``."""
        families = list(dict.fromkeys(m.family for m in self.mixtures))
        table = {}
        for system, values in self.scores(metric).items():
            row = {
                family: float(
                    np.mean([v for v, m in zip(values, self.mixtures) if m.family == family])
                )
                for family in families
            }
            row["mean"] = float(np.mean(values))
            table[system] = row
        return table

    def kind_level_change_db(self, system: str, kind: str) -> float:
        """Output energy relative to input energy (dB), pooled over the held-back frames of
        one kind (``"silent"`` or ``"unvoiced"``) of every mixture."""
        check_choice(kind, ("silent", "unvoiced", "voiced"), "kind")
        return level_change_db(
            [m.audio for m in self.mixtures],
            self.outputs[system],
            [getattr(m.labels, kind) for m in self.mixtures],
        )


def compare(models: dict[str, keras.Model], mixtures=None, classical: bool = True) -> Comparison:
    """Run the noisy input, the classical baselines (``CLASSICAL``: the filters' settings from
    the training clips, noisereduce's defaults; skipped with ``classical=False``) and each
    model (``{"question-loss model": ..., "masked-loss model": ...}``) on ``mixtures`` (the
    synthetic ``helpers.capstone.held_back_mixtures`` by default)."""
    mixtures = held_back_mixtures() if mixtures is None else list(mixtures)
    outputs = {"noisy input": [m.audio for m in mixtures]}
    settings = classical_settings() if classical else {}
    if classical:
        alpha, quiet = settings["spectral subtraction"]
        outputs["low-pass"] = [lowpass(m.audio, settings["low-pass"]) for m in mixtures]
        outputs["spectral subtraction"] = [
            spectral_subtraction(m.audio, alpha, quiet_fraction=quiet) for m in mixtures
        ]
        for name, stationary in ((CLASSICAL[2], True), (CLASSICAL[3], False)):
            outputs[name] = [spectral_gating(m.audio, stationary) for m in mixtures]
    for name, model in models.items():
        outputs[name] = [denoise(model, m.audio) for m in mixtures]
    return Comparison(mixtures, outputs, settings)


def print_table(comparison: Comparison, metric: str = "si_sdr") -> None:
    """One row per system, one column per noise family and the mean."""
    table = comparison.by_family(metric)
    columns = list(next(iter(table.values())))
    unit = "" if metric == "stoi" else " dB"
    print(f"{metric + unit:28s}" + "".join(f"{c:>8s}" for c in columns))
    for system, row in table.items():
        cells = "".join(
            (f"{row[c]:8.2f}" if metric == "stoi" else f"{row[c]:8.1f}") for c in columns
        )
        print(f"{system:28s}{cells}")


def ablation_rows(comparisons: dict[str, Comparison]) -> dict[str, dict[str, float]]:
    """The ablation table: for each system (the ablation's models, named by
    ``capstone_recipe.ABLATION_LABELS``), its mean SI-SDR and its output level on silent
    frames (dB relative to the input) on each set of ``comparisons`` (``{set name: Comparison}``
    of the same models)."""
    rows: dict[str, dict[str, float]] = {}
    for set_name, comparison in comparisons.items():
        for system, row in comparison.by_family("si_sdr").items():
            rows.setdefault(system, {})[f"{set_name} SI-SDR"] = row["mean"]
            rows[system][f"{set_name} silent"] = comparison.kind_level_change_db(system, "silent")
    return rows


def print_ablation(comparisons: dict[str, Comparison]) -> None:
    """``ablation_rows`` as a table: for each set, mean SI-SDR (dB) and level on silent
    frames (dB relative to the input)."""
    rows = ablation_rows(comparisons)
    print(f"{'':30s}" + "".join(f"{name:>18s}" for name in comparisons))
    print(f"{'':30s}" + f"{'SI-SDR':>10s}{'silent':>8s}" * len(comparisons))
    for system, row in rows.items():
        cells = "".join(
            f"{row[f'{name} SI-SDR']:10.1f}{row[f'{name} silent']:8.1f}" for name in comparisons
        )
        print(f"{system:30s}{cells}")


# ------------------------------------------------------------------ the checks 06 asserts


def silent_gradient_norm(loss: str, model: keras.Model | None = None) -> float:
    """Global norm of the gradient of ``loss`` on the course's silent clip (noise in,
    silence out), inside ``tf.function`` as in training (``training.graph_gradient_norm``).
    The question's loop gives exactly 0 there (zeros, not None, in a graph); the masked loss gives
    a real gradient."""
    check_loss_name(loss)
    clip = load_clip("silence")

    def loss_fn(reference, estimate, labels):
        return loss_on_magnitudes(loss, tf.abs(stft(reference)), tf.abs(stft(estimate)), labels)

    return graph_gradient_norm(
        model or make_capstone_model(0),
        make_example("silence", clip.clean, clip.labels, seed=0),
        loss_fn,
    )


def quieter_on_silence_db(
    comparison: Comparison, system: str, reference_system: str = "question-loss model"
) -> float:
    """How much quieter ``system`` is than ``reference_system`` on held-back silent frames
    (dB, positive = quieter)."""
    return comparison.kind_level_change_db(
        reference_system, "silent"
    ) - comparison.kind_level_change_db(system, "silent")


QUIET_ON_SILENCE_DB = 6.0  # "learned silence": at least this much quieter than its input
BEAT_INPUT_DB = 3.0  # the goal over the noisy input (held-back mean SI-SDR)
BEAT_CLASSICAL_DB = 0.5  # the goal over the best classical filter


def quiet_on_silence(comparison: Comparison, system: str) -> bool:
    """The check 06 asserts for "the model learned to output silence": on held-back silent
    frames its output is at least ``QUIET_ON_SILENCE_DB`` below its input."""
    return comparison.kind_level_change_db(system, "silent") <= -QUIET_ON_SILENCE_DB


def beats_input(comparison: Comparison, system: str) -> bool:
    """Held-back mean SI-SDR at least ``BEAT_INPUT_DB`` above the noisy input's."""
    return beats_baselines(comparison, system)["over input"] >= BEAT_INPUT_DB


def beats_classical(comparison: Comparison, system: str) -> bool:
    """Held-back mean SI-SDR at least ``BEAT_CLASSICAL_DB`` above the best classical baseline
    (``CLASSICAL``: low-pass, spectral subtraction, noisereduce)."""
    return beats_baselines(comparison, system)["over best classical"] >= BEAT_CLASSICAL_DB


def best_baseline(comparison: Comparison, metric: str = "si_sdr") -> str:
    """The classical system (``CLASSICAL``) with the highest mean ``metric`` on
    ``comparison``'s mixtures: the filter a user would have picked."""
    missing = [c for c in CLASSICAL if c not in comparison.outputs]
    if missing:
        raise ValueError(f"the comparison has no classical baselines; missing {missing}.")
    means = {c: float(np.mean(comparison.scores(metric)[c])) for c in CLASSICAL}
    return max(CLASSICAL, key=means.__getitem__)


def beats_baselines(comparison: Comparison, system: str) -> dict[str, float]:
    """Margins of ``system``'s held-back mean SI-SDR over the input (goal: >= 3 dB) and over
    the best classical baseline of ``CLASSICAL`` (goal: >= 0.5 dB)."""
    means = {s: row["mean"] for s, row in comparison.by_family("si_sdr").items()}
    margins = {"over input": means[system] - means["noisy input"]}
    if all(c in means for c in CLASSICAL):
        margins["over best classical"] = means[system] - means[best_baseline(comparison)]
    return margins


def goal_margins(
    comparison: Comparison, system: str = "masked-loss model", other: str = "question-loss model"
) -> dict[str, float]:
    """The goals' figures for ``system`` (dB): mean SI-SDR over the input, over ``other``
    and over the best classical baseline (``beats_baselines``), and how much quieter it is on
    held-back pauses than ``other`` (``quieter_on_silence_db``) and than its own input (the
    output level on silent frames, ``Comparison.kind_level_change_db``, with its sign
    turned)."""
    means = {s: row["mean"] for s, row in comparison.by_family("si_sdr").items()}
    margins = beats_baselines(comparison, system)
    margins[f"over the {other}"] = means[system] - means[other]
    margins[f"quieter on pauses than the {other}"] = quieter_on_silence_db(
        comparison, system, other
    )
    margins["quieter on pauses than its input"] = -comparison.kind_level_change_db(system, "silent")
    return margins


def print_goals(comparison: Comparison, system: str = "masked-loss model") -> dict[str, float]:
    """Print ``goal_margins`` on one line each, and return them."""
    margins = goal_margins(comparison, system)
    for name, value in margins.items():
        print(f"{system}: {value:+.1f} dB {name}")
    return margins


def print_levels(comparison: Comparison) -> None:
    """Each system's output level relative to its input (dB) on silent, unvoiced and voiced
    held-back frames."""
    for system in comparison.outputs:
        print(
            f"{system:28s}"
            + "   ".join(
                f"{kind} {comparison.kind_level_change_db(system, kind):+6.1f} dB"
                for kind in ("silent", "unvoiced", "voiced")
            )
        )


def family_margins(
    comparison: Comparison, system: str = "masked-loss model", metric: str = "si_sdr"
) -> tuple[str, dict[str, float]]:
    """The best classical baseline on the mean, and ``system``'s margin over it per noise
    family (dB): where the model wins and where it loses."""
    table = comparison.by_family(metric)
    best = best_baseline(comparison, metric)
    return best, {f: table[system][f] - table[best][f] for f in table[system] if f != "mean"}


def print_family_margins(
    comparison: Comparison, system: str = "masked-loss model"
) -> tuple[str, dict[str, float]]:
    """Print ``family_margins`` (SI-SDR) in two lines that fit the text column, and return it."""
    best, margins = family_margins(comparison, system)
    print(f"margin over {best} (dB):")
    print("  " + ", ".join(f"{family} {margin:+.1f}" for family, margin in margins.items()))
    return best, margins
