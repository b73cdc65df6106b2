"""GLOSSARY.md: each term's "first in" is the first notebook whose text (prose or code) uses
it, and the notebooks link to it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = (REPO / "GLOSSARY.md").read_text(encoding="utf-8")
ENTRY = re.compile(r"^### (.+)\n((?:.+\n)*?.*)\*First in (\d\d)\.\*$", re.M)
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).lower()  # a term may break across lines


def _text(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return _plain("\n".join("".join(cell["source"]) for cell in cells))


TEXTS = {path.name[:2]: _text(path) for path in NOTEBOOKS}
ENTRIES = ENTRY.findall(GLOSSARY)


def first_notebook(term: str) -> str | None:
    """The first notebook using ``term`` as a whole word (case and backticks ignored)."""
    words = _plain(term).removeprefix("the ")
    pattern = re.compile(rf"(?<![\w-]){re.escape(words)}(?![\w-])")
    return next((number for number, text in TEXTS.items() if pattern.search(text)), None)


def test_every_entry_is_read():
    assert len(ENTRIES) == GLOSSARY.count("\n### ") >= 60  # each has its "First in"


@pytest.mark.parametrize("term, first", [(t, f) for t, _, f in ENTRIES], ids=lambda x: x)
def test_first_in_is_the_first_notebook_that_uses_the_term(term, first):
    assert first_notebook(term) == first


def test_the_first_notebook_links_to_the_glossary():
    assert "](../GLOSSARY.md)" in "".join(
        "".join(c["source"]) for c in json.loads(NOTEBOOKS[0].read_text())["cells"]
    )
