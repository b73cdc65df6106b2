"""GLOSSARY.md: each term's "first in" is the first notebook whose text (prose or code) uses
it (a note in scripts/lint_course.py's report, not a failure), and the notebooks link to it."""

from __future__ import annotations

import json
from pathlib import Path

from scripts import lint_course as lint

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = (REPO / "GLOSSARY.md").read_text(encoding="utf-8")
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_every_entry_is_read():
    entries = lint.GLOSSARY_ENTRY.findall(GLOSSARY)
    assert len(entries) == GLOSSARY.count("\n### ") >= 60  # each has its "First in"


def test_the_glossary_rule_finds_a_term_used_before_its_first_in(tmp_path):
    for number, text in (("00", "Nothing yet."), ("01", "A `GRU` cell,\nits Hidden state.")):
        notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": text}]}
        (tmp_path / f"{number}_x.ipynb").write_text(json.dumps(notebook))
    notebooks = sorted(tmp_path.glob("*.ipynb"))
    right = "### hidden state\nWhat a GRU carries\nfrom step to step. *First in 01.*\n"
    assert len(lint.GLOSSARY_ENTRY.findall(right)) == 1
    assert lint.glossary_notes(right, notebooks) == []
    (early,) = lint.glossary_notes(right.replace("01.", "00."), notebooks)
    assert "first in 00, but first used in 01" in early
    (unused,) = lint.glossary_notes("### the state machine\nA machine. *First in 01.*\n", notebooks)
    assert "first used in none" in unused


def test_the_first_notebook_links_to_the_glossary():
    assert "](../GLOSSARY.md)" in "".join(
        "".join(c["source"]) for c in json.loads(NOTEBOOKS[0].read_text())["cells"]
    )
