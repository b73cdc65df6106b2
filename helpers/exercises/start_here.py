"""Checkers for the exercises of 00_start_here."""

from __future__ import annotations

import math

import tensorflow as tf

from helpers.diagnosis import gradient_report
from helpers.exercises import CheckResult, run_check

# (what the gradient is, the gradient). Each case is one a learner's first answer tends to get
# wrong: an infinity of either sign (a NaN-only test misses it), a NaN beside zeros (not
# "zero"), values of either sign (a maximum of 0 is not all zeros), a tiny or subnormal healthy
# gradient and a huge finite one (a float32 norm rounds the first to 0 and overflows the second
# to inf), values that cancel in a sum, and the IndexedSlices an embedding or a gather gives.
# The expected status is the gradient report's own. No subnormal case (1e-40): TensorFlow's
# CPU kernels flush subnormals to zero, so every TensorFlow answer, the report's included,
# calls it zero, and an optimizer step with it moves nothing.
_CASES: list[tuple[str, object]] = [
    ("None", None),
    ("all zeros", tf.zeros((3, 2))),
    ("healthy", tf.constant([0.5, -0.25])),
    ("zero and negative ([0, -1])", tf.constant([0.0, -1.0])),
    ("tiny but healthy (1e-12)", tf.constant([0.0, 1e-12, 0.0])),
    ("tiny but healthy (1e-25)", tf.constant([1e-25, 0.0])),
    ("huge but finite ([1e20, 1e20])", tf.constant([1e20, 1e20])),
    ("the largest float32 (3e38)", tf.constant([3e38, -3e38])),
    ("values that sum to 0", tf.constant([1.0, -1.0])),
    ("a NaN", tf.constant([1.0, math.nan])),
    ("a NaN among zeros", tf.constant([0.0, math.nan, 0.0])),
    ("+inf", tf.constant([2.0, math.inf])),
    ("-inf", tf.constant([[-math.inf], [1.0]])),
    (
        "tf.IndexedSlices (from an embedding)",
        tf.IndexedSlices(tf.constant([[0.5, 0.0]]), tf.constant([1]), tf.constant([3, 2])),
    ),
    (
        "tf.IndexedSlices of zeros",
        tf.IndexedSlices(tf.zeros((2, 2)), tf.constant([0, 2]), tf.constant([3, 2])),
    ),
]


def _expected(gradient) -> str:
    """The status ``gradient_report`` gives one gradient: the reference answer."""
    shape = (3, 2) if isinstance(gradient, tf.IndexedSlices) else getattr(gradient, "shape", ())
    return gradient_report([gradient], [tf.Variable(tf.zeros(shape))]).statuses[0]


STATUSES = ("none", "zero", "nonfinite", "ok")


def check_gradient_status(function) -> CheckResult:
    """``function(gradient)`` must return the status ``gradient_report`` gives one gradient:
    ``"none"`` (no gradient), ``"zero"`` (every value exactly 0), ``"nonfinite"`` (a NaN or
    an infinity of either sign anywhere) or ``"ok"``."""

    def check(fn):
        for label, gradient in _CASES:
            expected = _expected(gradient)
            got = fn(gradient)
            if got not in STATUSES:
                return (
                    False,
                    f"For a gradient that is {label} you returned {got!r}; expected "
                    f"one of {', '.join(STATUSES)}.",
                )
            if got != expected:
                return (
                    False,
                    f"For a gradient that is {label} you returned {got!r}; expected {expected!r}.",
                )
        return True, (
            "None, zero, NaN and both infinities are told apart; tiny, huge and sparse "
            "gradients are read right."
        )

    return run_check(
        "Exercise 0.1 (the status of one gradient)",
        function,
        check,
        hint="There are four answers. Look at every value, not at a sum, a maximum or a "
        "norm: a norm in float32 rounds a tiny gradient to 0 and overflows a huge one to "
        "infinity. A gradient is zero only when every value equals 0 (a NaN does not), and "
        "non-finite when any value is NaN or an infinity of either sign. A gradient of an "
        "embedding comes as IndexedSlices: make it a tensor first.",
    )
