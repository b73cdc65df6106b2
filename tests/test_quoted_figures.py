"""Every figure README.md, INSTRUCTORS.md and CONTRIBUTING.md quote is in a stored output.

A figure is a decimal number (``6.7``, ``−0.8``, ``90.7``) or a whole number of percent or dB
(``85 %``, ``10 dB``) in the prose; version numbers (``Python 3.11``) and code are not. Under a
heading or in a table row that names a notebook (``### 04 ·``, ``[`06_capstone`]``), the
figure must be printed by that notebook; elsewhere, by any notebook or by a benchmark whose
output is stored in ``benchmarks/results/``. A figure that is not there was copied by hand and
has drifted, or was never printed: print it, or point to the notebook instead of quoting it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "INSTRUCTORS.md", "CONTRIBUTING.md")
MINUS = str.maketrans({"−": "-", "–": "-"})
FIGURE = re.compile(
    r"(?<![\w.=/-])([-−]?\d+\.\d+(?:e-?\d+)?|[-−]?\d+(?=\s?(?:%|dB\b)))(?![\w.]*\d)"
)
# Not figures: the versions of Python and of every package pyproject.toml and the locks name,
# and exercise numbers (``1.1``) that are not followed by a unit.
VERSIONS = {"3.11", "3.12", "3.13"} | set(
    re.findall(
        r"(?<=[=<>~ ])(\d+\.\d+)(?=[.,\s\"]|$)",
        "\n".join((REPO / f).read_text() for f in ("pyproject.toml", "requirements-dev.txt")),
        re.M,
    )
)
EXERCISE = re.compile(r"\d\.\d(?!\d|\s?(?:%|dB|s\b|×))")
NOTEBOOK = re.compile(r"(?:^#+ |\[`)(0\d)[ ·_]")


def _outputs(cells: list[dict]) -> str:
    texts = []
    for cell in cells:
        for output in cell.get("outputs", []):
            texts.append("".join(output.get("text", "")))
            for kind in ("text/plain", "text/html", "text/markdown"):
                texts.append("".join(output.get("data", {}).get(kind, "")))
    return "\n".join(texts).translate(MINUS)


PRINTED = {
    path.name[:2]: _outputs(json.loads(path.read_text(encoding="utf-8"))["cells"])
    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
}
BENCHMARKS = "\n".join(
    path.read_text(encoding="utf-8") for path in sorted((REPO / "benchmarks" / "results").glob("*"))
).translate(MINUS)


def _prose(text: str) -> str:
    """The text without code blocks and code spans (commands, constants, pins)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "`code`", text)


def quoted_figures(name: str) -> list[tuple[str, str | None, str]]:
    """``(figure, notebook it must come from or None, the line)`` for each figure."""
    found, notebook = [], None
    for line in _prose((REPO / name).read_text(encoding="utf-8")).splitlines():
        if line.startswith("#"):
            match = NOTEBOOK.match(line)
            notebook = match.group(1) if match else None
        row = NOTEBOOK.search(line) if line.startswith("|") else None
        where = row.group(1) if row else notebook
        for match in FIGURE.finditer(line):
            figure = match.group(1)
            if figure in VERSIONS or re.search(
                r"(glibc|Python|version)\s*$", line[: match.start()]
            ):
                continue
            if EXERCISE.fullmatch(line[match.start() : match.end() + 3]):
                continue
            found.append((figure.translate(MINUS), where, line.strip()))
    return found


def printed(figure: str, where: str | None) -> bool:
    texts = [PRINTED[where]] if where else [*PRINTED.values(), BENCHMARKS]
    number = re.compile(rf"(?<![\d.]){re.escape(figure.lstrip('-'))}(?![\d])")
    return any(number.search(text) for text in texts)


CASES = [(name, *case) for name in DOCUMENTS for case in quoted_figures(name)]


def test_the_documents_quote_figures_this_test_reads():
    assert len(CASES) >= 10


@pytest.mark.parametrize(
    "document, figure, notebook, line", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES]
)
def test_each_quoted_figure_is_printed_where_it_comes_from(document, figure, notebook, line):
    source = f"notebook {notebook}" if notebook else "any notebook or benchmarks/results/"
    assert printed(figure, notebook), f"{figure} is not printed by {source}: {line[:160]}"
