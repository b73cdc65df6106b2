"""Checkers for the exercises of 03_voicing_loss_reproduce and 04_voicing_loss_fix.

The checkers build their own small model from a fixed seed and their own short examples, so
the notebook's global random state is not touched.
"""

from __future__ import annotations

import warnings
from functools import cache

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import Clip, excerpt, load_clip, make_example
from helpers.exercises import CheckResult, run_check
from helpers.models import make_conv_denoiser, snapshot

QUIET_SCALE = 3e-7  # vowel_a at this scale: the question's loss equals the silent file's


@cache
def _unvoiced() -> Clip:
    """8 frames of the fricative: unvoiced only. The question's loss is not the silent file's
    constant there, and every variable has a gradient: a step, whatever the labels say."""
    fricative = load_clip("fricative_s")
    audio, labels = excerpt(fricative.clean, fricative.labels, 0, 8)
    return make_example("fricative_s[0:8]", audio, labels, seed=103)


class _UnusedHead(keras.layers.Layer):
    """A variable on the model's path that no loss can reach (``stop_gradient``): its gradient
    is None on every clip, like the unused head of 00's model."""

    def build(self, input_shape):
        self.head = self.add_weight(shape=(), initializer="ones", name="unused_head")

    def call(self, inputs):
        return inputs + 0.0 * tf.stop_gradient(self.head)


def _with_unused_head(inner: keras.Model) -> keras.Model:
    """``inner`` behind an ``_UnusedHead``, whose variable comes first in the list: a step
    must not wait for every gradient, nor look at the first one only."""
    noisy = keras.Input(shape=(None, 1), name="noisy")
    return keras.Model(noisy, inner(_UnusedHead(name="head")(noisy)), name="with_unused_head")


@cache
def _examples() -> tuple[Clip, Clip, Clip]:
    """A short voiced example (8 frames of vowel_a), a short silent one (8 frames), and the
    voiced one scaled down to about -140 dB: the question's loss on it is the silent file's
    value to the last bit (2 x epsilon in float32), yet every variable has a gradient."""
    vowel = load_clip("vowel_a")
    audio, labels = excerpt(vowel.clean, vowel.labels, 0, 8)
    voiced = make_example("vowel_a[0:8]", audio, labels, seed=101)
    quiet = make_example(
        "quiet vowel_a[0:8]", audio * QUIET_SCALE, labels, noise_rms=0.01 * QUIET_SCALE, seed=101
    )
    silence = load_clip("silence")
    audio, labels = excerpt(silence.clean, silence.labels, 0, 8)
    silent = make_example("silence[0:8]", audio, labels, seed=102)
    return voiced, silent, quiet


def _moved(before: list[np.ndarray], model: keras.Model) -> float:
    return float(max(np.max(np.abs(a - b)) for a, b in zip(snapshot(model), before)))


def _step_fault(fn, model, optimizer, example, why: str | None) -> str | None:
    """What is wrong with one call of the learner's step, or None. ``why`` says why this call
    must be a step (None: it must be skipped)."""
    before = snapshot(model)
    iterations = int(optimizer.iterations)
    with warnings.catch_warnings():  # Keras names the unused head's None gradient: expected
        warnings.simplefilter("ignore")
        applied = fn(model, optimizer, example)
    moved = _moved(before, model)
    stepped = int(optimizer.iterations) - iterations
    if not isinstance(applied, (bool, np.bool_)):
        return f"On {example.name} you returned {applied!r}; expected True or False."
    if why is not None and not (applied and stepped == 1):
        return (
            f"{why}, you returned {applied} and the optimizer took {stepped} step(s); "
            "expected one step and True."
        )
    if why is None and (applied or stepped or moved):
        return (
            f"On the silent clip {example.name} you returned {applied}, the optimizer took "
            f"{stepped} step(s) and the weights moved by up to {moved:.2g}; expected False, "
            "no step and no movement (also right after a voiced step, when Adam has momentum)."
        )
    return None


_QUIET = (
    "Its loss is exactly the silent file's, yet every variable has a gradient: decide from the "
    "gradients, not from the loss value"
)
_UNVOICED = (
    "Its loss is not constant and every variable has a gradient: decide from the gradients, "
    "not from the labels"
)
_UNUSED = "its gradient is always None: skip only when every gradient is None, not when one is"


def check_train_step_or_skip(function) -> CheckResult:
    """``function(model, optimizer, example)`` must take one optimizer step with the question's
    loss when any gradient exists and return True, and otherwise leave the model and the
    optimizer untouched and return False. A very quiet voiced clip, whose loss equals the
    silent file's, must still be a step: the decision comes from the gradients, not the loss."""

    def check(fn):
        voiced, silent, quiet = _examples()
        unvoiced = _unvoiced()
        model = make_conv_denoiser(seed=7)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
        # the quiet clip first: its loss equals the silent file's only while the model's
        # output bias is still zero, as it is before the first voiced step
        quiet_why = f"On {quiet.name}, a voiced clip about 140 dB down ({_QUIET})"
        unused_why = f"With a model whose variable no loss uses ({_UNUSED}), on the voiced clip"
        plan = [
            (model, optimizer, quiet, quiet_why),
            (model, optimizer, silent, None),
            (model, optimizer, voiced, f"On the voiced clip {voiced.name}"),
            (model, optimizer, silent, None),
            (model, optimizer, unvoiced, f"On {unvoiced.name}, an unvoiced clip with no voiced "
                                         f"frame ({_UNVOICED})"),
        ]  # fmt: skip
        headed = _with_unused_head(make_conv_denoiser(seed=8))
        head_optimizer = keras.optimizers.Adam(learning_rate=1e-3)
        plan += [
            (headed, head_optimizer, voiced, unused_why),
            (headed, head_optimizer, silent, None),
        ]  # fmt: skip
        for model, optimizer, example, why in plan:
            fault = _step_fault(fn, model, optimizer, example, why)
            if fault:
                return False, fault
        return True, (
            "Voiced and unvoiced clips train, even a very quiet one and with an unused "
            "variable in the model, and silent clips are skipped without touching the "
            "weights or Adam's state."
        )

    return run_check(
        "Exercise 3.1 (skip a step that has no gradient)",
        function,
        check,
        hint="Look at what the list of gradients holds on a silent file, and decide "
        "from that list, not from the loss value: a quiet voiced file can have "
        "the very same loss. Turning None into zeros is not skipping: Adam's "
        "momentum would still move the weights.",
    )


def _reference_distance(ref: np.ndarray, est: np.ndarray, mask: np.ndarray) -> float:
    if not mask.any():
        return 0.0
    per_frame = np.mean((np.log(est[mask]) - np.log(ref[mask])) ** 2, axis=-1)
    return float(per_frame.mean())


def _reference_gradient(ref: np.ndarray, est: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """d distance / d estimate: 2 (log E - log R) / (E * bins * selected frames) on the
    selected frames, 0 elsewhere."""
    grad = np.zeros_like(est, dtype=np.float64)
    if mask.any():
        selected = est[mask].astype(np.float64)
        log_ratio = np.log(selected) - np.log(ref[mask].astype(np.float64))
        grad[mask] = 2 * log_ratio / (selected * est.shape[1] * mask.sum())
    return grad


def _run(fn, ref, est, mask, graph: bool):
    """The learner's value and gradient, eagerly or inside ``tf.function``."""
    estimate = tf.Variable(est)

    def value_and_grad():
        with tf.GradientTape() as tape:
            value = fn(tf.constant(ref), estimate, tf.constant(mask))
        return value, tape.gradient(value, estimate)

    return tf.function(value_and_grad)() if graph else value_and_grad()


def _distance_cases() -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(2024)
    ref = rng.uniform(0.1, 2.0, (6, 5)).astype(np.float32)
    est = rng.uniform(0.1, 2.0, (6, 5)).astype(np.float32)
    mask = np.array([True, False, True, True, False, False])
    silent_ref = ref.copy()
    silent_ref[~mask] = 0.0  # silent frames: the reference magnitude is exactly zero there
    silent_est = est.copy()
    silent_est[4] = 0.0  # and the estimate is exactly zero on one masked-out frame
    quiet_ref, quiet_est = silent_ref.copy(), silent_est.copy()
    quiet_ref[2] *= 1e-36  # a selected frame far below any epsilon, yet not silent: a plain
    quiet_est[2] *= 1e-36  # log gives it its true distance (float32 is normal down to 1e-38)
    return [
        ("every frame selected, no zeros", ref, est, np.ones(6, dtype=bool)),
        ("silent frames (zero magnitudes) outside the mask", silent_ref, silent_est, mask),
        (
            "no frame selected (a file without speech)",
            silent_ref,
            silent_est,
            np.zeros(6, dtype=bool),
        ),
        ("a quiet selected frame (magnitudes near 1e-36, not zero)", quiet_ref, quiet_est, mask),
    ]


def _distance_fault(name, ref, est, mask, value, grad) -> str | None:
    """What is wrong with the learner's value and gradient on one case, or None."""
    expected = _reference_distance(ref, est, mask)
    value = float(value)
    if not np.isfinite(value) or abs(value - expected) > 1e-4 * max(1.0, abs(expected)):
        fault = ""
        if "quiet" in name and np.isfinite(value):
            fault = (
                " A floor or an epsilon inside the log changes the distance of "
                "quiet frames; the exercise asks for the exact distance."
            )
        elif not mask.any():
            fault = " With no frame selected, the average is 0 / 0."
        elif not np.isfinite(value):
            fault = (
                " The value itself is not finite: the log of a zero magnitude "
                "outside the mask is -inf, and a 0/1 mask multiplies it "
                "(0 x inf = NaN)."
            )
        return f"Case '{name}': the value is {value:.5g}; expected {expected:.5g}.{fault}"
    if grad is None and not mask.any():
        return (
            f"Case '{name}': the value is right, but its gradient with "
            "respect to estimate_mag is None: with no frame selected your "
            "function returns a constant that does not depend on the "
            "estimate (a tf.cond or an if that picks a constant branch). A "
            "loss built from it gives all-None gradients on a file without "
            "speech, notebook 03's error. Return a result still computed "
            "from estimate_mag."
        )
    if grad is None:
        return (
            f"Case '{name}': the gradient with respect to estimate_mag is "
            "None; compute the distance from estimate_mag with TensorFlow "
            "ops (no NumPy, no .numpy())."
        )
    grad = tf.convert_to_tensor(grad).numpy()
    if not np.all(np.isfinite(grad)):
        bad = sorted({int(i) for i in np.argwhere(~np.isfinite(grad))[:, 0]})
        cause = (
            " Nothing is selected, so the average divides 0 by 0; a NaN in a "
            "branch that tf.where throws away still reaches the gradient."
            if not mask.any()
            else " The log of a zero magnitude outside the mask has an infinite slope, "
            "and tf.where passes 0 x inf = NaN back to it."
        )
        return (
            f"Case '{name}': the gradient is NaN/inf on frames {bad} "
            f"(mask = {mask.astype(int).tolist()}).{cause}"
        )
    if np.any(grad[~mask] != 0):
        return f"Case '{name}': frames outside the mask get a non-zero gradient."
    expected_grad = _reference_gradient(ref, est, mask)
    scale = float(np.max(np.abs(expected_grad[mask]))) if mask.any() else 0.0
    if mask.any() and not np.allclose(
        grad[mask], expected_grad[mask], rtol=1e-3, atol=1e-6 * scale
    ):
        if not np.any(grad[mask]):
            return (
                f"Case '{name}': the value is right, but its gradient on the selected frames "
                "is zero, where the distance depends on the estimate: the model could not "
                "learn from it. A stop_gradient, or a term that only reconnects the graph "
                "(0 x something), gives the look of a gradient without one."
            )
        return (
            f"Case '{name}': the value is right, but its gradient on the selected frames "
            "differs from the distance's own: part of the computation does not reach "
            "the estimate (a stop_gradient?)."
        )
    return None


def check_masked_log_distance(function) -> CheckResult:
    """``function(reference_mag, estimate_mag, mask)`` must return the mean over selected frames
    of the mean over bins of ``(log E - log R) ** 2``, with its true gradient (compared with
    the distance's own, numerically: a zero or detached gradient fails), zero outside the
    mask, and 0.0 when no frame is selected: eagerly and inside ``tf.function``."""

    def check(fn):
        for graph in (False, True):
            for name, ref, est, mask in _distance_cases():
                if graph:
                    try:
                        value, grad = _run(fn, ref, est, mask, graph=True)
                    except Exception as error:  # the learner's code, traced: name it
                        return False, (
                            f"Case '{name}' inside tf.function: your code raised "
                            f"{type(error).__name__} ({str(error).splitlines()[0][:120]}). "
                            "Eagerly it works, but in a graph a tensor has no value yet: no "
                            ".numpy(), and no Python if on a tensor; use tf.where or tf.cond."
                        )
                else:
                    value, grad = _run(fn, ref, est, mask, graph=False)
                fault = _distance_fault(name, ref, est, mask, value, grad)
                if fault:
                    where = " inside tf.function" if graph else ""
                    return False, fault.replace(f"Case '{name}'", f"Case '{name}'{where}", 1)
        return True, (
            "The right value and gradient, eagerly and inside tf.function: finite with zero "
            "magnitudes outside the mask, and 0.0 for a file without selected frames."
        )

    return run_check(
        "Exercise 4.1 (a masked log distance without NaN)",
        function,
        check,
        hint="Two traps, both outside the mask. tf.where picks values, but the "
        "gradient still flows back through both of its inputs, and the slope of "
        "a log at zero is infinite. And a file without speech selects no frame "
        "at all: what is an average over nothing, and is your answer then still "
        "connected to the estimate? A floor inside the log is not the way out: "
        "it changes the value of quiet frames.",
    )
