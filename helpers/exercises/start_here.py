"""Checkers for the exercises of 00_start_here."""

from __future__ import annotations

import math
from dataclasses import dataclass

import tensorflow as tf
from hypothesis import strategies as st

from helpers.diagnosis import gradient_report
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import first_difference

STATUSES = ("none", "zero", "nonfinite", "ok")


@dataclass(frozen=True)
class GradientCase:
    """One gradient as plain values: None, a dense tensor, or the ``tf.IndexedSlices`` an
    embedding or a gather gives (rows ``indices`` of a ``dense_shape`` tensor; a repeated
    index adds its rows). Its repr is the code that makes it."""

    kind: str  # "none", "dense" or "slices"
    shape: tuple[int, ...] = ()  # the dense shape
    values: tuple[float, ...] = ()  # dense: every value; slices: the rows, flattened
    indices: tuple[int, ...] = ()  # slices only

    def gradient(self):
        if self.kind == "none":
            return None
        if self.kind == "dense":
            return tf.constant(self.values, tf.float32, shape=self.shape)
        rows = (len(self.indices), *self.shape[1:])
        return tf.IndexedSlices(
            tf.constant(self.values, tf.float32, shape=rows),
            tf.constant(self.indices, tf.int64),
            tf.constant(self.shape, tf.int64),
        )

    def __repr__(self) -> str:
        if self.kind == "none":
            return "None"
        values = _values_code(self.values)
        if self.kind == "dense":
            return f"tf.constant({values}, shape={self.shape})"
        return (
            f"tf.IndexedSlices(values={values} (rows of {self.shape[1:]}), "
            f"indices={list(self.indices)}, dense_shape={self.shape})"
        )


def _number(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.9g}"


def _values_code(values: tuple[float, ...]) -> str:
    return "[" + ", ".join(_number(v) for v in values) + "]"


def _dense(shape: tuple[int, ...], values: list[float]) -> GradientCase:
    return GradientCase("dense", shape, tuple(values))


def _slices(shape: tuple[int, ...], indices: list[int], values: list[float]) -> GradientCase:
    return GradientCase("slices", shape, tuple(values), tuple(indices))


# float32 values from the largest finite to the smallest normal, both signs, zeros of both
# signs, NaN and both infinities. No subnormals: TensorFlow's CPU kernels flush them to zero,
# so TensorFlow itself (and the reference) calls a subnormal gradient zero, and an optimizer
# step with it moves nothing.
_VALUES = st.one_of(
    st.sampled_from([0.0, -0.0, 3e38, -3e38, 1e-37, math.nan, math.inf, -math.inf]),
    st.floats(width=32, allow_subnormal=False),
)


@st.composite
def _gradients(draw) -> GradientCase:
    kind = draw(st.sampled_from(["dense", "slices", "cancelling slices", "none"]))
    if kind == "none":
        return GradientCase("none")
    if kind == "dense":
        shape = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
        size = math.prod(shape)
        return _dense(shape, draw(st.lists(_VALUES, min_size=size, max_size=size)))
    shape = (draw(st.integers(1, 4)), draw(st.integers(1, 3)))
    if kind == "slices":
        count = draw(st.integers(1, 4))
        indices = draw(st.lists(st.integers(0, shape[0] - 1), min_size=count, max_size=count))
        values = draw(st.lists(_VALUES, min_size=count * shape[1], max_size=count * shape[1]))
        return _slices(shape, indices, values)
    # rows that cancel: one row and its negative at the same index, so the dense gradient there
    # is exactly zero while no value of the slices is
    index = draw(st.integers(0, shape[0] - 1))
    row = draw(st.lists(_VALUES, min_size=shape[1], max_size=shape[1]))
    return _slices(shape, [index, index], row + [-v for v in row])


_GRADIENTS = _gradients()

# Tried first: the inputs a first answer tends to get wrong. An infinity of either sign (a
# NaN-only test misses it), a NaN among zeros (not "zero"), values of either sign (a maximum of
# 0 is not all zeros), a tiny healthy gradient and huge finite ones (a float32 norm rounds the
# first to 0 and overflows the others; a sum overflows too), values that cancel in a sum, and
# IndexedSlices whose values are not what the dense gradient holds.
TRAPS: tuple[GradientCase, ...] = (
    GradientCase("none"),
    _dense((3, 2), [0.0] * 6),
    _dense((2,), [0.5, -0.25]),
    _dense((2,), [0.0, -1.0]),
    _dense((3,), [0.0, 1e-12, 0.0]),
    _dense((2,), [1e-25, 0.0]),
    _dense((2,), [1e20, 1e20]),
    _dense((2,), [3e38, 3e38]),
    _dense((2,), [3e38, -3e38]),
    _dense((2,), [1.0, -1.0]),
    _dense((2,), [1.0, math.nan]),
    _dense((3,), [0.0, math.nan, 0.0]),
    _dense((2,), [2.0, math.inf]),
    _dense((2, 1), [-math.inf, 1.0]),
    _slices((3, 2), [1], [0.5, 0.0]),
    _slices((3, 2), [0, 2], [0.0] * 4),
    _slices((3, 2), [1, 1], [0.5, 0.25, -0.5, -0.25]),
)


def reference_status(gradient) -> str:
    """The status ``gradient_report`` gives one gradient: the reference answer."""
    if isinstance(gradient, tf.IndexedSlices):
        shape = tuple(int(n) for n in gradient.dense_shape)
    else:
        shape = tuple(getattr(gradient, "shape", ()))
    return gradient_report([gradient], [tf.Variable(tf.zeros(shape))]).statuses[0]


def check_gradient_status(function) -> CheckResult:
    """``function(gradient)`` must return the status ``gradient_report`` gives one gradient:
    ``"none"`` (no gradient), ``"zero"`` (every value exactly 0), ``"nonfinite"`` (a NaN or
    an infinity of either sign anywhere) or ``"ok"``. Compared with the report on the traps
    above and on generated gradients: dense of any shape and IndexedSlices, with values from
    the smallest normal to the largest finite float32, NaN and both infinities."""

    def check(fn):
        def differs(case: GradientCase) -> str | None:
            expected = reference_status(case.gradient())
            try:
                got = fn(case.gradient())
            except Exception as error:
                return f"For the gradient {case!r} your code raised {type(error).__name__}: {error}"
            if got not in STATUSES:
                return (
                    f"For the gradient {case!r} you returned {got!r}; expected one of "
                    f"{', '.join(map(repr, STATUSES))} (the reference gives {expected!r})."
                )
            if got != expected:
                return (
                    f"For the gradient {case!r} you returned {got!r}; the reference (the "
                    f"gradient report's status) gives {expected!r}."
                )
            return None

        difference = first_difference(_GRADIENTS, differs, traps=TRAPS, examples=60, runs=200)
        if difference is not None:
            return False, difference.message
        return True, (
            "The same status as the gradient report on every gradient tried: None, zero, NaN "
            "and both infinities told apart, tiny, huge and sparse gradients read right."
        )

    return run_check(
        "Exercise 0.1 (the status of one gradient)",
        function,
        check,
        hint="There are four answers. Look at every value, not at a sum, a maximum or a "
        "norm: a norm in float32 rounds a tiny gradient to 0 and overflows a huge one to "
        "infinity, and a sum overflows or cancels. A gradient is zero only when every value "
        "equals 0 (a NaN does not), and non-finite when any value is NaN or an infinity of "
        "either sign. A gradient of an embedding comes as IndexedSlices, whose rows add up "
        "where an index repeats: make it a tensor first.",
    )
