"""helpers.course.printing: teaching quantities get a few digits, roundoff quantities get a bound,
and the gradient report prints a roundoff norm as ``~0`` (never as processor-dependent digits).
"""

import math
import re

import pytest
import tensorflow as tf

from helpers.course.printing import ROUNDOFF_FLOOR, bound_text, difference_text, norm_text, sig
from helpers.diagnosis.report import GradientReport, GradientRow, gradient_report

# --- sig --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, digits, text",
    [
        (0.0032549, 3, "0.00325"),
        (9.5612, 3, "9.56"),
        (10.6, 3, "10.6"),
        (2.0, 3, "2"),
        (0.0, 3, "0"),
        (-1.23456, 2, "-1.2"),
        (1234567.0, 3, "1.23e+06"),
        (float("nan"), 3, "nan"),
        (float("inf"), 3, "inf"),
    ],
)
def test_sig_gives_significant_digits(value, digits, text):
    assert sig(value, digits) == text


def test_sig_accepts_tensors_and_numpy_scalars():
    assert sig(tf.constant(0.123456)) == "0.123"
    assert sig(tf.constant(5, tf.int32)) == "5"


# --- difference_text ---------------------------------------------------------------------------


def test_difference_text_tells_identical_from_rounding_from_different():
    assert difference_text(0.0, 1e-9) == difference_text(-0.0, 1e-6) == "0.0"
    assert difference_text(1.16e-10, 1e-9) == difference_text(-9e-10, 1e-9) == "above 0, below 1e-9"
    assert difference_text(0.25, 1e-9) == "0.25"
    with pytest.raises(ValueError, match="NaN"):
        difference_text(float("nan"), 1e-9)
    with pytest.raises(ValueError, match="positive"):
        difference_text(0.0, 0.0)


# --- bound_text -------------------------------------------------------------------------------


def test_bound_text_depends_only_on_the_bound():
    """Two processors may get 0.0 and 2.3e-10 for the same difference; the text is the same."""
    assert bound_text(0.0, 1e-6) == bound_text(2.3e-10, 1e-6) == "< 1e-6"
    assert bound_text(-9.9e-7, 1e-6) == "< 1e-6"  # the size counts, not the sign
    assert bound_text(0.1, 0.5) == "< 0.5"
    assert bound_text(1e-12, 2.5e-10) == "< 2.5e-10"


@pytest.mark.parametrize("value", [1e-6, 2e-6, -3e-6, 1.0, float("inf"), float("nan")])
def test_bound_text_refuses_a_value_that_is_not_below_the_bound(value):
    with pytest.raises(AssertionError, match="below 1e-6"):
        bound_text(value, 1e-6)


@pytest.mark.parametrize("bound", [0.0, -1e-6, float("nan")])
def test_bound_text_needs_a_positive_bound(bound):
    with pytest.raises(ValueError, match="positive"):
        bound_text(0.0, bound)


# --- norm_text --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "norm, largest, text",
    [
        (None, 1.0, "-"),
        (float("nan"), 1.0, "nan"),
        (float("inf"), 1.0, "inf"),
        (0.0, 1.0, "0"),  # exactly zero is a fact, not roundoff
        (3e-8, 1.0, "~0"),  # below ROUNDOFF_FLOOR * largest: roundoff, no digits
        (ROUNDOFF_FLOOR, 1.0, "1e-06"),  # at the floor: digits
        (0.5, 1.0, "0.5"),
        (0.123456, 1.0, "0.123"),
        (3e-8, None, "3e-08"),  # nothing to compare with: digits
        (3e-8, 3e-8, "3e-08"),  # a tiny norm that is the largest is not roundoff
        (3e-8, float("inf"), "3e-08"),  # a non-finite largest is not a scale
    ],
)
def test_norm_text_classes(norm, largest, text):
    assert norm_text(norm, largest) == text


def test_norm_text_floor_is_relative_to_the_largest_norm():
    assert norm_text(1e-4, 1e3) == "~0"
    assert norm_text(1e-4, 1e1) == "0.0001"
    assert norm_text(1e-4, 1e3, floor=1e-8) == "0.0001"


# --- the gradient report uses it ---------------------------------------------------------------

REPORT = GradientReport(
    [
        GradientRow("big/kernel", (3, 2), "ok", 12.5),
        GradientRow("roundoff/bias", (2,), "ok", 3.1e-9),
        GradientRow("exact/bias", (2,), "zero", 0.0),
        GradientRow("missing/bias", (2,), "none", None),
        GradientRow("broken/kernel", (2, 2), "nonfinite", math.nan),
    ]
)


def _text_columns(report: GradientReport) -> dict[str, list[str]]:
    """Row name -> its cells in ``to_text()`` (columns are separated by two or more spaces)."""
    rows = report.to_text().splitlines()[2:-1]  # header, rule, ..., summary
    return {cells[0]: cells for cells in (re.split(r"\s{2,}", line) for line in rows)}


def _norm_cells_of_text(report: GradientReport) -> dict[str, str]:
    return {name: cells[3] for name, cells in _text_columns(report).items()}


def test_largest_norm_ignores_none_and_non_finite():
    assert REPORT.largest_norm() == 12.5
    assert GradientReport([GradientRow("x", (), "none", None)]).largest_norm() is None
    assert GradientReport([]).largest_norm() is None
    only_broken = GradientReport([GradientRow("x", (), "nonfinite", math.inf)])
    assert only_broken.largest_norm() is None


def test_report_text_shows_roundoff_as_approx_zero_and_exact_zero_as_zero():
    cells = _norm_cells_of_text(REPORT)
    assert cells == {
        "big/kernel": "12.5",
        "roundoff/bias": "~0",
        "exact/bias": "0",
        "missing/bias": "-",
        "broken/kernel": "nan",
    }
    assert "3.1e-09" not in REPORT.to_text() and "3.1e-09" not in REPORT._repr_html_()


def test_report_status_column_still_says_ok_and_zero():
    """``~0`` is only how the norm prints: a roundoff gradient is still a gradient (ok)."""
    status = {name: cells[2] for name, cells in _text_columns(REPORT).items()}
    assert status == {
        "big/kernel": "ok",
        "roundoff/bias": "ok",
        "exact/bias": "zero",
        "missing/bias": "none",
        "broken/kernel": "nonfinite",
    }
    assert REPORT.statuses == ["ok", "ok", "zero", "none", "nonfinite"]
    assert REPORT.summary() == "5 variables: 2 ok, 1 zero, 1 nonfinite, 1 none"


def test_report_html_shows_the_same_norm_texts():
    html = REPORT._repr_html_()
    cells = [re.sub("<td[^>]*>", "", row.split("</td>")[3]) for row in html.split("<tr>")[2:]]
    assert cells == ["12.5", "~0", "0", "-", "nan"]
    assert ">ok</span></td>" in html and ">zero</span></td>" in html


def test_real_roundoff_gradient_prints_as_approx_zero():
    """A term that should cancel and does not, exactly, because of float32 rounding."""
    big, small = tf.Variable([3.0, 4.0], name="big"), tf.Variable(1.0, name="small")
    with tf.GradientTape() as tape:
        # d/d small of (small * 0.1 + small * 0.2 - small * 0.3) is 0 in exact arithmetic
        loss = tf.reduce_sum(big**2) + small * 0.1 + small * 0.2 - small * 0.3
    report = gradient_report(tape.gradient(loss, [big, small]), [big, small])
    assert report.statuses[0] == "ok" and report[0].norm == pytest.approx(10.0)
    assert 0 < report[1].norm < ROUNDOFF_FLOOR * report[0].norm, report[1].norm
    assert report.statuses[1] == "ok"
    assert _norm_cells_of_text(report) == {"big": "10", "small": "~0"}


def test_bound_text_writes_small_bounds_as_powers_of_ten():
    assert bound_text(3e-6, 1e-4) == "< 1e-4"
    assert bound_text(0.0, 1e-3) == "< 0.001"
    assert bound_text(1e-5, 2.5e-4) == "< 0.00025"
