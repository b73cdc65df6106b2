"""The core of ``GradientProbe.locate``: ask the tapes, give each None source a cause, and
find every cut between two marks.

Every gradient is asked for once (``Gradients`` caches them): a ``tf.py_function``'s
gradient can be computed only once, and the first question, d loss / d sources, is the one
the verdict must get right. A later question that runs into a spent ``py_function`` is
answered "connected, values unknown" rather than crashing.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.diagnosis.probe.location import (
    Location,
    LossStatus,
    MarkResult,
    break_lines,
    notes,
    some,
)
from helpers.diagnosis.probe.marks import (
    LOSS,
    NO_GRADIENT_KINDS,
    VARIABLES,
    Mark,
    _creation_order,
    a_or_an,
    error_text,
    is_plain_tensor,
    watchable,
)
from helpers.diagnosis.report import variable_name
from helpers.diagnosis.why_none import Cause, is_variable, why_none

SPENT = "spent py_function"  # a gradient that ran into a tf.py_function already used


class Gradients:
    """``tape.gradient`` asked once per (tape, target, source); an op without a usable
    gradient becomes a message, not a crash."""

    def __init__(self):
        self._cache: dict[tuple[int, int, int], tuple[Any, str]] = {}
        self._keep: list[Any] = []  # keeps the keys' objects alive, so ids stay unique

    def of(
        self, tape: tf.GradientTape, target: Any, sources: Sequence[Any]
    ) -> tuple[list[Any], str]:
        keys = [(id(tape), id(target), id(watchable(s))) for s in sources]
        missing = [s for s, k in zip(sources, keys) if k not in self._cache]
        if missing:
            self._keep += [tape, target, *missing]
            try:
                grads, error = list(tape.gradient(target, [watchable(s) for s in missing])), ""
            except (LookupError, tf.errors.InvalidArgumentError, tf.errors.UnknownError) as e:
                spent = "KeyError" in str(e) and "pyfunc" in str(e)
                grads, error = [None] * len(missing), SPENT if spent else error_text(e)
            for s, g in zip(missing, grads):
                self._cache[(id(tape), id(target), id(watchable(s)))] = (g, error)
        answers = [self._cache[k] for k in keys]
        return [g for g, _ in answers], next((e for _, e in answers if e), "")


class Locator:
    """One ``locate`` call on a probe's recording."""

    def __init__(
        self,
        tape: tf.GradientTape,
        marks: list[Mark],
        watched: set[Any],
        exits: list[tuple[str, Any, int]],
        eager: bool,
        gradients: Gradients,
    ):
        self.tape, self.marks, self.watched = tape, marks, watched
        self.exits, self.eager, self.grads = exits, eager, gradients
        self.once: list[str] = []
        self.done: list[MarkResult] = []  # the marks' results so far, in order
        self.main_error = ""  # d loss / d sources raised: a spent py_function is the break

    def run(
        self, loss: Any, sources: list[Any], names: list[str], loss_note: str, usable: bool
    ) -> tuple[Location, list[Any], str]:
        grads, error = (
            self.grads.of(self.tape, loss, sources) if usable else ([None] * len(sources), "")
        )
        reached = [g is not None for g in grads]
        self.main_error = error if usable else ""
        self.done = []
        for m in self.marks:
            self.done.append(self.mark_result(m, loss if usable else None, sources, names))
        results = self.done
        causes = {n: self.cause(s) for n, s, r in zip(names, sources, reached) if not r}
        exits = self.exit_labels(sources, names, causes, results)
        breaks, details, groups = self.breaks(results, causes, loss_note, exits)
        tensors = {n for n, s in zip(names, sources) if is_plain_tensor(s)}
        starts = {
            pair: some(group)
            for pair, group in groups.items()  # by name, by position
            if pair[0] == VARIABLES and set(group) <= tensors
        }
        if error:
            loss_note = loss_note or f"tape.gradient(loss, sources) itself raises {error}."
        found = notes(results, names, reached, causes, loss_note, breaks, not self.eager, self.once)
        return (
            Location(
                tuple(results),
                tuple(names),
                tuple(reached),
                breaks,
                causes,
                found,
                details,
                loss_note,
                traced=not self.eager,
                starts=starts,
            ),
            grads,
            error,
        )

    def breaks(
        self,
        results: list[MarkResult],
        causes: dict[str, Cause],
        loss_note: str,
        exits: dict[str, str],
    ) -> tuple[
        list[tuple[str, str]], dict[tuple[str, str], list[str]], dict[tuple[str, str], list[str]]
    ]:
        """Every cut between two points, in forward order, with what explains it."""
        floats = [i for i, r in enumerate(results) if r.kind not in NO_GRADIENT_KINDS]
        groups: dict[tuple[str, str], list[str]] = {}
        for source, cause in causes.items():
            if cause == "untrainable":
                continue  # its None is by design, not a break in the path
            reached = (
                [
                    i
                    for i in floats
                    if source in results[i].variables and not results[i].loss_reaches
                ]
                if cause == "cut"
                else []
            )
            if source in exits and not reached:  # it left TensorFlow before any mark
                key = (VARIABLES, exits[source])
            elif not reached:  # it reaches no mark: the path breaks before its layer's mark
                on_path = [
                    i for i in floats if results[i].loss_reaches and results[i].variables
                ]  # or else before the first on the path
                down = (
                    _owners(source, results, floats)
                    or on_path
                    or [i for i in floats if results[i].loss_reaches]
                )
                key = (VARIABLES, results[down[0]].name if down else LOSS)
            else:  # from the last mark it reaches, to the first later mark not fed by it
                start = reached[-1]
                end = next(
                    (
                        j
                        for j in floats
                        if j > start and not self.feeds(start, j) and not self.feeds(j, start)
                    ),
                    None,
                )  # (j: marked late?)
                key = (results[start].name, LOSS if end is None else results[end].name)
            groups.setdefault(key, []).append(source)
        points = [VARIABLES, *(m.name for m in self.marks), *exits.values(), LOSS]
        order = {name: points.index(name) for name in points}  # a mark before its exit label
        pairs = sorted(groups, key=lambda pair: (order[pair[0]], order[pair[1]]))
        return (
            pairs,
            {b: break_lines(b, groups[b], causes, results, loss_note, exits) for b in pairs},
            groups,
        )

    def feeds(self, i: int, j: int) -> bool:
        """d mark_j / d mark_i is not None (a spent py_function between them: it does)."""
        grad, error = self.mark_gradient(self.marks[j].value, self.marks[i])
        return grad is not None or (error == SPENT and not self.main_error)

    def mark_gradient(self, target: Any, m: Mark) -> tuple[Any, str]:
        """d target / d mark, from the mark's own tape; the main tape if that sees no path
        (a tensor marked after it was used)."""
        grads, error = self.grads.of(m.tape, target, [m.value])
        if error or grads[0] is not None:
            return grads[0], error
        return self.grads.of(self.tape, target, [m.value])[0][0], ""

    def cause(self, source: Any) -> Cause:
        seen = watchable(source).ref() in self.watched or (
            not is_plain_tensor(source)
            and any(watchable(source) is w for w in self.tape.watched_variables())
        )
        return why_none(source, watched=seen)

    def exit_labels(
        self,
        sources: list[Any],
        names: list[str],
        causes: dict[str, Cause],
        results: list[MarkResult],
    ) -> dict[str, str]:
        """For each cut source that reaches a value converted to a Python / NumPy number
        inside the block, after the last mark it reaches, the first such conversion (or the
        Python / NumPy mark made right after it). Not when tape.gradient itself raised."""
        found: dict[str, str] = {}
        floats = [i for i, r in enumerate(results) if r.kind not in NO_GRADIENT_KINDS]
        last = {
            n: max([i for i in floats if n in results[i].variables], default=-1) for n in names
        }  # a conversion before it is a side read, not the cut
        for number, (label, tensor, position) in enumerate(self.exits, 1):
            todo = [
                (n, s)
                for n, s in zip(names, sources)
                if causes.get(n) == "cut"
                and n not in found
                and position > last[n]
                and not self.main_error
            ]
            if not todo:
                continue
            if is_variable(tensor):  # float(variable): the variable itself left
                grads = [True if watchable(s) is watchable(tensor) else None for _, s in todo]
            else:
                grads = self.grads.of(self.tape, tensor, [s for _, s in todo])[0]
            after = [
                r.name for r in results[position : position + 1] if r.kind in ("python", "numpy")
            ]
            for (n, _), g in zip(todo, grads):
                if g is not None:
                    found[n] = after[0] if after else f"{label} (conversion {number})"
        return found

    def mark_result(self, m: Mark, loss: Any, sources: list[Any], names: list[str]) -> MarkResult:
        if m.kind in NO_GRADIENT_KINDS:
            return MarkResult(m.name, m.kind, m.dtype, False, "none", (), m.note)
        status: LossStatus | None = "none"
        errors = []
        if loss is not None:
            grad, error = self.mark_gradient(loss, m)
            if error == SPENT and self.main_error:  # the op that raised lies after it
                status, errors = "error", [self.main_error]
            elif error == SPENT:
                status = None
                self.once.append(m.name)
            elif error:
                status, errors = "error", [error]
            elif grad is not None:
                status = _status(grad) if self.eager else None
        if m.kind == "variable":
            reached = tuple(n for n, s in zip(names, sources) if watchable(s) is watchable(m.value))
        else:
            grads, error = self.grads.of(self.tape, m.value, sources)
            if error == SPENT:  # what feeds it through the py_function: earlier marks' sources
                index = self.marks.index(m)
                grads = [
                    True if any(n in r.variables for r in self.earlier(index)) else None
                    for n in names
                ]
            elif error:
                errors.append(error)
            reached = tuple(n for n, g in zip(names, grads) if g is not None)
        loss_reaches = status not in ("none", "error") if m.name not in self.once else True
        return MarkResult(
            m.name, m.kind, m.dtype, loss_reaches, status, reached, m.note, tuple(errors)
        )

    def earlier(self, index: int) -> list[MarkResult]:
        """The results of the marks before ``index`` that feed it (already computed)."""
        return [r for i, r in enumerate(self.done) if i < index and self.feeds(i, index)]


def aside(eager: bool, question: Callable[[], Any]) -> Any:
    """``question()`` now when eager; inside a trace, in a graph of its own that never runs.
    Only None-or-not is needed there, and the probe's gradient ops must not run with the
    step: a tf.py_function's gradient would run twice, and fail the second time."""
    if eager:
        return question()
    found: list[Any] = []
    tf.function(lambda: found.append(question()), autograph=False).get_concrete_function()
    return found[0]


def source_names(marks: list[Mark], sources: list[Any], names: Sequence[str] | None) -> list[str]:
    """The names given, else a variable's path, a marked tensor's mark, or ``source_<i>``."""
    if names is not None:
        names = list(names)
        if len(names) != len(sources) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"names must be {len(sources)} strings, one per source.")
        return names
    marked = {m.value.ref(): m.name for m in marks if is_plain_tensor(m.value)}
    return [
        marked.get(s.ref(), f"source_{i}") if is_plain_tensor(s) else variable_name(s, i)
        for i, s in enumerate(sources)
    ]


def _owners(source: str, results: list[MarkResult], floats: list[int]) -> list[int]:
    """The marks named like the layer that owns the variable ``source`` (``model/dense`` for
    ``dense/kernel`` or ``model/dense/kernel``), as ``mark_layers`` names them."""
    layer = source.rpartition("/")[0]
    return [
        i
        for i in floats
        if layer and (results[i].name == layer or results[i].name.endswith("/" + layer))
    ]


def loss_note(loss: Any, eager: bool, span: Sequence[int | None]) -> str:
    """Why no gradient can reach ``loss`` at all ("" when it is a float tensor made inside
    the block); a TypeError for what is no loss."""
    if loss is None:
        raise TypeError(
            "loss is None; expected the loss tensor computed inside the "
            "`with GradientProbe() as probe:` block."
        )
    if isinstance(loss, (tf.Variable, keras.Variable)):
        raise TypeError("loss is a variable; expected the loss tensor computed from it.")
    if isinstance(loss, (np.ndarray, np.generic)):
        return (
            f"The loss is a NumPy {np.asarray(loss).dtype.name}, not a tensor: it was "
            "computed outside TensorFlow, so no gradient can reach it."
        )
    if isinstance(loss, numbers.Number):
        return (
            f"The loss is a Python {type(loss).__name__}, not a tensor: it was "
            "computed outside TensorFlow (float(), .item()?)."
        )
    if not tf.is_tensor(loss) or isinstance(loss, keras.KerasTensor):
        raise TypeError(f"loss must be a tensor, got {type(loss).__name__}.")
    if not (loss.dtype.is_floating or loss.dtype.is_complex):
        return f"The loss is {a_or_an(loss.dtype.name)} tensor: integers carry no gradient."
    made = _creation_order(loss) if eager else None
    begun, ended = span
    if made is not None and ended is not None and made > ended:
        return (
            "The loss was computed after the `with` block ended, when the tape had "
            "stopped recording: compute it inside the block."
        )
    if made is not None and begun is not None and made < begun:
        return (
            "The loss was computed before the `with` block began, when the tape was "
            "not recording yet: compute it inside the block."
        )
    return ""


def _status(grad: Any) -> LossStatus:
    values = tf.abs(grad.values if isinstance(grad, tf.IndexedSlices) else grad)
    if not bool(tf.reduce_all(tf.math.is_finite(values))):
        return "nonfinite"
    return "zero" if float(tf.reduce_max(values)) == 0.0 else "ok"
