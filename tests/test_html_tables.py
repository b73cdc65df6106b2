"""helpers.course.tables: one table style for the report, the locator's verdict and the lab, and
status colours taken from JupyterLab's theme (CSS variables with a fallback), never hard-coded:
the rendered HTML of all three is checked here."""

from __future__ import annotations

import math
import re

import pytest

from helpers.course.tables import (
    STATUS_COLOURS,
    TABLE_CLASS,
    code_html,
    escape,
    html_table,
    status_html,
)
from helpers.diagnosis.probe.location import Location, MarkResult
from helpers.diagnosis.report import STATUSES, GradientReport, GradientRow
from helpers.lab.view import LAB_CSS, lab_table, text_html

THEME_VARIABLE = r"var\(--jp-[a-z0-9-]+, #[0-9a-f]{6}\)"


def test_tables_and_plots_share_one_colour_per_status():
    from helpers.diagnosis.plots import STYLE

    for status in STATUSES:
        assert re.fullmatch(THEME_VARIABLE, STATUS_COLOURS[status]), STATUS_COLOURS[status]
        fallback = STATUS_COLOURS[status].rsplit(" ", 1)[1].rstrip(")")
        assert STYLE[status]["color"] == fallback, status
    assert STATUS_COLOURS["ok"] != STATUS_COLOURS["none"] != STATUS_COLOURS["zero"]


def test_a_table_keeps_headers_and_cells_on_one_line_except_the_wrap_columns():
    table = html_table(
        ("name", "shape", "hint"),
        [[code_html("a/b"), "(257, 96)", "a & b"]],
        align="lrl",
        wrap=[2],
        below=["Hint for <every> row"],
    )
    assert table.startswith(f"<table class='{TABLE_CLASS}'>")
    heads = re.findall(r"<th style='([^']*)'>([^<]*)</th>", table)
    assert heads == [
        ("text-align:left;white-space:nowrap", "name"),
        ("text-align:right;white-space:nowrap", "shape"),
        ("text-align:left;white-space:nowrap", "hint"),
    ]
    cells = re.findall(r"<td style='([^']*)'>(.*?)</td>", table)
    assert cells == [
        ("text-align:left;white-space:nowrap", "<code>a/b</code>"),
        ("text-align:right;white-space:nowrap", "(257, 96)"),
        ("text-align:left;white-space:normal", "a & b"),
    ]
    assert table.endswith("<p style='margin:0.3em 0'>Hint for &lt;every&gt; row</p>")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"align": "lx"}, "one letter, l or r, per column"),
        ({"align": "l"}, "one letter, l or r, per column"),
        ({"rows": [["only one"]]}, "every row needs 2 cells"),
    ],
)
def test_a_table_refuses_a_bad_layout(kwargs, message):
    kwargs = {"rows": [["a", "b"]], **kwargs}
    with pytest.raises(ValueError, match=message):
        html_table(("x", "y"), **kwargs)


def test_text_is_escaped_and_a_status_must_be_known():
    assert escape("<b>'it' & \"so\"</b>") == "&lt;b&gt;'it' &amp; \"so\"&lt;/b&gt;"
    assert status_html("none", "none") == (
        "<span style='color:var(--jp-ui-font-color2, #555555);font-weight:bold'>none</span>"
    )
    with pytest.raises(ValueError, match="status must be one of 'ok', 'zero'"):
        status_html("fine", "fine")


# ---------------------------------------------- the colours of everything a helper renders


def hard_coded_colours(markup: str) -> list[str]:
    """Every colour in the markup that is not a JupyterLab variable with its fallback."""
    outside = re.sub(THEME_VARIABLE, "var", markup)
    return re.findall(r"#[0-9a-fA-F]{3,8}\b|rgba?\([^)]*\)|\b(?:red|green|grey|gray)\b", outside)


def colour_values(markup: str) -> list[str]:
    return re.findall(r"(?:^|[;'\s{])(?:background-)?color:\s*([^;'}]+)", markup)


def test_the_checker_finds_a_hard_coded_colour():
    assert hard_coded_colours("<td style='color:#b2182b'>") == ["#b2182b"]
    assert hard_coded_colours("<td style='color:var(--jp-error-color1, #b2182b)'>") == []
    assert colour_values("<b style='color:red;font-weight:bold'>") == ["red"]


REPORT = GradientReport(
    [
        GradientRow("ok/kernel", (257, 96), "ok", 1.5),
        GradientRow("zero/kernel", (32,), "zero", 0.0, "zeros: a tf.sign?"),
        GradientRow("nan/kernel", (3, 2), "nonfinite", math.nan, "NaN: log of 0?"),
        GradientRow("none/kernel", (2,), "none", None, "cut: outside the tape?"),
    ]
)


def every_status_location() -> Location:
    """A verdict with a mark for each thing the loss can send there (by hand: only the
    rendering is tested here; test_probe_location.py runs real programs)."""
    marks = tuple(
        MarkResult(name, "float", "float32", reaches, status, ("w",))
        for name, reaches, status in (
            ("ok", True, "ok"),
            ("zero", True, "zero"),
            ("nan", True, "nonfinite"),
            ("cut", False, "none"),
            ("raises", False, "error"),
        )
    )
    return Location(
        marks,
        ("w", "v"),
        (True, False),
        [("cut", "raises")],
        {"v": "cut"},
        ["a note"],
        {("cut", "raises"): ["what explains it"]},
    )


@pytest.mark.parametrize("what", ["report", "lab table", "locator", "intact locator", "lab"])
def test_rendered_status_colours_use_jupyterlab_variables(what):
    intact = Location((), ("w",), (True,), [], {}, [], {})
    markup = {
        "report": REPORT._repr_html_(),
        "lab table": lab_table(REPORT),
        "locator": every_status_location()._repr_html_(),
        "intact locator": intact._repr_html_(),
        "lab": LAB_CSS + text_html("clip=silent", bold=True),
    }[what]
    assert hard_coded_colours(markup) == []
    values = colour_values(markup)
    assert values and all(re.fullmatch(THEME_VARIABLE, v.strip()) for v in values), values
    if what in ("report", "lab table"):
        for status in STATUSES:
            assert status_html(status, status) in markup
    if what == "locator":
        for status in ("ok", "zero", "nonfinite", "none", "error"):
            assert STATUS_COLOURS[status] in markup
