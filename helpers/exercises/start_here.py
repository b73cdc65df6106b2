"""Checkers for the exercises of 00_start_here."""

from __future__ import annotations

import math

from helpers.exercises import CheckResult, run_check
from helpers.gradients import GradientReport, GradientRow

_CASES = [
    GradientReport([GradientRow("dense/kernel", (4, 2), "ok", 0.3),
                    GradientRow("dense/bias", (2,), "none", None)]),
    GradientReport([GradientRow("gru/kernel", (4, 6), "zero", 0.0),
                    GradientRow("gru/bias", (6,), "ok", 1e-9),
                    GradientRow("head/kernel", (6, 1), "nonfinite", math.nan)]),
    GradientReport([GradientRow("w", (), "ok", 2.0)]),
]
_EXPECTED = [["dense/bias"], ["gru/kernel", "head/kernel"], []]


def check_broken_variables(function) -> CheckResult:
    """``function(report)`` must return the names of every variable whose gradient is not
    healthy (None, zero or non-finite), in the report's order."""

    def check(fn):
        for report, expected in zip(_CASES, _EXPECTED):
            got = list(fn(report))
            if got != expected:
                rows = ", ".join(f"{row.name} {row.status}" for row in report)
                return False, f"for a report with the rows {rows} you returned {got}; " \
                              f"expected {expected}."
        return True, "None, zero and non-finite gradients are all caught; a tiny norm is not."

    return run_check("Exercise 0.1 (which variables are broken?)", function, check,
                     hint="A gradient can be broken in more than one way, and a small one is "
                          "not a broken one. Look again at the statuses a report row can have.")
