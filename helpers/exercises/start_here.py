"""Checkers for the exercises of 00_start_here."""

from __future__ import annotations

import math

import tensorflow as tf

from helpers.exercises import CheckResult, run_check

# (what the gradient is, the gradient, its status). Each case is one a learner's first
# answer tends to get wrong: an infinity of either sign (a NaN-only test misses it), a NaN
# beside zeros (not "zero"), a tiny healthy gradient and one whose values cancel in a sum
# (neither is "zero").
_CASES: list[tuple[str, object, str]] = [
    ("None", None, "none"),
    ("all zeros", tf.zeros((3, 2)), "zero"),
    ("healthy", tf.constant([0.5, -0.25]), "ok"),
    ("tiny but healthy (1e-12)", tf.constant([0.0, 1e-12, 0.0]), "ok"),
    ("values that sum to 0", tf.constant([1.0, -1.0]), "ok"),
    ("a NaN", tf.constant([1.0, math.nan]), "nonfinite"),
    ("a NaN among zeros", tf.constant([0.0, math.nan, 0.0]), "nonfinite"),
    ("+inf", tf.constant([2.0, math.inf]), "nonfinite"),
    ("-inf", tf.constant([[-math.inf], [1.0]]), "nonfinite"),
]
STATUSES = ("none", "zero", "nonfinite", "ok")


def check_gradient_status(function) -> CheckResult:
    """``function(gradient)`` must return the status ``gradient_report`` gives one gradient:
    ``"none"`` (no gradient), ``"zero"`` (every value exactly 0), ``"nonfinite"`` (a NaN or
    an infinity of either sign anywhere) or ``"ok"``."""

    def check(fn):
        for label, gradient, expected in _CASES:
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
        return True, "None, zero, NaN and both infinities are told apart; a tiny gradient is ok."

    return run_check(
        "Exercise 0.1 (the status of one gradient)",
        function,
        check,
        hint="There are four answers, and the order you test them in matters: "
        "a missing gradient first, then any value that is not a finite number "
        "(NaN, or an infinity of either sign), then all zeros. A tiny "
        "gradient is still a healthy one.",
    )
