"""Every figure README.md, INSTRUCTORS.md and CONTRIBUTING.md quote is a named figure of the
course (``scripts/figures.py``), quoted as printed: value, sign and precision.

A figure is a decimal number (``6.7``, ``−0.8``, ``90.7``) or a whole number of percent
(``95 %``) in the prose, outside code. A quoted figure carries its name right after it,
``6.7<!-- figure: capstone.ablation.synthetic.no_silence_term -->``, and a figure with no name
fails: print it in a notebook and name it, or point to the notebook instead of quoting it.
Not figures: versions (``Python 3.11``, any 3.11 to 3.13, ``TensorFlow 2.21``, ``CC BY 4.0``,
``below 4.24``), the course's exercise numbers (``exercise 4.1``), machine sizes (``2.0 GiB``,
``0.5 CPU``, a hub's settings table) and whole numbers of dB (the SNRs and thresholds the
course sets; it prints results in dB with one decimal)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts import figures

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "INSTRUCTORS.md", "CONTRIBUTING.md")
MINUS = str.maketrans({"−": "-", "–": "-"})
FIGURE = re.compile(r"(?<![\w.=/+−-])([-−+]?(?:\d+\.\d+|\d+(?=\s?%)))(?![\w.]*\d)")
MARKER = re.compile(r"\A<!-- figure: ([\w.]+) -->")
VERSION = re.compile(
    r"(?:Python|TensorFlow|TF|Keras|NumPy|glibc|CC BY|version|versions|below|from)\s*"
    r"(?:\d+\.\d+(?:,\s*|\s*(?:or|and|to|–|-)\s*))*$"
)
MACHINE = re.compile(r"\A\s?(?:GiB|MiB|GB|MB|CPU|cores?)\b")
HUB_ROW = re.compile(r"^\s*\|\s*(?:CPU|memory)\b")  # a hub's settings table
PYTHONS = {"3.11", "3.12", "3.13"}  # the Pythons the course runs on (course.sh)
EXERCISES = {
    m[1]
    for path in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
    if cell["cell_type"] == "markdown"
    for m in re.finditer(r"^## Exercise (\d+\.\d+):", "".join(cell["source"]), re.M)
}
NAMED = {record["name"]: record for record in json.loads(figures.FIGURES_FILE.read_text())}


def _prose(text: str) -> str:
    """The text without code blocks and code spans (commands, constants, pins)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "`code`", text)


def quoted_figures(text: str) -> list[tuple[str, str | None, str]]:
    """``(figure as written, its name or None, the line)`` for each figure in ``text``."""
    found = []
    for line in _prose(text).splitlines():
        for match in FIGURE.finditer(line):
            figure, before, after = match[1], line[: match.start()], line[match.end() :]
            unsigned = figure.lstrip("+-−")
            if (
                unsigned in PYTHONS
                or VERSION.search(before)
                or MACHINE.match(after)
                or HUB_ROW.match(line)
                or (unsigned == figure and unsigned in EXERCISES and not after.startswith(" %"))
            ):
                continue
            name = MARKER.match(after)
            found.append((figure, name[1] if name else None, line.strip()))
    return found


def quote_problem(figure: str, name: str | None, named: dict[str, dict] = NAMED) -> str | None:
    """What is wrong with quoting ``figure`` as the figure ``name`` (None when nothing)."""
    if name is None:
        return f"{figure} has no name: add <!-- figure: NAME --> after it (scripts/figures.py)"
    if name not in named:
        return f"{figure}: no figure is named {name!r} in {figures.FIGURES_FILE.name}"
    record, written = named[name], figure.translate(MINUS)
    precision = len(written.partition(".")[2]) if "." in written else 0
    if float(written) != record["value"] or precision != record["precision"]:
        return f"{figure} is quoted as {name}, which is {record['text']}"
    return None


CASES = [
    (document, *case)
    for document in DOCUMENTS
    for case in quoted_figures((REPO / document).read_text(encoding="utf-8"))
]


def test_the_results_file_holds_what_the_notebooks_print():
    """notebooks/figures.json is current: ``./course.sh regenerate`` (or ``python -m
    scripts.figures --write``) writes it from the stored outputs."""
    assert json.loads(figures.FIGURES_FILE.read_text()) == figures.figures(REPO)


def test_the_documents_quote_figures_this_test_reads():
    assert len(CASES) >= 10
    assert {name for *_, name, _ in CASES if name} <= set(NAMED)


@pytest.mark.parametrize(
    "document, figure, name, line", CASES, ids=[f"{c[0]}:{c[2] or c[1]}" for c in CASES]
)
def test_each_quoted_figure_is_the_named_one(document, figure, name, line):
    problem = quote_problem(figure, name)
    assert problem is None, f"{document}: {problem}: {line[:160]}"


def test_a_wrong_value_sign_precision_or_name_fails_and_the_right_one_passes():
    named = {"x": {"text": "-0.8", "value": -0.8, "precision": 1}}
    assert quote_problem("−0.8", "x", named) is None
    for figure, name in (("0.8", "x"), ("-0.80", "x"), ("-0.9", "x"), ("-0.8", "y")):
        assert quote_problem(figure, name, named), (figure, name)
    assert "has no name" in quote_problem("-0.8", None, named)


def test_what_counts_as_a_figure_and_what_carries_its_name():
    text = (
        "Python 3.11, 3.12 or 3.13 and TensorFlow 2.21; 2.0 GiB; exercise 4.1 at 5 dB.\n"
        "It printed 6.7<!-- figure: a.b --> dB and 95 % of them, +1.2 and −0.8.\n"
        "Outside prose: `0.33` and\n```\n4.4\n```\n"
    )
    assert quoted_figures(text) == [
        ("6.7", "a.b", "It printed 6.7<!-- figure: a.b --> dB and 95 % of them, +1.2 and −0.8."),
        ("95", None, "It printed 6.7<!-- figure: a.b --> dB and 95 % of them, +1.2 and −0.8."),
        ("+1.2", None, "It printed 6.7<!-- figure: a.b --> dB and 95 % of them, +1.2 and −0.8."),
        ("−0.8", None, "It printed 6.7<!-- figure: a.b --> dB and 95 % of them, +1.2 and −0.8."),
    ]


def test_every_figure_pattern_names_one_printed_figure(tmp_path):
    """A named figure whose output changed stops the writing with its name."""
    copy = tmp_path / "notebooks"
    copy.mkdir()
    notebook = json.loads((REPO / "notebooks" / "07_appendix_labels.ipynb").read_text())
    for cell in notebook["cells"]:
        cell["outputs"] = []
    (copy / "07_appendix_labels.ipynb").write_text(json.dumps(notebook))
    with pytest.raises(ValueError, match="figure labels.alignment_agreement: 07_appendix"):
        figures.figure_record(
            "labels.alignment_agreement", figures.FIGURES["labels.alignment_agreement"], tmp_path
        )
