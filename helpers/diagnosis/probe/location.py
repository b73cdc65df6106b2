"""The verdict of ``GradientProbe.locate``: ``Location`` (an explanation, a table and a
picture of the path) and ``MarkResult`` (what was found out about one mark)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from helpers.course import code_html, escape, html_table, status_html
from helpers.diagnosis.probe.marks import LOSS, NO_GRADIENT_KINDS, VARIABLES, Kind
from helpers.diagnosis.why_none import Cause

LossStatus = Literal["ok", "zero", "nonfinite", "none", "error"]


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
    when variables reach no mark, a tensor source's own name when it reaches none, ``LOSS``
    when nothing after the start reaches the loss). ``broken_between``: the first break or
    None; it names the same two points as the text. ``intact``: no source's gradient is None,
    so it always agrees with the gradient report. ``causes``: the cause of each None source.
    ``plot()`` draws the path.
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
    starts: dict[tuple[str, str], str] = field(default_factory=dict)  # breaks from a tensor

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
        return "\n".join("  " * depth + line for depth, line in self._lines())

    def _lines(self) -> list[tuple[int, str]]:
        """The explanation's lines with their depth: 0 the verdict, a break, a note; 1 what
        explains the break above it."""
        if self.intact:
            head = "Gradient path intact: every source gets a gradient."
        elif not self.breaks:
            none = len(self.unreached_variables())
            head = (
                f"No break in the gradient path, but {none} source"
                f"{' gets' if none == 1 else 's get'} None (see the note)."
            )
        elif len(self.breaks) == 1:
            head = (
                f"Gradient path broken between {self._start(self.breaks[0])} and "
                f"{point(self.breaks[0][1])}."
            )
        else:
            head = f"Gradient path broken in {len(self.breaks)} places, in forward order:"
        lines = [(0, head)]
        for number, (start, end) in enumerate(self.breaks, 1):
            if len(self.breaks) > 1:
                lines.append(
                    (0, f"{number}. between {self._start((start, end))} and {point(end)}.")
                )
            lines.extend((1, line) for line in self.details.get((start, end), []))
            where = (
                f"where {point(start)} is used"
                if (start, end) in self.starts
                else "where the variables are used"
                if start == VARIABLES
                else point(start)
            )
            lines.append((1, f"Look at the code between {where} and {point(end)}."))
        lines.extend((0, f"Note: {note}") for note in self.notes)
        return lines

    def _start(self, pair: tuple[str, str]) -> str:
        """The start of a break in words: a mark, a tensor source, or "the variables"."""
        return point(pair[0])

    def table_rows(self) -> list[tuple[str, str, str, str]]:
        total = len(self.variable_names)
        return [
            (
                m.name,
                m.kind_text(),
                "-" if m.kind in NO_GRADIENT_KINDS else _reach_text(m),
                "-" if m.kind in NO_GRADIENT_KINDS else _variables_text(m.variables, total),
            )
            for m in self.marks
        ]

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

    def _repr_html_(self) -> str:
        """The explanation as paragraphs (the verdict in its status colour, what explains each
        break as a list under it) and the marks as a table in the course's one style."""
        parts, items = [], []
        for depth, line in [*self._lines(), (0, "")]:
            if depth:
                items.append(f"<li>{escape(line)}</li>")
                continue
            if items:
                parts.append(f"<ul style='margin:0.2em 0'>{''.join(items)}</ul>")
                items = []
            if line and not parts:
                parts.append(f"<p>{status_html(line, 'ok' if self.intact else 'error')}</p>")
            elif line:
                parts.append(f"<p style='margin:0.3em 0'>{escape(line)}</p>")
        if self.marks:
            rows = [
                [code_html(name), escape(kind), _reach_html(m, reach), escape(variables)]
                for m, (name, kind, reach, variables) in zip(self.marks, self.table_rows())
            ]
            parts.append(
                html_table(
                    ("mark", "kind", "loss reaches it", "variables reaching it"), rows, wrap=[3]
                )
            )
        return "".join(parts)

    def plot(self, ax: Any = None) -> Any:
        """Draw the path: the marks in forward order (columns), which ones each source
        reaches (rows), whether the loss reaches each mark, every break in red, and the
        sources that reach no mark set apart at the bottom. Returns the figure."""
        from helpers.diagnosis.plots import plot_gradient_path

        names = list(self.variable_names)
        reaches = [[n in m.variables for m in self.marks] for n in names]
        return plot_gradient_path(
            self.names,
            names,
            reaches,
            [m.loss_reaches for m in self.marks],
            list(self.loss_reaches_variables),
            [(VARIABLES if pair in self.starts else pair[0], pair[1]) for pair in self.breaks],
            passes_no_gradient=[m.kind in NO_GRADIENT_KINDS for m in self.marks],
            start=VARIABLES,
            end=LOSS,
            ax=ax,
        )


def _reach_text(m: MarkResult) -> str:
    if m.loss_gradient == "error":
        return "raises"
    if not m.loss_reaches:
        return "no"
    extra = {"nonfinite": " (NaN/inf)", "zero": " (zeros)"}.get(m.loss_gradient or "", "")
    return "yes" + extra


def _reach_html(m: MarkResult, text: str) -> str:
    """The "loss reaches it" cell, in the colour of the gradient the loss sends there."""
    if text == "-":
        return text
    status = (
        "error"
        if m.loss_gradient == "error"
        else "none"
        if not m.loss_reaches
        else m.loss_gradient or "ok"
    )
    return status_html(text, status)


def _variables_text(reached: tuple[str, ...], total: int) -> str:
    if not reached:
        return "none"
    if len(reached) == total:
        return f"all {total}" if total > 1 else "1 of 1"
    return (
        f"{len(reached)} of {total}: "
        + ", ".join(reached[:3])
        + (", ..." if len(reached) > 3 else "")
    )


def point(name: str) -> str:
    """A mark's name as the explanation prints it; the two ends of the path in words."""
    return {VARIABLES: "the variables", LOSS: "the loss"}.get(name, repr(name))


def quoted(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def some(names: Sequence[str], noun: str = "sources") -> str:
    """Up to three names, or how many and the first two."""
    return quoted(names) if len(names) <= 3 else f"{len(names)} {noun} ({quoted(names[:2])}, ...)"


def verb(names: Sequence[str], one: str, many: str) -> str:
    return one if len(names) == 1 else many


# -- the words of the explanation -------------------------------------------------------------
CAUSE_TEXT = {
    "unread": "never read inside the `with` block (computed in build() or __init__, or the "
    "model ran before the block?): the tape never saw a read. Compute from the "
    "variables inside the block.",
    "unwatched": "a tensor the tape never watched: call probe.watch(x) inside the block, "
    "before x is used (if it was a tf.Variable, `x = x + 1` replaced it with a "
    "tensor: use x.assign_add).",
    "integer": "an integer dtype: integers have no gradient (ask for the float tensor they "
    "index, e.g. the embeddings).",
}
UNSEEN = (  # a cut the probe saw nothing of, at a value nothing recorded before reaches
    "The probe saw no conversion here and cannot tell what cut the path: a rounding, a cast "
    "to an integer, a constant, a custom gradient, or code that left TensorFlow (NumPy, SciPy) "
    "in a way it cannot see."
)
WALL_TEXT = {  # a cut the probe saw no conversion at, but one of these calls in
    "tf.stop_gradient()": "tf.stop_gradient() ran here: it passes the value on and no gradient "
    "back (remove it, unless freezing what comes before it is the point).",
    "tf.cond()": "tf.cond() ran here: only the branch that ran is recorded, so a branch that "
    "returns a constant (or anything not computed from the sources) cuts the path.",
}
LossKind = Literal["", "integer", "numpy", "python", "before", "after"]


@dataclass(frozen=True)
class Facts:
    """What the words of a verdict draw on besides the marks' results.

    ``causes``: of the None sources. ``exits``: where a source left the tape (a conversion,
    an assignment, or the mark made right after it); ``exit_kinds``: what each is, a method
    (``conversion``: float(), .numpy()), a library ``call`` (np.asarray(), lfilter()) or an
    ``assignment``. ``aliases``: the marks that are a source itself (mark -> source).
    ``loss_kind``, ``loss_note``, ``loss_subject``: what the loss is ("The loss is a Python
    float, not a tensor"). ``main_error``: what ``tape.gradient(loss, sources)`` raised.
    ``anew``: the ends of breaks that nothing recorded before them reaches (made from a
    constant, a NumPy array, or behind a cut): where a conversion the probe could not see
    may lie. ``walls``: each ``tf.stop_gradient`` / ``tf.cond`` call, with how many marks
    were made before it."""

    causes: dict[str, Cause]
    results: list[MarkResult]
    exits: dict[str, str] = field(default_factory=dict)
    exit_kinds: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    loss_kind: LossKind = ""
    loss_note: str = ""
    loss_subject: str = ""
    main_error: str = ""
    anew: frozenset[str] = frozenset()
    walls: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class _Said:
    """What one break has to say, by cause (each cause is said in one line)."""

    integer_sources: list[str]
    integer_marks: list[MarkResult]
    left: dict[str, str]  # source -> where it left TensorFlow
    out_marks: list[MarkResult]  # NumPy / Python marks
    assigned: dict[str, str]  # source -> the assignment it went through
    variable_marks: list[MarkResult]
    errors: list[str]

    def explains(self) -> bool:
        """Does something the probe saw explain the cut (a source's own cause aside)?"""
        found = (self.integer_marks, self.left, self.out_marks, self.assigned)
        return any((*found, self.variable_marks, self.errors))


def said(
    pair: tuple[str, str], sources: list[str], facts: Facts, *, from_source: bool = False
) -> _Said:
    """What lies in one break: its sources' causes and exits, and the marks from its start
    to its end (from the first mark when it starts at the sources)."""
    start, end = pair
    names = [r.name for r in facts.results]
    first = names.index(start) if start in names and not from_source else 0
    last = names.index(end) + 1 if end in names else len(names)
    marks = facts.results[first:last]
    integer = [s for s in sources if facts.causes[s] == "integer"]
    exits = {s: facts.exits[s] for s in sources if s in facts.exits}
    assigned = {s: label for s, label in exits.items() if _assignment(label, facts)}
    return _Said(
        integer,
        [
            r
            for r in marks  # not the integer source itself, marked
            if r.kind == "integer"
            and r.name not in integer
            and facts.aliases.get(r.name) not in integer
        ],
        {s: label for s, label in exits.items() if s not in assigned},
        [r for r in marks if r.kind in ("numpy", "python")],
        assigned,
        [r for r in marks if r.kind == "variable"],
        list(dict.fromkeys(e for r in marks for e in r.errors)),
    )


def _assignment(label: str, facts: Facts) -> bool:
    return facts.exit_kinds.get(label) == "assignment"


def break_lines(
    pair: tuple[str, str],
    sources: list[str],
    facts: Facts,
    *,
    from_source: bool = False,
    with_loss: bool = False,
    with_error: bool = False,
) -> list[str]:
    """What explains one break: the causes of its sources, what the marks around it show.
    One line per cause. ``from_source``: the break starts at a tensor source (its name);
    ``with_loss`` / ``with_error``: this break says what the loss is / what
    ``tape.gradient(loss, sources)`` itself raised."""
    found = said(pair, sources, facts, from_source=from_source)
    loss_int = with_loss and facts.loss_kind == "integer"
    loss_out = with_loss and facts.loss_kind in ("numpy", "python")
    lines = []
    for cause in ("unread", "unwatched"):
        which = [s for s in sources if facts.causes[s] == cause]
        if which:
            lines.append(f"{some(which)}: {CAUSE_TEXT[cause]}")
    if found.integer_sources:
        lines.append(_integer_line(found, loss_int, facts))
    if found.left:
        lines.append(_left_line(found, loss_out, facts))
    if found.assigned and not found.variable_marks:
        lines.append(_assigned_line(found))
    lines += _cut_lines(pair, sources, facts, from_source)
    if found.integer_marks and not found.integer_sources:
        lines.append(_integer_line(found, loss_int, facts))
    if found.out_marks and not found.left:
        lines.append(_left_line(found, loss_out, facts))
    if found.variable_marks:
        lines.append(_assigned_line(found))
    for error in found.errors:  # the same error as tape.gradient(loss, sources): said once
        also = ", so tape.gradient(loss, sources) itself raises"
        also = also if with_error and error == facts.main_error else ""
        lines.append(
            f"An op between these marks has no usable gradient: tape.gradient raises {error}{also}."
        )
    if with_error and facts.main_error not in found.errors:
        lines.append(main_error_note(facts.main_error))
    cut = [s for s in sources if facts.causes[s] == "cut" and s not in facts.exits]
    by_loss = bool(facts.loss_kind) and (with_loss or pair[1] == LOSS)  # what the loss is
    unseen = pair[1] in facts.anew and not found.explains()
    if cut and unseen and not by_loss and not with_error:
        walls = walls_in(pair, facts)
        lines += [WALL_TEXT[label] for label in walls] or [UNSEEN]
    if with_loss and not (found.integer_sources or found.integer_marks) and loss_int:
        lines.append(facts.loss_note)
    if with_loss and not (found.left or found.out_marks) and loss_out:
        lines.append(facts.loss_note)
    if with_loss and facts.loss_kind in ("before", "after"):
        lines.append(facts.loss_note)
    return lines


def walls_in(pair: tuple[str, str], facts: Facts) -> list[str]:
    """The walls (``tf.stop_gradient()``, ``tf.cond()``) called between the two ends of a
    break, each named once: after its start mark and before its end mark."""
    names = [r.name for r in facts.results]
    start, end = pair
    first = names.index(start) + 1 if start in names else 0
    last = names.index(end) if end in names else len(names)
    return list(dict.fromkeys(label for label, made in facts.walls if first <= made <= last))


def main_error_note(error: str) -> str:
    return f"tape.gradient(loss, sources) itself raises {error}."


def _cut_lines(
    pair: tuple[str, str], sources: list[str], facts: Facts, from_source: bool
) -> list[str]:
    """Where the cut sources go, and what the marks at both ends show."""
    start, end = pair
    results = facts.results
    cut = [s for s in sources if facts.causes[s] == "cut" and s not in facts.exits]
    if start == VARIABLES or from_source:
        if not cut:
            return []
        reach = verb(cut, "reaches", "reach")
        return [f"{some(cut)} {reach} no mark: the path breaks before {point(end)}."]
    reaching = [s for s in cut or sources if s != start]  # a mark is no source of itself
    lines = [
        f"{some(reaching)} {verb(reaching, 'reaches', 'reach')} {start!r}; the loss does not "
        "reach it."
        if reaching
        else f"The loss does not reach {start!r}."
    ]
    end_result = next((r for r in results if r.name == end), None)
    start_result = next(r for r in results if r.name == start)
    if start_result.loss_gradient == "error":
        pass  # the path is there, but its gradient raises: said below
    elif end_result is None:
        lines.append(f"The loss reaches no mark that depends on {start!r}.")
    else:
        lines.append(
            f"{end!r} does not depend on {start!r} through the tape"
            + ("; the loss reaches it." if end_result.loss_reaches else ".")
        )
    return lines


def _integer_line(found: _Said, loss_int: bool, facts: Facts) -> str:
    """Integer sources, integer marks, an integer loss: one line."""
    others = [repr(r.name) for r in found.integer_marks] + (["the loss"] if loss_int else [])
    if found.integer_sources:
        line = f"{some(found.integer_sources)}: {CAUSE_TEXT['integer']}"
        if not others:
            return line
        also = f"{_and(others)} {verb(others, 'is', 'are')} integer too."
        return f"{line} {also[0].upper()}{also[1:]}"
    if len(others) == 1 and not loss_int:
        return f"{found.integer_marks[0].name!r} is {found.integer_marks[0].note}"
    if not found.integer_marks:
        return facts.loss_note
    dtypes = " / ".join(dict.fromkeys(r.dtype for r in found.integer_marks))
    return (
        f"{_and(others)} are {dtypes} tensors: integers, booleans and strings carry no "
        "gradient (round, argmax, a cast to int?)."
    )


def _sources_by_label(where: dict[str, str]) -> dict[str, list[str]]:
    """``{source: label}`` turned round: the sources at each label, in order."""
    by_label: dict[str, list[str]] = {}
    for source, label in where.items():
        by_label.setdefault(label, []).append(source)
    return by_label


def _left_line(found: _Said, loss_out: bool, facts: Facts) -> str:
    """Conversions to Python / NumPy, NumPy and Python marks, a NumPy / Python loss: one
    line."""
    lead = f"{facts.loss_subject}, and " if loss_out else ""
    marks = found.out_marks
    if found.left:
        by_label = _sources_by_label(found.left)
        where = "; ".join(
            f"{some(which)} {verb(which, 'leaves', 'leave')} TensorFlow at {point(label)}"
            for label, which in by_label.items()
        )
        call = any(facts.exit_kinds.get(label) == "call" for label in by_label)
        return (
            f"{lead}{where} inside the block: "
            + (f"{_kinds(marks)}, and " if marks else "")
            + "a Python or NumPy number carries no gradient. Keep it a tensor "
            + (
                "(TensorFlow ops, not NumPy, SciPy, librosa or model.predict)."
                if call
                else "(drop float() / int() / .numpy())."
            )
        )
    if not marks:
        return facts.loss_note
    if len(marks) == 1:
        return f"{lead}{marks[0].name!r} is {marks[0].note}"
    return f"{lead}{_kinds(marks)}: {marks[0].note.partition(': ')[2]}"


def _assigned_line(found: _Said) -> str:
    """Values assigned to variables, variable marks: one line."""
    marks = found.variable_marks
    if len(marks) == 1:
        return f"{marks[0].name!r} is {marks[0].note}"
    if marks:
        return (
            f"{some([r.name for r in marks], 'marks')} are variables: the tape sees reads of "
            "them, never how their values were computed (assign / assign_add cut the path). "
            "Mark the tensors you assign instead."
        )
    by_label = _sources_by_label(found.assigned)
    where = "; ".join(
        f"{some(which)} {verb(which, 'reaches', 'reach')} the loss only through {point(label)}"
        for label, which in by_label.items()
    )
    return (
        f"{where} inside the block: the tape sees reads of a variable, never how its value "
        "was computed (assign / assign_add cut the path). Use the tensor you assign instead."
    )


def _kinds(marks: list[MarkResult]) -> str:
    """Which marks are NumPy arrays and which Python numbers, in words."""
    parts = []
    for kind, one, many in (
        ("numpy", "a NumPy array", "NumPy arrays"),
        ("python", "a Python number", "Python numbers"),
    ):
        which = [r.name for r in marks if r.kind == kind]
        if which:
            parts.append(f"{some(which, 'marks')} {verb(which, 'is ' + one, 'are ' + many)}")
    return " and ".join(parts)


def _and(items: list[str]) -> str:
    """The items joined by commas and "and"; more than three: how many and the first two."""
    if len(items) > 3:
        return f"{len(items)} of them ({', '.join(items[:2])}, ...)"
    return " and ".join([", ".join(items[:-1]), items[-1]]) if len(items) > 1 else items[0]


def notes(
    results: list[MarkResult],
    names: list[str],
    reached: list[bool],
    causes: dict[str, Cause],
    loss_note: str,
    traced: bool,
    once: Sequence[str] = (),
) -> list[str]:
    """The notes under the verdict; each is printed only when what it says is true.
    ``loss_note``: what the loss is (or what tape.gradient(loss, sources) itself raised),
    when no break says it."""
    found = []
    if loss_note:
        found.append(loss_note)
    frozen = [n for n, c in causes.items() if c == "untrainable"]
    if frozen:
        found.append(
            f"{quoted(frozen)} {verb(frozen, 'is', 'are')} not trainable: the tape "
            "does not watch such variables, so their gradient is None by design "
            "(BatchNorm moving statistics, a dropout seed). Pass "
            "model.trainable_variables; to see one's gradient anyway, probe.watch(...) "
            "it inside the block."
        )
    fine = {n for n, r in zip(names, reached) if r}
    side = [
        r.name
        for r in results
        if r.kind in ("float", "variable")
        and not r.loss_reaches
        and r.variables
        and set(r.variables) <= fine
        and r.loss_gradient != "error"
    ]
    if side:
        found.append(
            f"the loss does not read {quoted(side)}, but every source reaching it "
            "gets a gradient: a side branch, not a break (a Keras 3 loss, for one, "
            "computes from the logits behind a softmax or sigmoid output)."
        )
    early = [r.name for r in results if r.kind == "float" and r.note]
    if early and "unread" in causes.values():  # evidence only for variables never read
        found.append(
            f"{quoted(early)} was computed before the `with` block began: the "
            "tape never saw how it was made."
        )
    for status, words in (
        ("zero", "its gradient there is all zeros"),
        ("nonfinite", "its gradient there is NaN or inf"),
    ):
        marked = [r.name for r in results if r.loss_gradient == status]
        if marked:
            found.append(f"the loss reaches {quoted(marked)}, but {words}.")
    if once:
        found.append(
            f"a tf.py_function lies after {quoted(once)}: TensorFlow computes its "
            "gradient only once, so the probe knows the loss reaches "
            f"{verb(once, 'that mark', 'those marks')} but not the values there."
        )
    if traced:
        found.append(
            "located while tracing a tf.function: None or not None is known, "
            "zero / NaN values are not."
        )
    return found
