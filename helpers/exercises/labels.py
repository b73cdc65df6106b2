"""Checkers for the exercises of 07_appendix_labels."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from helpers.audio import FrameLabels, Voicing
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import first_difference

S, V, U = Voicing.SILENT, Voicing.VOICED, Voicing.UNVOICED
# (known, with the rule, without the rule) voicing and what a correct answer counts (frames the
# rule changes, of them now agreeing, of them agreeing only before the rule).
CASES: tuple[tuple[list[int], list[int], list[int], tuple[int, int, int]], ...] = (
    ([S, V, V, U, U, S], [S, V, U, U, U, S], [S, V, V, V, U, S], (2, 1, 1)),  # each way
    ([V, V, U, U], [V, V, U, U], [V, V, U, U], (0, 0, 0)),  # the rule changes nothing
    ([S, U, U, V, V], [S, U, S, V, U], [S, U, V, V, V], (2, 0, 1)),  # agrees neither time
    ([U, U, V, S], [U, U, V, S], [V, V, V, S], (2, 2, 0)),  # two fixed
    ([V, V, U, S], [U, U, U, S], [U, U, V, S], (1, 1, 0)),  # both wrong alike: unchanged
)
LONGEST_FRAMES = 194  # arctic_a0009, the course's longest clip
RULE_EXAMPLES = 100  # generated labellings, after the fixed ones
GENERATED_FRAMES = 40  # their longest (Hypothesis draws every frame: longer ones cost seconds)


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


def _counts(changed: np.ndarray, now: np.ndarray, before: np.ndarray) -> tuple[int, int, int]:
    return int(changed.sum()), int(now.sum()), int(before.sum())


def _either_wrong(known, with_rule, without_rule) -> tuple[int, int, int]:
    """A mistake: a frame called changed when either measurement disagrees with the known."""
    k, a, b = known.voicing, with_rule.voicing, without_rule.voicing
    changed = (a != k) | (b != k)
    return _counts(changed, changed & (a == k), changed & (b == k))


def _before_by_subtraction(known, with_rule, without_rule) -> tuple[int, int, int]:
    """A mistake: what agreed only before is what changed minus what agrees now."""
    changed = with_rule.voicing != without_rule.voicing
    now = changed & (with_rule.voicing == known.voicing)
    return int(changed.sum()), int(now.sum()), int(changed.sum() - now.sum())


def _swapped(known, with_rule, without_rule) -> tuple[int, int, int]:
    """A mistake: the two measurements swapped."""
    return reference_rule_effect(known, without_rule, with_rule)


# What a wrong count most likely missed, said only when the answer gives exactly what that
# mistake gives (and not the reference's counts).
MISTAKES = (
    (
        _before_by_subtraction,
        " A frame the rule changes can agree with the known labels neither before nor after.",
    ),
    (
        _either_wrong,
        " Where both measurements disagree with the known labels alike, the measurements agree "
        "with each other: the rule did not change those frames.",
    ),
    (
        _swapped,
        " Your second and third counts are the other way round: agreeing after the rule is "
        "about with_rule, agreeing before it about without_rule.",
    ),
)


@st.composite
def _labellings(draw) -> tuple[list[int], list[int], list[int]]:
    """Three voicings of one clip (0 silent, 1 voiced, 2 unvoiced), up to ``GENERATED_FRAMES``
    frames (longer ones are fixed cases); the two measurements mostly alike, as a rule's effect
    is."""
    frames = draw(st.integers(0, GENERATED_FRAMES))
    voicing = st.lists(st.sampled_from([S, V, U]), min_size=frames, max_size=frames)
    known, without_rule = draw(voicing), draw(voicing)
    changes = draw(st.lists(st.sampled_from([None, S, V, U]), min_size=frames, max_size=frames))
    with_rule = [b if c is None else c for b, c in zip(without_rule, changes)]
    return [int(v) for v in known], [int(v) for v in with_rule], [int(v) for v in without_rule]


def _boundaries() -> list[tuple[list[int], list[int], list[int]]]:
    """A clip without frames, and one as long as the course's longest (194 frames): a
    measurement that differs from the known labels every seventh frame, and a rule that
    fixes every third of those and changes every eleventh frame."""
    known = [(S, V, V, U, V, V, S, U, U, V)[i % 10] for i in range(LONGEST_FRAMES)]
    without_rule = [(v + 1) % 3 if i % 7 == 3 else v for i, v in enumerate(known)]
    with_rule = [
        known[i] if i % 21 == 3 else (v + 2) % 3 if i % 11 == 5 else v
        for i, v in enumerate(without_rule)
    ]
    return [([], [], []), (known, with_rule, without_rule)]


def _shown(voicing: list[int]) -> str:
    return str(voicing) if len(voicing) <= 40 else "".join(map(str, voicing))


def check_rule_effect(function) -> CheckResult:
    """``function(known, with_rule, without_rule)`` counts, for three labellings of one clip
    (``FrameLabels``), the frames whose voicing the rule changes, how many of them agree with
    the known labels after the rule, and how many agreed only before it: a tuple of three
    integers, the reference's.

    The domain: labellings of clips from 0 frames to the course's longest (194). Tried on the
    cases above, then the boundaries (no frame; 194 frames), then ``RULE_EXAMPLES`` generated
    labellings of up to ``GENERATED_FRAMES`` frames. A note on a wrong count names a mistake
    (``MISTAKES``) only when the answer gives exactly what that mistake gives."""

    def check(fn):
        tried: list[int] = []  # frames of every labelling tried

        def differs(case: tuple[list[int], list[int], list[int]]) -> str | None:
            tried.append(len(case[0]))
            labels = [_labels(voicing) for voicing in case]
            expected = reference_rule_effect(*labels)
            got = fn(*labels)
            shown = (
                f"Known {_shown(case[0])}, with the rule {_shown(case[1])}, without it "
                f"{_shown(case[2])} (0 silent, 1 voiced, 2 unvoiced)"
            )
            if not (
                isinstance(got, tuple)
                and len(got) == 3
                and all(isinstance(x, (int, np.integer)) for x in got)
            ):
                return f"{shown}: expected a tuple of three integers, {expected}; got {got!r}."
            got = tuple(int(x) for x in got)
            if got != expected:
                note = next((text for made, text in MISTAKES if made(*labels) == got), "")
                return f"{shown}: expected {expected}, got {got}.{note}"
            return None

        traps = [tuple([int(v) for v in voicing] for voicing in case[:3]) for case in CASES]
        fixed = traps + _boundaries()
        difference = first_difference(
            _labellings(), differs, traps=traps, boundaries=_boundaries(),
            examples=RULE_EXAMPLES, runs=300,
        )  # fmt: skip
        if difference is not None:
            return False, difference.message
        return True, (
            f"The reference's counts on {len(fixed)} fixed labellings (a changed frame that "
            "agrees neither before nor after the rule, frames both measurements get wrong "
            f"alike, no frame, {LONGEST_FRAMES} frames) and {len(tried) - len(fixed)} "
            f"generated ones of {min(tried[len(fixed) :])} to {max(tried[len(fixed) :])} "
            "frames."
        )

    return run_check(
        "Exercise 7.1 (what a rule changes)",
        function,
        check,
        hint="Count only the frames where the two measurements differ; for each "
        "of those, compare each measurement with the known labels. A frame "
        "can disagree with them both before and after the rule.",
    )
