"""Every exercise in every notebook: its checker rejects the starting code and accepts the
solution the learner can reveal (see helpers/exercises/__init__.py for the pattern), accepts
an alternative correct solution, rejects near misses, and its first hint carries no code."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import make_student_edition as edition

NOTEBOOKS = edition.course_notebooks()


def _exercises():
    for path in NOTEBOOKS:
        for exercise in edition.exercises(path):
            spec = exercise.starter.metadata["exercise"]
            yield pytest.param(
                path.name,
                exercise.starter.source,
                exercise.solution,
                spec,
                id=f"{path.stem}:{spec['function']}",
            )


def _function(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


EXERCISES = list(_exercises())


@pytest.mark.parametrize("notebook, starter, solution, spec", EXERCISES)
def test_checker_rejects_starter_and_accepts_solution(notebook, starter, solution, spec):
    assert solution is not None, (
        f"{notebook}: exercise {spec['function']} has no revealable solution"
    )
    module_name, check_name = spec["checker"].split(":")
    check = getattr(importlib.import_module(module_name), check_name)
    starting = check(_function(starter, spec["function"]))
    assert not starting.passed, f"checker accepted the starting code: {starting}"
    assert starting.hint, "a failed check must give a hint"
    assert not sentence_problems(repr(starting)), sentence_problems(repr(starting))
    solved = check(_function(solution, spec["function"]))
    assert solved.passed, f"checker rejected the solution: {solved}"
    assert not sentence_problems(repr(solved)), sentence_problems(repr(solved))


# A sentence of a checker's output starts with a capital letter or a code token (a name with a
# dot or underscore, a call, a code span, a quote, a bracket or a number): never a lowercase
# word continuing after a full stop, as in "...broken?). for a report...".
SENTENCE_END = re.compile(r"(?<![ei]\.[eg]\.)(?<=[.!?])\s+|\n+")
SENTENCE_START = re.compile(r"[A-Z]|[`'\"(\[\d]|[A-Za-z_]\w*[._(]")


def sentence_problems(text: str) -> list[str]:
    """The sentences of ``text`` (split after . ! ? and at line ends) that start with
    neither a capital letter nor a code token."""
    sentences = [s for s in SENTENCE_END.split(text) if s.strip()]
    return [s[:60] for s in sentences if not SENTENCE_START.match(s.strip())]


def test_sentence_check_finds_a_lowercase_continuation():
    assert sentence_problems("Not yet: Exercise 1.1 (is it broken?). for a report, look.")
    assert sentence_problems("Solved: Exercise 2.1 (x). each chunk denoised.")
    assert not sentence_problems(
        "Not yet: Exercise 4.1 (a distance). Case 'silent': the "
        "gradient is NaN. tf.where passes 0 x inf = NaN back, e.g. "
        "here.\nHint: Two traps. estimate_mag is `None`."
    )


def test_every_notebook_has_exercises():
    with_exercises = {p for p, *_ in (e.values for e in EXERCISES)}
    missing = [p.name for p in NOTEBOOKS if p.name not in with_exercises]
    assert not missing, f"notebooks without checked exercises: {missing}"


# ---------------------------------------------------------------------------------------------
# Alternatives and near misses. Every checker must accept one other correct solution,
# written differently from the revealed one, and reject at least two answers that are almost
# right: the mistakes a learner who half-understood the lesson makes. Keyed by checker, so a
# renamed or new exercise fails test_every_checker_has_alternatives_and_near_misses until it is
# given its own cases here.
# ---------------------------------------------------------------------------------------------


def _skip_step(*decision: str) -> str:
    """An answer to exercise 3.1: one step with the question's loss, then ``decision`` (one
    line each) on ``grads`` and ``loss``."""
    lines = "\n".join(" " * 4 + line for line in decision)
    return f"""
import numpy as np
import tensorflow as tf

from helpers.models import enhance
from helpers.voicing import EPSILON, cond_loop_voicing_loss


def train_step_or_skip(model, optimizer, example):
    with tf.GradientTape() as tape:
        loss = cond_loop_voicing_loss(example.clean, enhance(model, example.audio),
                                      example.labels)
    grads = tape.gradient(loss, model.trainable_variables)
{lines}
"""


def _double_where(*end: str) -> str:
    """An answer to exercise 4.1 with the double where, finished by ``end`` (one line each)
    from ``per_frame`` and ``count``."""
    lines = "\n".join(" " * 4 + line for line in end)
    return f"""
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    rows = mask[:, None]
    log_ratio = (tf.math.log(tf.where(rows, estimate_mag, 1.0))
                 - tf.math.log(tf.where(rows, reference_mag, 1.0)))
    per_frame = tf.reduce_mean(log_ratio**2, axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
{lines}
"""


ALTERNATIVES: dict[str, str] = {
    "helpers.exercises.start_here:check_gradient_status": """
import numpy as np
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    values = np.asarray(tf.convert_to_tensor(gradient).numpy(), np.float64)
    if np.isnan(values).any() or np.isinf(values).any():
        return "nonfinite"
    return "ok" if np.count_nonzero(values) else "zero"
""",
    "helpers.exercises.gru_state:check_sequence_loss": """
import tensorflow as tf

from helpers.models import apply_masks


def sequence_loss(step_model, noisy_spectrum, clean_audio):
    magnitudes = tf.abs(noisy_spectrum)
    steps = magnitudes.shape[1]
    state = tf.zeros((1, step_model.inputs[1].shape[-1]))
    collected = tf.TensorArray(tf.float32, size=steps)
    for t in range(steps):
        mask, state = step_model([magnitudes[:, t], state])
        collected = collected.write(t, mask)
    masks = tf.transpose(collected.stack(), [1, 0, 2])
    audio = apply_masks(masks, noisy_spectrum, clean_audio.shape[-1])
    return tf.reduce_mean(tf.square(audio - clean_audio))
""",
    "helpers.exercises.gru_state:check_truncated_unroll": """
import tensorflow as tf

from helpers.recurrence import unroll, zero_state


def truncated_unroll(step_model, chunks):
    outputs, state = [], zero_state(step_model)
    for chunk in chunks:
        chunk_outputs, state = unroll(step_model, chunk, tf.stop_gradient(state))
        outputs.append(chunk_outputs)
    return tf.concat(outputs, axis=1)
""",
    "helpers.exercises.voicing_loss:check_train_step_or_skip": _skip_step(
        "pairs = [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]",
        "if not pairs:",
        "    return False",
        "optimizer.apply_gradients(pairs)",
        "return True",
    ),
    "helpers.exercises.voicing_loss:check_masked_log_distance": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    reference = tf.boolean_mask(reference_mag, mask)
    estimate = tf.boolean_mask(estimate_mag, mask)
    per_frame = tf.reduce_mean(tf.square(tf.math.log(estimate) - tf.math.log(reference)), -1)
    count = tf.cast(tf.shape(per_frame)[0], tf.float32)
    return tf.reduce_sum(per_frame) / tf.maximum(count, 1.0)
""",
    "helpers.exercises.diagnosis:check_spectral_loss": """
import tensorflow as tf


def spectral_loss(estimate, reference):
    def magnitude(audio):
        frames = tf.signal.frame(tf.cast(audio, tf.float32), 256, 128)
        return tf.abs(tf.signal.rfft(frames * tf.signal.hann_window(256)))
    return tf.reduce_mean(tf.abs(magnitude(estimate) - magnitude(reference)))
""",
    "helpers.exercises.diagnosis:check_find_the_cut": """
import tensorflow as tf


def find_the_cut(model, noisy, clean):
    spectrum = model.spectrum(noisy)
    gain = model.gate(spectrum)
    smoothed, previous = [], tf.zeros_like(gain[0])
    for t in range(gain.shape[0]):
        previous = 0.5 * gain[t] + 0.5 * previous
        smoothed.append(previous)
    out = tf.signal.irfft(spectrum * tf.cast(tf.stack(smoothed), tf.complex64), fft_length=[256])
    return "gated_denoiser/smoother", tf.reduce_mean(tf.square(out - clean))
""",
    "helpers.exercises.labels:check_rule_effect": """
import numpy as np


def rule_effect(known, with_rule, without_rule):
    counts = [0, 0, 0]
    for k, w, wo in zip(known.voicing, with_rule.voicing, without_rule.voicing):
        if w != wo:
            counts[0] += 1
            counts[1] += int(w == k)
            counts[2] += int(wo == k)
    return tuple(counts)
""",
    "helpers.exercises.capstone:check_pause_term": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    frames = tf.boolean_mask(frame(estimate - reference), labels.silent)
    return tf.reduce_sum(tf.abs(frames)) / max(int(labels.silent.sum()), 1)
""",
}

# A loop over the chunks that carries the state; {cut} is where it stops a gradient, if at all.
_CHUNK_LOOP = """
import tensorflow as tf

from helpers.recurrence import unroll, zero_state


def truncated_unroll(step_model, chunks):
    outputs, state = [], zero_state(step_model)
    for index, chunk in enumerate(chunks):
        chunk_outputs, end_state = unroll(step_model, {chunk}, {start})
        outputs.append({outputs})
        state = end_state
    return tf.concat(outputs, axis=1)
"""


def _chunk_loop(chunk="chunk", start="state", outputs="chunk_outputs") -> str:
    return _CHUNK_LOOP.format(chunk=chunk, start=start, outputs=outputs)


def _sequence_loss(
    *body: str,
    start: str = "tf.zeros((1, step_model.inputs[1].shape[-1]))",
    masks: str = "tf.stack(masks, axis=1)",
) -> str:
    """A hand-threaded loop for exercise 1.1 whose loop body is ``body`` (one line each)."""
    lines = "\n".join(" " * 8 + line for line in body)
    return f"""
import tensorflow as tf

from helpers.models import apply_masks, denoising_loss


def sequence_loss(step_model, noisy_spectrum, clean_audio):
    magnitudes = tf.abs(noisy_spectrum)
    state = {start}
    masks = []
    for t in range(magnitudes.shape[1]):
{lines}
    enhanced = apply_masks({masks}, noisy_spectrum, clean_audio.shape[-1])
    return denoising_loss(clean_audio, enhanced)
"""


NEAR_MISSES: dict[str, dict[str, str]] = {
    "helpers.exercises.start_here:check_gradient_status": {
        "tests NaN only (norm != norm), so inf passes": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    norm = tf.norm(tf.convert_to_tensor(gradient))
    if norm != norm:
        return "nonfinite"
    return "zero" if norm == 0 else "ok"
""",
        "a plain norm threshold": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    norm = float(tf.norm(gradient))
    if norm < 1e-6:
        return "zero"
    return "nonfinite" if norm > 1e30 else "ok"
""",
        "zero tested first, by the sum": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    if float(tf.reduce_sum(gradient)) == 0.0:
        return "zero"
    if not tf.reduce_all(tf.math.is_finite(gradient)):
        return "nonfinite"
    return "ok"
""",
        "the maximum is 0 ([0, -1] is zero)": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    gradient = tf.convert_to_tensor(gradient)
    if tf.reduce_max(gradient) == 0:
        return "zero"
    if not tf.reduce_all(tf.math.is_finite(gradient)):
        return "nonfinite"
    return "ok"
""",
        "a float32 norm (rounds 1e-25 to 0, overflows 1e20)": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    norm = tf.norm(tf.convert_to_tensor(gradient))
    if not tf.math.is_finite(norm):
        return "nonfinite"
    return "zero" if norm == 0 else "ok"
""",
        "a norm in float64 with NaN only": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    norm = tf.norm(tf.cast(tf.convert_to_tensor(gradient), tf.float64))
    if tf.math.is_nan(norm):
        return "nonfinite"
    return "zero" if norm == 0 else "ok"
""",
        "a float32 norm of finite values (overflows 1e20)": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    gradient = tf.convert_to_tensor(gradient)
    if not tf.reduce_all(tf.math.is_finite(gradient)):
        return "nonfinite"
    norm = tf.norm(gradient)
    return "zero" if norm == 0 else ("nonfinite" if tf.math.is_inf(norm) else "ok")
""",
        "compares IndexedSlices without making them a tensor": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    if not tf.reduce_all(tf.math.is_finite(gradient)):
        return "nonfinite"
    if tf.reduce_all(gradient == 0):
        return "zero"
    return "ok"
""",
        "zero before non-finite": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    if tf.reduce_all((gradient == 0) | tf.math.is_nan(gradient)):
        return "zero"
    if not tf.reduce_all(tf.math.is_finite(gradient)):
        return "nonfinite"
    return "ok"
""",
    },
    "helpers.exercises.gru_state:check_sequence_loss": {
        "stops the gradient at every state": _sequence_loss(
            "mask, state = step_model([magnitudes[:, t], state])",
            "state = tf.stop_gradient(state)",
            "masks.append(mask)",
        ),
        "takes the masks through NumPy": _sequence_loss(
            "mask, state = step_model([magnitudes[:, t], state])",
            "masks.append(mask.numpy())",
            masks="tf.constant(masks)[None, :, 0]",
        ),
        "never passes the state on": _sequence_loss(
            "mask, _ = step_model([magnitudes[:, t], state])", "masks.append(mask)"
        ),
        "the answer's fix: the state in a Variable, assigned": _sequence_loss(
            "mask, next_state = step_model([magnitudes[:, t], state])",
            "masks.append(mask)",
            "state.assign(next_state)",
            start="tf.Variable(tf.zeros((1, step_model.inputs[1].shape[-1])), trainable=False)",
        ),
        "truncates on purpose every 20 frames": _sequence_loss(
            "if t and t % 20 == 0:",
            "    state = tf.stop_gradient(state)",
            "mask, state = step_model([magnitudes[:, t], state])",
            "masks.append(mask)",
        ),
        "carries the state through NumPy every 8 frames": _sequence_loss(
            "if t and t % 8 == 0:",
            "    state = tf.constant(state.numpy())",
            "mask, state = step_model([magnitudes[:, t], state])",
            "masks.append(mask)",
        ),
        "calls the step model twice per frame": _sequence_loss(
            "mask, _ = step_model([magnitudes[:, t], state])",
            "_, state = step_model([magnitudes[:, t], state])",
            "masks.append(mask)",
        ),
    },
    "helpers.exercises.gru_state:check_truncated_unroll": {
        "carries the state with its history (the starting code)": _chunk_loop(),
        "stops the gradient of the chunk, not of the state": _chunk_loop(
            chunk="tf.stop_gradient(chunk)"
        ),
        "stops the gradient of the outputs": _chunk_loop(outputs="tf.stop_gradient(chunk_outputs)"),
        "cuts only the first edge": _chunk_loop(
            start="tf.stop_gradient(state) if index == 1 else state"
        ),
        "each chunk starts from zeros": _chunk_loop(start="zero_state(step_model)"),
        "cuts at every frame": """
import tensorflow as tf

from helpers.recurrence import zero_state


def truncated_unroll(step_model, chunks):
    outputs, state = [], zero_state(step_model)
    for chunk in chunks:
        for t in range(chunk.shape[1]):
            output, state = step_model([chunk[:, t], tf.stop_gradient(state)])
            outputs.append(output)
    return tf.stack(outputs, axis=1)
""",
        "waits for every chunk, then unroll with chunk_size": """
import tensorflow as tf

from helpers.recurrence import unroll


def truncated_unroll(step_model, chunks):
    chunks = list(chunks)
    frames = tf.concat(chunks, axis=1)
    outputs, _ = unroll(step_model, frames, chunk_size=chunks[0].shape[1])
    return outputs
""",
        "returns the last chunk's outputs only": """
import tensorflow as tf

from helpers.recurrence import unroll, zero_state


def truncated_unroll(step_model, chunks):
    state = zero_state(step_model)
    for chunk in chunks:
        outputs, state = unroll(step_model, chunk, tf.stop_gradient(state))
    return outputs
""",
    },
    "helpers.exercises.voicing_loss:check_train_step_or_skip": {
        "steps on zeros instead of skipping": _skip_step(
            "grads = [tf.zeros_like(v) if g is None else g",
            "         for g, v in zip(grads, model.trainable_variables)]",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return not all(float(tf.reduce_max(tf.abs(g))) == 0 for g in grads)",
        ),
        "returns True without applying": _skip_step("return any(g is not None for g in grads)"),
        "skips when the loss is exactly 0.0": _skip_step(
            "if float(loss) == 0.0:",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "skips when the list of gradients is empty": _skip_step(
            "if not grads:",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "decides from the labels: no voiced frame, no step": _skip_step(
            "if not any(int(v) == 1 for v in example.labels.voicing):",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "skips when any gradient is None": _skip_step(
            "if any(g is None for g in grads):",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "looks at the first gradient only": _skip_step(
            "if grads[0] is None:",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "decides from the loss value (a threshold)": _skip_step(
            "if float(loss) < 1e-4:",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "decides from the loss value (exactly 2 x epsilon)": _skip_step(
            "if float(loss) <= float(np.float32(2 * EPSILON)):",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
    },
    "helpers.exercises.voicing_loss:check_masked_log_distance": {
        "one where and an epsilon in the log": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    log_ratio = tf.math.log(estimate_mag + 1e-30) - tf.math.log(reference_mag + 1e-30)
    per_frame = tf.reduce_mean(log_ratio**2, axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
""",
        "double where, but 0 / 0 without frames": _double_where(
            "return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / count"
        ),
        "boolean_mask and a tf.cond that returns a constant without frames": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    reference = tf.boolean_mask(reference_mag, mask)
    estimate = tf.boolean_mask(estimate_mag, mask)
    per_frame = tf.reduce_mean(tf.square(tf.math.log(estimate) - tf.math.log(reference)), -1)
    return tf.cond(tf.size(per_frame) > 0, lambda: tf.reduce_mean(per_frame),
                   lambda: tf.constant(0.0))
""",
        "boolean_mask and reduce_mean without a guard": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    reference = tf.boolean_mask(reference_mag, mask)
    estimate = tf.boolean_mask(estimate_mag, mask)
    return tf.reduce_mean(tf.square(tf.math.log(estimate) - tf.math.log(reference)))
""",
        "a detached distance reconnected by 0 x the estimate": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    rows = mask[:, None]
    e = tf.where(rows, estimate_mag, 1.0)
    r = tf.where(rows, reference_mag, 1.0)
    per_frame = tf.reduce_mean((tf.math.log(tf.stop_gradient(e)) - tf.math.log(r)) ** 2, -1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    value = tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
    return value + 0.0 * tf.reduce_sum(estimate_mag)
""",
        "an eager-only Python if on the mask": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    if not mask.numpy().any():
        return 0.0 * tf.reduce_sum(estimate_mag)
    rows = mask[:, None]
    log_ratio = (tf.math.log(tf.where(rows, estimate_mag, 1.0))
                 - tf.math.log(tf.where(rows, reference_mag, 1.0)))
    per_frame = tf.reduce_mean(log_ratio**2, axis=-1)
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.reduce_sum(tf.cast(mask, tf.float32))
""",
        "divides by every frame, not the selected ones": _double_where(
            "n = tf.cast(tf.size(mask), tf.float32)",
            "return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / n",
        ),
        "the absolute log ratio, not its square": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    rows = mask[:, None]
    log_ratio = (tf.math.log(tf.where(rows, estimate_mag, 1.0))
                 - tf.math.log(tf.where(rows, reference_mag, 1.0)))
    per_frame = tf.reduce_mean(tf.abs(log_ratio), axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
""",
        "multiplies by a 0/1 mask": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    weights = tf.cast(mask, tf.float32)
    log_ratio = tf.math.log(estimate_mag) - tf.math.log(reference_mag)
    per_frame = tf.reduce_mean(log_ratio**2, axis=-1)
    return tf.reduce_sum(per_frame * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)
""",
    },
    "helpers.exercises.diagnosis:check_spectral_loss": {
        "pads the end with an extra frame": """
import tensorflow as tf


def spectral_loss(estimate, reference):
    def magnitude(audio):
        return tf.abs(tf.signal.stft(tf.cast(audio, tf.float32), 256, 128, pad_end=True))
    return tf.reduce_mean(tf.abs(magnitude(estimate) - magnitude(reference)))
""",
        "tf.signal.stft without a window": """
import tensorflow as tf


def spectral_loss(estimate, reference):
    def magnitude(audio):
        return tf.abs(tf.signal.stft(tf.cast(audio, tf.float32), 256, 128, window_fn=None))
    return tf.reduce_mean(tf.abs(magnitude(estimate) - magnitude(reference)))
""",
    },
    "helpers.exercises.diagnosis:check_find_the_cut": {
        "fixed by adding 0 x the gate's output": """
import tensorflow as tf

from helpers.exercises.diagnosis import gated_loss


def find_the_cut(model, noisy, clean):
    gate = model.gate(model.spectrum(noisy))
    return "smoother", gated_loss(model, noisy, clean) + 0.0 * tf.reduce_sum(gate)
""",
        "fixed by asking for zeros (unconnected_gradients=ZERO)": """
from helpers.exercises.diagnosis import gated_loss


def find_the_cut(model, noisy, clean):
    # the loss as it was: tape.gradient(..., unconnected_gradients=ZERO) gave zeros, no error
    return "smoother", gated_loss(model, noisy, clean)
""",
        "names the last mark the variables reach": """
import tensorflow as tf


def find_the_cut(model, noisy, clean):
    spectrum = model.spectrum(noisy)
    gain = tf.scan(lambda previous, g: 0.5 * g + 0.5 * previous, model.gate(spectrum),
                   initializer=tf.zeros_like(spectrum[0], dtype=tf.float32))
    out = tf.signal.irfft(spectrum * tf.cast(gain, tf.complex64), fft_length=[256])
    return "gate", tf.reduce_mean(tf.square(out - clean))
""",
        "drops the smoother": """
import tensorflow as tf


def find_the_cut(model, noisy, clean):
    spectrum = model.spectrum(noisy)
    gain = model.gate(spectrum)
    out = tf.signal.irfft(spectrum * tf.cast(gain, tf.complex64), fft_length=[256])
    return "smoother", tf.reduce_mean(tf.square(out - clean))
""",
        "smooths with a stop_gradient on the running value": """
import tensorflow as tf


def find_the_cut(model, noisy, clean):
    spectrum = model.spectrum(noisy)
    gain = tf.scan(lambda previous, g: 0.5 * g + 0.5 * tf.stop_gradient(previous),
                   model.gate(spectrum), initializer=tf.zeros_like(spectrum[0], dtype=tf.float32))
    out = tf.signal.irfft(spectrum * tf.cast(gain, tf.complex64), fft_length=[256])
    return "smoother", tf.reduce_mean(tf.square(out - clean))
""",
    },
    "helpers.exercises.labels:check_rule_effect": {
        "what agreed before = changed minus what agrees now": """
def rule_effect(known, with_rule, without_rule):
    changed = with_rule.voicing != without_rule.voicing
    now_agree = changed & (with_rule.voicing == known.voicing)
    return int(changed.sum()), int(now_agree.sum()), int(changed.sum() - now_agree.sum())
""",
        "counts every agreeing frame, not only the changed ones": """
def rule_effect(known, with_rule, without_rule):
    changed = with_rule.voicing != without_rule.voicing
    return (int(changed.sum()), int((with_rule.voicing == known.voicing).sum()),
            int((without_rule.voicing == known.voicing).sum()))
""",
        "compares silence only": """
def rule_effect(known, with_rule, without_rule):
    changed = with_rule.silent != without_rule.silent
    now_agree = changed & (with_rule.silent == known.silent)
    agreed_before = changed & (without_rule.silent == known.silent)
    return int(changed.sum()), int(now_agree.sum()), int(agreed_before.sum())
""",
        "'agreed before' also counts frames that agree after": """
def rule_effect(known, with_rule, without_rule):
    changed = with_rule.voicing != without_rule.voicing
    now_agree = changed & (with_rule.voicing == known.voicing)
    before = changed & ((without_rule.voicing == known.voicing) | now_agree)
    return int(changed.sum()), int(now_agree.sum()), int(before.sum())
""",
        "a list of numpy integers, not a tuple": """
def rule_effect(known, with_rule, without_rule):
    changed = with_rule.voicing != without_rule.voicing
    now_agree = changed & (with_rule.voicing == known.voicing)
    agreed_before = changed & (without_rule.voicing == known.voicing)
    return [changed.sum(), now_agree.sum(), agreed_before.sum()]
""",
        "a changed frame is one either measurement gets wrong": """
def rule_effect(known, with_rule, without_rule):
    a, b, k = with_rule.voicing, without_rule.voicing, known.voicing
    c = (a != k) | (b != k)
    return int(c.sum()), int((c & (a == k)).sum()), int((c & (b == k)).sum())
""",
        "shares, not counts": """
def rule_effect(known, with_rule, without_rule):
    changed = with_rule.voicing != without_rule.voicing
    now_agree = changed & (with_rule.voicing == known.voicing)
    agreed_before = changed & (without_rule.voicing == known.voicing)
    return changed.mean(), now_agree.mean(), agreed_before.mean()
""",
    },
    "helpers.exercises.capstone:check_pause_term": {
        "the loudest silent sample (a maximum)": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    return tf.reduce_max(tf.abs(tf.boolean_mask(frame(estimate), labels.silent)))
""",
        "the loudest silent frame (a maximum of frame powers)": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    frames = tf.boolean_mask(frame(estimate), labels.silent)
    return tf.reduce_max(tf.reduce_mean(tf.square(frames), axis=-1))
""",
        "the mean of the silent samples, not of their size": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    return tf.reduce_mean(tf.boolean_mask(frame(estimate), labels.silent))
""",
        "computed through NumPy": """
import numpy as np
import tensorflow as tf


def pause_term(reference, estimate, labels):
    samples = np.asarray(estimate)
    return tf.constant(float(np.mean(samples**2)))
""",
        "rewards loudness": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    silent = tf.constant(labels.silent)
    power = tf.reduce_mean(tf.square(frame(estimate)), axis=-1)
    count = tf.reduce_sum(tf.cast(silent, tf.float32))
    return -tf.reduce_sum(tf.where(silent, power, 0.0)) / tf.maximum(count, 1.0)
""",
        "a constant: the level measured without a gradient": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    power = tf.reduce_mean(tf.square(frame(tf.stop_gradient(estimate))), axis=-1)
    return tf.reduce_sum(tf.where(tf.constant(labels.silent), power, 0.0))
""",
        "asks for silence on the whole clip": """
import tensorflow as tf


def pause_term(reference, estimate, labels):
    return tf.reduce_mean(tf.square(estimate))
""",
        "mean over an empty selection": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    power = tf.reduce_mean(tf.square(frame(estimate)), axis=-1)
    return tf.reduce_mean(tf.boolean_mask(power, labels.silent))
""",
        "a whole-clip penalty weighted by the share of silent frames": """
import tensorflow as tf


def pause_term(reference, estimate, labels):
    share = float(labels.silent.mean())
    return share * tf.reduce_mean(tf.square(estimate - reference))
""",
        "silence where the reference is exactly zero": """
import tensorflow as tf


def pause_term(reference, estimate, labels):
    silent = tf.equal(tf.cast(reference, tf.float32), 0.0)
    count = tf.reduce_sum(tf.cast(silent, tf.float32))
    return tf.reduce_sum(tf.where(silent, tf.square(estimate), 0.0)) / tf.maximum(count, 1.0)
""",
        "silence where the reference is quiet, not where the labels say": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    clean = frame(tf.cast(reference, tf.float32))
    quiet = tf.reduce_mean(tf.square(clean), axis=-1) < 1e-4
    power = tf.reduce_mean(tf.square(frame(estimate) - clean), axis=-1)
    count = tf.reduce_sum(tf.cast(quiet, tf.float32))
    return tf.reduce_sum(tf.where(quiet, power, 0.0)) / tf.maximum(count, 1.0)
""",
    },
}


# The wrong answers that passed the checkers before they compared with the reference on
# generated inputs: each must now fail, for the reason REASONS gives.
NEAR_MISSES["helpers.exercises.start_here:check_gradient_status"].update(
    {
        "a finite test on the sum (overflows for [3e38, 3e38])": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    if not tf.math.is_finite(tf.reduce_sum(gradient)):
        return "nonfinite"
    return "zero" if tf.reduce_all(tf.convert_to_tensor(gradient) == 0) else "ok"
""",
        "IndexedSlices judged by their values (duplicates cancel)": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    values = gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient
    if not tf.reduce_all(tf.math.is_finite(values)):
        return "nonfinite"
    return "zero" if tf.reduce_all(values == 0) else "ok"
""",
    }
)
NEAR_MISSES["helpers.exercises.start_here:check_gradient_status"].update(
    {
        "a cast to float32, then the finite and zero tests": """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    g = tf.cast(tf.convert_to_tensor(gradient), tf.float32)
    if not tf.reduce_all(tf.math.is_finite(g)):
        return "nonfinite"
    return "zero" if tf.reduce_all(g == 0) else "ok"
""",
        "Python's max of the absolute values (skips a NaN)": """
import numpy as np
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    largest = max(np.abs(tf.convert_to_tensor(gradient).numpy().astype(np.float64)).ravel())
    if not np.isfinite(largest):
        return "nonfinite"
    return "zero" if largest == 0 else "ok"
""",
    }
)
NEAR_MISSES["helpers.exercises.gru_state:check_sequence_loss"].update(
    {
        "a loop over 40 frames, not the clip's": """
import tensorflow as tf

from helpers.models import apply_masks, denoising_loss


def sequence_loss(step_model, noisy_spectrum, clean_audio):
    magnitudes = tf.abs(noisy_spectrum)
    state = tf.zeros((1, step_model.inputs[1].shape[-1]))
    masks = []
    for t in range(40):
        mask, state = step_model([magnitudes[:, t], state])
        masks.append(mask)
    enhanced = apply_masks(tf.stack(masks, axis=1), noisy_spectrum, clean_audio.shape[-1])
    return denoising_loss(clean_audio, enhanced)
""",
    }
)
NEAR_MISSES["helpers.exercises.gru_state:check_sequence_loss"].update(
    {
        "cuts every 56 frames (right on clips shorter than 57)": _sequence_loss(
            "if t > 0 and t % 56 == 0:",
            "    state = tf.stop_gradient(state)",
            "mask, state = step_model([magnitudes[:, t], state])",
            "masks.append(mask)",
        ),
        "resets the state to zeros at frame 150": _sequence_loss(
            "if t == 150:",
            "    state = tf.zeros_like(state)",
            "mask, state = step_model([magnitudes[:, t], state])",
            "masks.append(mask)",
        ),
    }
)
NEAR_MISSES["helpers.exercises.gru_state:check_truncated_unroll"].update(
    {
        "cuts through NumPy (eager only)": _chunk_loop(start="tf.constant(state.numpy())"),
        "cuts with a Variable made in the function (eager only)": """
import tensorflow as tf

from helpers.recurrence import unroll, zero_state


def truncated_unroll(step_model, chunks):
    outputs = []
    state = tf.Variable(zero_state(step_model), trainable=False)
    for chunk in chunks:
        chunk_outputs, end_state = unroll(step_model, chunk, state)
        state.assign(end_state)
        outputs.append(chunk_outputs)
    return tf.concat(outputs, axis=1)
""",
        "passes the chunks to tf.concat": """
import tensorflow as tf

from helpers.recurrence import unroll


def truncated_unroll(step_model, chunks):
    return unroll(step_model, tf.concat(chunks, axis=1), chunk_size=3)[0]
""",
        "reads the chunks twice": """
import tensorflow as tf

from helpers.recurrence import unroll, zero_state


def truncated_unroll(step_model, chunks):
    sizes = [chunk.shape[1] for chunk in chunks]
    outputs, state = [], zero_state(step_model)
    for chunk in chunks:
        chunk_outputs, state = unroll(step_model, chunk, tf.stop_gradient(state))
        outputs.append(chunk_outputs)
    return tf.concat(outputs, axis=1)
""",
    }
)
NEAR_MISSES["helpers.exercises.gru_state:check_truncated_unroll"].update(
    {
        "keeps unroll's fixed cuts inside each chunk (chunk_size=16)": _chunk_loop(
            start="tf.stop_gradient(state), chunk_size=16"
        ),
    }
)
NEAR_MISSES["helpers.exercises.voicing_loss:check_train_step_or_skip"].update(
    {
        "decides from the labels: no speech, no step": _skip_step(
            "if not np.any(example.labels.voicing > 0):",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "looks at the last gradient only": _skip_step(
            "if grads[-1] is None:",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
        "skips when most gradients are None": _skip_step(
            "if sum(g is None for g in grads) > len(grads) / 2:",
            "    return False",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
            "return True",
        ),
    }
)
NEAR_MISSES["helpers.exercises.voicing_loss:check_train_step_or_skip"].update(
    {
        "skips when the global norm is 0 (tiny gradients' squares underflow)": _skip_step(
            "present = [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]",
            "if not present or float(tf.linalg.global_norm([g for g, _ in present])) == 0.0:",
            "    return False",
            "optimizer.apply_gradients(present)",
            "return True",
        ),
        "skips when every gradient is exactly zero": _skip_step(
            "present = [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]",
            "if all(not np.any(g.numpy()) for g, _ in present):",
            "    return False",
            "optimizer.apply_gradients(present)",
            "return True",
        ),
    }
)
NEAR_MISSES["helpers.exercises.voicing_loss:check_masked_log_distance"].update(
    {
        "a floor below the quiet frames (1e-37)": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    log_ratio = (tf.math.log(tf.maximum(estimate_mag, 1e-37))
                 - tf.math.log(tf.maximum(reference_mag, 1e-37)))
    per_frame = tf.reduce_mean(log_ratio**2, axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
""",
        "a NaN patched to 0 after a boolean_mask mean": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    reference = tf.boolean_mask(reference_mag, mask)
    estimate = tf.boolean_mask(estimate_mag, mask)
    value = tf.reduce_mean(tf.square(tf.math.log(estimate) - tf.math.log(reference)))
    return tf.where(tf.math.is_nan(value), 0.0, value)
""",
    }
)
NEAR_MISSES["helpers.exercises.diagnosis:check_spectral_loss"].update(
    {
        "librosa's value plus 1e-10 x the estimate (04's hack)": """
import librosa
import numpy as np
import tensorflow as tf


def spectral_loss(estimate, reference):
    def magnitude(audio):
        return np.abs(librosa.stft(np.asarray(audio, np.float32), n_fft=256, hop_length=128,
                                   center=False))
    value = float(np.mean(np.abs(magnitude(estimate) - magnitude(reference))))
    return tf.constant(value) + 1e-10 * tf.reduce_sum(estimate)
""",
        "librosa's value plus a straight-through term": """
import librosa
import numpy as np
import tensorflow as tf


def spectral_loss(estimate, reference):
    def magnitude(audio):
        return np.abs(librosa.stft(np.asarray(audio, np.float32), n_fft=256, hop_length=128,
                                   center=False))
    value = float(np.mean(np.abs(magnitude(estimate) - magnitude(reference))))
    m = tf.reduce_mean(estimate)
    return value + m - tf.stop_gradient(m)
""",
    }
)
NEAR_MISSES["helpers.exercises.capstone:check_pause_term"].update(
    {
        "a reconstruction term on every frame that is not voiced": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    quiet = tf.constant(labels.voicing != 1)
    error = frame(estimate) - frame(tf.cast(reference, tf.float32))
    power = tf.reduce_mean(tf.square(error), axis=-1)
    count = tf.reduce_sum(tf.cast(quiet, tf.float32))
    return tf.reduce_sum(tf.where(quiet, power, 0.0)) / tf.maximum(count, 1.0)
""",
    }
)


# --- the domain of real use of 4.1, 5.1, 5.2, 6.1 and 7.1: wrong answers that passed when the
# generated inputs were smaller than the course's own, each a near miss (reasons in REASONS).
NEAR_MISSES["helpers.exercises.voicing_loss:check_masked_log_distance"].update(
    {
        "zeros replaced by their value, not by the mask": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    e = tf.where(tf.equal(estimate_mag, 0.0), 1.0, estimate_mag)
    r = tf.where(tf.equal(reference_mag, 0.0), 1.0, reference_mag)
    per_frame = tf.reduce_mean((tf.math.log(e) - tf.math.log(r)) ** 2, axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
""",
        "a floor on the estimate below the old tested range (1e-30)": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    rows = mask[:, None]
    estimate = tf.maximum(estimate_mag, 1e-30)
    reference = tf.where(rows, reference_mag, 1.0)
    per_frame = tf.reduce_mean((tf.math.log(estimate) - tf.math.log(reference)) ** 2, axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
""",
        "a floor at float32's smallest normal number (a selected 0 is not inf)": """
import numpy as np
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    tiny = np.finfo(np.float32).tiny
    log_ratio = (tf.math.log(tf.maximum(estimate_mag, tiny))
                 - tf.math.log(tf.maximum(reference_mag, tiny)))
    per_frame = tf.reduce_mean(log_ratio**2, axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
""",
        "the log of the ratio E / R": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    rows = mask[:, None]
    ratio = tf.where(rows, estimate_mag, 1.0) / tf.where(rows, reference_mag, 1.0)
    per_frame = tf.reduce_mean(tf.math.log(ratio) ** 2, axis=-1)
    count = tf.reduce_sum(tf.cast(mask, tf.float32))
    return tf.reduce_sum(tf.where(mask, per_frame, 0.0)) / tf.maximum(count, 1.0)
""",
    }
)
NEAR_MISSES["helpers.exercises.diagnosis:check_spectral_loss"].update(
    {
        "compares the first 16 frames only": """
import tensorflow as tf


def spectral_loss(estimate, reference):
    def mag(audio):
        return tf.abs(tf.signal.stft(tf.cast(audio, tf.float32), 256, 128))
    return tf.reduce_mean(tf.abs(mag(estimate)[:16] - mag(reference)[:16]))
""",
        "librosa inside tf.py_function": """
import librosa
import numpy as np
import tensorflow as tf


def spectral_loss(estimate, reference):
    def numpy_loss(e, r):
        def mag(a):
            return np.abs(librosa.stft(a.numpy(), n_fft=256, hop_length=128, center=False))
        return np.float32(np.mean(np.abs(mag(e) - mag(r))))
    return tf.py_function(numpy_loss, [estimate, reference], tf.float32)
""",
        "a symmetric Hann window": """
import tensorflow as tf


def spectral_loss(estimate, reference):
    def mag(audio):
        window = lambda n, dtype: tf.signal.hann_window(n, periodic=False, dtype=dtype)
        return tf.abs(tf.signal.stft(tf.cast(audio, tf.float32), 256, 128, window_fn=window))
    return tf.reduce_mean(tf.abs(mag(estimate) - mag(reference)))
""",
    }
)
NEAR_MISSES["helpers.exercises.diagnosis:check_find_the_cut"].update(
    {
        "smooths with SciPy inside tf.py_function": """
import numpy as np
import tensorflow as tf
from scipy import signal


def find_the_cut(model, noisy, clean):
    spectrum = model.spectrum(noisy)
    gain = model.gate(spectrum)

    def smooth(g):
        return signal.lfilter([0.5], [1, -0.5], g.numpy(), axis=0).astype(np.float32)

    smoothed = tf.py_function(smooth, [gain], tf.float32)
    out = tf.signal.irfft(spectrum * tf.cast(smoothed, tf.complex64), fft_length=[256])
    return "smoother", tf.reduce_mean(tf.square(out - clean))
""",
    }
)
NEAR_MISSES["helpers.exercises.capstone:check_pause_term"].update(
    {
        "frame i as samples i*256 to (i+1)*256 (half a frame late)": """
import tensorflow as tf


def pause_term(reference, estimate, labels):
    n = len(labels.silent)
    error = tf.cast(estimate, tf.float32) - tf.cast(reference, tf.float32)
    frames = tf.reshape(tf.pad(error, [[0, n * 256]])[: n * 256], (n, 256))
    power = tf.reduce_mean(tf.square(frames), axis=-1)
    silent = tf.constant(labels.silent)
    count = tf.reduce_sum(tf.cast(silent, tf.float32))
    return tf.reduce_sum(tf.where(silent, power, 0.0)) / tf.maximum(count, 1.0)
""",
        "looks at the first 16 frames only": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    silent = tf.constant(labels.silent[:16])
    error = frame(estimate)[:16] - frame(tf.cast(reference, tf.float32))[:16]
    power = tf.reduce_mean(tf.square(error), axis=-1)
    count = tf.reduce_sum(tf.cast(silent, tf.float32))
    return tf.reduce_sum(tf.where(silent, power, 0.0)) / tf.maximum(count, 1.0)
""",
        "an eager-only float() of a tensor": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    silent = tf.constant(labels.silent)
    error = frame(estimate) - frame(tf.cast(reference, tf.float32))
    power = tf.reduce_mean(tf.square(error), axis=-1)
    count = float(tf.reduce_sum(tf.cast(silent, tf.float32)))
    return tf.reduce_sum(tf.where(silent, power, 0.0)) / max(count, 1.0)
""",
        "a constant without silent frames (None, not a zero gradient)": """
import tensorflow as tf

from helpers.audio import frame


def pause_term(reference, estimate, labels):
    if not labels.silent.any():
        return tf.constant(0.0)
    frames = tf.boolean_mask(frame(estimate - reference), labels.silent)
    return tf.reduce_mean(tf.square(frames))
""",
    }
)
NEAR_MISSES["helpers.exercises.labels:check_rule_effect"].update(
    {
        "the two measurements swapped": """
def rule_effect(known, with_rule, without_rule):
    changed = with_rule.voicing != without_rule.voicing
    now_agree = changed & (without_rule.voicing == known.voicing)
    agreed_before = changed & (with_rule.voicing == known.voicing)
    return int(changed.sum()), int(now_agree.sum()), int(agreed_before.sum())
""",
        "the arguments in another order (known last)": """
def rule_effect(with_rule, without_rule, known):
    changed = with_rule.voicing != without_rule.voicing
    now_agree = changed & (with_rule.voicing == known.voicing)
    agreed_before = changed & (without_rule.voicing == known.voicing)
    return int(changed.sum()), int(now_agree.sum()), int(agreed_before.sum())
""",
        "the first 40 frames only": """
def rule_effect(known, with_rule, without_rule):
    changed = (with_rule.voicing != without_rule.voicing)[:40]
    now_agree = changed & (with_rule.voicing == known.voicing)[:40]
    agreed_before = changed & (without_rule.voicing == known.voicing)[:40]
    return int(changed.sum()), int(now_agree.sum()), int(agreed_before.sum())
""",
    }
)
# Right answers written another way than ALTERNATIVES' one, which must pass too.
MORE_ALTERNATIVES: dict[str, dict[str, str]] = {
    "helpers.exercises.diagnosis:check_spectral_loss": {
        "the estimate's STFT in TensorFlow, the reference's with librosa": """
import librosa
import numpy as np
import tensorflow as tf


def spectral_loss(estimate, reference):
    est = tf.abs(tf.signal.stft(tf.cast(estimate, tf.float32), 256, 128))
    ref = np.abs(librosa.stft(np.asarray(reference, np.float32), n_fft=256, hop_length=128,
                              center=False)).T
    return tf.reduce_mean(tf.abs(est - ref))
""",
    },
}


# Near misses a checker still accepts: a strict xfail, so the day the checker is fixed this
# turns red and the entry must go. Reported to the owner of the checker.
UNSOUND: dict[tuple[str, str], str] = {}
FUNCTION_OF = {e.values[3]["checker"]: e.values[3]["function"] for e in EXERCISES}


def _checker(spec: str):
    module_name, check_name = spec.split(":")
    return getattr(importlib.import_module(module_name), check_name)


# Checkers of the course conventions need three near misses; the others two.
CONVERTED_CHECKERS = (
    "helpers.exercises.start_here:",
    "helpers.exercises.gru_state:",
    "helpers.exercises.voicing_loss:",
)


def test_every_checker_has_alternatives_and_near_misses():
    missing = [
        spec
        for spec in FUNCTION_OF
        if spec not in ALTERNATIVES
        or len(NEAR_MISSES.get(spec, {})) < (3 if spec.startswith(CONVERTED_CHECKERS) else 2)
    ]
    assert not missing, f"checkers without an alternative and enough near misses: {missing}"


@pytest.mark.parametrize("spec", sorted(ALTERNATIVES))
def test_checker_accepts_an_alternative_solution(spec):
    if spec not in FUNCTION_OF:
        pytest.fail(f"{spec} is in ALTERNATIVES but no notebook uses it: remove its cases")
    result = _checker(spec)(_function(ALTERNATIVES[spec], FUNCTION_OF[spec]))
    assert result.passed, f"checker rejected a correct alternative: {result}"


@pytest.mark.parametrize(
    "spec, label",
    [
        pytest.param(
            spec,
            label,
            id=f"{spec.split(':')[1]}:{label}",
            marks=[pytest.mark.xfail(strict=True, reason=UNSOUND[spec, label])]
            if (spec, label) in UNSOUND
            else [],
        )
        for spec, misses in sorted(NEAR_MISSES.items())
        for label in misses
    ],
)
def test_checker_rejects_a_near_miss(spec, label):
    if spec not in FUNCTION_OF:
        pytest.fail(f"{spec} is in NEAR_MISSES but no notebook uses it: remove its cases")
    result = _checker(spec)(_function(NEAR_MISSES[spec][label], FUNCTION_OF[spec]))
    assert not result.passed, f"checker accepted a wrong answer ({label}): {result}"
    assert result.hint, "a failed check must give a hint"
    assert not sentence_problems(repr(result)), sentence_problems(repr(result))


# ---------------------------------------------------------------------------------------------
# Graded hints: the first hint, which a checker prints and the notebook stores in its
# outputs, nudges in words; code appears only in the revealed solution.
# ---------------------------------------------------------------------------------------------

# A call, an assignment, an index or a code span: what code looks like inside a sentence.
CODE_IN_TEXT = re.compile(r"[A-Za-z_][\w.]*\([^)]*\)|\w\s*[-+*/]?=\s*[\w(\[]|\w\[[^\]]*\]|`")
# Hints stored or printed before these checkers lost their code (strict xfail: fix, then drop).
HINTS_PENDING: dict[str, str] = {}
STORED_PENDING: dict[str, str] = {}


def _code_ngrams(source: str, n: int = 4) -> set[tuple[str, ...]]:
    """Runs of n tokens of the solution's code (comments and strings dropped) that hold at
    least one operator: the parts of a solution a hint must not copy."""
    import io
    import tokenize

    tokens = [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER)
    ]
    return {
        tuple(tokens[i : i + n])
        for i in range(len(tokens) - n + 1)
        if any(not (tok.isidentifier() or tok[0].isdigit()) for tok in tokens[i : i + n])
    }


def hint_code(hint: str, solution: str) -> list[str]:
    """What in ``hint`` is code: code-like fragments, and token runs copied from the solution."""
    found = [m.group(0) for m in CODE_IN_TEXT.finditer(hint)]
    words = tuple(re.findall(r"\w+|[^\w\s]", hint))
    windows = {words[i : i + 4] for i in range(len(words) - 3)}
    found += [" ".join(g) for g in _code_ngrams(solution) & windows]
    return found


def test_hint_code_detector_finds_code_and_passes_prose():
    solution = "def f(x):\n    return tf.where(mask[:, None], x, 1.0) / tf.maximum(count, 1.0)\n"
    assert hint_code("make the inputs safe first: tf.where(mask[:, None], x, 1.0)", solution)
    assert hint_code("divide by tf.maximum(count, 1.0)", solution)
    assert hint_code("rebind it: state = next_state", "")
    assert hint_code("test `all(g is None for g in grads)` first", "")
    assert hint_code("mask , None ] , x", solution)  # a copied token run, without a call
    assert not hint_code(
        "tf.where picks values, but the gradient flows through both inputs; "
        "what is an average over nothing?",
        solution,
    )


def _pending(table: dict[str, str], notebook: str):
    stem = Path(notebook).stem
    return [pytest.mark.xfail(strict=True, reason=table[stem])] if stem in table else []


@pytest.mark.parametrize(
    "notebook, starter, solution, spec",
    [
        pytest.param(*e.values, id=e.id, marks=_pending(HINTS_PENDING, e.values[0]))
        for e in EXERCISES
    ],
)
def test_first_hint_has_no_solution_code(notebook, starter, solution, spec):
    result = _checker(spec["checker"])(_function(starter, spec["function"]))
    assert not hint_code(result.hint, solution or ""), (
        f"the first hint of {spec['function']} contains code: {hint_code(result.hint, solution)}"
    )


def _stored_hints(path: Path):
    """(exercise function, stored hint text, solution) for every exercise's checker output."""
    for exercise in edition.exercises(path):
        for output in exercise.checker.get("outputs", []):
            text = output.get("data", {}).get("text/plain", "")
            for hint in re.findall(r"^Hint: (.*)$", text, re.M):
                yield exercise.starter.metadata["exercise"]["function"], hint, exercise.solution


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem, marks=_pending({**HINTS_PENDING, **STORED_PENDING}, p.name))
        for p in NOTEBOOKS
    ],
)
def test_stored_hints_have_no_solution_code(path):
    hints = list(_stored_hints(path))
    assert hints, f"{path.name}: no stored checker output with a hint"
    for function, hint, solution in hints:
        assert not hint_code(hint, solution), (
            f"{path.name}: the stored hint of {function} contains code: {hint_code(hint, solution)}"
        )


# The 5.x checkers' own messages on two near misses beyond the table above (which covers
# the swapped weights): the hack's gradient is named zero, the wrong frames and a NumPy
# result each get their own message.
def test_spectral_loss_checker_rejects_other_frames_and_numpy_results():
    import numpy as np
    import tensorflow as tf

    from helpers.exercises.diagnosis import check_spectral_loss

    def wrong_frames(estimate, reference):
        def magnitude(audio):
            return tf.abs(tf.signal.stft(audio, frame_length=512, frame_step=128))

        return tf.reduce_mean(tf.abs(magnitude(estimate) - magnitude(reference)))

    result = check_spectral_loss(wrong_frames)
    assert not result.passed and "librosa gives" in result.message

    result = check_spectral_loss(lambda estimate, reference: np.float32(0.5))
    assert not result.passed and "expected a scalar tensor" in result.message


def test_skip_checker_accepts_catching_the_optimizers_error():
    """Keras 3 raises before it changes anything when every gradient is None:
    iterations and Adam's moments stay, so catching that ValueError is a correct skip."""
    solution = _skip_step(
        "try:",
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))",
        "except ValueError:",
        "    return False",
        "return True",
    )
    spec = "helpers.exercises.voicing_loss:check_train_step_or_skip"
    result = _checker(spec)(_function(solution, "train_step_or_skip"))
    assert result.passed, result


def test_gradient_status_accepts_tensorflows_maximum_of_the_absolute_values():
    """0.1's hint warns against Python's max and a maximum without abs, not against this:
    TensorFlow's maximum passes a NaN on, and reads every dtype in its own precision."""
    answer = """
import tensorflow as tf


def gradient_status(gradient):
    if gradient is None:
        return "none"
    largest = tf.reduce_max(tf.abs(tf.convert_to_tensor(gradient)))
    if not tf.math.is_finite(largest):
        return "nonfinite"
    return "zero" if largest == 0 else "ok"
"""
    spec = "helpers.exercises.start_here:check_gradient_status"
    result = _checker(spec)(_function(answer, "gradient_status"))
    assert result.passed, result


# The common correct shapes of 4.1 pass, and the wrong ones are told their real fault.
MASKED_LOG_DISTANCE_SHAPES = {  # the unused 0 / 0 is NaN, but the mask's where zeroes it
    "double where, the 0 / 0 avoided by a where": _double_where(
        "total = tf.reduce_sum(tf.where(mask, per_frame, 0.0))",
        "return tf.where(count > 0, total / count, 0.0)",
    ),
    "boolean_mask and divide_no_nan": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    per_frame = tf.reduce_mean(tf.square(tf.math.log(tf.boolean_mask(estimate_mag, mask))
                                         - tf.math.log(tf.boolean_mask(reference_mag, mask))), -1)
    count = tf.cast(tf.size(per_frame), tf.float32)
    return tf.math.divide_no_nan(tf.reduce_sum(per_frame), count)
""",
    "boolean_mask and a tf.cond whose empty branch stays connected": """
import tensorflow as tf


def masked_log_distance(reference_mag, estimate_mag, mask):
    per_frame = tf.reduce_mean(tf.square(tf.math.log(tf.boolean_mask(estimate_mag, mask))
                                         - tf.math.log(tf.boolean_mask(reference_mag, mask))), -1)
    return tf.cond(tf.size(per_frame) > 0, lambda: tf.reduce_mean(per_frame),
                   lambda: 0.0 * tf.reduce_sum(estimate_mag))
""",
}
MASKED_LOG_DISTANCE_FAULTS = {
    "boolean_mask and a tf.cond that returns a constant without frames": "is None: with no frame",
    "boolean_mask and reduce_mean without a guard": "the average is 0 / 0",
    "double where, but 0 / 0 without frames": "the average is 0 / 0",
    "one where and an epsilon in the log": "changes the distance of quiet frames",
    "multiplies by a 0/1 mask": "0 x inf = NaN",
    "divides by every frame, not the selected ones": "value is 0.299; the reference gives 0.598",
    "the absolute log ratio, not its square": "the value is 0.64819; the reference gives",
    "a detached distance reconnected by 0 x the estimate": "selected frames is zero",
    "an eager-only Python if on the mask": "inside tf.function, your code raised",
}


@pytest.mark.parametrize("label", sorted(MASKED_LOG_DISTANCE_SHAPES))
def test_masked_log_distance_accepts_the_common_correct_shapes(label):
    spec = "helpers.exercises.voicing_loss:check_masked_log_distance"
    result = _checker(spec)(_function(MASKED_LOG_DISTANCE_SHAPES[label], "masked_log_distance"))
    assert result.passed, result


@pytest.mark.parametrize("label", sorted(MASKED_LOG_DISTANCE_FAULTS))
def test_masked_log_distance_names_the_real_fault(label):
    spec = "helpers.exercises.voicing_loss:check_masked_log_distance"
    result = _checker(spec)(_function(NEAR_MISSES[spec][label], "masked_log_distance"))
    assert not result.passed and MASKED_LOG_DISTANCE_FAULTS[label] in result.message, result


def test_check_silence_term_is_kept_as_an_alias_of_check_pause_term():
    """6.1's term is the pause term (silent frames only; 04's silence term also covers
    unvoiced ones); code written before the rename still finds its checker."""
    from helpers.exercises import capstone

    assert capstone.check_silence_term is capstone.check_pause_term


def test_pause_term_checker_names_the_mixed_clip_mistakes():
    """Checker 6.1 on a real clip with a pause (room noise) and speech: each wrong answer a
    learner tried fails for its own reason, and a term that ignores the labels it is given (here:
    the clip's first labels, fixed) passes on that clip and fails once the labels change."""
    import numpy as np
    import tensorflow as tf

    from helpers.audio import clip_excerpt, frame
    from helpers.exercises.capstone import (
        MIXED_CLIP,
        _relabelled,
        _where_it_pulls,
        check_pause_term,
    )

    spec = "helpers.exercises.capstone:check_pause_term"
    misses = NEAR_MISSES[spec]
    share = check_pause_term(
        _function(
            misses["a whole-clip penalty weighted by the share of silent frames"], "pause_term"
        )
    )
    assert not share.passed and "frames the labels do not call silent" in share.message
    zeros = check_pause_term(
        _function(misses["silence where the reference is exactly zero"], "pause_term")
    )
    assert not zeros.passed and "room noise, not digital zeros" in zeros.message
    mixed = clip_excerpt(MIXED_CLIP)
    assert np.mean(mixed.clean[: mixed.labels.hop_length * 8] == 0) < 0.1  # not zeros

    def as_labelled(reference, estimate, labels):  # the labels of the original clip, always
        silent = tf.constant(mixed.labels.silent)
        power = tf.reduce_mean(tf.square(frame(estimate) - frame(reference)), axis=-1)
        return tf.reduce_sum(tf.where(silent, power, 0.0)) / tf.maximum(
            tf.reduce_sum(tf.cast(silent, tf.float32)), 1.0
        )

    assert _where_it_pulls(as_labelled, mixed) is None
    # relabelled, it sees none of the frames now called silent
    assert "does not follow the labels" in _where_it_pulls(as_labelled, _relabelled(mixed))


def test_checker_box_colours_come_from_the_jupyterlab_theme():
    """The verdict's colour is JupyterLab's success or error colour (readable on the light and
    the dark theme alike), with the course's colour as the fallback elsewhere."""
    from helpers.exercises import CheckResult

    solved = CheckResult("Exercise 0.1 (x)", True, "Right.")._repr_html_()
    not_yet = CheckResult("Exercise 0.1 (x)", False, "Wrong.", "Look again.")._repr_html_()
    assert "var(--jp-success-color1, #1b7837)" in solved and "error-color" not in solved
    assert "var(--jp-error-color1, #b2182b)" in not_yet and "success-color" not in not_yet
    for box in (solved, not_yet):
        assert not re.search(r"color:\s*#|solid #", box), box  # no colour without its variable


# --- who is to blame: the learner's code or the checker ------------------------------------


def test_an_error_in_the_learners_code_is_the_learners():
    from helpers.exercises import run_check

    def learner(x):
        return {"a": 1}[x]  # KeyError for anything but "a"

    result = run_check("Exercise", learner, lambda fn: (fn("b") == 1, "ok"), "a hint")
    assert not result.passed
    assert result.message == "Your code raised KeyError: 'b'" and result.hint == "a hint"


def test_an_error_in_a_graph_the_learner_built_is_the_learners():
    import tensorflow as tf

    from helpers.exercises import run_check

    def learner(values):
        return tf.gather(values, 5)  # out of range on a CPU: raised when the graph runs

    def check(fn):
        graph = tf.function(fn)
        return float(graph(tf.constant([1.0, 2.0]))) > 0, "ok"

    result = run_check("Exercise", learner, check, "a hint")
    assert not result.passed and result.message.startswith("Your code raised InvalidArgumentError")


def test_an_error_in_the_checkers_own_code_is_the_checkers():
    from helpers.exercises import run_check

    def check(fn):
        value = fn(2)
        return {}["missing"] == value, "never reached"  # the checker's own bug

    result = run_check("Exercise", lambda x: x * 2, check, "a hint")
    assert not result.passed
    assert result.message == "The checker failed (please report): KeyError: 'missing'"
    assert "Your code" not in repr(result) and "not in your code" in result.hint


# The reason a checker gives for a near miss: the words its message must hold (the real fault,
# not a neighbouring one).
REASONS: dict[str, dict[str, str]] = {
    "helpers.exercises.voicing_loss:check_masked_log_distance": {
        "a floor below the quiet frames (1e-37)": "changes the distance of quiet frames",
        "a NaN patched to 0 after a boolean_mask mean": "patching a NaN result",
    },
    "helpers.exercises.diagnosis:check_spectral_loss": {
        "librosa's value plus 1e-10 x the estimate (04's hack)": "not the loss's own",
        "librosa's value plus a straight-through term": "not the loss's own",
    },
    "helpers.exercises.start_here:check_gradient_status": {
        "the maximum is 0 ([0, -1] is zero)": "[0, -1], shape=(2,)) you returned 'zero'",
        "a float32 norm (rounds 1e-25 to 0, overflows 1e20)": "[1e-25, 0], shape=(2,)) you",
        "a float32 norm of finite values (overflows 1e20)": "[1e-25, 0], shape=(2,)) you",
        "compares IndexedSlices without making them a tensor": "indices=[0, 2], dense_shape",
        "a finite test on the sum (overflows for [3e38, 3e38])": "[3e+38, 3e+38], shape=(2,))",
        "IndexedSlices judged by their values (duplicates cancel)": "indices=[1, 1]",
        "tests NaN only (norm != norm), so inf passes": "[1e-25, 0], shape=(2,)) you",
        "a norm in float64 with NaN only": "[2, inf], shape=(2,)) you returned 'ok'",
        "a cast to float32, then the finite and zero tests": "rounded to float32",
        "Python's max of the absolute values (skips a NaN)": "Python's max and min skip a NaN",
    },
    "helpers.exercises.gru_state:check_truncated_unroll": {
        "carries the state with its history (the starting code)": "a full run's: nothing is cut",
        "stops the gradient of the chunk, not of the state": "chunk 1, chunk 2, chunk 3 differ",
        "cuts through NumPy (eager only)": "inside tf.function, your code raised AttributeError",
        "cuts with a Variable made in the function (eager only)": "your code raised ValueError",
        "passes the chunks to tf.concat": "an iterator read once",
        "reads the chunks twice": "the chunks arrive once",
        "stops the gradient of the outputs": "get no gradient",
        "cuts only the first edge": "with respect to chunk 2 differ",
        "each chunk starts from zeros": "differ from one full unroll",
        "cuts at every frame": "cut inside a chunk too",
        "waits for every chunk, then unroll with chunk_size": "each chunk is run before",
        "returns the last chunk's outputs only": "expected (1, 10, 16)",
        "keeps unroll's fixed cuts inside each chunk (chunk_size=16)": "also stops inside chunk 1",
    },
    "helpers.exercises.capstone:check_pause_term": {
        "a reconstruction term on every frame that is not voiced": "13 unvoiced frames",
        "the loudest silent sample (a maximum)": "a maximum (or any pick of a few values)",
        "the loudest silent frame (a maximum of frame powers)": "a maximum",
        "the mean of the silent samples, not of their size": "an average over no frames",
    },
    "helpers.exercises.diagnosis:check_find_the_cut": {
        "fixed by adding 0 x the gate's output": "gradients are zero",
        "fixed by asking for zeros (unconnected_gradients=ZERO)": "still None",
        "names the last mark the variables reach": "the next layer's call",
        "drops the smoother": "keeps what the model computes",
        "smooths with a stop_gradient on the running value": "gradients differ",
    },
    "helpers.exercises.labels:check_rule_effect": {
        "a changed frame is one either measurement gets wrong": "agree with each other",
        "a list of numpy integers, not a tuple": "expected a tuple of three integers",
        "'agreed before' also counts frames that agree after": "expected (2, 1, 1), got (2, 1, 2)",
        "counts every agreeing frame, not only the changed ones": "expected (2, 1, 1)",
    },
    "helpers.exercises.voicing_loss:check_train_step_or_skip": {
        "decides from the labels: no voiced frame, no step": "no voiced frame, yet gradients",
        "decides from the labels: no speech, no step": "the labels say there is speech, but",
        "looks at the last gradient only": "6 unused variable(s), listed last",
        "skips when most gradients are None": "not when one or most are",
        "skips when the loss is exactly 0.0": "No gradients provided for any variable",
        "skips when the list of gradients is empty": "No gradients provided for any variable",
        "skips when any gradient is None": "unused variable(s), listed first",
        "looks at the first gradient only": "unused variable(s), listed first",
        "decides from the loss value (a threshold)": "not from the loss value",
        "steps on zeros instead of skipping": "momentum moves them",
        "skips when the global norm is 0 (tiny gradients' squares underflow)": "squares underflow",
        "skips when every gradient is exactly zero": "every gradient is exactly zero, and none",
    },
    "helpers.exercises.gru_state:check_sequence_loss": {
        "truncates on purpose every 20 frames": "the state step 20 receives is cut off",
        "carries the state through NumPy every 8 frames": "the state step 8 receives is cut",
        "stops the gradient at every state": "the state step 2 receives is cut off",
        "the answer's fix: the state in a Variable, assigned": "step 1 receives is cut off",
        "never passes the state on": "loss is 0.00333; the reference (a full unroll) gives 0.00337",
        "a loop over 40 frames, not the clip's": "(1, 40, 257) do not fit the spectrum",
        "cuts every 56 frames (right on clips shorter than 57)": "state step 56 receives is cut",
        "resets the state to zeros at frame 150": "step 150 receives is not the one the step",
        "takes the masks through NumPy": "are None",
    },
}


# --- the domain of real use of 4.1, 5.1, 5.2, 6.1 and 7.1 (near misses above)
REASONS["helpers.exercises.voicing_loss:check_masked_log_distance"].update(
    {
        "zeros replaced by their value, not by the mask": "the reference gives inf. On selected",
        "a floor on the estimate below the old tested range (1e-30)": (
            "A floor or an epsilon inside the log changes the distance of quiet frames"
        ),
        "a floor at float32's smallest normal number (a selected 0 is not inf)": (
            "the reference gives inf"
        ),
        "the log of the ratio E / R": "a step of your computation leaves float32's range",
    }
)
REASONS["helpers.exercises.diagnosis:check_spectral_loss"].update(
    {
        "compares the first 16 frames only": "librosa's over the first 16 frames only",
        "librosa inside tf.py_function": "Your code runs Python through tf.py_function",
        "a symmetric Hann window": "a symmetric Hann window (periodic=False)",
    }
)
REASONS["helpers.exercises.diagnosis:check_find_the_cut"].update(
    {"smooths with SciPy inside tf.py_function": "Your code runs Python through tf.py_function"}
)
REASONS["helpers.exercises.capstone:check_pause_term"].update(
    {
        "frame i as samples i*256 to (i+1)*256 (half a frame late)": (
            "the labels' frames are centred"
        ),
        "looks at the first 16 frames only": "it looks at a fixed number of frames",
        "an eager-only float() of a tensor": "Eagerly it runs, but inside tf.function",
        "a constant without silent frames (None, not a zero gradient)": "gradients are None",
    }
)
REASONS["helpers.exercises.labels:check_rule_effect"].update(
    {
        "the two measurements swapped": "the other way round",
        "the first 40 frames only": "expected (27, 12, 15), got (6, 3, 3)",
    }
)


@pytest.mark.parametrize(
    "spec, label", [(spec, label) for spec, more in MORE_ALTERNATIVES.items() for label in more]
)
def test_checker_accepts_more_alternative_solutions(spec, label):
    result = _checker(spec)(_function(MORE_ALTERNATIVES[spec][label], FUNCTION_OF[spec]))
    assert result.passed, f"checker rejected a correct alternative ({label}): {result}"


def test_masked_log_distance_names_a_graph_only_overflow_as_such():
    """log(E / R) passes eagerly on a quiet selected frame and, with the estimate a variable and
    the reference a constant of the graph, overflows inside tf.function (the graph optimizer
    rewrites the ratio's gradient): the message says so, not that a zero outside the mask is
    to blame."""
    import tensorflow as tf

    from helpers.exercises.voicing_loss import _distance_traps, _learner_fault, _value_and_grad

    spec = "helpers.exercises.voicing_loss:check_masked_log_distance"
    ratio = _function(NEAR_MISSES[spec]["the log of the ratio E / R"], "masked_log_distance")

    def in_graph(reference, estimate, mask):
        variable = tf.Variable(estimate)

        @tf.function
        def value_and_grad():
            with tf.GradientTape() as tape:
                value = ratio(tf.constant(reference.numpy()), variable, tf.constant(mask.numpy()))
            return value, tape.gradient(value, variable)

        return value_and_grad()

    runners = {False: _value_and_grad(ratio), True: in_graph}
    quiet = _distance_traps()[3]
    assert _learner_fault(runners, quiet, False) is None
    message = _learner_fault(runners, quiet, True)
    assert "though eagerly it is" in message and "outside the mask" not in message, message


def test_rule_effect_notes_only_the_mistake_the_answer_made():
    """Arguments in another order fail on a trap case whose note explains another mistake:
    the message gives the counts, and no note."""
    spec = "helpers.exercises.labels:check_rule_effect"
    result = _checker(spec)(
        _function(NEAR_MISSES[spec]["the arguments in another order (known last)"], "rule_effect")
    )
    assert not result.passed and result.message.endswith("got (1, 1, 0)."), result


@pytest.mark.parametrize(
    "spec, label", [(spec, label) for spec, reasons in sorted(REASONS.items()) for label in reasons]
)
def test_a_near_miss_is_rejected_for_its_real_reason(spec, label):
    result = _checker(spec)(_function(NEAR_MISSES[spec][label], FUNCTION_OF[spec]))
    assert not result.passed and REASONS[spec][label] in result.message, result


@pytest.mark.parametrize("notebook, starter, solution, spec", EXERCISES)
def test_a_verdict_is_the_same_on_every_run(notebook, starter, solution, spec):
    """The inputs are generated derandomized and the search is bounded in runs, not seconds:
    the same answer gets the same verdict, word for word (nbval compares the stored one)."""
    check = _checker(spec["checker"])
    first = repr(check(_function(starter, spec["function"])))
    assert repr(check(_function(starter, spec["function"]))) == first


def test_importing_the_checkers_runs_no_tensorflow_op():
    """The grader (scripts/gradient_clinic_grading/fresh.py) imports every checker once, then
    forks a child per answer; a TensorFlow op run at import starts TensorFlow's thread pools,
    which a forked child cannot use: its first op would hang. So a child forked after the
    imports must run an op at once."""
    script = """
import importlib, os, pkgutil, signal, sys, time
import helpers.exercises as exercises
for module in pkgutil.iter_modules(exercises.__path__):
    importlib.import_module(f"helpers.exercises.{module.name}")
import tensorflow as tf
pid = os.fork()
if pid == 0:
    tf.reduce_sum(tf.ones((512, 512)) @ tf.ones((512, 512))).numpy()  # big enough to use the pools
    os._exit(0)
for _ in range(200):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.1)
os.kill(pid, signal.SIGKILL)
sys.exit("the forked child's first TensorFlow op hung")
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
