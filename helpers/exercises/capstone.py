"""Checkers for the exercises of 06_capstone."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from helpers.exercises import CheckResult, run_check


def check_apply_or_skip(function) -> CheckResult:
    """``function(optimizer, grads, variables)`` applies the gradients and returns True, or,
    when every gradient is None, leaves optimizer and variables untouched and returns False.
    """

    def check(fn):
        a = tf.Variable([1.0, 2.0], name="a")
        b = tf.Variable([3.0], name="b")
        optimizer = keras.optimizers.Adam(learning_rate=0.1)
        applied = fn(optimizer, [tf.constant([1.0, 1.0]), tf.constant([1.0])], [a, b])
        if applied is not True:
            return False, f"with real gradients it returned {applied!r}; expected True."
        if np.allclose(a.numpy(), [1.0, 2.0]):
            return False, "with real gradients the variables did not move."
        iterations = int(optimizer.iterations.numpy())
        before = [a.numpy().copy(), b.numpy().copy()]
        skipped = fn(optimizer, [None, None], [a, b])
        if skipped is not False:
            return False, f"with all-None gradients it returned {skipped!r}; expected False."
        if int(optimizer.iterations.numpy()) != iterations:
            return False, "with all-None gradients the optimizer still counted a step."
        if not (np.array_equal(a.numpy(), before[0]) and np.array_equal(b.numpy(), before[1])):
            return False, "with all-None gradients a variable moved; a skipped step moves nothing."
        before = [a.numpy().copy(), b.numpy().copy()]
        mixed = fn(optimizer, [tf.constant([1.0, 1.0]), None], [a, b])
        if mixed is not True:
            return False, ("with one real gradient and one None it returned "
                           f"{mixed!r}; expected True (apply what there is).")
        if np.array_equal(a.numpy(), before[0]):
            return False, ("with one real gradient and one None, the variable that has a "
                           "gradient did not move: apply what there is.")
        if not np.array_equal(b.numpy(), before[1]):
            return False, "with one real gradient and one None, the variable without one moved."
        return True, "real gradients are applied, an all-None batch is skipped on purpose."

    return run_check("Exercise 6.1 (skip a batch with no gradient, on purpose)", function, check,
                     hint="Decide before the optimizer sees anything: if no variable has a "
                          "gradient, return False without a step. Otherwise hand the "
                          "optimizer only the variables that do have one.")
