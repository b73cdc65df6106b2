"""Checkers for the exercises of 07_appendix_labels."""

from __future__ import annotations

import numpy as np

from helpers.audio import FrameLabels, Voicing
from helpers.exercises import CheckResult, run_check

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
    voicing = np.asarray(voicing)
    f0 = np.where(voicing == V, 120.0, 0.0)
    return FrameLabels(voicing, f0, np.zeros(n), np.zeros(n), source="exercise 7.1")


def check_rule_effect(function) -> CheckResult:
    """``function(known, with_rule, without_rule)`` counts, for three labellings of one clip
    (``FrameLabels``), the frames whose voicing the rule changes, how many of them agree with
    the known labels after the rule, and how many agreed only before it: three integers."""

    def check(fn):
        for known, with_rule, without_rule, expected, note in CASES:
            got = fn(_labels(known), _labels(with_rule), _labels(without_rule))
            if not (
                isinstance(got, tuple)
                and len(got) == 3
                and all(isinstance(x, (int, np.integer)) for x in got)
            ):
                return False, f"Expected a tuple of three integers; got {got!r}."
            if tuple(int(x) for x in got) != expected:
                known, with_rule, without_rule = (
                    [int(v) for v in labels] for labels in (known, with_rule, without_rule)
                )
                return False, (
                    f"Known {known}, with the rule {with_rule}, without it "
                    f"{without_rule} (0 silent, 1 voiced, 2 unvoiced): expected "
                    f"{expected}, got {tuple(int(x) for x in got)}.{note}"
                )
        return True, (
            f"Right on all {len(CASES)} cases, including a changed frame that agrees "
            "neither before nor after the rule, and frames both measurements get wrong alike."
        )

    return run_check(
        "Exercise 7.1 (what a rule changes)",
        function,
        check,
        hint="Count only the frames where the two measurements differ; for each "
        "of those, compare each measurement with the known labels. A frame "
        "can disagree with them both before and after the rule.",
    )
