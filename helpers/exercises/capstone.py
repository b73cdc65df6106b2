"""Checkers for the exercises of 06_capstone."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from helpers.audio import (
    Clip,
    ClipExcerpt,
    Voicing,
    clip_excerpt,
    frame_array,
    level_change_db,
)
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import GRAPH_ONLY, error_text, first_difference
from helpers.models import enhance, make_conv_denoiser, make_train_step
from helpers.voicing import masked_voicing_loss

# The gradient lab's silent and voiced clips (helpers.lab.settings.LAB_CLIPS): 16 frames each.
SILENT_CLIP = ClipExcerpt("silence", 4, 20)
VOICED_CLIP = ClipExcerpt("vowel_a", 10, 26)
# A mixed clip of the real recording: a pause that holds the room's noise (not digital
# zeros), then speech. Its frames 17-23 are unvoiced: relabelled silent to test the labels.
MIXED_CLIP = ClipExcerpt("arctic_a0009", 0, 40)
RELABELLED_FRAMES = slice(17, 24)
WHOLE_CLIP = ClipExcerpt("arctic_a0009", 0, 194)  # the course's longest clip, whole
EXERCISE_TRAIN_STEPS = 40
EXERCISE_LEARNING_RATE = 0.02
REQUIRED_FALL_DB = 6.0
SEEN_SHARE = 0.9  # of the samples only silent frames hold, the share the term must see


def _global_norm(grads: list) -> float:
    """Global norm of a gradient list; a None gradient counts as zero."""
    present = [g for g in grads if g is not None]
    return float(tf.linalg.global_norm(present)) if present else 0.0


def _level_db(model: keras.Model, example: Clip):
    """``level_change_db`` of the model's output on the example's silent frames, as a function
    of no arguments for checking after every training step (the model runs in a graph traced
    once)."""
    run = tf.function(lambda: enhance(model, example.audio), autograph=False)

    def level() -> float:
        return level_change_db(example.audio, run().numpy(), example.labels.silent)

    return level


def _relabelled(example: Clip, voicing=None) -> Clip:
    """The mixed clip with other labels (by default: its pause called unvoiced, and an
    unvoiced stretch of speech called silent). A term that follows the labels follows them."""
    if voicing is None:
        voicing = example.labels.voicing.copy()
        voicing[voicing == Voicing.SILENT] = Voicing.UNVOICED
        voicing[RELABELLED_FRAMES] = Voicing.SILENT
    voicing = np.asarray(voicing, dtype=example.labels.voicing.dtype)
    return dataclasses.replace(example, labels=dataclasses.replace(example.labels, voicing=voicing))


@dataclass(frozen=True)
class Labelling:
    """A clip's frames (by default the mixed clip's), labelled ``voicing`` (0 silent, 1 voiced,
    2 unvoiced)."""

    voicing: tuple[int, ...]
    clip: ClipExcerpt = MIXED_CLIP

    def __repr__(self) -> str:
        first, last = self.clip.start_frame, self.clip.stop_frame - 1
        where = f"{self.clip.name} frames {first}-{last}"
        if len(self.voicing) <= 48:
            labels = "".join(map(str, self.voicing))
            return f"{where} labelled {labels} (0 silent, 1 voiced, 2 unvoiced)"
        silent = np.flatnonzero(np.asarray(self.voicing) == Voicing.SILENT)
        runs = np.split(silent, np.flatnonzero(np.diff(silent) > 1) + 1) if silent.size else []
        spans = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)
        return f"{where} (the whole clip), frames {spans or 'none'} labelled silent"


@st.composite
def _labellings(draw) -> Labelling:
    """Runs of frames called silent anywhere over the mixed clip (at least one), the other
    frames keeping their own labels, a pause not called silent called unvoiced (voiced stays
    where the clip has a pitch)."""
    own = _own_labels_without_silence(MIXED_CLIP)
    silent = []
    while len(silent) < len(own):
        silent += [draw(st.booleans())] * draw(st.integers(1, 12))
    if not any(silent[: len(own)]):
        silent[draw(st.integers(0, len(own) - 1))] = True
    return Labelling(tuple(0 if s else v for s, v in zip(silent, own)))


def _own_labels_without_silence(clip: ClipExcerpt) -> list[int]:
    """The clip's own labels, its pauses called unvoiced."""
    voicing = clip_excerpt(clip).labels.voicing
    return [int(v) if v != Voicing.SILENT else int(Voicing.UNVOICED) for v in voicing]


def _mixed_voicing() -> np.ndarray:
    return clip_excerpt(MIXED_CLIP).labels.voicing


def _boundary_labellings() -> list[Labelling]:
    """Silent frames next to speech: every other frame, every third frame, a lone silent frame
    at each end of the clip; every frame silent; the whole of arctic_a0009 (194 frames, the
    course's longest clip) as labelled."""
    own = _own_labels_without_silence(MIXED_CLIP)
    frames = len(own)

    def silent_where(pick) -> Labelling:
        return Labelling(tuple(0 if pick(i) else v for i, v in enumerate(own)))

    whole = clip_excerpt(WHOLE_CLIP).labels.voicing
    return [
        silent_where(lambda i: i % 2 == 1),
        silent_where(lambda i: i % 3 == 0),
        silent_where(lambda i: i in (0, frames - 1)),
        silent_where(lambda i: True),
        Labelling(tuple(int(v) for v in whole), WHOLE_CLIP),
    ]


def _example(labelling: Labelling) -> Clip:
    return _relabelled(clip_excerpt(labelling.clip), labelling.voicing)


def _pull(fn, example: Clip) -> np.ndarray:
    """|d term / d output| per sample, at an output 0.01 off the reference everywhere."""
    probe = tf.constant(example.clean + 0.01 * np.sign(example.audio - example.clean))
    with tf.GradientTape() as tape:
        tape.watch(probe)
        value = fn(example.clean, probe, example.labels)
    if not isinstance(value, tf.Tensor):
        return np.zeros(len(example.clean))
    grad = tape.gradient(value, probe)
    return np.zeros(len(example.clean)) if grad is None else np.abs(grad.numpy())


def _frame_spans(samples: int) -> list[slice]:
    """The samples of each frame ``helpers.audio.frame`` cuts from a clip of ``samples``
    samples (two hops, centred on ``index * hop``; its zero padding left out)."""
    positions = frame_array(np.arange(1, samples + 1) / (samples + 1))
    indices = np.rint(positions * (samples + 1)).astype(int) - 1
    return [slice(int(row[row >= 0].min()), int(row.max()) + 1) for row in indices]


def _why_unseen(fn, example: Clip, pulled: np.ndarray, weak: list[int]) -> str:
    """Why the term misses most of some silent frames (``weak``): a fixed number of frames,
    digital zeros, labels not followed, frames cut at other samples (part of a frame missed,
    no frame missed entirely), or a pick of a few values."""
    hop, spans = example.labels.hop_length, _frame_spans(len(example.clean))
    silent_samples = np.zeros(len(example.clean), dtype=bool)
    for index in np.flatnonzero(example.labels.silent):
        silent_samples[spans[index]] = True
    everything = _relabelled(example, np.zeros_like(example.labels.voicing))
    covered = _pull(fn, everything) > 0
    follows_labels = not np.any(pulled & ~silent_samples)
    seen = [i for i, span in enumerate(spans) if covered[span].all()]
    last = int(np.flatnonzero(covered)[-1]) if covered.any() else -1
    if follows_labels and seen and covered[: last + 1].all() and not covered[spans[-1]].any():
        looked = f"frames 0 to {seen[-1]}"
        return (
            f"with every frame of this {len(spans)}-frame clip called silent, the term pulls "
            f"on {looked} only (no sample after sample {last}), "
            f"so it misses silent frames {weak[:8]}{' ...' if len(weak) > 8 else ''}: it "
            "looks at a fixed number of frames. Look at every frame the labels have, however "
            "long the clip."
        )
    listed = f"{weak[:8]}{' ...' if len(weak) > 8 else ''}"
    if pulled.any() and np.all(example.clean[pulled] == 0):
        share = float(np.mean(pulled[silent_samples]))
        return (
            "its silent frames hold room noise, not digital zeros, and the term sees only "
            f"{share:.0%} of those frames' samples (it pulls only where the reference is "
            "exactly 0): silence is what the labels say, whatever the reference holds there."
        )
    if not np.any(pulled & silent_samples):
        return f"the term pulls on no sample of the frames the labels call silent ({listed})" + (
            ", only on frames they do not call silent: it does not follow the labels it is given."
            if pulled.any()
            else "."
        )
    entirely_missed = any(not pulled[spans[i]].any() for i in np.flatnonzero(example.labels.silent))
    for index in [] if entirely_missed else weak:
        span = spans[index]
        missed = np.flatnonzero(~pulled[span]) + span.start
        whole = span.stop - span.start
        if 0 < missed.size < whole and np.all(np.diff(missed) == 1):
            part = (
                "first"
                if missed[0] == span.start
                else "last"
                if missed[-1] == span.stop - 1
                else ""
            )
            if part:
                return (
                    f"the term misses the {part} {missed.size} samples ({missed[0]} to "
                    f"{missed[-1]}) of silent frame {index}, which covers samples {span.start} "
                    f"to {span.stop - 1}: the labels' frames are centred (frame i is samples "
                    f"i x {hop} - {hop} to i x {hop} + {hop - 1}, as helpers.audio.frame cuts "
                    "them); yours are cut at other samples."
                )
    share = float(np.mean(pulled[silent_samples]))
    return (
        f"the term pulls on only {share:.1%} of the samples of the frames the labels call "
        "silent: a maximum (or any pick of a few values) teaches the output only where it is "
        "loudest. Let every silent sample count."
    )


def _where_it_pulls(fn, example: Clip) -> str | None:
    """What is wrong with where the term's gradient (with respect to the output) falls on a
    clip with speech and silent frames, or None: it must reach nearly every sample of every
    frame the labels call silent (samples it shares with a speech frame included), and no
    sample that only other frames hold."""
    hop, samples = example.labels.hop_length, len(example.clean)
    spans = _frame_spans(samples)
    pull = _pull(fn, example)
    pulled = pull > 1e-6 * pull.max() if pull.max() > 0 else np.zeros(samples, dtype=bool)
    silent_frames = np.flatnonzero(example.labels.silent)
    weak = [int(i) for i in silent_frames if np.mean(pulled[spans[i]]) < SEEN_SHARE]
    if weak:
        return _why_unseen(fn, example, pulled, weak)
    held_by_silent = np.zeros(samples, dtype=bool)
    for index in silent_frames:
        held_by_silent[spans[index]] = True
    elsewhere = pulled & ~held_by_silent
    if elsewhere.any():
        # each pulled sample counted for the frame whose centre is nearest to it
        nearest = np.unique(np.rint(np.flatnonzero(elsewhere) / hop).astype(int))
        voicing = example.labels.voicing[nearest[nearest < len(example.labels.voicing)]]
        voiced = int(np.sum(voicing == Voicing.VOICED))
        unvoiced = int(np.sum(voicing == Voicing.UNVOICED))
        return (
            "the term also pulls the output where only frames the labels do not call silent "
            f"reach (samples nearest to {voiced} voiced and {unvoiced} unvoiced frames): this "
            "term is for the frames called silent, and only those (the masked loss has its "
            "own terms for the others)."
        )
    return None


LABELLING_EXAMPLES = 6  # generated labellings of the mixed clip, after the fixed ones


def check_pause_term(function) -> CheckResult:
    """``function(reference, estimate, labels)`` is a pause term (GLOSSARY.md): a loss term for
    silent frames only (not 04's silence term, which also covers unvoiced frames).

    The domain: clips with speech and silent frames anywhere (next to speech included), as
    long as the course's longest (arctic_a0009, 194 frames), labelled by any labelling, and
    clips without silent frames; eagerly and in training inside ``tf.function``. Asked of it:
    a scalar tensor with a gradient on the lab's silent clip; a pull on (nearly) every sample
    of every frame the labels call silent (the labels' centred frames, ``helpers.audio.frame``)
    and on no sample only other frames hold, on the mixed clip under its own labels and a
    relabelling (the traps), then the boundaries (silent frames every other and every third
    frame, a lone one at each end, every frame; the whole of arctic_a0009), then
    ``LABELLING_EXAMPLES`` generated labellings; on a clip without silent frames, a finite
    number with a zero gradient, still connected (not None: the same rule as 4.1's); and,
    added to the masked loss without its own silence term and trained inside ``tf.function``
    (Adam, 40 steps), an output on silence at least 6 dB lower at some step."""

    def check(fn):
        silent, voiced = clip_excerpt(SILENT_CLIP), clip_excerpt(VOICED_CLIP)
        model = make_conv_denoiser(seed=0)
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            value = fn(silent.clean, enhance(model, silent.audio), silent.labels)
        if not isinstance(value, tf.Tensor):
            return False, (
                f"It returned a {type(value).__name__}, not a TensorFlow tensor: "
                "no gradient can flow through it."
            )
        if value.shape.rank != 0 or not np.isfinite(float(value)):
            return False, f"Expected one finite number (a scalar tensor); got {value}."
        grads = tape.gradient(value, variables)
        if all(g is None or not np.any(g.numpy()) for g in grads):
            return False, (
                "On the silent clip the term has no gradient (None or zero): "
                "it cannot teach the model anything."
            )
        reached = [g is not None for g in grads]

        tried: list[Labelling] = []

        def pulls_elsewhere(labelling: Labelling) -> str | None:
            tried.append(labelling)
            problem = _where_it_pulls(fn, _example(labelling))
            return None if problem is None else f"On {labelling!r}: {problem}"

        mixed = clip_excerpt(MIXED_CLIP)
        traps = [
            Labelling(tuple(int(v) for v in labels.voicing))
            for labels in (mixed.labels, _relabelled(mixed).labels)
        ]
        boundaries = _boundary_labellings()
        fixed = traps + boundaries
        difference = first_difference(
            _labellings(), pulls_elsewhere, traps=traps, boundaries=boundaries,
            examples=LABELLING_EXAMPLES, runs=20,
        )  # fmt: skip
        if difference is not None:
            return False, difference.message
        with tf.GradientTape() as tape:
            on_speech = fn(voiced.clean, enhance(model, voiced.audio), voiced.labels)
        if not np.isfinite(float(on_speech)):
            return False, (
                f"On a clip with no silent frame the term is {float(on_speech)}: "
                "an average over no frames must still be a number."
            )
        speech_grads = tape.gradient(on_speech, variables)
        if any(r and g is None for r, g in zip(reached, speech_grads)):
            return False, (
                "On a clip with no silent frame the term's gradients are None: there it "
                "returns a constant that does not depend on the estimate (an if or a tf.cond "
                "that picks a constant). Return a number still computed from the estimate, as "
                "4.1 asks: its gradient is then zero, which the gradient report reads as "
                "nothing to learn here, not None, which it reads as a cut."
            )
        if not _global_norm(speech_grads) <= 1e-6 * _global_norm(grads):
            return False, (
                "On a clip with no silent frame the term still pulls the output "
                "(its gradient is not zero there): it would turn speech down too."
            )

        def loss(reference, estimate, labels):
            return masked_voicing_loss(reference, estimate, labels, silence_weight=0.0) + fn(
                reference, estimate, labels
            )

        # The lowest level within the run, not the last: near silence, Adam on a log-level
        # term (04's own) overshoots and swings back up; falling at all is what is asked.
        level = _level_db(model, silent)
        before = level()
        step = make_train_step(
            model, keras.optimizers.Adam(EXERCISE_LEARNING_RATE), [silent], loss_fn=loss
        )
        lowest = before
        for _ in range(EXERCISE_TRAIN_STEPS):
            try:
                step()
            except Exception as error:
                return False, (
                    f"Trained inside tf.function, your code raised {error_text(error)}. "
                    f"{GRAPH_ONLY}"
                )
            lowest = min(lowest, level())
        if not before - lowest >= REQUIRED_FALL_DB:
            direction = "never fell" if lowest >= before else "fell by less than 6 dB"
            return False, (
                f"In {EXERCISE_TRAIN_STEPS} training steps the output level on silence "
                f"{direction}: the term must grow when the output there is louder."
            )
        return True, (
            f"Within {EXERCISE_TRAIN_STEPS} steps inside tf.function the output "
            f"on the lab's silent clip fell more than {REQUIRED_FALL_DB:.0f} dB below "
            "where it started; under "
            f"{len(fixed)} fixed labellings (silent frames next to speech, at the clip's ends, "
            f"everywhere; the whole of {WHOLE_CLIP.name}, {WHOLE_CLIP.stop_frame} frames) and "
            f"{len(tried) - len(fixed)} generated ones of a real clip with a pause and speech, the "
            f"term pulls at least {SEEN_SHARE:.0%} of the samples of every frame the labels "
            "call silent and no sample only other frames hold; on speech alone it is a number "
            "whose gradient is zero (not None: still connected)."
        )

    return run_check(
        "Exercise 6.1 (a pause term)",
        function,
        check,
        hint="Build the term from the estimate with TensorFlow operations only, "
        "on the frames the labels mark silent and nowhere else, so that it "
        "grows when the output there is louder; and an average over no "
        "frames must still be a number.",
    )


# Deprecated alias, kept for code written before the rename: 04's *silence term* covers silent
# and unvoiced frames; 6.1's narrower term is the *pause term* (GLOSSARY.md).
check_silence_term = check_pause_term
