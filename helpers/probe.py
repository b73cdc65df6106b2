"""Find the place where the gradient path breaks.

``tape.gradient`` says *that* a gradient is None; it does not say *where* the computation
left the tape's view. ``GradientProbe`` answers the second question. Use it exactly like a
``tf.GradientTape``, and mark a few points of the forward pass on the way::

    with GradientProbe() as probe:
        frames = probe.mark("frames", model(noisy))
        audio = probe.mark("audio", overlap_add(frames))
        loss = probe.mark("loss_input", tf.abs(audio - clean))
        loss = tf.reduce_mean(loss)
    probe.locate(loss, model.trainable_weights)

``mark(name, value)`` returns ``value`` unchanged, so it can wrap an expression inline.
``locate`` then asks two questions about every mark: does the loss reach it
(``d loss / d mark`` is not None) and which variables reach it (``d mark / d variable`` is
not None). Marks are listed in the order they were made; a later mark found to feed an
earlier one is moved before it (and the result says so). The gradient path is broken
between the last mark the variables reach but the loss does not, and the first mark after
it that the loss reaches: ``broken_between`` names both. Two pseudo-marks close the path at
either end: ``VARIABLES`` (where the variables are read) and ``LOSS`` (the loss itself).

Marks that cannot carry a gradient at all are recorded and named in the verdict instead of
being watched: NumPy arrays and Python numbers (already outside TensorFlow), integer, bool
and string tensors (no gradient through integers), and variables (the tape sees reads of a
variable, never how its value was produced by ``assign``).

The probe wraps one persistent ``tf.GradientTape``: ``probe.gradient``, ``probe.report``
and ``probe.tape`` give the gradients themselves, so no second tape is needed.

**Eager mode** is where the probe is meant to be used. **Inside ``tf.function``** it works
only when the whole ``with`` block, the marks and ``locate`` run in the *same* trace: then
the verdict is made while the function is traced (whether a gradient is None is known
before any value exists), but the zero / NaN status of a gradient is not, and the result is
a Python object you can print or keep, not return from the function. Marking a tensor inside
a ``tf.function`` called from an eager probe raises ``ProbeError``: mark the function's inputs
and outputs instead, or run it eagerly while you debug
(``tf.config.run_functions_eagerly(True)``).
"""

from __future__ import annotations

import contextlib
import html
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import keras
import numpy as np
import tensorflow as tf

from helpers.gradients import GradientReport, gradient_report, variable_name

VARIABLES = "(variables)"
LOSS = "(loss)"

Kind = Literal["float", "integer", "variable", "numpy", "python"]
LossStatus = Literal["ok", "zero", "nonfinite", "none", "error"]

_DISCONNECTED_KINDS = ("integer", "numpy", "python")

# The probe's own code runs on Python values only; AutoGraph converting it inside a
# tf.function would only cost time (seconds per trace).
_not_converted = tf.autograph.experimental.do_not_convert


class ProbeError(RuntimeError):
    """The probe was used in a way it cannot answer (outside its ``with`` block, across a
    ``tf.function`` boundary, twice)."""

    # AutoGraph re-raises an error from traced code as its own type only when that type
    # takes a plain message like Exception does; otherwise it becomes a StagingError.
    __init__ = Exception.__init__


@dataclass(frozen=True)
class MarkResult:
    """What ``locate`` found out about one mark.

    ``loss_reaches``: d loss / d mark is not None. ``loss_gradient``: its status, one of
    ``ok``, ``zero``, ``nonfinite``, ``none``, ``error`` (computing it raised; see
    ``errors``), or None when it could not be measured (inside ``tf.function`` values are
    not known while tracing). ``variables``: names of the variables that reach the mark.
    ``note``: why a NumPy, Python, integer or variable mark cannot pass a gradient.
    """

    name: str
    kind: Kind
    dtype: str
    loss_reaches: bool
    loss_gradient: LossStatus | None
    variables: tuple[str, ...]
    note: str = ""
    errors: tuple[str, ...] = ()

    @property
    def variables_reach(self) -> bool:
        return bool(self.variables)

    def kind_text(self) -> str:
        return {
            "float": self.dtype,
            "integer": self.dtype,
            "variable": f"Variable {self.dtype}",
            "numpy": f"NumPy {self.dtype}",
            "python": f"Python {self.dtype}",
        }[self.kind]


class Location:
    """The verdict of ``GradientProbe.locate``: where the gradient path breaks, if it does.

    ``broken_between`` is ``(last mark the variables reach that the loss does not, first
    mark after it that the loss reaches)`` or None when the path is intact. Either end can
    be a pseudo-mark: ``VARIABLES`` when the variables reach no mark, ``LOSS`` when the loss
    reaches no mark after the break. ``location["name"]`` gives one mark's ``MarkResult``.
    """

    def __init__(self, marks: Sequence[MarkResult], variable_names: Sequence[str],
                 loss_reaches_variables: Sequence[bool], *, loss_note: str = "",
                 untrainable: Sequence[str] = (), order_note: str = "",
                 traced: bool = False):
        self.marks: tuple[MarkResult, ...] = tuple(marks)
        self.variable_names: tuple[str, ...] = tuple(variable_names)
        self.loss_reaches_variables: tuple[bool, ...] = tuple(loss_reaches_variables)
        self.loss_note = loss_note
        self.untrainable = tuple(untrainable)
        self.order_note = order_note
        self.traced = traced
        self.broken_between: tuple[str, str] | None = self._find_break()

    # -- the verdict ---------------------------------------------------------------------
    def _points(self) -> list[tuple[str, bool, bool]]:
        """(name, variables reach it, loss reaches it) along the path, ends included."""
        any_variable = any(self.loss_reaches_variables)
        return ([(VARIABLES, True, any_variable)]
                + [(m.name, m.variables_reach, m.loss_reaches) for m in self.marks]
                + [(LOSS, any_variable, True)])

    def _find_break(self) -> tuple[str, str] | None:
        points = self._points()
        cut = [i for i, (_, from_variables, from_loss) in enumerate(points)
               if from_variables and not from_loss]
        if not cut:
            return None
        last = cut[-1]
        first_after = next(i for i in range(last + 1, len(points)) if points[i][2])
        return points[last][0], points[first_after][0]

    @property
    def intact(self) -> bool:
        return self.broken_between is None

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.marks]

    def __getitem__(self, name: str) -> MarkResult:
        for mark in self.marks:
            if mark.name == name:
                return mark
        raise KeyError(f"no mark named {name!r}; the marks are {self.names}.")

    def unreached_variables(self) -> list[str]:
        """Variables whose gradient (d loss / d variable) is None."""
        return [n for n, r in zip(self.variable_names, self.loss_reaches_variables) if not r]

    # -- the explanation -----------------------------------------------------------------
    def explanation(self) -> str:
        """A few sentences: the verdict, what lies between the two marks, what to check."""
        lines: list[str] = []
        if self.broken_between is None:
            if self.marks:
                lines.append("Gradient path intact: the loss reaches every mark the "
                             "variables reach.")
            else:
                lines.append("Gradient path intact (no marks were made).")
        else:
            lines.extend(self._break_lines(*self.broken_between))
        lines.extend(self._notes())
        return "\n".join(lines)

    def _break_lines(self, start: str, end: str) -> list[str]:
        lines = [f"Gradient path broken between {_point(start)} and {_point(end)}."]
        if start == VARIABLES:
            lines.append("  The variables reach none of the marks"
                         + (f" up to {end!r}." if end != LOSS else "."))
        else:
            lines.append(f"  The variables reach {start!r}; the loss does not.")
        if end == LOSS:
            lines.append("  The loss reaches none of the marks"
                         + (f" after {start!r}." if start != VARIABLES else "."))
        else:
            lines.append(f"  The loss reaches {end!r}; the variables do not.")
        names = [VARIABLES, *self.names, LOSS]
        first = max(names.index(start) - 1, 0)
        shown: list[str] = []
        for mark in self.marks[first:names.index(end)]:
            if mark.note:
                lines.append(f"  {mark.name!r} is {mark.note}")
            for error in mark.errors:
                if error not in shown:
                    shown.append(error)
                    kind, _, message = error.partition(": ")
                    lines.append(f"  An op between these marks has no usable gradient: "
                                 f"tape.gradient raises {kind} ({message}).")
        if end == LOSS and self.loss_note:
            lines.append(f"  {self.loss_note}")
        lines.append(f"Look at the code between {_place(start)} and {_place(end)}.")
        return lines

    def _notes(self) -> list[str]:
        notes: list[str] = []
        if self.broken_between is None or self.broken_between[1] != LOSS:
            if self.loss_note:
                notes.append(f"Note: {self.loss_note}")
        zero = [m.name for m in self.marks if m.loss_gradient == "zero"]
        if zero:
            notes.append(f"Note: the loss reaches {_names(zero)}, but its gradient there is "
                         "all zeros.")
        nonfinite = [m.name for m in self.marks if m.loss_gradient == "nonfinite"]
        if nonfinite:
            notes.append(f"Note: the loss gradient at {_names(nonfinite)} is NaN or inf.")
        frozen = [n for n in self.unreached_variables() if n in self.untrainable]
        if frozen:
            notes.append(f"Note: the loss does not reach {_names(frozen)}: "
                         f"{'it is' if len(frozen) == 1 else 'they are'} not trainable, and "
                         "the tape watches trainable variables only. Make "
                         f"{'it' if len(frozen) == 1 else 'them'} trainable, or call "
                         "probe.watch(...) inside the block if you only want the gradient.")
        unreached = [n for n in self.unreached_variables() if n not in self.untrainable]
        if unreached and self.broken_between is None:
            notes.append(f"Note: the loss does not reach {len(unreached)} of "
                         f"{len(self.variable_names)} variables ({_names(unreached)}): "
                         "they are not used on the way from the marks to the loss.")
        if self.order_note:
            notes.append(f"Note: {self.order_note}")
        if self.traced:
            notes.append("Note: located while tracing a tf.function: None or not None is "
                         "known, zero / NaN values are not.")
        return notes

    def table_rows(self) -> list[tuple[str, str, str, str]]:
        total = len(self.variable_names)
        rows = []
        for m in self.marks:
            if m.kind in _DISCONNECTED_KINDS:
                reach, variables = "-", "-"
            else:
                reach = _reach_text(m)
                variables = _variables_text(m.variables, total)
            rows.append((m.name, m.kind_text(), reach, variables))
        return rows

    def to_text(self) -> str:
        lines = [self.explanation()]
        if self.marks:
            header = ("mark", "kind", "loss reaches it", "variables reaching it")
            body = self.table_rows()
            widths = [max(len(r[i]) for r in [header, *body]) for i in range(4)]
            table = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in [header, *body]]
            table.insert(1, "  ".join("-" * w for w in widths))
            lines.extend(["", *table])
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        explanation = self.explanation().splitlines()
        colour = "#1b7837" if self.intact else "#b2182b"
        head = (f"<p style='color:{colour};font-weight:bold'>{html.escape(explanation[0])}"
                "</p>")
        rest = "".join(f"<li>{html.escape(line.strip())}</li>" for line in explanation[1:])
        rest = f"<ul>{rest}</ul>" if rest else ""
        broken = set(self.broken_between or ())
        rows = "".join(
            "<tr" + (" style='background:#fde0dd'" if name in broken else "") + ">"
            f"<td style='text-align:left'><code>{html.escape(name)}</code></td>"
            f"<td>{html.escape(kind)}</td><td>{html.escape(reach)}</td>"
            f"<td style='text-align:left'>{html.escape(variables)}</td></tr>"
            for name, kind, reach, variables in self.table_rows()
        )
        table = ("<table><thead><tr><th style='text-align:left'>mark</th><th>kind</th>"
                 "<th>loss reaches it</th><th style='text-align:left'>variables reaching it"
                 f"</th></tr></thead><tbody>{rows}</tbody></table>") if self.marks else ""
        return head + rest + table


class GradientProbe:
    """A ``tf.GradientTape`` that also remembers named points of the forward pass.

    ``with GradientProbe() as probe:`` records the forward pass on a persistent tape;
    ``probe.mark(name, value)`` records a point (and returns ``value``); after the block,
    ``probe.locate(loss, variables)`` says where the gradient path breaks, and
    ``probe.gradient`` / ``probe.report`` give the gradients. One probe, one forward pass.

    Each float mark gets a small tape of its own that watches only that mark, opened when
    the mark is made. ``d loss / d mark`` is asked of that tape, so the answer depends only
    on what happens *after* the mark: an op upstream with no registered gradient cannot
    make it fail.
    """

    def __init__(self, *, watch_accessed_variables: bool = True):
        self._tape = tf.GradientTape(persistent=True,
                                     watch_accessed_variables=watch_accessed_variables)
        self._marks: list[_Mark] = []
        self._state = "new"  # new -> recording -> done
        self._graph: Any = None
        self._eager = True
        self._uid_enter: int | None = None
        self._uid_exit: int | None = None

    # -- the context ---------------------------------------------------------------------
    @_not_converted
    def __enter__(self) -> GradientProbe:
        if self._state != "new":
            raise ProbeError("a GradientProbe records one forward pass; make a new one "
                             "(with GradientProbe() as probe:) for the next.")
        self._eager = tf.executing_eagerly()
        self._graph = tf.compat.v1.get_default_graph()
        self._uid_enter = _uid()
        self._tape.__enter__()
        self._state = "recording"
        return self

    @_not_converted
    def __exit__(self, *exc_info) -> None:
        for mark in reversed(self._marks):
            if mark.tape is not None:
                mark.tape.__exit__(*exc_info)
        self._tape.__exit__(*exc_info)
        self._uid_exit = _uid()
        self._state = "done"

    @property
    def tape(self) -> tf.GradientTape:
        """The persistent tape underneath (for jacobians, ``stop_recording`` and the like)."""
        return self._tape

    @property
    def recording(self) -> bool:
        """True inside the ``with`` block."""
        return self._state == "recording"

    @property
    def marks(self) -> list[str]:
        """Names of the marks, in the order they were made."""
        return [m.name for m in self._marks]

    @_not_converted
    def watch(self, value: Any) -> None:
        """``tape.watch``: also record operations on ``value`` (a float tensor or variable)."""
        self._require("watch", recording=True)
        self._tape.watch(_watchable(value))

    @_not_converted
    def gradient(self, target: Any, sources: Any, **kwargs: Any) -> Any:
        """``tape.gradient(target, sources, ...)`` on the probe's tape."""
        self._require("gradient", recording=False)
        with self._paused():
            return self._tape.gradient(target, sources, **kwargs)

    @_not_converted
    def report(self, loss: Any, variables: Sequence[Any]) -> GradientReport:
        """The gradient report (``helpers.gradients``) of ``loss`` for ``variables``."""
        variables = _check_variables(variables)
        return gradient_report(self.gradient(loss, variables), variables)

    # -- marking -------------------------------------------------------------------------
    @_not_converted
    def mark(self, name: str, value: Any) -> Any:
        """Record ``value`` as the point ``name`` of the forward pass and return it unchanged.

        Float tensors are watched, so the loss can be traced back to them. NumPy arrays,
        Python numbers and integer / bool / string tensors are recorded as points where
        the gradient cannot pass. A variable is watched as a variable: the tape sees its
        reads, never the computation that was assigned to it. Mark a tensor right after it
        is computed: the tape records an operation only if an input was already watched.
        """
        self._require("mark", recording=True)
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a mark needs a non-empty name (a str), got {name!r}.")
        if name in (VARIABLES, LOSS):
            raise ValueError(f"{name!r} is reserved for the ends of the path; pick another "
                             "name.")
        if name in self.marks:
            raise ValueError(
                f"there is already a mark named {name!r}. Each mark needs its own name; in "
                f"a loop use e.g. f'{name}_{{t}}'.")
        mark = _classify(name, value)
        if mark.kind in ("float", "variable"):
            self._check_same_trace(f"probe.mark({name!r}, ...)")
            watched = _watchable(value)
            self._tape.watch(watched)
            mark.tape = tf.GradientTape(persistent=True, watch_accessed_variables=False)
            mark.tape.__enter__()
            mark.tape.watch(watched)
        self._marks.append(mark)
        return value

    # -- locating ------------------------------------------------------------------------
    @_not_converted
    def locate(self, loss: Any, variables: Sequence[Any]) -> Location:
        """For every mark: does the loss reach it, and which variables reach it?

        Returns a ``Location`` whose ``broken_between`` names the two marks around the
        break (or is None when the path is intact) and which prints as an explanation.
        """
        self._require("locate", recording=False)
        variables = _check_variables(variables)
        names = [variable_name(v, i) for i, v in enumerate(variables)]
        traced = not self._eager
        loss_note = self._loss_note(loss)
        loss_usable = not loss_note or loss_note.startswith("The loss was computed")
        if loss_usable:
            self._check_same_trace("probe.locate(loss, ...)", loss)
        with self._paused():
            marks = self._in_forward_order()
            results = [self._locate_mark(m, loss if loss_usable else None, variables, names,
                                         traced) for m in marks]
            grads, error = (self._safe_gradient(self._tape, loss, variables) if loss_usable
                            else ([None] * len(variables), ""))
        reach = [g is not None for g in grads]
        if error and not loss_note:
            kind, _, message = error.partition(": ")
            loss_note = f"tape.gradient(loss, variables) itself raises {kind} ({message})."
        elif loss_usable and not loss_note and not any(reach) and not any(
                r.loss_reaches for r in results):
            loss_note = ("The loss reaches no mark and no variable: as far as the tape "
                         "can see, it is a constant.")
        untrainable = [n for v, n in zip(variables, names)
                       if not getattr(_watchable(v), "trainable", True)]
        return Location(results, names, reach, loss_note=loss_note, untrainable=untrainable,
                        order_note=self._order_note(marks), traced=traced)

    # -- internals -----------------------------------------------------------------------
    def _require(self, what: str, *, recording: bool) -> None:
        if recording and self._state != "recording":
            when = "before" if self._state == "new" else "after"
            raise ProbeError(
                f"probe.{what}() was called {when} the `with GradientProbe() as probe:` "
                "block. The tape records only inside it: call it there.")
        if not recording and self._state == "new":
            raise ProbeError(f"probe.{what}() needs a recorded forward pass: run it inside "
                             "`with GradientProbe() as probe:` first.")

    @contextlib.contextmanager
    def _paused(self):
        """Inside the block, keep the probe's own gradient computations off every tape."""
        with contextlib.ExitStack() as stack:
            if self.recording:
                for tape in [self._tape, *(m.tape for m in self._marks if m.tape)]:
                    stack.enter_context(tape.stop_recording())
            yield

    def _check_same_trace(self, what: str, tensor: Any = None) -> None:
        here_eager = tf.executing_eagerly()
        here_graph = tf.compat.v1.get_default_graph()
        if here_eager != self._eager or (not here_eager and here_graph is not self._graph):
            inside = "inside a tf.function" if not here_eager else "eagerly"
            raise ProbeError(
                f"{what} ran {inside}, but the probe's `with` block "
                f"{'runs eagerly' if self._eager else 'is in another tf.function trace'}. "
                "A probe sees only the trace it was opened in: mark the inputs and outputs "
                "of the tf.function instead, or run it eagerly while you debug "
                "(tf.config.run_functions_eagerly(True)), or put the whole `with` block "
                "and locate() inside one tf.function.")
        graph = getattr(tensor, "graph", None)
        if tensor is not None and not here_eager and graph is not None and graph is not \
                self._graph:
            raise ProbeError(f"{what}: the loss belongs to another tf.function trace than "
                             "the probe.")

    def _loss_note(self, loss: Any) -> str:
        if loss is None:
            raise TypeError("loss is None; expected the loss tensor computed inside the "
                            "`with GradientProbe() as probe:` block.")
        if isinstance(loss, (tf.Variable, keras.Variable)):
            raise TypeError("loss is a variable; expected the loss tensor computed from it.")
        if isinstance(loss, (np.ndarray, np.generic)):
            return (f"The loss is a NumPy {np.asarray(loss).dtype.name}, not a tensor: it was "
                    "computed outside TensorFlow, so no gradient can reach it "
                    "(tape.gradient raises for it).")
        if isinstance(loss, numbers.Number):
            return (f"The loss is a Python {type(loss).__name__}, not a tensor: it was "
                    "computed outside TensorFlow (float(), .item()?), so no gradient can "
                    "reach it.")
        if not tf.is_tensor(loss) or isinstance(loss, keras.KerasTensor):
            raise TypeError(f"loss must be a tensor, got {type(loss).__name__}.")
        if not (loss.dtype.is_floating or loss.dtype.is_complex):
            return (f"The loss is {_a(loss.dtype.name)} tensor: integers carry no gradient. "
                    "Compute it in float32.")
        created = getattr(loss, "_id", None)
        if self._eager and isinstance(created, int):
            if self._uid_exit is not None and created > self._uid_exit:
                return ("The loss was computed after the `with` block ended, when the tape "
                        "had stopped recording: compute it inside the block.")
            if self._uid_enter is not None and created < self._uid_enter:
                return ("The loss was computed before the `with` block began, when the "
                        "tape was not recording yet: compute it inside the block.")
        return ""

    @staticmethod
    def _safe_gradient(tape: tf.GradientTape, target: Any, sources: list[Any]
                       ) -> tuple[list[Any], str]:
        """``tape.gradient``, but an op without a gradient becomes a message, not a crash."""
        try:
            return list(tape.gradient(target, [_watchable(s) for s in sources])), ""
        except (LookupError, tf.errors.InvalidArgumentError) as error:
            return [None] * len(sources), _error_text(error)

    def _mark_gradient(self, target: Any, mark: _Mark) -> tuple[Any, str]:
        """d target / d mark, and the error text if the path after the mark has no gradient.

        The mark's own tape sees only what happened after the mark, so an op without a
        gradient upstream cannot make it fail. If it sees no path, the main tape may still
        have one (a tensor computed from variables and marked after it was used).
        """
        grads, error = self._safe_gradient(mark.tape, target, [mark.value])
        if error or grads[0] is not None:
            return grads[0], error
        grads, _ = self._safe_gradient(self._tape, target, [mark.value])
        return grads[0], ""

    def _in_forward_order(self) -> list[_Mark]:
        """Marking order, except that a mark found to feed an earlier one moves before it."""
        marks = list(self._marks)
        feeds: dict[int, set[int]] = {id(m): set() for m in marks}
        for target in marks:
            if target.kind != "float":
                continue
            for source in marks:
                if source is target or source.tape is None or source.value is target.value:
                    continue
                grad, _ = self._mark_gradient(target.value, source)
                if grad is not None:
                    feeds[id(target)].add(id(source))
        ordered: list[_Mark] = []
        remaining = marks[:]
        while remaining:
            placed = {id(m) for m in ordered}
            ready = next((m for m in remaining if feeds[id(m)] <= placed), remaining[0])
            ordered.append(ready)
            remaining.remove(ready)
        return ordered

    def _order_note(self, ordered: list[_Mark]) -> str:
        if [m.name for m in ordered] == self.marks:
            return ""
        moved = [m.name for m, original in zip(ordered, self.marks) if m.name != original]
        return ("the marks are listed in forward order, which differs from the order they "
                f"were made in ({_names(moved)} moved).")

    def _locate_mark(self, mark: _Mark, loss: Any, variables: list[Any], names: list[str],
                     traced: bool) -> MarkResult:
        if mark.kind in _DISCONNECTED_KINDS:
            return MarkResult(mark.name, mark.kind, mark.dtype, False, "none", (), mark.note)
        errors: list[str] = []
        status: LossStatus | None = "none"
        if loss is not None:
            grad, error = self._mark_gradient(loss, mark)
            if error:
                status = "error"
                errors.append(error)
            elif grad is not None:
                status = None if traced else _status(grad)
        if mark.kind == "variable":
            reached = tuple(n for n, v in zip(names, variables) if _same_variable(v, mark.value))
        else:
            grads, error = self._safe_gradient(self._tape, mark.value, variables)
            reached = tuple(n for n, g in zip(names, grads) if g is not None)
            if error:
                errors.append(error)
        return MarkResult(mark.name, mark.kind, mark.dtype, status not in ("none", "error"),
                          status, reached, mark.note, tuple(errors))


# -- the pieces ------------------------------------------------------------------------------
@dataclass
class _Mark:
    name: str
    kind: Kind
    dtype: str
    value: Any
    note: str = ""
    tape: tf.GradientTape | None = None


def _classify(name: str, value: Any) -> _Mark:
    if isinstance(value, (tf.Variable, keras.Variable)):
        dtype = tf.as_dtype(value.dtype).name
        return _Mark(name, "variable", dtype, value,
                     "a variable: the tape sees reads of it, never how its value was "
                     "computed (assign / assign_add cut the path). Mark the tensor you "
                     "assign instead.")
    if isinstance(value, (np.ndarray, np.generic)):
        return _Mark(name, "numpy", np.asarray(value).dtype.name, value,
                     "a NumPy array: the computation left TensorFlow here, and nothing "
                     "before it can get a gradient.")
    if isinstance(value, (bool, numbers.Number)):
        return _Mark(name, "python", type(value).__name__, value,
                     "a Python number: the computation left TensorFlow here (float(), "
                     ".item(), .numpy()?).")
    if isinstance(value, keras.KerasTensor):
        raise TypeError(f"mark {name!r}: got a symbolic keras.KerasTensor (from keras.Input). "
                        "Mark values computed inside the `with` block, e.g. model(x).")
    if isinstance(value, (tf.RaggedTensor, tf.SparseTensor, tf.IndexedSlices)):
        raise TypeError(f"mark {name!r}: got a {type(value).__name__}; mark a dense tensor.")
    if tf.is_tensor(value):
        dtype = value.dtype
        if dtype.is_floating or dtype.is_complex:
            return _Mark(name, "float", dtype.name, value)
        return _Mark(name, "integer", dtype.name, value,
                     f"{_a(dtype.name)} tensor: integers, booleans and strings carry no "
                     "gradient (the tape cannot watch them).")
    if isinstance(value, (list, tuple, dict)):
        raise TypeError(f"mark {name!r}: got a {type(value).__name__}; mark one tensor at "
                        "a time (e.g. mark each output of the model under its own name).")
    raise TypeError(f"mark {name!r}: expected a tensor, a variable, a NumPy array or a "
                    f"Python number, got {type(value).__name__}.")


def _watchable(value: Any) -> Any:
    if isinstance(value, keras.Variable):
        return value.value  # the tf.Variable underneath a Keras 3 variable
    return value


def _same_variable(a: Any, b: Any) -> bool:
    return _watchable(a) is _watchable(b)


def _check_variables(variables: Any) -> list[Any]:
    if isinstance(variables, (tf.Variable, keras.Variable)):
        raise TypeError("variables must be a list; wrap a single variable: [w].")
    if isinstance(variables, dict) or not isinstance(variables, Sequence) or isinstance(
            variables, str):
        raise TypeError(f"variables must be a list of variables, got "
                        f"{type(variables).__name__}.")
    variables = list(variables)
    if not variables:
        raise ValueError(
            "variables is empty. If it came from model.trainable_weights or "
            "layer.trainable_weights, the model or layer was not built yet when you read "
            "it: a Keras layer creates its weights the first time it is called. Call it "
            "once (or give the model a keras.Input) before taking its weights.")
    for i, v in enumerate(variables):
        if isinstance(v, (tf.Variable, keras.Variable)):
            continue
        if tf.is_tensor(v):
            raise TypeError(
                f"variables[{i}] is a tensor ({type(v).__name__}), not a variable. The tape "
                "watches variables by itself, tensors only when told to. A common cause is "
                "`x = x + 1` on a tf.Variable, which replaces it with a tensor: update it "
                "with x.assign_add(1) (or x.assign(...)) instead.")
        raise TypeError(f"variables[{i}] is a {type(v).__name__}; expected a tf.Variable "
                        "or keras.Variable.")
    return variables


def _status(grad: Any) -> LossStatus:
    values = tf.abs(grad.values if isinstance(grad, tf.IndexedSlices) else grad)
    if not bool(tf.reduce_all(tf.math.is_finite(values))):
        return "nonfinite"
    return "zero" if float(tf.reduce_max(values)) == 0.0 else "ok"


def _uid() -> int | None:
    try:
        from tensorflow.python.framework import ops  # the counter behind tensor ids
    except ImportError:  # pragma: no cover - layout of TF internals changed
        return None
    uid = getattr(ops, "uid", None)
    return uid() if callable(uid) else None


def _reach_text(mark: MarkResult) -> str:
    if mark.loss_gradient == "error":
        return "raises"
    if not mark.loss_reaches:
        return "no"
    if mark.loss_gradient in (None, "ok"):
        return "yes"
    return f"yes ({'NaN/inf' if mark.loss_gradient == 'nonfinite' else 'zeros'})"


def _variables_text(reached: tuple[str, ...], total: int) -> str:
    if not reached:
        return "none"
    if len(reached) == total:
        return f"all {total}" if total > 1 else "1 of 1"
    shown = ", ".join(reached[:3]) + (", ..." if len(reached) > 3 else "")
    return f"{len(reached)} of {total}: {shown}"


def _point(name: str) -> str:
    return {VARIABLES: "the variables", LOSS: "the loss"}.get(name, repr(name))


def _place(name: str) -> str:
    return {VARIABLES: "where the variables are used", LOSS: "the loss"}.get(name, repr(name))


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _a(word: str) -> str:
    """'an int32', 'a float32', 'a bool'."""
    return f"an {word}" if word.startswith("int") else f"a {word}"


def _error_text(error: Exception) -> str:
    """The exception's type and first line, without TensorFlow's device and node prefixes."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\].*$", "", text)
    return f"{type(error).__name__}: {text}".rstrip(": ")


__all__ = ["LOSS", "VARIABLES", "GradientProbe", "Location", "MarkResult", "ProbeError"]
