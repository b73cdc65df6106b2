"""One HTML table style for every table a helper shows in a notebook (the gradient report,
the locator's verdict, the lab's table), and the status colours they share.

The colours are JupyterLab's CSS variables, so they follow the light and the dark theme; each
has a fallback colour for a page without them (a static HTML copy of a notebook). A header,
a shape or a name never wraps; only the columns a table names in ``wrap`` (a hint, a list of
names) wrap, and then between words.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

# One colour per status, in tables and in plots alike (plots use the plain colour).
STATUS_HEX: dict[str, str] = {
    "ok": "#1b7837",
    "zero": "#6a51a3",
    "nonfinite": "#b2182b",
    "none": "#555555",
    "error": "#b2182b",  # a break, an error, "Not yet"
}
_THEME_VARIABLES = {
    "ok": "--jp-success-color1",
    "zero": "--jp-warn-color1",
    "nonfinite": "--jp-error-color1",
    "none": "--jp-ui-font-color2",
    "error": "--jp-error-color1",
}
STATUS_COLOURS: dict[str, str] = {
    status: f"var({_THEME_VARIABLES[status]}, {hex_colour})"
    for status, hex_colour in STATUS_HEX.items()
}
TABLE_CLASS = "gradient-clinic-table"  # on every table this module renders


def escape(text: str) -> str:
    """``text`` made safe as HTML content (quotes stay as they are: no attribute holds it)."""
    return html.escape(text, quote=False)


def status_html(text: str, status: str) -> str:
    """``text`` (escaped) in bold, in the colour of ``status`` (a key of ``STATUS_COLOURS``)."""
    if status not in STATUS_COLOURS:
        raise ValueError(
            f"status must be one of {', '.join(map(repr, STATUS_COLOURS))}; got {status!r}."
        )
    return f"<span style='color:{STATUS_COLOURS[status]};font-weight:bold'>{escape(text)}</span>"


def code_html(text: str) -> str:
    """``text`` (escaped) as inline code."""
    return f"<code>{escape(text)}</code>"


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    align: str = "",
    wrap: Sequence[int] = (),
    below: Sequence[str] = (),
) -> str:
    """A table in the course's style. ``header``: plain text; ``rows``: cells as HTML (escape
    text with ``escape``, or use ``status_html`` / ``code_html``). ``align``: one letter
    per column, ``l`` or ``r`` (default: left); ``wrap``: the column indices that may wrap;
    ``below``: plain-text lines said once under the table (a hint shared by every row)."""
    align = align or "l" * len(header)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(
            f"align needs one letter, l or r, per column ({len(header)}); got {align!r}."
        )
    if any(len(row) != len(header) for row in rows):
        raise ValueError(f"every row needs {len(header)} cells, one per column.")

    def style(i: int) -> str:
        side = "left" if align[i] == "l" else "right"
        return f"text-align:{side};white-space:{'normal' if i in wrap else 'nowrap'}"

    head = "".join(
        f"<th style='text-align:{'left' if a == 'l' else 'right'};"
        f"white-space:nowrap'>{escape(h)}</th>"
        for h, a in zip(header, align)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td style='{style(i)}'>{cell}</td>" for i, cell in enumerate(row))
        + "</tr>"
        for row in rows
    )
    notes = "".join(f"<p style='margin:0.3em 0'>{escape(line)}</p>" for line in below)
    return (
        f"<table class='{TABLE_CLASS}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>{notes}"
    )
