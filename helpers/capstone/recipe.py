"""The capstone's training recipe: the GRU floor step model, its two losses (``"masked"`` and
``"question"``, the voicing-loss question's per-frame loop) and the ``tf.function`` training step.

Both models are trained the same way (``train``): batches of the capstone's synthetic
training utterances (no real recording is trained on) with random windows of training noise
at random SNRs, one ``tf.function`` step per batch that takes the noisy audio as its
argument, so it traces once. Only the loss differs (the ablation's variants,
``ABLATION_WEIGHTS``, differ only in the masked loss's two weights).
``train_shipped`` is the longer offline run that made the shipped weights. The recipe was
chosen on ``helpers.capstone.data.validation_mixtures``, never on a held-back set (CONTRIBUTING.md,
"Measured decisions").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import NOISE_FAMILIES, FrameLabels, mix, stft
from helpers.capstone.data import capstone_training_set, extra_training_utterances, train_noise
from helpers.course import check_choice, check_int, is_int
from helpers.diagnosis import GradientReport, gradient_report
from helpers.models import apply_masks, make_gru_floor_step_model, make_step
from helpers.recurrence import unroll
from helpers.voicing import cond_loop_loss_on_magnitudes, masked_loss_on_magnitudes

LOSSES = ("masked", "question")
# How a printed line names each loss.
LOSS_LABELS = {"masked": "masked loss", "question": "question's loss"}
CAPSTONE_UNITS = 32
CAPSTONE_LEARNING_RATE = 3e-3  # the live run's; the shipped run starts here and decays (cosine)
# masked_voicing_loss's silence_weight for the capstone (its silence term: every frame that is
# not voiced). Set by hand, not searched: only the voiced weight was chosen on the validation set.
CAPSTONE_SILENCE_WEIGHT = 3.0
# The masked loss's reconstruction term on voiced frames (masked_loss_on_magnitudes'
# voiced_weight): it scores the noise between the harmonics. Chosen on
# helpers.capstone.data.validation_mixtures (never on a held-back set): of weights 0, 1, 2, 4 and 8
# (32 units, 1200 steps), 4 had the best validation mean SI-SDR.
CAPSTONE_VOICED_WEIGHT = 4.0
SNR_RANGE_DB = (0.0, 10.0)  # training mixtures: a random SNR in this range per clip and step
# The shipped run (scripts/train_capstone.py, offline, minutes): the same step and loss as the
# live run, longer, on more utterances and noise instances, the learning rate decaying to
# FINAL_LEARNING_RATE_FRACTION of CAPSTONE_LEARNING_RATE along a cosine.
SHIPPED_TRAIN_STEPS = 3000
SHIPPED_NOISE_INSTANCES = 16  # training instances per noise family (capstone_data.train_noise)
SHIPPED_EXTRA_UTTERANCES = 48  # training utterances beyond the sixteen shipped ones
FINAL_LEARNING_RATE_FRACTION = 0.05
LIVE_TRAIN_STEPS = 1200  # train's default: the recipe without the offline run's extras


# The ablation (notebook 06): the masked loss with its two extra terms switched on one at a
# time, as (silence_weight, voiced_weight); "masked" (both terms) is the shipped model. Each
# variant is trained with the shipped recipe; only these two weights differ.
ABLATION_WEIGHTS: dict[str, tuple[float, float]] = {
    "masked_bare": (0.0, 0.0),
    "masked_silence": (CAPSTONE_SILENCE_WEIGHT, 0.0),
    "masked_voiced": (0.0, CAPSTONE_VOICED_WEIGHT),
    "masked": (CAPSTONE_SILENCE_WEIGHT, CAPSTONE_VOICED_WEIGHT),
}
ABLATION_LABELS = {
    "question": "question's loss",
    "masked_bare": "masked, no silence term",
    "masked_silence": "+ silence term only",
    "masked_voiced": "+ voiced reconstruction only",
    "masked": "both (masked-loss model)",
}
TRAINED_LOSSES = LOSSES + ("masked_bare", "masked_silence", "masked_voiced")


def check_loss_name(loss: str) -> str:
    return check_choice(loss, TRAINED_LOSSES, "loss")


def make_capstone_model(seed: int = 0, units: int = CAPSTONE_UNITS) -> keras.Model:
    """The capstone's step model, with initial weights from ``seed``."""
    return make_gru_floor_step_model(units=units, seed=seed)


def loss_on_magnitudes(
    loss: str,
    reference_mag: tf.Tensor,
    estimate_mag: tf.Tensor,
    labels: FrameLabels,
    voiced_weight: float | None = None,
) -> tf.Tensor:
    """One clip's loss from STFT magnitudes: the masked loss or the question's per-frame loop."""
    if check_loss_name(loss) != "question":
        silence_weight, default_voiced = ABLATION_WEIGHTS[loss]
        return masked_loss_on_magnitudes(
            reference_mag,
            estimate_mag,
            labels,
            silence_weight,
            voiced_weight=default_voiced if voiced_weight is None else voiced_weight,
        )
    return cond_loop_loss_on_magnitudes(reference_mag, estimate_mag, labels)


def make_batch_step(
    model: keras.Model,
    optimizer: keras.optimizers.Optimizer,
    references: np.ndarray,
    labels: list[FrameLabels],
    loss: str,
):
    """A ``tf.function`` step ``step(noisy) -> (loss, grads)`` for a fixed batch of clean
    ``references`` ``(batch, samples)`` and their labels: the noisy batch is the argument, so
    fresh noise every step does not retrace. One ``unroll`` for the whole batch; the loss is
    the mean of each clip's loss."""
    check_loss_name(loss)
    references = np.asarray(references, dtype=np.float32)
    if references.ndim != 2 or len(labels) != len(references):
        raise ValueError(
            f"references must be (batch, samples) with one FrameLabels per clip; "
            f"got shape {references.shape} and {len(labels)} labels."
        )
    for clip_labels in labels:
        clip_labels.check_fits(references.shape[1])
    reference_mag = tf.abs(stft(tf.constant(references)))
    length = references.shape[1]

    def batch_loss(noisy):
        spectrum = stft(noisy)
        masks, _ = unroll(model, tf.abs(spectrum))
        estimate_mag = tf.abs(stft(apply_masks(masks, spectrum, length)))
        return tf.add_n(
            [
                loss_on_magnitudes(loss, reference_mag[b], estimate_mag[b], lab)
                for b, lab in enumerate(labels)
            ]
        ) / len(labels)

    return make_step(
        model, optimizer, batch_loss, input_signature=[tf.TensorSpec(references.shape, tf.float32)]
    )


def noisy_batch(
    references: np.ndarray,
    step: int,
    rng: np.random.Generator,
    noises: dict[str, list[np.ndarray]] | None = None,
) -> np.ndarray:
    """Training input for one step: clip ``b`` gets a random window of a training instance
    of noise family ``(step + b) % 5`` (a random one of ``noises[family]`` when there are
    several), at a random SNR in ``SNR_RANGE_DB``."""
    noises = noises or {family: [train_noise(family)] for family in NOISE_FAMILIES}
    families = list(noises)
    out = []
    for b, clean in enumerate(references):
        instances = noises[families[(step + b) % len(families)]]
        # One instance draws no number: the live run's random stream stays as it was.
        noise = instances[int(rng.integers(len(instances)))] if len(instances) > 1 else instances[0]
        start = int(rng.integers(0, len(noise) - len(clean) + 1))
        out.append(mix(clean, noise[start : start + len(clean)], rng.uniform(*SNR_RANGE_DB)))
    return np.stack(out)


@dataclass
class TrainingRun:
    """A trained model with the loss of every step (and, if kept, every step's gradients)."""

    model: keras.Model
    loss: str
    losses: list[float] = field(default_factory=list)
    reports: list[GradientReport] = field(default_factory=list)


def train(
    loss: str = "masked",
    seed: int = 0,
    steps: int = LIVE_TRAIN_STEPS,
    clips: int | None = None,
    keep_reports: bool = False,
    model: keras.Model | None = None,
    units: int = CAPSTONE_UNITS,
    learning_rate: float | keras.optimizers.schedules.LearningRateSchedule = CAPSTONE_LEARNING_RATE,
    noise_instances: int = 1,
    extra_utterances: int = 0,
) -> TrainingRun:
    """Train the capstone model with ``loss`` for ``steps`` batches (the first ``clips``
    training utterances, all by default). ``noise_instances`` training instances of each
    noise family (``train_noise``) and ``extra_utterances`` more training utterances
    (``extra_training_utterances``, in batches the size of the shipped set's, taken in turn)
    make the offline recipe (``train_shipped``); the defaults are the notebook's live run. Same
    arguments, same weights on one machine."""
    check_loss_name(loss)
    check_int(steps, "steps", 1)
    training = capstone_training_set()[:clips]
    size = len(training)
    if not is_int(extra_utterances) or extra_utterances % size:
        raise ValueError(
            f"extra_utterances must be a multiple of the batch size ({size}: they "
            f"are trained in batches of that size); got {extra_utterances!r}."
        )
    training = training + extra_training_utterances(extra_utterances)
    groups = [training[i : i + size] for i in range(0, len(training) - size + 1, size)]
    model = model or make_capstone_model(seed, units)
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
    batches = []
    for group in groups:
        references = np.stack([clip.clean for clip in group])
        labels = [clip.labels for clip in group]
        batches.append((references, make_batch_step(model, optimizer, references, labels, loss)))
    rng = np.random.default_rng(seed)
    noises = {
        family: [train_noise(family, i) for i in range(noise_instances)]
        for family in NOISE_FAMILIES
    }
    run = TrainingRun(model, loss)
    for index in range(steps):
        references, step_fn = batches[index % len(batches)]
        value, grads = step_fn(tf.constant(noisy_batch(references, index, rng, noises)))
        run.losses.append(float(value))
        if keep_reports:
            run.reports.append(gradient_report(grads, model.trainable_variables))
    return run


def shipped_learning_rate(
    steps: int = SHIPPED_TRAIN_STEPS,
) -> keras.optimizers.schedules.CosineDecay:
    """The shipped run's learning rate: ``CAPSTONE_LEARNING_RATE`` decaying along a cosine to
    ``FINAL_LEARNING_RATE_FRACTION`` of it at ``steps``."""
    return keras.optimizers.schedules.CosineDecay(
        CAPSTONE_LEARNING_RATE, steps, alpha=FINAL_LEARNING_RATE_FRACTION
    )


def train_shipped(
    loss: str = "masked",
    seed: int = 0,
    steps: int = SHIPPED_TRAIN_STEPS,
    clips: int | None = None,
    extra_utterances: int = SHIPPED_EXTRA_UTTERANCES,
    noise_instances: int = SHIPPED_NOISE_INSTANCES,
) -> TrainingRun:
    """The run that makes the shipped weights (``scripts/train_capstone.py``): ``train`` with
    the shipped recipe (``SHIPPED_TRAIN_STEPS``, ``SHIPPED_NOISE_INSTANCES``,
    ``SHIPPED_EXTRA_UTTERANCES``, the
    cosine decay). The other arguments shrink it for tests."""
    return train(
        loss,
        seed,
        steps,
        clips,
        learning_rate=shipped_learning_rate(steps),
        noise_instances=noise_instances,
        extra_utterances=extra_utterances,
    )
