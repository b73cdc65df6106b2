"""The core of ``GradientProbe.locate``: ask the tapes, give each None source a cause, and
find every cut between two marks.

Every gradient is asked for once (``Gradients`` caches them, for ``locate``, ``report`` and
``gradient`` alike). A ``tf.py_function``'s gradient can be computed only once per forward
pass, so the first question about the loss, whichever method asks it, is asked for every
source and mark at once, and later questions about the loss are answered from it: the
verdict does not depend on the order of the calls. A later question that runs into a spent
``py_function`` (d loss / d mark on a mark's own tape, d mark / d sources after it) is
answered "connected, values unknown" rather than crashing.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.diagnosis.probe.exits import METHODS, Exit
from helpers.diagnosis.probe.internals import creation_order
from helpers.diagnosis.probe.location import (
    Facts,
    Location,
    LossKind,
    LossStatus,
    MarkResult,
    break_lines,
    main_error_note,
    notes,
    said,
)
from helpers.diagnosis.probe.marks import (
    LOSS,
    NO_GRADIENT_KINDS,
    VARIABLES,
    Mark,
    a_or_an,
    error_text,
    is_plain_tensor,
    watchable,
)
from helpers.diagnosis.report import gradient_report, variable_name
from helpers.diagnosis.why_none import Cause, is_variable, why_none

SPENT = "spent py_function"  # a gradient that ran into a tf.py_function already used


class Gradients:
    """``tape.gradient`` asked once per (tape, target, source); an op without a usable
    gradient becomes a message (and the exception, for ``probe.gradient`` to raise again),
    not a crash.

    The first question about a (tape, target) pair also asks for ``extra`` sources (the
    probe passes its marks and what its tape watched), so a later question about the same
    target with other sources finds its answer here. A variable the tape never watched gets
    None and the first question's error without asking again: asking would run the
    backward pass again, into a spent ``tf.py_function``."""

    def __init__(self):
        self._cache: dict[tuple[int, int, int], tuple[Any, str, Exception | None]] = {}
        self._first: dict[tuple[int, int], tuple[str, Exception | None]] = {}
        self._keep: list[Any] = []  # keeps the keys' objects alive, so ids stay unique

    def of(
        self, tape: tf.GradientTape, target: Any, sources: Sequence[Any], extra: Sequence[Any] = ()
    ) -> tuple[list[Any], str]:
        grads, error, _ = self.answer(tape, target, sources, extra)
        return grads, error

    def answer(
        self, tape: tf.GradientTape, target: Any, sources: Sequence[Any], extra: Sequence[Any] = ()
    ) -> tuple[list[Any], str, Exception | None]:
        """The gradients, the first error's text ("" if none) and that error."""
        keys = [_key(tape, target, s) for s in sources]
        pair = (id(tape), id(target))
        missing = _unique(s for s, k in zip(sources, keys) if k not in self._cache)
        if missing and pair in self._first:
            watched = {id(v) for v in tape.watched_variables()}
            for s in missing:
                if is_variable(s) and id(watchable(s)) not in watched:
                    self._cache[_key(tape, target, s)] = (None, *self._first[pair])
            missing = [s for s in missing if _key(tape, target, s) not in self._cache]
        elif missing:
            new = [e for e in extra if _key(tape, target, e) not in self._cache]
            missing = _unique([*missing, *new])
        if missing:
            self._ask(tape, target, missing)
        answers = [self._cache[k] for k in keys]
        error = next((e for _, e, _ in answers if e), "")
        raised = next((x for _, _, x in answers if x is not None), None)
        return [g for g, _, _ in answers], error, raised

    def _ask(self, tape: tf.GradientTape, target: Any, sources: list[Any]) -> None:
        self._keep += [tape, target, *sources]
        raised: Exception | None = None
        try:
            grads, error = list(tape.gradient(target, [watchable(s) for s in sources])), ""
        except (LookupError, tf.errors.InvalidArgumentError, tf.errors.UnknownError) as e:
            spent = "KeyError" in str(e) and "pyfunc" in str(e)
            grads, error, raised = [None] * len(sources), SPENT if spent else error_text(e), e
        for s, g in zip(sources, grads):
            self._cache[_key(tape, target, s)] = (g, error, raised)
        self._first.setdefault((id(tape), id(target)), (error, raised))


def _key(tape: tf.GradientTape, target: Any, source: Any) -> tuple[int, int, int]:
    return (id(tape), id(target), id(watchable(source)))


def _unique(items: Iterable[Any]) -> list[Any]:
    """``items`` without repeats (by what a tape watches for each), in order."""
    seen: set[int] = set()
    found = []
    for item in items:
        if id(watchable(item)) not in seen:
            seen.add(id(watchable(item)))
            found.append(item)
    return found


class Locator:
    """One ``locate`` call on a probe's recording. ``extra``: what the first question about
    the loss also asks for (see ``Gradients``)."""

    def __init__(
        self,
        tape: tf.GradientTape,
        marks: list[Mark],
        watched: set[Any],
        exits: list[Exit],
        eager: bool,
        gradients: Gradients,
        extra: Sequence[Any] = (),
        walls: Sequence[tuple[str, int]] = (),
    ):
        self.tape, self.marks, self.watched = tape, marks, watched
        self.walls = tuple(walls)
        self.exits, self.eager, self.grads = exits, eager, gradients
        self.extra = list(extra)
        self.once: list[str] = []
        self.done: list[MarkResult] = []  # the marks' results so far, in order
        self.main_error = ""  # d loss / d sources raised: a spent py_function is the break
        self.loss: Any = None  # a float tensor to ask about, else None

    def run(
        self,
        loss: Any,
        sources: list[Any],
        names: list[str],
        loss_status: tuple[LossKind, str],
        usable: bool,
    ) -> tuple[Location, list[Any], str]:
        loss_kind, loss_note = loss_status
        grads, error = (
            self.grads.of(self.tape, loss, sources, self.extra)
            if usable
            else ([None] * len(sources), "")
        )
        reached = [g is not None for g in grads]
        self.main_error = error if usable else ""
        self.loss = loss if usable else None
        self.done = []
        for m in self.marks:
            self.done.append(self.mark_result(m, loss if usable else None, sources, names))
        results = self.done
        causes = {n: self.cause(s) for n, s, r in zip(names, sources, reached) if not r}
        exits, kinds = self.exit_labels(loss if usable else None, sources, names, causes)
        tensors = [n for n, s in zip(names, sources) if is_plain_tensor(s)]
        facts = Facts(
            causes,
            results,
            exits,
            kinds,
            {m.name: n for m in self.marks for n, s in zip(names, sources) if m.value is s},
            loss_kind,
            loss_note,
            loss_note.partition(":")[0],
            error,
            walls=self.walls,
        )
        breaks, details, starts, home = self.breaks(facts, tensors)
        if error:
            loss_note = loss_note or main_error_note(error)
        unsaid = "" if home else loss_note
        found = notes(results, names, reached, causes, unsaid, not self.eager, self.once)
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
        self, facts: Facts, tensors: list[str]
    ) -> tuple[
        list[tuple[str, str]],
        dict[tuple[str, str], list[str]],
        dict[tuple[str, str], str],
        bool,
    ]:
        """Every cut between two points, in forward order, with what explains it; the breaks
        that start at a tensor source; whether a break says what the loss is (or what
        ``tape.gradient(loss, sources)`` raised), else a note does."""
        results, causes, exits = facts.results, facts.causes, facts.exits
        floats = [i for i, r in enumerate(results) if r.kind not in NO_GRADIENT_KINDS]
        groups: dict[tuple[str, str], list[str]] = {}
        starts: dict[tuple[str, str], str] = {}
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
            first = source if source in tensors else VARIABLES  # a tensor source: its name
            if source in exits and not reached:  # it left the tape before any mark
                key = (first, exits[source])
            elif not reached:  # it reaches no mark: the path breaks before its layer's mark
                on_path = [
                    i for i in floats if results[i].loss_reaches and results[i].variables
                ]  # or else before the first on the path
                down = (
                    _owners(source, results, floats)
                    or on_path
                    or [i for i in floats if results[i].loss_reaches]
                )
                key = (first, results[down[0]].name if down else LOSS)
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
            if first != VARIABLES and not reached:
                starts[key] = source
        points = [VARIABLES, *tensors, *(m.name for m in self.marks), *exits.values(), LOSS]
        order = {name: points.index(name) for name in points}  # a mark before its exit label
        pairs = sorted(groups, key=lambda pair: (order[pair[0]], order[pair[1]]))
        facts = replace(facts, anew=frozenset(end for _, end in pairs if self.anew(end)))
        loss_home = _loss_home(pairs, groups, starts, facts)
        error_home = _error_home(pairs, groups, starts, facts)
        details = {
            pair: break_lines(
                pair,
                groups[pair],
                facts,
                from_source=pair in starts,
                with_loss=pair == loss_home,
                with_error=pair == error_home,
            )
            for pair in pairs
        }
        home = loss_home is not None if facts.loss_kind else error_home is not None
        return pairs, details, starts, home

    def anew(self, end: str) -> bool:
        """Is ``end`` (a float mark, or the loss) reached by nothing the tape recorded before
        it (no source, mark or watched variable)? Then it was made anew: from a constant, a
        NumPy array, or behind a cut such as tf.stop_gradient."""
        target = (
            self.loss
            if end == LOSS
            else next((m.value for m in self.marks if m.name == end and m.kind == "float"), None)
        )
        if target is None:
            return False
        others = [e for e in self.extra if watchable(e) is not watchable(target)]
        grads, error = self.grads.of(self.tape, target, others)
        return not error and all(g is None for g in grads)

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
        self, loss: Any, sources: list[Any], names: list[str], causes: dict[str, Cause]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """For each cut source that reaches a value that left the tape inside the block (a
        conversion to a Python / NumPy number, or an assignment to a variable the loss reads
        afterwards), after the last mark it reaches, the first such place (or the Python /
        NumPy / variable mark made right after it); and what each is: a ``conversion``
        method (float(), .numpy()), a library ``call`` (np.asarray(), lfilter()) or an
        ``assignment``. Not when tape.gradient itself raised."""
        found: dict[str, str] = {}
        kinds: dict[str, str] = {}
        results = self.done
        floats = [i for i, r in enumerate(results) if r.kind not in NO_GRADIENT_KINDS]
        last = {
            n: max([i for i in floats if n in results[i].variables], default=-1) for n in names
        }  # a conversion before it is a side read, not the cut
        numbers = {"conversion": 0, "assignment": 0}
        for e in self.exits:
            kind = "conversion" if e.variable is None else "assignment"
            numbers[kind] += 1
            todo = [
                (n, s)
                for n, s in zip(names, sources)
                if causes.get(n) == "cut"
                and n not in found
                and e.position > last[n]
                and not self.main_error
            ]
            if not todo or (kind == "assignment" and not self.reads(loss, e)):
                continue
            if is_variable(e.value):  # float(variable): the variable itself left
                grads = [True if watchable(s) is watchable(e.value) else None for _, s in todo]
            else:
                grads = self.grads.of(self.tape, e.value, [s for _, s in todo])[0]
            after = [
                m.name
                for m in self.marks[e.position : e.position + 1]
                if (m.kind in ("python", "numpy") and kind == "conversion")
                or (m.kind == "variable" and watchable(m.value) is watchable(e.variable))
            ]
            label = (
                after[0]
                if after
                else f"{e.label} (conversion {numbers[kind]})"
                if kind == "conversion"
                else f"{_short(e.variable)}.{e.label}() (assignment {numbers[kind]})"
            )
            for (n, _), g in zip(todo, grads):
                if g is not None:
                    found[n] = label
                    method = e.label in METHODS
                    kinds[label] = "call" if kind == "conversion" and not method else kind
        return found, kinds

    def reads(self, loss: Any, e: Exit) -> bool:
        """Does the loss read the variable assigned at ``e``, after the assignment?"""
        if loss is None or e.tape is None:
            return False
        grads, error = self.grads.of(e.tape, loss, [e.variable])
        return grads[0] is not None or bool(error)

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
                status = _status(grad, m) if self.eager else None
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


def _loss_home(
    pairs: list[tuple[str, str]],
    groups: dict[tuple[str, str], list[str]],
    starts: dict[tuple[str, str], str],
    facts: Facts,
) -> tuple[str, str] | None:
    """The break that says what the loss is: one that ends at the loss, the one that already
    names that cause first (an integer loss with integer sources or marks, a NumPy / Python
    loss with a conversion: one line per cause); for an integer or a NumPy / Python loss
    and no break at the loss, the first that names that cause; else none (a note says it)."""
    if not facts.loss_kind:
        return None
    at_loss = [pair for pair in pairs if pair[1] == LOSS]
    if facts.loss_kind in ("before", "after"):
        return next(iter(at_loss), None)

    def names_it(pair: tuple[str, str]) -> bool:
        found = said(pair, groups[pair], facts, from_source=pair in starts)
        if facts.loss_kind == "integer":
            return bool(found.integer_sources or found.integer_marks)
        return bool(found.left or found.out_marks)

    same = [pair for pair in pairs if names_it(pair)]
    return next((p for p in at_loss if p in same), None) or next(iter(at_loss + same), None)


def _error_home(
    pairs: list[tuple[str, str]],
    groups: dict[tuple[str, str], list[str]],
    starts: dict[tuple[str, str], str],
    facts: Facts,
) -> tuple[str, str] | None:
    """The break that says what ``tape.gradient(loss, sources)`` itself raised: the first
    whose marks show the same error, else the one that ends at the loss, else none (a note
    says it). None when the loss is what the note is about."""
    if not facts.main_error or facts.loss_kind:
        return None
    for pair in pairs:
        if facts.main_error in said(pair, groups[pair], facts, from_source=pair in starts).errors:
            return pair
    return next((pair for pair in pairs if pair[1] == LOSS), None)


def _short(variable: Any) -> str:
    """A variable's own name, without its layer's path or ``:0``."""
    return variable_name(variable).rpartition("/")[2]


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


def loss_status(loss: Any, eager: bool, span: Sequence[int | None]) -> tuple[LossKind, str]:
    """Why no gradient can reach ``loss`` at all: what it is (integer, NumPy, Python, made
    before or after the block) and the note that says so; ``("", "")`` when it is a float
    tensor made inside the block. A TypeError for what is no loss."""
    if loss is None:
        raise TypeError(
            "loss is None; expected the loss tensor computed inside the "
            "`with GradientProbe() as probe:` block."
        )
    if isinstance(loss, (tf.Variable, keras.Variable)):
        raise TypeError("loss is a variable; expected the loss tensor computed from it.")
    if isinstance(loss, (np.ndarray, np.generic)):
        return "numpy", (
            f"The loss is a NumPy {np.asarray(loss).dtype.name}, not a tensor: it was "
            "computed outside TensorFlow, so no gradient can reach it."
        )
    if isinstance(loss, numbers.Number):
        return "python", (
            f"The loss is a Python {type(loss).__name__}, not a tensor: it was "
            "computed outside TensorFlow (float(), .item()?)."
        )
    if not tf.is_tensor(loss) or isinstance(loss, keras.KerasTensor):
        raise TypeError(f"loss must be a tensor, got {type(loss).__name__}.")
    if not (loss.dtype.is_floating or loss.dtype.is_complex):
        return "integer", (
            f"The loss is {a_or_an(loss.dtype.name)} tensor: integers carry no gradient."
        )
    made = creation_order(loss) if eager else None
    begun, ended = span
    if made is not None and ended is not None and made > ended:
        return "after", (
            "The loss was computed after the `with` block ended, when the tape had "
            "stopped recording: compute it inside the block."
        )
    if made is not None and begun is not None and made < begun:
        return "before", (
            "The loss was computed before the `with` block began, when the tape was "
            "not recording yet: compute it inside the block."
        )
    return "", ""


def loss_note(loss: Any, eager: bool, span: Sequence[int | None]) -> str:
    """The note of ``loss_status``: why no gradient can reach ``loss`` ("" when it can)."""
    return loss_status(loss, eager, span)[1]


def _status(grad: Any, mark: Mark) -> LossStatus:
    """The loss's gradient at a mark, as the gradient report gives it (one implementation)."""
    return gradient_report([grad], [mark.value], [mark.name]).statuses[0]
