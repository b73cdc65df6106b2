"""How every checker decides: the learner's answer against the exercise's reference solution,
on a generated family of inputs.

A checker describes its inputs as a Hypothesis strategy of plain Python values (sizes, lengths,
offsets, values, labels, plans: each input prints as the code that makes it), and a function
``differs(case)`` that runs the answer and the reference on one input and says how they differ,
or returns None. ``first_difference`` tries the exercise's known traps first, then the
boundaries of the domain the generated search cannot reach in its budget (the longest clip,
the exact zero, the largest value), then the generated inputs, and on a difference lets
Hypothesis shrink the input to the smallest one on which the two still differ, so that the
feedback names a small input.

The search is derandomized (the same inputs, in the same order, on every run and every
machine) and its cost is counted in runs of ``differs``, not in seconds, so the verdict and
its message never depend on the machine's speed. It writes no file: Hypothesis would
otherwise read the constants of every module loaded from outside site-packages (the
course's, the learner's), cache them in ``.hypothesis/`` in the working folder, and draw
inputs from them, so that the inputs would depend on what else was imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from hypothesis.internal.conjecture import providers

__all__ = [
    "GRAPH_ONLY",
    "Difference",
    "Search",
    "error_text",
    "first_difference",
    "first_difference_of",
    "two_values",
]

Case = TypeVar("Case")


@dataclass(frozen=True)
class Difference(Generic[Case]):
    """The smallest input found on which the answer and the reference differ, and how."""

    case: Case
    message: str


@contextmanager
def _without_local_constants() -> Iterator[None]:
    """Hypothesis's generation without the constants it collects from the source of every
    loaded module outside site-packages and the standard library: collecting them writes a
    cache file per module into ``.hypothesis/constants/`` under the working folder (the
    learner's workspace, nbgrader's ``autograded/``), even with ``database=None``, and
    drawing from them makes the inputs depend on which modules happen to be loaded. The
    constants Hypothesis ships with (its "nasty" values) are still drawn."""
    collect = providers._get_local_constants
    providers._get_local_constants = providers.Constants  # no local constant, nothing read
    providers.CONSTANTS_CACHE.cache.clear()  # pools drawn from local constants before
    try:
        yield
    finally:
        providers._get_local_constants = collect
        providers.CONSTANTS_CACHE.cache.clear()


def first_difference(
    cases: st.SearchStrategy[Case],
    differs: Callable[[Case], str | None],
    *,
    traps: Sequence[Case] = (),
    boundaries: Sequence[Case] = (),
    examples: int = 20,
    runs: int = 60,
    tried: list[Case] | None = None,
) -> Difference[Case] | None:
    """The first input on which ``differs`` finds a difference, or None when there is none.

    ``traps`` are tried first, in order (the known wrong answers' favourite inputs); then the
    ``boundaries``, in order (the edges of the domain of real use that the generated search
    cannot reach in its budget: the longest clip, the largest chunk, the exact zero); then up
    to ``examples`` inputs generated from ``cases`` (none when 0); a difference there is
    shrunk by Hypothesis. Traps and boundaries are not shrunk.
    ``runs`` bounds the calls of ``differs`` in the generated phase, shrinking included: once
    spent, the smallest difference found so far is the answer. ``tried``, when given, receives
    every input ``differs`` was run on, in order, so that a success message can say exactly
    what was tried. An exception raised by ``differs`` is the checker's own (the answer's
    exceptions are ``differs``'s to report)."""
    log = tried if tried is not None else []
    for case in (*traps, *boundaries):
        log.append(case)
        message = differs(case)
        if message is not None:
            return Difference(case, message)
    if not examples:
        return None
    verdicts: dict[str, str | None] = {}  # by the input's repr: a replay gets the same verdict

    def condition(case: Case) -> bool:
        key = repr(case)
        if key not in verdicts:
            if len(verdicts) >= runs:
                return False  # the budget is spent: shrinking stops at the best so far
            log.append(case)
            verdicts[key] = differs(case)
        return verdicts[key] is not None

    search = settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
    )
    try:
        with _without_local_constants():
            smallest = find(cases, condition, settings=search)
    except NoSuchExample:
        return None
    return Difference(smallest, verdicts[repr(smallest)])


@dataclass(frozen=True)
class Search:
    """One search of ``first_difference_of``, named as ``first_difference`` takes it."""

    cases: st.SearchStrategy
    differs: Callable[[Any], str | None]
    traps: Sequence = ()
    boundaries: Sequence = ()
    examples: int = 20
    runs: int = 60
    tried: list | None = None


def first_difference_of(
    searches: Sequence[
        Search | tuple[st.SearchStrategy, Callable[[Any], str | None], Sequence, int, int]
    ],
) -> Difference | None:
    """The first difference over several searches, in order, each a ``Search`` or a tuple
    ``(cases, differs, traps, examples, runs)`` as ``first_difference`` takes them: eagerly,
    then inside ``tf.function``, say."""
    for search in searches:
        if not isinstance(search, Search):
            search = Search(*search[:3], examples=search[3], runs=search[4])
        found = first_difference(
            search.cases,
            search.differs,
            traps=search.traps,
            boundaries=search.boundaries,
            examples=search.examples,
            runs=search.runs,
            tried=search.tried,
        )
        if found is not None:
            return found
    return None


def two_values(got: float, expected: float, least: int = 3) -> tuple[str, str]:
    """``got`` and ``expected`` printed with the fewest significant digits (at least ``least``)
    that tell them apart, so that a message never says "0.00337; expected 0.00337"."""
    got, expected = float(got), float(expected)
    for digits in range(least, 10):
        shown = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if shown[0] != shown[1]:
            return shown
    return f"{got!r}", f"{expected!r}"


def error_text(error: BaseException) -> str:
    """``Type (message)`` for an error the learner's code raised: the first line of its
    message, or for an error raised inside ``tf.function`` (whose message starts "in user
    code:" and ends with the cause) the last; no memory addresses."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if lines and lines[0] == "in user code:":
        lines = lines[-1:]
    text = re.sub(r" at 0x[0-9a-f]+", "", lines[0]) if lines else ""
    text = text.removeprefix(f"{type(error).__name__}: ")[:160]
    return f"{type(error).__name__} ({text})"


# What to say when an answer that runs eagerly fails inside tf.function.
GRAPH_ONLY = (
    "Eagerly it runs, but inside tf.function a tensor has no value yet (no .numpy(), no "
    "Python if on a tensor), and a tf.Variable made in the function is made once, when it is "
    "traced: carry values as tensors."
)
