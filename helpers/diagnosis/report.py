"""The gradient report: for every variable, is its gradient None, zero, non-finite or healthy?

``tape.gradient`` hands back a list that lines up with the variables you asked about. This
module turns that list into one row per variable, so the first question of every debugging
session ("which gradients are broken, and how?") has a one-line answer.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import keras
import numpy as np
import tensorflow as tf

from helpers.course import check_choice, code_html, escape, html_table, norm_text, status_html
from helpers.diagnosis.why_none import HINTS, why_none

Status = Literal["none", "zero", "nonfinite", "ok"]
STATUSES: tuple[Status, ...] = ("ok", "zero", "nonfinite", "none")


@dataclass(frozen=True)
class GradientRow:
    """One variable's gradient: where it is, its shape, its status and its global norm."""

    name: str
    shape: tuple[int | None, ...]
    status: Status
    norm: float | None  # None exactly when status == "none"; nan or inf when "nonfinite"
    hint: str = ""  # for a row that is not ok: the likely family of causes (05's chart)


class GradientReport(Sequence[GradientRow]):
    """The rows of a gradient report, in the order of the variables.

    Shows as a table in a notebook (HTML) and as plain text in a terminal; ``summary()``
    gives one line such as ``5 variables: 5 none``. Norms print with three significant
    digits; a norm below ``ROUNDOFF_FLOOR`` times the report's largest prints as ``~0`` (it is
    roundoff, and its digits differ from one processor to the next), exactly 0 as ``0``.
    """

    def __init__(self, rows: Sequence[GradientRow]):
        self._rows = tuple(rows)

    def __getitem__(self, index):  # type: ignore[override]
        return self._rows[index]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[GradientRow]:
        return iter(self._rows)

    @property
    def statuses(self) -> list[Status]:
        return [row.status for row in self._rows]

    @property
    def names(self) -> list[str]:
        return [row.name for row in self._rows]

    def counts(self) -> dict[Status, int]:
        """How many variables have each status (statuses that do not occur are left out)."""
        counter = Counter(self.statuses)
        return {status: counter[status] for status in STATUSES if counter[status]}

    def all(self, status: Status) -> bool:
        """True when every variable has this status."""
        _check_status(status)
        return len(self) > 0 and all(s == status for s in self.statuses)

    def any(self, status: Status) -> bool:
        """True when at least one variable has this status."""
        _check_status(status)
        return status in self.statuses

    def largest_norm(self) -> float | None:
        """The largest finite norm in the report (None if there is none)."""
        finite = [r.norm for r in self if r.norm is not None and math.isfinite(r.norm)]
        return max(finite) if finite else None

    def summary(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in self.counts().items())
        noun = "variable" if len(self) == 1 else "variables"
        return f"{len(self)} {noun}: {counts}" if counts else f"0 {noun}"

    @property
    def hints(self) -> list[str]:
        return [row.hint for row in self._rows]

    def to_text(self) -> str:
        header = ("variable", "shape", "status", "norm", "hint")
        largest = self.largest_norm()
        body = [
            (r.name, _shape_text(r.shape), r.status, norm_text(r.norm, largest), r.hint)
            for r in self
        ]
        columns = 5 if any(self.hints) else 4  # no hint column when every row is ok
        header, body = header[:columns], [row[:columns] for row in body]
        widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(columns)]
        lines = [
            "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip()
            for row in [header, *body]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.append(self.summary())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_text()

    def hint_lines(self) -> list[str]:
        """Each distinct hint once, saying which rows it is for (the HTML table says them
        under the table instead of on every row)."""
        lines = []
        for hint in dict.fromkeys(h for h in self.hints if h):
            rows = [r for r in self if r.hint == hint]
            statuses = {r.status for r in rows}
            which = (
                "every row"
                if len(rows) == len(self)
                else f"{rows[0].name} ({rows[0].status})"
                if len(rows) == 1
                else f"the {len(rows)} {statuses.pop()} rows"
                if len(statuses) == 1
                else f"the {len(rows)} rows that are not ok"
            )
            lines.append(f"Hint for {which}: {hint}")
        return lines

    def to_html(
        self, *, summary: bool = True, hint_column: bool | None = None, no_hint: str = ""
    ) -> str:
        """The table (``_repr_html_``). ``hint_column``: hints in a column (default: only when
        rows have different hints), else each said once under the table (``no_hint`` stands
        there when no row has one); ``summary``: the summary line under it."""
        largest = self.largest_norm()
        column = len(set(self.hints) - {""}) > 1 if hint_column is None else hint_column
        header = ["variable", "shape", "status", "gradient norm", *(["hint"] * column)]
        rows = [
            [
                code_html(r.name),
                escape(_shape_text(r.shape)),
                status_html(r.status, r.status),
                norm_text(r.norm, largest),
                *([escape(r.hint)] * column),
            ]
            for r in self
        ]
        below = [] if column else (self.hint_lines() or [no_hint] * bool(no_hint))
        return html_table(
            header,
            rows,
            align="lllr" + "l" * column,
            wrap=[4],
            below=[*below, *[self.summary()] * summary],
        )

    def _repr_html_(self) -> str:
        return self.to_html()


def gradient_report(
    grads: Sequence[Any], sources: Sequence[Any], names: Sequence[str] | None = None
) -> GradientReport:
    """One row per source: name, shape, status (none/zero/nonfinite/ok), gradient norm, and
    for a row that is not ok a short hint at the likely cause (05's decision chart).

    ``grads`` is what ``tape.gradient(loss, sources)`` returned for the same ``sources``
    (variables or tensors). ``names`` names the rows (tensors have no name of their own).
    Dense tensors and ``tf.IndexedSlices`` (from ``tf.gather`` or an ``Embedding``) are both
    understood; repeated indices in IndexedSlices are summed first, as the optimizer would.
    """
    grads = _as_list(grads, "grads")
    sources = _as_list(sources, "variables")
    if len(grads) != len(sources):
        raise ValueError(
            f"gradient_report got {len(grads)} gradients for {len(sources)} variables; "
            "expected one gradient per variable, in the same order "
            "(grads = tape.gradient(loss, variables))."
        )
    if names is not None:
        names = _as_list(names, "names")
        if len(names) != len(sources) or not all(isinstance(n, str) and n for n in names):
            raise ValueError(
                f"names must be {len(sources)} non-empty strings, one per source; got {names!r}."
            )
    rows = [
        _row(g, v, i, names[i] if names else None) for i, (g, v) in enumerate(zip(grads, sources))
    ]
    every_none = all(r.status == "none" for r in rows)
    return GradientReport(
        [replace(r, hint=_hint(r.status, v, every_none)) for r, v in zip(rows, sources)]
    )


def _hint(status: Status, source: Any, every_none: bool) -> str:
    """The likely family of causes of a row that is not ok (05's decision chart); why a
    gradient is None is decided by ``helpers.diagnosis.why_none``, for the probe too."""
    if status == "none":
        return HINTS[why_none(source, every_none=every_none)]
    return {
        "zero": "zeros: a dead ReLU, tf.sign, a NumPy py_function, a tf.cond in tf.function?",
        "nonfinite": "NaN/inf: log, sqrt or 1/x of 0, even in a tf.where branch?",
    }.get(status, "")


def _row(grad: Any, variable: Any, index: int, name: str | None = None) -> GradientRow:
    name = name or variable_name(variable, index)
    shape = _shape_of(variable)
    if grad is None:
        return GradientRow(name, shape, "none", None)
    values = _dense_values(grad, name)
    if not values.dtype.is_floating and not values.dtype.is_complex:
        raise TypeError(
            f"gradient for {name!r} has dtype {values.dtype.name}; expected a floating "
            "tensor, None, or tf.IndexedSlices."
        )
    values = tf.cast(tf.abs(values), tf.float64)
    finite = bool(tf.reduce_all(tf.math.is_finite(values)))
    if not finite:
        has_nan = bool(tf.reduce_any(tf.math.is_nan(values)))
        return GradientRow(name, shape, "nonfinite", math.nan if has_nan else math.inf)
    if bool(tf.reduce_all(values == 0.0)):  # every value, not a norm: 1e-200 squared is 0
        return GradientRow(name, shape, "zero", 0.0)
    largest = tf.reduce_max(values)  # scaled first, so the norm neither under- nor overflows
    return GradientRow(name, shape, "ok", float(largest) * float(tf.norm(values / largest)))


def _dense_values(grad: Any, name: str) -> tf.Tensor:
    if isinstance(grad, tf.IndexedSlices):
        # Sum rows that share an index, exactly like applying the gradient would.
        unique, position = tf.unique(grad.indices)
        return tf.math.unsorted_segment_sum(grad.values, position, tf.shape(unique)[0])
    try:
        return tf.convert_to_tensor(grad)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"gradient for {name!r} is a {type(grad).__name__}; expected a tensor, None, "
            "or tf.IndexedSlices as returned by tape.gradient."
        ) from error


def variable_name(variable: Any, index: int = 0) -> str:
    """A readable name: Keras 3 ``path`` (``gru_cell/kernel``), else ``name`` without ``:0``."""
    path = getattr(variable, "path", None)
    if isinstance(path, str) and path:
        return path
    name = getattr(variable, "name", None)
    if isinstance(name, str) and name:
        return name[:-2] if name.endswith(":0") else name
    return f"source_{index}"


def _shape_of(variable: Any) -> tuple[int | None, ...]:
    shape = getattr(variable, "shape", None)
    if shape is None:
        return ()
    return tuple(None if d is None else int(d) for d in shape)


def _as_list(items: Any, what: str) -> list[Any]:
    if isinstance(items, dict):
        raise TypeError(f"{what} is a dict; pass lists in matching order.")
    if (
        items is None
        or isinstance(items, (tf.Tensor, tf.Variable, np.ndarray))
        or hasattr(items, "assign")
    ):
        raise TypeError(
            f"{what} must be a list (one entry per variable), got {type(items).__name__}. "
            "Wrap a single variable in a list: tape.gradient(loss, [w])."
        )
    try:
        return list(items)
    except TypeError as error:
        raise TypeError(f"{what} must be a list, got {type(items).__name__}.") from error


def _check_status(status: str) -> None:
    check_choice(status, STATUSES, "status")


def _shape_text(shape: tuple[int | None, ...]) -> str:
    inner = ", ".join("?" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def gradients_of(
    tape: tf.GradientTape,
    loss: tf.Tensor,
    variables: list,
    unconnected_gradients: tf.UnconnectedGradients = tf.UnconnectedGradients.NONE,
) -> list[tf.Tensor | None]:
    """``tape.gradient(loss, variables, unconnected_gradients=...)`` that also works for Keras 3
    variables with ``UnconnectedGradients.ZERO``.

    Measured with TensorFlow 2.21 / Keras 3.15: asking for ZERO gradients of a Keras variable
    that the loss does not reach raises ``AttributeError: 'str' object has no attribute
    '_type_enum'`` (a Keras variable's ``dtype`` is a string, and the tape builds the zeros from
    it). The TensorFlow variable behind each Keras variable (``variable.value``) gives the same
    gradients and the zeros.
    """
    if unconnected_gradients == tf.UnconnectedGradients.ZERO:
        variables = [
            getattr(v, "value", v) if isinstance(v, keras.Variable) else v for v in variables
        ]
    return tape.gradient(loss, variables, unconnected_gradients=unconnected_gradients)


def max_abs_diff(a, b) -> float:
    """Largest absolute difference between two tensors, or two equal-length lists of them
    (two gradient lists, say). Print it with ``helpers.course.bound_text``."""
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise ValueError(f"got {len(a)} and {len(b)} tensors; expected lists of one length.")
        if not a:
            return 0.0
        return max(max_abs_diff(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        raise ValueError("cannot compare a None gradient; make every gradient non-None first.")
    a, b = tf.convert_to_tensor(a), tf.convert_to_tensor(b)
    wide = tf.complex128 if a.dtype.is_complex or b.dtype.is_complex else tf.float64
    return float(tf.reduce_max(tf.abs(tf.cast(a, wide) - tf.cast(b, wide))))


# ------------------------------------------------------------- what gradient does one op have


@dataclass(frozen=True)
class OpGradient:
    """What ``tape.gradient`` gives through one op: a ``status`` of the report's vocabulary
    (``"none"``, ``"zero"``, ``"ok"``), or, when asking raises, no status and the ``error``'s
    name with the last line of its ``message``. Printed: the status, or ``raises <error>``."""

    status: Status | None
    error: str = ""
    message: str = ""

    def __str__(self) -> str:
        return self.status if self.status is not None else f"raises {self.error}"


def op_gradient(
    op: Callable[[tf.Tensor], tf.Tensor], source: tf.Variable, traced: bool = False
) -> OpGradient:
    """Status of d sum(op(source)) / d source, eagerly or inside ``tf.function``: whether the
    op is registered as not differentiable (``none``), has a gradient that is zero
    everywhere (``zero``), a real one (``ok``), or no gradient registered at all (the error
    it raises, caught and named: that is what is being measured)."""
    if not callable(op):
        raise TypeError(f"op must be a function of one tensor; got {type(op).__name__}.")
    if not isinstance(source, tf.Variable):
        raise TypeError(
            f"source must be a tf.Variable (the tape watches it); got {type(source).__name__}."
        )

    def largest_gradient():
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(op(source))
        grad = tape.gradient(y, source)
        return tf.constant(-1.0) if grad is None else tf.reduce_max(tf.abs(grad))

    try:
        value = float(tf.function(largest_gradient)() if traced else largest_gradient())
    except Exception as error:  # which error it raises is the measurement
        return OpGradient(None, type(error).__name__, str(error).strip().splitlines()[-1].strip())
    return OpGradient("none" if value < 0 else "zero" if value == 0 else "ok")
