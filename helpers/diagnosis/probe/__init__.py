"""Find the place where the gradient path breaks.

``tape.gradient`` says *that* a gradient is None; ``GradientProbe`` says *where*. Use it like
a ``tf.GradientTape``, marking a few points (``probe.mark("frames", model(noisy))``) or every
Keras layer's output (``probe.mark_layers(model)``), then ``probe.locate(loss, sources)``.
``locate`` asks once for every source's gradient; each None source gets a cause
(``helpers.diagnosis.why_none``), and each cut is found from the marks in the order they were made:
from the last mark the source reaches and the loss does not, to the first later mark that
does not depend on it (``.breaks``, ``.broken_between``, ``.plot()``). ``locate``, ``report``
and ``gradient`` share their answers, so no call changes what a later one says (a
``tf.py_function``'s gradient can be computed only once). The module-level
``mark`` records into the probe that is recording and does nothing otherwise. Inside
``tf.function`` it works when the block, the marks and ``locate`` run in one trace.
Parts: ``marks`` (what a mark is), ``exits`` (conversions to Python / NumPy, assignments),
``keras_marks`` (auto-marks), ``location`` (the verdict, its words and picture), ``locate``
(the search), ``internals`` (every private or patched API touched, with the versions each was
verified on; ``GradientProbe()`` warns on others).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import keras
import tensorflow as tf

from helpers.diagnosis.probe.exits import Exit, noting_exits
from helpers.diagnosis.probe.internals import check_versions, creation_order
from helpers.diagnosis.probe.keras_marks import marking_layers
from helpers.diagnosis.probe.locate import Gradients, Locator, aside, loss_status, source_names
from helpers.diagnosis.probe.location import Location, MarkResult
from helpers.diagnosis.probe.marks import (
    LOSS,
    VARIABLES,
    ProbeError,
    _active,
    check_same_trace,
    check_sources,
    classify,
    leaves,
    mark,
    require,
    same_trace,
    watch_mark,
    watchable,
)
from helpers.diagnosis.report import GradientReport, gradient_report
from helpers.diagnosis.why_none import is_variable

_not_converted = tf.autograph.experimental.do_not_convert  # keep AutoGraph off the probe


class GradientProbe:
    """A persistent ``tf.GradientTape`` that also remembers named points of the forward pass.

    One probe, one forward pass. Each float mark gets a small tape of its own, opened when
    the mark is made, so ``d loss / d mark`` depends only on what happens after the mark.
    """

    def __init__(self, *, watch_accessed_variables: bool = True):
        check_versions()  # one sentence on a TensorFlow / Keras it was not verified on
        self._tape = tf.GradientTape(
            persistent=True, watch_accessed_variables=watch_accessed_variables
        )
        self._marks: list[Any] = []
        self._watched: set[Any] = set()  # refs of tensors watched through the probe
        self._exits: list[Exit] = []  # conversions to Python / NumPy, assignments
        self._walls: list[tuple[str, int]] = []  # tf.stop_gradient / tf.cond, marks before
        self._state = "new"  # new -> recording -> done
        self._graph: Any = None
        self._eager, self._busy = True, False
        self._span: list[int | None] = [None, None]  # creation counter at enter and exit
        self._stack = contextlib.ExitStack()  # what the block opened, closed at exit
        self._grads = Gradients()  # every gradient asked for, shared by locate/report/gradient

    @_not_converted
    def __enter__(self) -> GradientProbe:
        if self._state != "new":
            raise ProbeError(
                "a GradientProbe records one forward pass; make a new one "
                "(with GradientProbe() as probe:) for the next."
            )
        self._eager = tf.executing_eagerly()
        self._graph = tf.compat.v1.get_default_graph()
        self._span[0] = creation_order() if self._eager else None
        self._tape.__enter__()
        self._stack.enter_context(noting_exits(self._note_exit, self._note_wall))
        self._state = "recording"
        _active.append(self)
        return self

    @_not_converted
    def __exit__(self, *exc_info) -> None:
        self._stack.__exit__(*exc_info)
        for tape in reversed(self._own_tapes()):
            tape.__exit__(*exc_info)
        self._tape.__exit__(*exc_info)
        self._span[1] = creation_order() if self._eager else None
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
        require(self._state, "watch", recording=True)
        for leaf in keras.tree.flatten(value):
            self._tape.watch(watchable(leaf))
            if tf.is_tensor(leaf):
                self._watched.add(watchable(leaf).ref())

    @_not_converted
    def mark_layers(self, model: keras.layers.Layer) -> list[str]:
        """Mark the output of ``model`` and of every layer inside it (nested layers and
        sub-models too) each time it is called in this block, named by its path
        (``denoiser/encoder``). The model is left as it was when the block ends, even on
        error. Returns the layer paths."""
        require(self._state, "mark_layers", recording=True)
        return self._stack.enter_context(marking_layers(self.mark, model, self._elsewhere))

    @_not_converted
    def gradient(self, target: Any, sources: Any, **kwargs: Any) -> Any:
        """``tape.gradient(target, sources, ...)`` on the probe's tape. Eagerly, each
        gradient is computed once and shared with ``report`` and ``locate`` (an error is
        raised again each time), so calling it does not change what they say."""
        require(self._state, "gradient", recording=False)
        flat = keras.tree.flatten(sources)
        zero = kwargs.pop("unconnected_gradients", None) in ("zero", tf.UnconnectedGradients.ZERO)
        shared = (
            self._eager
            and not kwargs
            and tf.is_tensor(target)
            and bool(flat)
            and all(tf.is_tensor(s) or is_variable(s) for s in flat)
        )
        if not shared:
            if zero:
                kwargs["unconnected_gradients"] = tf.UnconnectedGradients.ZERO
            with _paused(self):
                return self._tape.gradient(
                    target, keras.tree.map_structure(watchable, sources), **kwargs
                )
        with _paused(self):
            grads, _, raised = self._grads.answer(self._tape, target, flat, self._extra())
        if raised is not None:
            raise raised.with_traceback(None)
        if zero:
            grads = [tf.zeros_like(watchable(s)) if g is None else g for g, s in zip(grads, flat)]
        return keras.tree.pack_sequence_as(sources, grads)

    @_not_converted
    def report(
        self, loss: Any, sources: Sequence[Any], names: Sequence[str] | None = None
    ) -> GradientReport:
        """The gradient report (``helpers.diagnosis.report``) of ``loss`` for ``sources``."""
        sources = check_sources(sources)
        grads = self.gradient(loss, sources)
        return gradient_report(grads, sources, source_names(self._marks, sources, names))

    @_not_converted
    def mark(self, name: str, value: Any) -> Any:
        """Record ``value`` as the point ``name`` of the forward pass and return it unchanged.

        Float tensors are watched. A nested list / dict is marked leaf by leaf, as
        ``name[0]``, ``name['key']``. Mark a tensor right after it is computed.
        """
        require(self._state, "mark", recording=True)
        for leaf_name, leaf in leaves(name, value):
            self._mark_one(leaf_name, leaf)
        return value

    def _mark_one(self, name: str, value: Any) -> None:
        if name in self.marks:
            raise ValueError(
                f"there is already a mark named {name!r}. Each mark needs its "
                f"own name; in a loop use e.g. f'{name}_{{t}}'."
            )
        m = classify(name, value)
        if m.kind in ("float", "variable"):
            check_same_trace(f"probe.mark({name!r}, ...)", self._eager, self._graph)
            watch_mark(m, self._tape, self._watched, self._span[0] if self._eager else None)
        self._marks.append(m)

    @_not_converted
    def locate(
        self, loss: Any, sources: Sequence[Any], names: Sequence[str] | None = None
    ) -> Location:
        """Where the gradient path from ``sources`` (variables or watched tensors) to
        ``loss`` breaks. Returns a ``Location`` that prints as an explanation."""
        require(self._state, "locate", recording=False)
        sources = check_sources(sources)
        names = source_names(self._marks, sources, names)
        status = loss_status(loss, self._eager, self._span)
        usable = status[0] in ("", "before", "after")  # a float tensor
        if usable:
            check_same_trace("probe.locate(loss, ...)", self._eager, self._graph, loss)
        with _paused(self):
            locator = Locator(
                self._tape,
                self._marks,
                self._watched,
                self._exits,
                self._eager,
                self._grads,
                self._extra(),
                self._walls,
            )
            where, _, _ = aside(
                self._eager, lambda: locator.run(loss, sources, names, status, usable)
            )
        return where

    def _extra(self) -> list[Any]:
        """What the first question about a target also asks for: the marks, and every
        variable and tensor the tape watched (see ``locate.Gradients``)."""
        marked = [m.value for m in self._marks if m.kind in ("float", "variable")]
        watched = [ref.deref() for ref in self._watched]
        return [*marked, *self._tape.watched_variables(), *watched]

    def _own_tapes(self) -> list[tf.GradientTape]:
        """The tapes the probe opened besides its own: the marks' and the assignments'."""
        return [t for t in [*(m.tape for m in self._marks), *(e.tape for e in self._exits)] if t]

    def _elsewhere(self) -> bool:
        """The probe's own work, or a call in another trace (model.predict, a tf.function
        the block calls): auto-marks skip those."""
        return self._busy or not same_trace(self._eager, self._graph)

    def _note_wall(self, label: str) -> None:
        """A ``tf.stop_gradient`` or ``tf.cond`` call, after as many marks as made so far."""
        if not self._busy and self.recording and not self._elsewhere():
            self._walls.append((label, len(self._marks)))

    def _note_exit(self, label: str, value: Any, variable: Any = None) -> None:
        """A conversion (``value``: the tensor or variable converted) or an assignment
        (``value`` written into ``variable``, watched from now on by a tape of its own)."""
        if self._busy or not self.recording or self._elsewhere():
            return
        tape = None
        if variable is not None:
            tape = tf.GradientTape(persistent=True, watch_accessed_variables=False)
            tape.__enter__()
            tape.watch(watchable(variable))
        self._exits.append(Exit(label, value, len(self._marks), variable, tape))


@contextlib.contextmanager
def _paused(probe: GradientProbe) -> Iterator[None]:
    """Keep the probe's own gradient computations off every tape and out of the marks."""
    with contextlib.ExitStack() as stack:
        if probe.recording:
            for tape in [probe.tape, *probe._own_tapes()]:
                stack.enter_context(tape.stop_recording())
        probe._busy = True
        try:
            yield
        finally:
            probe._busy = False


__all__ = ["LOSS", "VARIABLES", "GradientProbe", "Location", "MarkResult", "ProbeError", "mark"]
