"""One opening and one exercise style in every notebook (issue 26; CONTRIBUTING.md).

* **The opening**: the first cell is a Markdown cell with a ``# `` title, a sentence or two,
  then the three bullets ``- **You will be able to:** ...``, ``- **You need:** ...`` and
  ``- **Time:** about N minutes``, in that order; no Markdown table.
* **Each exercise** (a code cell with metadata ``exercise``):
  - comes right after its own Markdown cell that starts ``## Exercise N.M: <title>``, where N
    is the notebook's number and ``Exercise N.M (<title>)`` is exactly the label its checker
    prints in the stored output of the checker-call cell right after the exercise;
  - is followed, after that checker-call cell, by exactly three Markdown cells, each one
    ``<details>`` block, summaries ``Hint``, ``A second hint`` and ``Show a solution``: the
    two hints in words, the solution holding exactly one fenced ``python`` block.

The parsing functions are tested on small synthetic cells first, so a wrong heading, a
mismatched number or a missing hint is shown to fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

OPENING_BULLETS = (
    re.compile(r"^- \*\*You will be able to:\*\* \S", re.M),
    re.compile(r"^- \*\*You need:\*\* \S", re.M),
    re.compile(r"^- \*\*Time:\*\* about \d+ minutes\s*$", re.M),
)
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.M)
HEADING = re.compile(r"\A## Exercise (\d+)\.(\d+): (\S.*?)\s*$", re.M)
LABEL = re.compile(r"^(?:Not yet|Solved): Exercise (\d+)\.(\d+) \((.+?)\)\. ", re.M)
DETAILS = re.compile(r"\A<details>\n<summary>([^<\n]+)</summary>\n\n(.*?)\n\n</details>\s*\Z",
                     re.S)
FENCE = re.compile(r"^```", re.M)
PYTHON_BLOCK = re.compile(r"(?:\A|\n\n)```python\n.*?\n```(?:\n\n|\Z)", re.S)
SUMMARIES = ("Hint", "A second hint", "Show a solution")
# JupyterLab gives a code block its margins only directly in a cell, not inside <details>; this
# box sets the solution's code off from the prose, in the theme's own border colour.
CODE_BOX = ('<div style="margin: 0.5em 0 1em 1em; padding-left: 1em; '
            'border-left: 3px solid var(--jp-border-color1, #9e9e9e)">')
BOXED_BLOCK = re.compile(re.escape(CODE_BOX) + r"\n\n```python\n.*?\n```\n\n</div>", re.S)


def _source(cell: dict) -> str:
    return cell.get("source", "")  # nbformat joins a cell's source into one string


def _stored_text(cell: dict) -> str:
    """The text/plain and stream text of a code cell's stored outputs."""
    return "\n".join(output.get("text") or output.get("data", {}).get("text/plain", "")
                     for output in cell.get("outputs", []))


def opening_problems(cell: dict) -> list[str]:
    """What is wrong with a notebook's first cell, as the opening (an empty list when fine)."""
    if cell.get("cell_type") != "markdown":
        return ["the first cell is not a Markdown cell"]
    text = _source(cell)
    problems = []
    if not re.match(r"# \S", text):
        problems.append("the first line is not a '# ' title")
    starts = []
    for bullet in OPENING_BULLETS:
        match = bullet.search(text)
        if match is None:
            problems.append(f"no bullet matching {bullet.pattern!r}")
        else:
            starts.append(match.start())
    if len(starts) == len(OPENING_BULLETS) and starts != sorted(starts):
        problems.append("the bullets are not in the order: You will be able to, You need, Time")
    if TABLE_ROW.search(text):
        problems.append("the opening holds a Markdown table")
    return problems


def exercise_heading(text: str) -> tuple[int, int, str] | None:
    """(N, M, title) from a Markdown cell that starts '## Exercise N.M: title', else None."""
    match = HEADING.match(text)
    return (int(match[1]), int(match[2]), match[3]) if match else None


def checker_label(text: str) -> tuple[int, int, str] | None:
    """(N, M, title) from a checker's printed verdict 'Not yet: Exercise N.M (title). ...'."""
    match = LABEL.search(text)
    return (int(match[1]), int(match[2]), match[3]) if match else None


def details_block(text: str) -> tuple[str, str] | None:
    """(summary, body) when ``text`` is exactly one '<details>' block in the course's form
    (blank line after '</summary>' and before '</details>'), else None."""
    match = DETAILS.match(text.strip() + "\n")
    if match is None or "<details" in match[2] or "</details>" in match[2]:
        return None
    return match[1].strip(), match[2]


def exercise_problems(cells: list[dict], number: int) -> list[str]:
    """Every way the exercises of a notebook (``number``: 0 for 00_...) break the style."""
    problems = []
    exercises = [index for index, cell in enumerate(cells)
                 if cell.get("cell_type") == "code" and cell.get("metadata", {}).get("exercise")]
    if not exercises:
        return ["no exercise cell (code cell with metadata 'exercise')"]
    for index in exercises:
        name = cells[index]["metadata"]["exercise"].get("function", f"cell {index}")
        before = cells[index - 1] if index > 0 else {}
        heading = exercise_heading(_source(before)) if before.get("cell_type") == "markdown" \
            else None
        if heading is None:
            problems.append(f"{name}: the cell before is not a Markdown cell starting "
                            "'## Exercise N.M: <title>'")
        elif heading[0] != number:
            problems.append(f"{name}: heading Exercise {heading[0]}.{heading[1]} in notebook "
                            f"{number:02d}")
        checker = cells[index + 1] if index + 1 < len(cells) else {}
        label = checker_label(_stored_text(checker)) if checker.get("cell_type") == "code" \
            else None
        if label is None:
            problems.append(f"{name}: the checker-call cell after it has no stored "
                            "'Exercise N.M (title)' verdict")
        elif heading is not None and label != heading:
            problems.append(f"{name}: heading 'Exercise {heading[0]}.{heading[1]}: "
                            f"{heading[2]}' but the checker prints 'Exercise {label[0]}."
                            f"{label[1]} ({label[2]})'")
        reveals = cells[index + 2:index + 6]
        blocks = [details_block(_source(cell)) if cell.get("cell_type") == "markdown" else None
                  for cell in reveals]
        summaries = tuple(block[0] if block else None for block in blocks[:3])
        if summaries != SUMMARIES:
            problems.append(f"{name}: after the checker cell, expected three <details> cells "
                            f"{SUMMARIES}, got {summaries}")
            continue
        if len(blocks) == 4 and blocks[3] is not None:
            problems.append(f"{name}: a fourth <details> cell ({blocks[3][0]!r}) follows")
        for summary, body in blocks[:2]:
            if FENCE.search(body) or not re.search(r"\w", body):
                problems.append(f"{name}: the {summary!r} cell must be words, no code block")
        solution = blocks[2][1]
        if len(FENCE.findall(solution)) != 2 or len(PYTHON_BLOCK.findall(solution)) != 1:
            problems.append(f"{name}: 'Show a solution' must hold exactly one fenced python "
                            "block, with a blank line before and after it")
        elif not BOXED_BLOCK.search(solution):
            problems.append(f"{name}: put the solution's code block in the code box "
                            f"({CODE_BOX} ... </div>, blank lines around the block)")
    return problems


def _cells(path: Path) -> list[dict]:
    return nbformat.read(path, as_version=4).cells


# --------------------------------------------------------------------------- the notebooks


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_opening_has_a_title_three_bullets_and_no_table(path):
    problems = opening_problems(_cells(path)[0])
    assert not problems, f"{path.stem}: {problems}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_exercise_has_a_matching_heading_two_hints_and_a_solution(path):
    problems = exercise_problems(_cells(path), int(path.stem[:2]))
    assert not problems, f"{path.stem}: {problems}"


# --------------------------------------------------------------------------- the parsers


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _details(summary: str, body: str) -> dict:
    return _markdown(f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>")


SOLUTION_BODY = f"A sentence.\n\n{CODE_BOX}\n\n```python\ndef f(x):\n    return x\n```\n\n</div>"
GOOD_OPENING = ("# 02 · A title\n\nWhat this covers.\n\n"
                "- **You will be able to:** do a thing\n- **You need:** `01_x`\n"
                "- **Time:** about 25 minutes")


def _exercise(heading="## Exercise 2.1: stream it\n\nWrite `f`.",
              label="Exercise 2.1 (stream it)", reveals=None) -> list[dict]:
    if reveals is None:
        reveals = [_details("Hint", "Carry the state."),
                   _details("A second hint", "Look at what it returns."),
                   _details("Show a solution", SOLUTION_BODY)]
    return [_markdown(heading),
            {"cell_type": "code", "metadata": {"exercise": {"function": "f"}},
             "source": "def f(x):\n    return None", "outputs": []},
            {"cell_type": "code", "metadata": {}, "source": "check(f)",
             "outputs": [{"output_type": "execute_result",
                          "data": {"text/plain": f"Not yet: {label}. you returned None.\n"
                                                 "Hint: carry it."}}]},
            *reveals]


def test_the_opening_parser_passes_the_form_and_catches_each_departure():
    assert opening_problems(_markdown(GOOD_OPENING)) == []
    table = ("# 02 · A title\n\n| | |\n|---|---|\n| **You will be able to:** | x |\n"
             "- **You will be able to:** x\n- **You need:** y\n- **Time:** about 5 minutes")
    wrong = {
        "a table": table,
        "no title": GOOD_OPENING.replace("# 02 · A title", "02 · A title"),
        "no colon inside the bold": GOOD_OPENING.replace("**You need:**", "**You need**:"),
        "no Time": GOOD_OPENING.replace("- **Time:** about 25 minutes", ""),
        "Time without minutes": GOOD_OPENING.replace("about 25 minutes", "half an hour"),
        "out of order": ("# 02 · A title\n\n- **You need:** y\n"
                         "- **You will be able to:** x\n- **Time:** about 25 minutes"),
    }
    for what, text in wrong.items():
        assert opening_problems(_markdown(text)), what
    assert opening_problems({"cell_type": "code", "source": GOOD_OPENING})


def test_heading_and_label_parsers():
    assert exercise_heading("## Exercise 2.1: stream it\n\nWrite it.") == (2, 1, "stream it")
    assert exercise_heading("## Exercise: stream it") is None
    assert exercise_heading("## Exercise 2: stream it") is None
    assert exercise_heading("Some words first.\n\n## Exercise 2.1: stream it") is None
    assert checker_label("Not yet: Exercise 0.1 (the status of one gradient). for a gradient "
                         "that is all zeros...") == (0, 1, "the status of one gradient")
    assert checker_label("Solved: Exercise 4.1 (a masked log distance without NaN). ok") \
        == (4, 1, "a masked log distance without NaN")
    assert checker_label("Not yet: Exercise 1.1. your loss is 0.0033") is None


def test_the_exercise_parser_passes_the_form():
    assert exercise_problems(_exercise(), 2) == []
    assert exercise_problems(_exercise() + [_markdown("## Next part")], 2) == []


def test_the_exercise_parser_catches_realistic_mistakes():
    hint, second, solution = (_details("Hint", "Carry the state."),
                              _details("A second hint", "Look at what it returns."),
                              _details("Show a solution", SOLUTION_BODY))
    wrong = {
        "a heading without a number": _exercise(heading="## Exercise: stream it"),
        "the heading inside the summary cell": _exercise(
            heading="## Summary\n\n* things\n\n## Exercise 2.1: stream it"),
        "another notebook's number": _exercise(heading="## Exercise 1.1: stream it",
                                               label="Exercise 1.1 (stream it)"),
        "a heading the checker does not print": _exercise(label="Exercise 2.2 (stream it)"),
        "another title in the checker": _exercise(label="Exercise 2.1 (stream the chunks)"),
        "no second hint": _exercise(reveals=[hint, solution]),
        "hints swapped": _exercise(reveals=[second, hint, solution]),
        "05's old 'Solution' summary": _exercise(
            reveals=[hint, second, _details("Solution", SOLUTION_BODY)]),
        "two blocks in one cell": _exercise(reveals=[_markdown(
            "<details>\n<summary>Hint</summary>\n\nx\n\n</details>\n<details>\n"
            "<summary>A second hint</summary>\n\ny\n\n</details>"), solution]),
        "code in a hint": _exercise(reveals=[
            _details("Hint", "```python\nstate = next_state\n```"), second, solution]),
        "no python block in the solution": _exercise(reveals=[
            hint, second, _details("Show a solution", "Carry the state.")]),
        "two python blocks": _exercise(reveals=[hint, second, _details(
            "Show a solution", SOLUTION_BODY + "\n\n```python\nf(1)\n```")]),
        "no blank line before </details>": _exercise(reveals=[
            hint, second, _markdown("<details>\n<summary>Show a solution</summary>\n\n"
                                    "```python\nf(1)\n```\n</details>")]),
        "a solution without the code box": _exercise(reveals=[hint, second, _details(
            "Show a solution", "A sentence.\n\n```python\ndef f(x):\n    return x\n```")]),
        "a fourth reveal": _exercise(reveals=[hint, second, solution,
                                              _details("A third hint", "More.")]),
    }
    for what, cells in wrong.items():
        assert exercise_problems(cells, 2), what
    no_output = _exercise()
    no_output[2]["outputs"] = []
    assert exercise_problems(no_output, 2), "a checker cell with no stored verdict"
    assert exercise_problems([_markdown("# only prose")], 2), "no exercise at all"
