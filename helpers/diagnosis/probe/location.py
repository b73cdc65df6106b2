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
    when the sources reach no mark, ``LOSS`` when nothing after the start reaches the loss).
    ``broken_between``: the first break or None. ``intact``: no source's gradient is None,
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
    starts: dict[tuple[str, str], str] = field(default_factory=dict)  # tensor sources, named

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
            named = self.starts.get((start, end), "")
            verb_ = "are" if "," in named else "is"
            where = (
                point(start)
                if start != VARIABLES
                else f"where {named} {verb_} used"
                if named
                else "where the variables are used"
            )
            lines.append((1, f"Look at the code between {where} and {point(end)}."))
        lines.extend((0, f"Note: {note}") for note in self.notes)
        return lines

    def _start(self, pair: tuple[str, str]) -> str:
        """The start of a break in words; tensor sources by their names, not "the variables"."""
        return self.starts.get(pair, point(pair[0]))

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
            self.breaks,
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


def some(names: Sequence[str]) -> str:
    """Up to three names, or how many and the first two."""
    return quoted(names) if len(names) <= 3 else f"{len(names)} sources ({quoted(names[:2])}, ...)"


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


def break_lines(
    pair: tuple[str, str],
    sources: list[str],
    causes: dict[str, Cause],
    results: list[MarkResult],
    loss_note: str,
    exits: dict[str, str],
) -> list[str]:
    """What explains one break: the causes of its sources, what the marks around it show.
    ``exits``: for a source that left TensorFlow as a Python / NumPy number, where."""
    start, end = pair
    lines = []
    for cause in ("unread", "unwatched", "integer"):
        which = [s for s in sources if causes[s] == cause]
        if which:
            lines.append(f"{some(which)}: {CAUSE_TEXT[cause]}")
    left = [s for s in sources if s in exits]
    for label in dict.fromkeys(exits[s] for s in left):
        which = [s for s in left if exits[s] == label]
        lines.append(
            f"{some(which)} {verb(which, 'leaves', 'leave')} TensorFlow at {point(label)} "
            "inside the block: a Python or NumPy number carries no gradient. Keep "
            "it a tensor (drop float() / int() / .numpy())."
        )
    cut = [s for s in sources if causes[s] == "cut" and s not in exits]
    if start == VARIABLES and cut:
        lines.append(
            f"{some(cut)} {verb(cut, 'reaches', 'reach')} no mark: the path "
            f"breaks before {point(end)}."
        )
    elif start != VARIABLES:
        lines.append(
            f"{some(cut or sources)} {verb(cut or sources, 'reaches', 'reach')} "
            f"{start!r}; the loss does not reach it."
        )
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
    names = [r.name for r in results]
    first = names.index(start) if start in names else 0
    last = names.index(end) + 1 if end in names else len(names)
    errors = dict.fromkeys(e for r in results[first:last] for e in r.errors)
    lines += [
        f"{r.name!r} is {r.note}" for r in results[first:last] if r.note and r.kind != "float"
    ]
    lines += [
        f"An op between these marks has no usable gradient: tape.gradient raises {e}."
        for e in errors
    ]
    if end == LOSS and loss_note:
        lines.append(loss_note)
    return lines


def notes(
    results: list[MarkResult],
    names: list[str],
    reached: list[bool],
    causes: dict[str, Cause],
    loss_note: str,
    breaks: list[tuple[str, str]],
    traced: bool,
    once: Sequence[str] = (),
) -> list[str]:
    """The notes under the verdict; each is printed only when what it says is true."""
    found = []
    if loss_note and not any(end == LOSS for _, end in breaks):
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
