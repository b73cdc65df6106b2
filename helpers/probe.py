"""Find the place where the gradient path breaks.

``tape.gradient`` says *that* a gradient is None; ``GradientProbe`` says *where* the
computation left the tape's view. Use it like a ``tf.GradientTape`` and mark a few points::

    with GradientProbe() as probe:
        frames = probe.mark("frames", model(noisy))
        audio = probe.mark("audio", overlap_add(frames))
        loss = tf.reduce_mean(tf.abs(audio - clean))
    probe.locate(loss, model.trainable_variables)

``mark`` returns its value unchanged; model code can call the module-level ``mark``, which
records into the probe that is recording and does nothing otherwise. ``locate``:

1. asks for the gradient of the loss for every source (variable or watched tensor); if none
   is None, the path is intact;
2. gives each None source a cause: not trainable, never read inside the block, a tensor
   never watched, an integer dtype, or else a cut somewhere after it;
3. finds each cut from the marks, in the order they were made: from the last mark the
   source reaches and the loss does not, to the first later mark that does not depend on
   it. ``.breaks`` lists every cut in forward order, ``.broken_between`` is the first.

Inside ``tf.function`` it works when the ``with`` block, the marks and ``locate`` run in one
trace (None or not None is known while tracing, zero / NaN is not).
"""

from __future__ import annotations

import contextlib
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
Cause = Literal["cut", "untrainable", "unread", "unwatched", "integer"]
_NO_GRADIENT_KINDS = ("integer", "numpy", "python")
_active: list[GradientProbe] = []  # probes whose `with` block is running, innermost last
_not_converted = tf.autograph.experimental.do_not_convert  # keep AutoGraph off the probe


class ProbeError(RuntimeError):
    """The probe was used in a way it cannot answer (outside its block, across a
    ``tf.function`` boundary, twice)."""

    __init__ = Exception.__init__  # lets AutoGraph re-raise it as itself


def mark(name: str, value: Any) -> Any:
    """Record ``value`` (a tensor or a nested list / dict of them) into the probe that is
    recording, and return it unchanged. Does nothing when no probe is recording."""
    return _active[-1].mark(name, value) if _active else value


@dataclass(frozen=True)
class MarkResult:
    """What ``locate`` found out about one mark: does the loss reach it (``loss_gradient``:
    ok, zero, nonfinite, none, error, or None while tracing), which sources reach it
    (``variables``), and why a NumPy / Python / integer / variable mark passes no gradient."""

    name: str
    kind: Kind
    dtype: str
    loss_reaches: bool
    loss_gradient: LossStatus | None
    variables: tuple[str, ...]
    note: str = ""
    errors: tuple[str, ...] = ()

    def kind_text(self) -> str:
        prefix = {"variable": "Variable ", "numpy": "NumPy ", "python": "Python "}
        return prefix.get(self.kind, "") + self.dtype


@dataclass
class Location:
    """The verdict of ``GradientProbe.locate``; prints as an explanation and a table.

    ``breaks``: every ``(start, end)`` pair around a cut, in forward order (``VARIABLES``
    when the sources reach no mark, ``LOSS`` when nothing after the start reaches the loss).
    ``broken_between``: the first break or None. ``intact``: no source's gradient is None,
    so it always agrees with the gradient report. ``causes``: the cause of each None source.
    """

    marks: tuple[MarkResult, ...]
    variable_names: tuple[str, ...]
    loss_reaches_variables: tuple[bool, ...]
    breaks: list[tuple[str, str]]
    causes: dict[str, Cause]
    notes: list[str]
    details: dict[tuple[str, str], list[str]]
    loss_note: str = ""
    traced: bool = False

    @property
    def broken_between(self) -> tuple[str, str] | None:
        return self.breaks[0] if self.breaks else None

    @property
    def intact(self) -> bool:
        return all(self.loss_reaches_variables)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.marks]

    def __getitem__(self, name: str) -> MarkResult:
        for result in self.marks:
            if result.name == name:
                return result
        raise KeyError(f"no mark named {name!r}; the marks are {self.names}.")

    def unreached_variables(self) -> list[str]:
        """Sources whose gradient (d loss / d source) is None."""
        return [n for n, r in zip(self.variable_names, self.loss_reaches_variables) if not r]

    def explanation(self) -> str:
        """The verdict, what lies around each break, what to check."""
        if self.intact:
            head = ["Gradient path intact: every source gets a gradient."]
        elif not self.breaks:
            none = len(self.unreached_variables())
            head = [f"No break in the gradient path, but {none} source"
                    f"{' gets' if none == 1 else 's get'} None (see the note)."]
        elif len(self.breaks) == 1:
            head = [f"Gradient path broken between {_point(self.breaks[0][0])} and "
                    f"{_point(self.breaks[0][1])}."]
        else:
            head = [f"Gradient path broken in {len(self.breaks)} places, in forward order:"]
        lines = list(head)
        for number, (start, end) in enumerate(self.breaks, 1):
            if len(self.breaks) > 1:
                lines.append(f"{number}. between {_point(start)} and {_point(end)}.")
            lines.extend(f"  {line}" for line in self.details.get((start, end), []))
            where = "where the variables are used" if start == VARIABLES else _point(start)
            lines.append(f"  Look at the code between {where} and {_point(end)}.")
        lines.extend(f"Note: {note}" for note in self.notes)
        return "\n".join(lines)

    def table_rows(self) -> list[tuple[str, str, str, str]]:
        total = len(self.variable_names)
        return [(m.name, m.kind_text(), "-" if m.kind in _NO_GRADIENT_KINDS else _reach_text(m),
                 "-" if m.kind in _NO_GRADIENT_KINDS else _variables_text(m.variables, total))
                for m in self.marks]

    def to_text(self) -> str:
        if not self.marks:
            return self.explanation()
        header = ("mark", "kind", "loss reaches it", "variables reaching it")
        rows = [header, *self.table_rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        table = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        table.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join([self.explanation(), "", *table])

    __repr__ = to_text


@dataclass
class _Mark:
    name: str
    kind: Kind
    dtype: str
    value: Any
    note: str = ""
    tape: tf.GradientTape | None = None  # watches only this mark: sees what comes after it


class GradientProbe:
    """A persistent ``tf.GradientTape`` that also remembers named points of the forward pass.

    One probe, one forward pass. Each float mark gets a small tape of its own, opened when
    the mark is made, so ``d loss / d mark`` depends only on what happens after the mark.
    """

    def __init__(self, *, watch_accessed_variables: bool = True):
        self._tape = tf.GradientTape(persistent=True,
                                     watch_accessed_variables=watch_accessed_variables)
        self._marks: list[_Mark] = []
        self._watched: set[Any] = set()  # refs of tensors watched through the probe
        self._state = "new"  # new -> recording -> done
        self._graph: Any = None
        self._eager = True
        self._span: list[int | None] = [None, None]  # creation counter at enter and exit
        self._last: tuple[Any, list[Any], list[Any]] = (None, [], [])  # locate's gradients

    @_not_converted
    def __enter__(self) -> GradientProbe:
        if self._state != "new":
            raise ProbeError("a GradientProbe records one forward pass; make a new one "
                             "(with GradientProbe() as probe:) for the next.")
        self._eager = tf.executing_eagerly()
        self._graph = tf.compat.v1.get_default_graph()
        self._span[0] = _creation_order() if self._eager else None
        self._tape.__enter__()
        self._state = "recording"
        _active.append(self)
        return self

    @_not_converted
    def __exit__(self, *exc_info) -> None:
        for m in reversed(self._marks):
            if m.tape is not None:
                m.tape.__exit__(*exc_info)
        self._tape.__exit__(*exc_info)
        self._span[1] = _creation_order() if self._eager else None
        self._state = "done"
        if self in _active:
            _active.remove(self)

    @property
    def tape(self) -> tf.GradientTape:
        """The persistent tape underneath (for jacobians, ``stop_recording`` and the like)."""
        return self._tape

    @property
    def recording(self) -> bool:
        return self._state == "recording"

    @property
    def marks(self) -> list[str]:
        """Names of the marks, in the order they were made."""
        return [m.name for m in self._marks]

    @_not_converted
    def watch(self, value: Any) -> None:
        """``tape.watch``: also record operations on ``value`` (float tensors or variables)."""
        self._require("watch", recording=True)
        for leaf in keras.tree.flatten(value):
            self._tape.watch(_watchable(leaf))
            if tf.is_tensor(leaf):
                self._watched.add(_watchable(leaf).ref())

    @_not_converted
    def gradient(self, target: Any, sources: Any, **kwargs: Any) -> Any:
        """``tape.gradient(target, sources, ...)`` on the probe's tape."""
        self._require("gradient", recording=False)
        with self._paused():
            return self._tape.gradient(target, keras.tree.map_structure(_watchable, sources),
                                       **kwargs)

    @_not_converted
    def report(self, loss: Any, sources: Sequence[Any],
               names: Sequence[str] | None = None) -> GradientReport:
        """The gradient report (``helpers.gradients``) of ``loss`` for ``sources``."""
        sources = _check_sources(sources)
        last_loss, last_sources, grads = self._last
        if loss is not last_loss or len(sources) != len(last_sources) or any(
                a is not b for a, b in zip(sources, last_sources)):
            grads = self.gradient(loss, sources)  # else: locate() just computed them
        return gradient_report(grads, sources, self._source_names(sources, names))

    @_not_converted
    def mark(self, name: str, value: Any) -> Any:
        """Record ``value`` as the point ``name`` of the forward pass and return it unchanged.

        Float tensors are watched. A nested list / dict is marked leaf by leaf, as
        ``name[0]``, ``name['key']``. Mark a tensor right after it is computed.
        """
        self._require("mark", recording=True)
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a mark needs a non-empty name (a str), got {name!r}.")
        if name in (VARIABLES, LOSS):
            raise ValueError(f"{name!r} is reserved for the ends of the path; pick another.")
        nested = isinstance(value, (list, tuple, dict))
        leaves = keras.tree.flatten_with_path(value) if nested else [((), value)]
        if not leaves:
            raise ValueError(f"mark {name!r}: the structure holds no tensor.")
        for path, leaf in leaves:
            self._mark_one(name + "".join(f"[{p!r}]" for p in path), leaf)
        return value

    def _mark_one(self, name: str, value: Any) -> None:
        if name in self.marks:
            raise ValueError(f"there is already a mark named {name!r}. Each mark needs its "
                             f"own name; in a loop use e.g. f'{name}_{{t}}'.")
        m = _classify(name, value)
        if m.kind in ("float", "variable"):
            self._check_same_trace(f"probe.mark({name!r}, ...)")
            watched = _watchable(value)
            self._tape.watch(watched)
            self._watched.add(watched.ref())
            m.tape = tf.GradientTape(persistent=True, watch_accessed_variables=False)
            m.tape.__enter__()
            m.tape.watch(watched)
            if m.kind == "float" and self._made_before_block(value):
                m.note = ("computed before the `with` block began: the tape never saw how "
                          "it was made.")
        self._marks.append(m)

    # -- the verdict ---------------------------------------------------------------------
    @_not_converted
    def locate(self, loss: Any, sources: Sequence[Any],
               names: Sequence[str] | None = None) -> Location:
        """Where the gradient path from ``sources`` (variables or watched tensors) to
        ``loss`` breaks. Returns a ``Location`` that prints as an explanation."""
        self._require("locate", recording=False)
        sources = _check_sources(sources)
        names = self._source_names(sources, names)
        loss_note = self._loss_note(loss)
        usable = not loss_note or "block" in loss_note
        if usable:
            self._check_same_trace("probe.locate(loss, ...)", loss)
        with self._paused():
            grads, error = (self._safe_gradient(self._tape, loss, sources) if usable
                            else ([None] * len(sources), ""))
            results = [self._mark_result(m, loss if usable else None, sources, names)
                       for m in self._marks]
            reached = [g is not None for g in grads]
            if usable and not error:
                self._last = (loss, sources, grads)
            causes = {n: self._cause(s) for n, s, r in zip(names, sources, reached) if not r}
            breaks, details = self._breaks(results, causes, loss_note)
        if error:
            loss_note = loss_note or f"tape.gradient(loss, sources) itself raises {error}."
        notes = _notes(results, names, reached, causes, loss_note, breaks, not self._eager)
        return Location(tuple(results), tuple(names), tuple(reached), breaks, causes, notes,
                        details, loss_note, traced=not self._eager)

    def _breaks(self, results: list[MarkResult], causes: dict[str, Cause], loss_note: str
                ) -> tuple[list[tuple[str, str]], dict[tuple[str, str], list[str]]]:
        """The core: every cut between two points, in forward order, with what explains it."""
        floats = [i for i, r in enumerate(results) if r.kind not in _NO_GRADIENT_KINDS]
        groups: dict[tuple[str, str], list[str]] = {}
        for source, cause in causes.items():
            if cause == "untrainable":
                continue  # its None is by design, not a break in the path
            reached = [i for i in floats if source in results[i].variables
                       and not results[i].loss_reaches] if cause == "cut" else []
            if not reached:  # the source reaches no mark: the path breaks before the first
                on_path = [i for i in floats if results[i].loss_reaches
                           and results[i].variables]
                down = on_path or [i for i in floats if results[i].loss_reaches]
                key = (VARIABLES, results[down[0]].name if down else LOSS)
            else:  # from the last mark it reaches, to the first later mark not fed by it
                start = reached[-1]
                end = next((j for j in floats if j > start and not self._feeds(start, j)
                            and not self._feeds(j, start)), None)  # (j: marked late?)
                key = (results[start].name, LOSS if end is None else results[end].name)
            groups.setdefault(key, []).append(source)
        order = {name: i for i, name in enumerate([VARIABLES, *self.marks, LOSS])}
        breaks = sorted(groups, key=lambda pair: (order[pair[0]], order[pair[1]]))
        return breaks, {b: _break_lines(b, groups[b], causes, results, loss_note)
                        for b in breaks}

    def _feeds(self, i: int, j: int) -> bool:
        """d mark_j / d mark_i is not None."""
        return self._mark_gradient(self._marks[j].value, self._marks[i])[0] is not None

    def _cause(self, source: Any) -> Cause:
        if not _is_tensor(source) and not getattr(source, "trainable", True) and not any(
                _watchable(source) is w for w in self._tape.watched_variables()):
            return "untrainable"
        dtype = tf.as_dtype(source.dtype)
        if not (dtype.is_floating or dtype.is_complex):
            return "integer"
        if _is_tensor(source):
            return "cut" if source.ref() in self._watched else "unwatched"
        if _watchable(source).ref() in self._watched or any(
                _watchable(source) is w for w in self._tape.watched_variables()):
            return "cut"
        return "unread"

    def _mark_result(self, m: _Mark, loss: Any, sources: list[Any], names: list[str]
                     ) -> MarkResult:
        if m.kind in _NO_GRADIENT_KINDS:
            return MarkResult(m.name, m.kind, m.dtype, False, "none", (), m.note)
        status: LossStatus | None = "none"
        errors = []
        if loss is not None:
            grad, error = self._mark_gradient(loss, m)
            if error:
                status, errors = "error", [error]
            elif grad is not None:
                status = _status(grad) if self._eager else None
        if m.kind == "variable":
            reached = tuple(n for n, s in zip(names, sources)
                            if _watchable(s) is _watchable(m.value))
        else:
            grads, error = self._safe_gradient(self._tape, m.value, sources)
            reached = tuple(n for n, g in zip(names, grads) if g is not None)
            errors += [error] if error else []
        return MarkResult(m.name, m.kind, m.dtype, status not in ("none", "error"), status,
                          reached, m.note, tuple(errors))

    def _mark_gradient(self, target: Any, m: _Mark) -> tuple[Any, str]:
        """d target / d mark, from the mark's own tape; the main tape if that sees no path
        (a tensor marked after it was used)."""
        grads, error = self._safe_gradient(m.tape, target, [m.value])
        if error or grads[0] is not None:
            return grads[0], error
        return self._safe_gradient(self._tape, target, [m.value])[0][0], ""

    @staticmethod
    def _safe_gradient(tape: tf.GradientTape, target: Any, sources: list[Any]
                       ) -> tuple[list[Any], str]:
        """``tape.gradient``, but an op without a gradient becomes a message, not a crash."""
        try:
            return list(tape.gradient(target, [_watchable(s) for s in sources])), ""
        except (LookupError, tf.errors.InvalidArgumentError) as error:
            return [None] * len(sources), _error_text(error)

    # -- plumbing ------------------------------------------------------------------------
    def _source_names(self, sources: list[Any], names: Sequence[str] | None) -> list[str]:
        if names is not None:
            names = list(names)
            if len(names) != len(sources) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"names must be {len(sources)} strings, one per source.")
            return names
        marked = {m.value.ref(): m.name for m in self._marks if _is_tensor(m.value)}
        return [marked.get(s.ref(), variable_name(s, i)) if _is_tensor(s)
                else variable_name(s, i) for i, s in enumerate(sources)]

    def _require(self, what: str, *, recording: bool) -> None:
        if recording and self._state != "recording":
            when = "before" if self._state == "new" else "after"
            raise ProbeError(f"probe.{what}() was called {when} the `with GradientProbe() as "
                             "probe:` block. The tape records only inside it: call it there.")
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
        eager = tf.executing_eagerly()
        if eager != self._eager or (not eager and tf.compat.v1.get_default_graph()
                                    is not self._graph):
            raise ProbeError(
                f"{what} ran {'eagerly' if eager else 'inside a tf.function'}, but the probe's "
                f"`with` block {'runs eagerly' if self._eager else 'is in another trace'}. A "
                "probe sees only the trace it was opened in: mark the inputs and outputs of "
                "the tf.function instead, or run it eagerly while you debug "
                "(tf.config.run_functions_eagerly(True)), or put the whole `with` block and "
                "locate() inside one tf.function.")
        graph = getattr(tensor, "graph", None)
        if tensor is not None and not eager and graph is not None and graph is not self._graph:
            raise ProbeError(f"{what}: the loss belongs to another tf.function trace.")

    def _made_before_block(self, tensor: Any) -> bool:
        made, begun = _creation_order(tensor) if self._eager else None, self._span[0]
        return made is not None and begun is not None and made < begun

    def _loss_note(self, loss: Any) -> str:
        if loss is None:
            raise TypeError("loss is None; expected the loss tensor computed inside the "
                            "`with GradientProbe() as probe:` block.")
        if isinstance(loss, (tf.Variable, keras.Variable)):
            raise TypeError("loss is a variable; expected the loss tensor computed from it.")
        if isinstance(loss, (np.ndarray, np.generic)):
            return (f"The loss is a NumPy {np.asarray(loss).dtype.name}, not a tensor: it was "
                    "computed outside TensorFlow, so no gradient can reach it.")
        if isinstance(loss, numbers.Number):
            return (f"The loss is a Python {type(loss).__name__}, not a tensor: it was "
                    "computed outside TensorFlow (float(), .item()?).")
        if not tf.is_tensor(loss) or isinstance(loss, keras.KerasTensor):
            raise TypeError(f"loss must be a tensor, got {type(loss).__name__}.")
        if not (loss.dtype.is_floating or loss.dtype.is_complex):
            return (f"The loss is {_a(loss.dtype.name)} tensor: integers carry no gradient.")
        made = _creation_order(loss) if self._eager else None
        begun, ended = self._span
        if made is not None and ended is not None and made > ended:
            return ("The loss was computed after the `with` block ended, when the tape had "
                    "stopped recording: compute it inside the block.")
        if made is not None and begun is not None and made < begun:
            return ("The loss was computed before the `with` block began, when the tape was "
                    "not recording yet: compute it inside the block.")
        return ""


# -- the words -------------------------------------------------------------------------------
_CAUSE_TEXT = {
    "unread": "never read inside the `with` block (computed in build() or __init__, or the "
              "model ran before the block?): the tape never saw a read. Compute from the "
              "variables inside the block.",
    "unwatched": "a tensor the tape never watched: call probe.watch(x) inside the block, "
                 "before x is used (if it was a tf.Variable, `x = x + 1` replaced it with a "
                 "tensor: use x.assign_add).",
    "integer": "an integer dtype: integers have no gradient (ask for the float tensor they "
               "index, e.g. the embeddings).",
}


def _break_lines(pair: tuple[str, str], sources: list[str], causes: dict[str, Cause],
                 results: list[MarkResult], loss_note: str) -> list[str]:
    start, end = pair
    lines = []
    for cause in ("unread", "unwatched", "integer"):
        which = [s for s in sources if causes[s] == cause]
        if which:
            lines.append(f"{_some(which)}: {_CAUSE_TEXT[cause]}")
    cut = [s for s in sources if causes[s] == "cut"]
    if start == VARIABLES and cut:
        lines.append(f"{_some(cut)} {_verb(cut, 'reaches', 'reach')} no mark: the path "
                     f"breaks before {_point(end)}.")
    elif start != VARIABLES:
        lines.append(f"{_some(cut)} {_verb(cut, 'reaches', 'reach')} {start!r}; the loss "
                     "does not reach it.")
        end_result = next((r for r in results if r.name == end), None)
        if end_result is None:
            lines.append(f"The loss reaches no mark that depends on {start!r}.")
        else:
            lines.append(f"{end!r} does not depend on {start!r} through the tape"
                         + ("; the loss reaches it." if end_result.loss_reaches else "."))
    names = [r.name for r in results]
    first = names.index(start) if start in names else 0
    last = names.index(end) + 1 if end in names else len(names)
    errors = dict.fromkeys(e for r in results[first:last] for e in r.errors)
    lines += [f"{r.name!r} is {r.note}" for r in results[first:last]
              if r.note and r.kind != "float"]
    lines += [f"An op between these marks has no usable gradient: tape.gradient raises {e}."
              for e in errors]
    if end == LOSS and loss_note:
        lines.append(loss_note)
    return lines


def _notes(results: list[MarkResult], names: list[str], reached: list[bool],
           causes: dict[str, Cause], loss_note: str, breaks: list[tuple[str, str]],
           traced: bool) -> list[str]:
    notes = []
    if loss_note and not any(end == LOSS for _, end in breaks):
        notes.append(loss_note)
    frozen = [n for n, c in causes.items() if c == "untrainable"]
    if frozen:
        notes.append(f"{_names(frozen)} {_verb(frozen, 'is', 'are')} not trainable: the tape "
                     "does not watch such variables, so their gradient is None by design "
                     "(BatchNorm moving statistics, a dropout seed). Pass "
                     "model.trainable_variables; to see one's gradient anyway, probe.watch(...) "
                     "it inside the block.")
    fine = {n for n, r in zip(names, reached) if r}
    side = [r.name for r in results if r.kind in ("float", "variable") and not r.loss_reaches
            and r.variables and set(r.variables) <= fine and r.loss_gradient != "error"]
    if side:
        notes.append(f"the loss does not read {_names(side)}, but every source reaching it "
                     "gets a gradient: a side branch, not a break (a Keras 3 loss, for one, "
                     "computes from the logits behind a softmax or sigmoid output).")
    early = [r.name for r in results if r.kind == "float" and r.note]
    if early and not all(reached):  # evidence only when something is None (inputs are early)
        notes.append(f"{_names(early)} was computed before the `with` block began: the "
                     "tape never saw how it was made.")
    for status, words in (("zero", "its gradient there is all zeros"),
                          ("nonfinite", "its gradient there is NaN or inf")):
        marked = [r.name for r in results if r.loss_gradient == status]
        if marked:
            notes.append(f"the loss reaches {_names(marked)}, but {words}.")
    if traced:
        notes.append("located while tracing a tf.function: None or not None is known, "
                     "zero / NaN values are not.")
    return notes


# -- the pieces ------------------------------------------------------------------------------
def _creation_order(tensor: Any = None) -> int | None:
    """The one private TensorFlow internal the probe uses (tests/test_probe_defects.py pins it).

    Eager tensors carry a creation number, ``tensor._id``, drawn from the counter
    ``ops.uid()``; comparing them tells whether the loss or a mark was made before or after
    the ``with`` block. TensorFlow has no public way to ask. Without ``tensor``, returns the
    counter's next value. None when the internal is gone (the verdict then omits the note).
    """
    try:
        from tensorflow.python.framework import ops
        number = ops.uid() if tensor is None else getattr(tensor, "_id", None)
    except (ImportError, AttributeError):  # pragma: no cover - TF internals changed
        return None
    return number if isinstance(number, int) else None


def _is_tensor(value: Any) -> bool:
    """A tensor, not a variable (Keras 3 variables pass ``tf.is_tensor``)."""
    return tf.is_tensor(value) and not isinstance(value, (tf.Variable, keras.Variable))


def _classify(name: str, value: Any) -> _Mark:
    if isinstance(value, (tf.Variable, keras.Variable)):
        return _Mark(name, "variable", tf.as_dtype(value.dtype).name, value,
                     "a variable: the tape sees reads of it, never how its value was "
                     "computed (assign / assign_add cut the path). Mark the tensor you "
                     "assign instead.")
    if isinstance(value, (np.ndarray, np.generic)):
        return _Mark(name, "numpy", np.asarray(value).dtype.name, value,
                     "a NumPy array: the computation left TensorFlow here (.numpy(), np.*, "
                     "model.predict, librosa?), and nothing before it can get a gradient.")
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
        if value.dtype.is_floating or value.dtype.is_complex:
            return _Mark(name, "float", value.dtype.name, value)
        return _Mark(name, "integer", value.dtype.name, value,
                     f"{_a(value.dtype.name)} tensor: integers, booleans and strings carry "
                     "no gradient (round, argmax, a cast to int?).")
    raise TypeError(f"mark {name!r}: expected a tensor, a variable, a NumPy array, a Python "
                    f"number or a list / dict of them, got {type(value).__name__}.")


def _watchable(value: Any) -> Any:
    return value.value if isinstance(value, keras.Variable) else value  # the tf.Variable


def _check_sources(sources: Any) -> list[Any]:
    if isinstance(sources, (tf.Variable, keras.Variable)) or tf.is_tensor(sources):
        raise TypeError("sources must be a list; wrap a single one: [w].")
    if isinstance(sources, (dict, str)) or not isinstance(sources, Sequence):
        raise TypeError(f"sources must be a list of variables or tensors, got "
                        f"{type(sources).__name__}.")
    sources = list(sources)
    if not sources:
        raise ValueError(
            "the list of sources is empty. If it came from model.trainable_weights, the model "
            "was not built yet when you read it: a Keras layer creates its weights the first "
            "time it is called. Call it once (or give it a keras.Input) first.")
    for i, s in enumerate(sources):
        if isinstance(s, keras.KerasTensor):
            raise TypeError(f"sources[{i}] is a symbolic KerasTensor (model.inputs?): it never "
                            "holds a value. Watch and pass the tensor you feed the model.")
        if not (isinstance(s, (tf.Variable, keras.Variable)) or tf.is_tensor(s)):
            raise TypeError(f"sources[{i}] is a {type(s).__name__}; expected a tf.Variable, "
                            "a keras.Variable or a tensor (NumPy: tf.convert_to_tensor it and "
                            "probe.watch it inside the block).")
    return sources


def _status(grad: Any) -> LossStatus:
    values = tf.abs(grad.values if isinstance(grad, tf.IndexedSlices) else grad)
    if not bool(tf.reduce_all(tf.math.is_finite(values))):
        return "nonfinite"
    return "zero" if float(tf.reduce_max(values)) == 0.0 else "ok"


def _reach_text(m: MarkResult) -> str:
    if m.loss_gradient == "error":
        return "raises"
    if not m.loss_reaches:
        return "no"
    extra = {"nonfinite": " (NaN/inf)", "zero": " (zeros)"}.get(m.loss_gradient or "", "")
    return "yes" + extra


def _variables_text(reached: tuple[str, ...], total: int) -> str:
    if not reached:
        return "none"
    if len(reached) == total:
        return f"all {total}" if total > 1 else "1 of 1"
    return f"{len(reached)} of {total}: " + ", ".join(reached[:3]) + (
        ", ..." if len(reached) > 3 else "")


def _point(name: str) -> str:
    return {VARIABLES: "the variables", LOSS: "the loss"}.get(name, repr(name))


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _some(names: Sequence[str]) -> str:
    """Up to three names, or how many and the first two."""
    return _names(names) if len(names) <= 3 else f"{len(names)} sources ({_names(names[:2])}, ...)"


def _verb(names: Sequence[str], one: str, many: str) -> str:
    return one if len(names) == 1 else many


def _a(word: str) -> str:
    return f"an {word}" if word.startswith("int") else f"a {word}"


def _error_text(error: Exception) -> str:
    """The exception's type and first line, without TensorFlow's node prefixes."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\].*$", "", text)
    return f"{type(error).__name__} ({text})" if text else type(error).__name__


__all__ = ["LOSS", "VARIABLES", "GradientProbe", "Location", "MarkResult", "ProbeError", "mark"]
