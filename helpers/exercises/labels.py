"""Checkers for the exercises of 07_appendix_labels."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from helpers.audio import FrameLabels, Voicing
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import first_difference

S, V, U = Voicing.SILENT, Voicing.VOICED, Voicing.UNVOICED
# (known, with the rule, without the rule) voicing, what a correct answer counts (frames the
# rule changes, of them now agreeing, of them agreeing only before the rule), and what a
# wrong count there most likely missed.
CASES: tuple[tuple[list[int], list[int], list[int], tuple[int, int, int], str], ...] = (
    ([S, V, V, U, U, S], [S, V, U, U, U, S], [S, V, V, V, U, S], (2, 1, 1), ""),  # each way
    ([V, V, U, U], [V, V, U, U], [V, V, U, U], (0, 0, 0), ""),  # the rule changes nothing
    (
        [S, U, U, V, V],
        [S, U, S, V, U],
        [S, U, V, V, V],
        (2, 0, 1),
        " A frame the rule changes can agree with the known labels neither before nor after.",
    ),
    ([U, U, V, S], [U, U, V, S], [V, V, V, S], (2, 2, 0), ""),  # two fixed
    (
        [V, V, U, S],
        [U, U, U, S],
        [U, U, V, S],
        (1, 1, 0),
        " The first two frames disagree with the known labels in both measurements, but the "
        "measurements agree with each other there: the rule did not change them.",
    ),
)


def _labels(voicing: list[int]) -> FrameLabels:
    n = len(voicing)
    voicing = np.asarray(voicing, dtype=int)
    f0 = np.where(voicing == V, 120.0, 0.0)
    return FrameLabels(voicing, f0, np.zeros(n), np.zeros(n), source="exercise 7.1")


def reference_rule_effect(
    known: FrameLabels, with_rule: FrameLabels, without_rule: FrameLabels
) -> tuple[int, int, int]:
    """The reference answer: of the frames the rule changes, how many, how many agree with the
    known labels after the rule, and how many agreed only before it."""
    changed = with_rule.voicing != without_rule.voicing
    now = changed & (with_rule.voicing == known.voicing)
    before = changed & (without_rule.voicing == known.voicing)
    return int(changed.sum()), int(now.sum()), int(before.sum())


@st.composite
def _labellings(draw) -> tuple[list[int], list[int], list[int]]:
    """Three voicings of one clip (0 silent, 1 voiced, 2 unvoiced), up to 40 frames; the two
    measurements mostly alike, as a rule's effect is."""
    frames = draw(st.integers(0, 40))
    voicing = st.lists(st.sampled_from([S, V, U]), min_size=frames, max_size=frames)
    known, without_rule = draw(voicing), draw(voicing)
    changes = draw(st.lists(st.sampled_from([None, S, V, U]), min_size=frames, max_size=frames))
    with_rule = [b if c is None else c for b, c in zip(without_rule, changes)]
    return [int(v) for v in known], [int(v) for v in with_rule], [int(v) for v in without_rule]


def check_rule_effect(function) -> CheckResult:
    """``function(known, with_rule, without_rule)`` counts, for three labellings of one clip
    (``FrameLabels``), the frames whose voicing the rule changes, how many of them agree with
    the known labels after the rule, and how many agreed only before it: a tuple of three
    integers, the reference's on the cases above and on generated labellings."""
    notes = {tuple(map(tuple, case[:3])): case[4] for case in CASES}

    def check(fn):
        def differs(case: tuple[list[int], list[int], list[int]]) -> str | None:
            labels = [_labels(voicing) for voicing in case]
            expected = reference_rule_effect(*labels)
            got = fn(*labels)
            shown = (
                f"Known {case[0]}, with the rule {case[1]}, without it {case[2]} (0 silent, "
                "1 voiced, 2 unvoiced)"
            )
            if not (
                isinstance(got, tuple)
                and len(got) == 3
                and all(isinstance(x, (int, np.integer)) for x in got)
            ):
                return f"{shown}: expected a tuple of three integers, {expected}; got {got!r}."
            if tuple(int(x) for x in got) != expected:
                note = notes.get(tuple(map(tuple, case)), "")
                return f"{shown}: expected {expected}, got {tuple(int(x) for x in got)}.{note}"
            return None

        traps = [tuple([int(v) for v in voicing] for voicing in case[:3]) for case in CASES]
        difference = first_difference(_labellings(), differs, traps=traps, examples=100, runs=300)
        if difference is not None:
            return False, difference.message
        return True, (
            "The reference's counts on every labelling tried, including a changed frame that "
            "agrees neither before nor after the rule, and frames both measurements get wrong "
            "alike."
        )

    return run_check(
        "Exercise 7.1 (what a rule changes)",
        function,
        check,
        hint="Count only the frames where the two measurements differ; for each "
        "of those, compare each measurement with the known labels. A frame "
        "can disagree with them both before and after the rule.",
    )
