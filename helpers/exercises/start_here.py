"""Checkers for the exercises of 00_start_here."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from helpers.diagnosis import gradient_report
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import first_difference

STATUSES = ("none", "zero", "nonfinite", "ok")

# The float dtypes a gradient comes in (mixed precision gives float16 or bfloat16 ones), each
# with its smallest subnormal, smallest normal and largest finite value.
DTYPES = ("float16", "bfloat16", "float32", "float64")
SUBNORMAL = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149, "float64": 5e-324}
NORMAL = {"float16": 2.0**-14, "bfloat16": 2.0**-126, "float32": 2.0**-126, "float64": 2.0**-1022}
LARGEST = {
    "float16": 65504.0,
    "bfloat16": float(struct.unpack(">f", bytes.fromhex("7f7f0000"))[0]),
    "float32": float(np.finfo(np.float32).max),
    "float64": float(np.finfo(np.float64).max),
}
# A gradient whose only nonzero values are subnormal (below its dtype's smallest normal number)
# is called "zero" or "ok" alike: TensorFlow's CPU kernels read float32, float64 and bfloat16
# subnormals as 0 in most operations (a comparison with 0, a maximum, a sum: its flush-to-zero
# mode), NumPy does not, and float16 ones are computed in float32, where they are normal.


@dataclass(frozen=True)
class GradientCase:
    """One gradient as plain values: None, a dense tensor, or the ``tf.IndexedSlices`` an
    embedding or a gather gives (rows ``indices`` of a ``dense_shape`` tensor; a repeated
    index adds its rows), in ``dtype``. Its repr is the code that makes it."""

    kind: str  # "none", "dense" or "slices"
    shape: tuple[int, ...] = ()  # the dense shape
    values: tuple[float, ...] = ()  # dense: every value; slices: the rows, flattened
    indices: tuple[int, ...] = ()  # slices only
    dtype: str = "float32"  # values are exact in it

    def gradient(self):
        if self.kind == "none":
            return None
        dtype = tf.as_dtype(self.dtype)
        if self.kind == "dense":
            return tf.constant(self.values, dtype, shape=self.shape)
        rows = (len(self.indices), *self.shape[1:])
        return tf.IndexedSlices(
            tf.constant(self.values, dtype, shape=rows),
            tf.constant(self.indices, tf.int64),
            tf.constant(self.shape, tf.int64),
        )

    def subnormal_only(self) -> bool:
        """Every value finite, some not 0, and every one that is not 0 below the smallest
        normal number of the dtype: the gradient either status is accepted for."""
        if self.kind == "none":
            return False
        finite = all(math.isfinite(v) for v in self.values)
        nonzero = [abs(v) for v in self.values if v != 0]
        return finite and bool(nonzero) and max(nonzero) < NORMAL[self.dtype]

    def __repr__(self) -> str:
        if self.kind == "none":
            return "None"
        values = _values_code(self.values, self.dtype)
        dtype = "" if self.dtype == "float32" else f", dtype=tf.{self.dtype}"
        if self.kind == "dense":
            return f"tf.constant({values}, shape={self.shape}{dtype})"
        return (
            f"tf.IndexedSlices(values={values} (rows of {self.shape[1:]}{dtype}), "
            f"indices={list(self.indices)}, dense_shape={self.shape})"
        )


def _in_dtype(value: float, dtype: str) -> float:
    """``value`` rounded to ``dtype`` (to nearest, ties to even), as a Python float."""
    with np.errstate(over="ignore"):
        if dtype != "bfloat16":
            return float(np.array(value, dtype))
        bits = struct.unpack(">I", np.array(value, ">f4").tobytes())[0]
    if math.isnan(value):
        return value
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # bfloat16: float32's upper 16 bits
    return float(struct.unpack(">f", (bits << 16).to_bytes(4, "big"))[0])


def _number(value: float, dtype: str = "float32") -> str:
    """``value`` with the fewest significant digits that give it back in ``dtype``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    for digits in range(1, 17):
        text = f"{value:.{digits}g}"
        if _in_dtype(float(text), dtype) == value:
            return text
    return repr(value)


def _values_code(values: tuple[float, ...], dtype: str = "float32") -> str:
    return "[" + ", ".join(_number(v, dtype) for v in values) + "]"


def _dense(shape: tuple[int, ...], values: list[float], dtype: str = "float32") -> GradientCase:
    return GradientCase("dense", shape, tuple(values), dtype=dtype)


def _slices(
    shape: tuple[int, ...], indices: list[int], values: list[float], dtype: str = "float32"
) -> GradientCase:
    return GradientCase("slices", shape, tuple(values), tuple(indices), dtype)


def _bfloat16_values() -> st.SearchStrategy[float]:
    """Every bfloat16 value alike, from its 16 bits: both zeros, subnormals, normals up to the
    largest, both infinities and NaN."""
    return st.integers(0, 0xFFFF).map(
        lambda bits: float(struct.unpack(">f", (bits << 16).to_bytes(4, "big"))[0])
    )


# Each dtype's values over its whole range, subnormals included, zeros of both signs, NaN and
# both infinities, with the edges (its largest value, smallest normal and smallest subnormal)
# drawn often.
_VALUES = {
    dtype: st.one_of(
        st.sampled_from(
            [0.0, -0.0, LARGEST[dtype], -LARGEST[dtype], NORMAL[dtype], SUBNORMAL[dtype]]
            + [math.nan, math.inf, -math.inf]
        ),
        _bfloat16_values()
        if dtype == "bfloat16"
        else st.floats(
            width={"float16": 16, "float32": 32, "float64": 64}[dtype], allow_subnormal=True
        ),
    )  # fmt: skip
    for dtype in DTYPES
}


@st.composite
def _gradients(draw) -> GradientCase:
    kind = draw(st.sampled_from(["dense", "slices", "cancelling slices", "none"]))
    if kind == "none":
        return GradientCase("none")
    dtype = draw(st.sampled_from(DTYPES))
    values = _VALUES[dtype]
    if kind == "dense":
        shape = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
        size = math.prod(shape)
        return _dense(shape, draw(st.lists(values, min_size=size, max_size=size)), dtype)
    shape = (draw(st.integers(1, 4)), draw(st.integers(1, 3)))
    if kind == "slices":
        count = draw(st.integers(1, 4))
        indices = draw(st.lists(st.integers(0, shape[0] - 1), min_size=count, max_size=count))
        rows = draw(st.lists(values, min_size=count * shape[1], max_size=count * shape[1]))
        return _slices(shape, indices, rows, dtype)
    # rows that cancel: one row and its negative at the same index, so the dense gradient there
    # is exactly zero while no value of the slices is
    index = draw(st.integers(0, shape[0] - 1))
    row = draw(st.lists(values, min_size=shape[1], max_size=shape[1]))
    return _slices(shape, [index, index], row + [-v for v in row], dtype)


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

# Then the edges of every dtype's range, which a search of a few dozen gradients would not
# reach in each dtype: float64 values beyond float32 (1e-50 is 0 and 1e300 is inf there), then
# in each dtype its largest value twice (a sum or a norm overflows), of both signs, its smallest
# normal number, its smallest subnormal (either "zero" or "ok" accepted) and an exact zero.
BOUNDARIES: tuple[GradientCase, ...] = (
    _dense((2,), [1e-50, 0.0], "float64"),
    _dense((2,), [1e300, 0.0], "float64"),
    *(
        case
        for dtype in DTYPES
        for case in (
            _dense((2,), [LARGEST[dtype], LARGEST[dtype]], dtype),
            _dense((2,), [-LARGEST[dtype], 0.0], dtype),
            _dense((2,), [0.0, NORMAL[dtype]], dtype),
            _dense((2,), [-SUBNORMAL[dtype], 0.0], dtype),
            _dense((2,), [0.0, -0.0], dtype),
            _slices((2, 1), [1, 1], [LARGEST[dtype], -LARGEST[dtype]], dtype),
        )
    ),
)


def reference_status(gradient) -> str:
    """The status ``gradient_report`` gives one gradient: the reference answer."""
    if isinstance(gradient, tf.IndexedSlices):
        shape = tuple(int(n) for n in gradient.dense_shape)
    else:
        shape = tuple(getattr(gradient, "shape", ()))
    return gradient_report([gradient], [tf.Variable(tf.zeros(shape))]).statuses[0]


def _as_float32(case: GradientCase) -> GradientCase:
    """``case`` with its values rounded to float32 (what a cast to float32 leaves of them)."""
    return GradientCase(
        case.kind, case.shape, tuple(_in_dtype(v, "float32") for v in case.values), case.indices
    )


def _why_not(case: GradientCase, got: str, expected: str) -> str:
    """What the answer's status says about how it read the gradient, when that is clear."""
    if case.dtype != "float32" and got == reference_status(_as_float32(case).gradient()):
        return (
            f" That is the status of these values rounded to float32, where numbers below "
            f"about 1e-45 become 0 and above 3.4e38 become inf: read a {case.dtype} gradient "
            "in its own dtype."
        )
    if got == "ok" and expected == "nonfinite":
        return (
            " A value here is NaN or infinite, and it counts wherever it sits: Python's max "
            "and min skip a NaN that does not come first, a norm of finite values is finite."
        )
    if got == "nonfinite":
        return " Every value here is finite: a sum or a norm of them overflows, the values do not."
    if got == "zero" and expected == "ok":
        return (
            " A value here is not 0: a sum can cancel, a norm or a square can round to 0, and "
            "the maximum of values at or below 0 is 0."
        )
    return ""


def _tried_text(tried: list[GradientCase]) -> str:
    """What the checker tried, counted: gradients by dtype and kind."""
    counts = {dtype: 0 for dtype in DTYPES}
    kinds = {"dense": 0, "slices": 0, "none": 0}
    for case in tried:
        kinds[case.kind] += 1
        if case.kind != "none":
            counts[case.dtype] += 1
    by_dtype = ", ".join(f"{counts[d]} {d}" for d in DTYPES)
    return (
        f"{len(tried)} gradients ({by_dtype}; {kinds['dense']} dense, {kinds['slices']} "
        f"IndexedSlices, {kinds['none']} None)"
    )


def check_gradient_status(function) -> CheckResult:
    """``function(gradient)`` must return the status ``gradient_report`` gives one gradient:
    ``"none"`` (no gradient), ``"zero"`` (every value exactly 0), ``"nonfinite"`` (a NaN or
    an infinity of either sign anywhere) or ``"ok"``.

    The domain is every gradient ``tape.gradient`` can return: None, dense tensors of any
    shape and IndexedSlices (repeated indices add up), in float16, bfloat16, float32 and
    float64, each over its whole range: from its smallest subnormal to its largest value, both
    zeros, NaN and both infinities. Compared with the report on the traps above, then on the
    edges of each dtype's range (``BOUNDARIES``), then on 60 generated gradients (a difference
    is shrunk to the smallest gradient that shows it). A gradient whose only nonzero values are
    subnormal may be called "zero" or "ok": TensorFlow's kernels read most of those as 0 (the
    report says "zero" for float32, float64 and bfloat16 ones), NumPy does not."""

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
            if got != expected and not (case.subnormal_only() and got in ("zero", "ok")):
                return (
                    f"For the gradient {case!r} you returned {got!r}; the reference (the "
                    f"gradient report's status) gives {expected!r}.{_why_not(case, got, expected)}"
                )
            return None

        tried: list[GradientCase] = []
        difference = first_difference(
            _GRADIENTS, differs, traps=TRAPS, boundaries=BOUNDARIES, examples=60, runs=200,
            tried=tried,
        )  # fmt: skip
        if difference is not None:
            return False, difference.message
        generated = len(tried) - len(TRAPS) - len(BOUNDARIES)
        subnormal = sum(case.subnormal_only() for case in tried)
        return True, (
            f"The gradient report's status on all {_tried_text(tried)}: {len(TRAPS)} known "
            f"traps, {len(BOUNDARIES)} edges of the four dtypes' ranges (largest, smallest "
            f"normal and smallest subnormal values, zeros) and {generated} generated over "
            f"each dtype's whole range. On the {subnormal} whose only nonzero values were "
            "subnormal, zero and ok were both accepted."
        )

    return run_check(
        "Exercise 0.1 (the status of one gradient)",
        function,
        check,
        hint="There are four answers. Look at every value, in the gradient's own dtype: a "
        "sum overflows or cancels, a norm rounds a tiny gradient to 0 and overflows a huge "
        "one, and a cast to float32 does both to a float64 gradient. TensorFlow's maximum of "
        "the absolute values is fine (it passes NaN on); Python's max skips a NaN, and a "
        "maximum of the values themselves misses negative ones. A gradient is zero only when "
        "every value equals 0 (a NaN does not), and non-finite when any value is NaN or an "
        "infinity of either sign. A gradient of an embedding comes as IndexedSlices, whose "
        "rows add up where an index repeats: make it a tensor first.",
    )
