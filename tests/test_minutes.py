"""scripts/notebook_minutes.py, the measure of a notebook's minutes and size that the README,
each notebook's "Time" line and scripts/lint_course.py use: prose at 200 words a minute, 6 s
per visible line of code (proof cells count 0), a minute per Predict prompt, the run time and
each exercise at the minutes INSTRUCTORS.md gives it. Nothing is executed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts import notebook_minutes as minutes

ROOT = Path(__file__).resolve().parents[1]


def _notebook(tmp_path: Path, cells: list[dict]) -> Path:
    path = tmp_path / "99_tiny.ipynb"
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    return path


def _instructors(tmp_path: Path, bullet: str) -> Path:
    path = tmp_path / "INSTRUCTORS.md"
    path.write_text(
        f"# Teaching\n\n### 99 · Tiny\n\n- **Demo live:** x\n{bullet}\n\n"
        "### 98 · Other\n\n- **Exercise 9.9** (`g`): 50 minutes.\n"
    )
    return path


def test_the_measure_counts_words_visible_code_lines_and_exercises(tmp_path):
    path = _notebook(
        tmp_path,
        [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "# Title words\n\n| a | b |\n|---|---|\n<b>bold</b> `tf.x`\n"
                "```python\nshown = 1\n\nalso = 2\n```",
            },  # 7 words, 2 code lines
            {"cell_type": "markdown", "metadata": {}, "source": "**Predict:** is x 1?"},  # 4
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "source": "# a comment is not a line\nx = 1\n\ny = 2  # this one is\n",
            },  # 2 lines
            {
                "cell_type": "code",
                "metadata": {"tags": ["proof"], "jupyter": {"source_hidden": True}},
                "outputs": [],
                "source": "assert x == 1\nassert y == 2\n",
            },  # a proof cell: 0
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": "assert x\n"},  # 1 line
            {
                "cell_type": "code",
                "metadata": {"tags": ["lesson-assert"]},
                "outputs": [],
                "source": "assert y\n",
            },  # 1 line, an assert that is the lesson
            {
                "cell_type": "code",
                "metadata": {"exercise": {"checker": "m:f", "function": "f"}},
                "outputs": [],
                "source": "def f():\n    return 1\n",
            },  # the exercise's own cells
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": "check(f)\n"},
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "<details>\n\n```python\ndef f():\n    return 2\n```\n</details>",
            },
        ],
    )
    instructors = _instructors(tmp_path, "- **Exercise 9.1** (`f`): 12 minutes.")
    measured = minutes.notebook_minutes(path, instructors)
    assert (measured.words, measured.code_lines, measured.exercises) == (11, 6, 1)
    assert measured.prompts == 1
    assert measured.asserts == 1  # the plain cell's; not the proof's, not the lesson's
    # The size limits count as the issues define them: every non-proof code cell (2 + 1 + 1
    # + the exercise's 2 + the checker call's 1) and every \w+ run of the Markdown source
    # outside HTML tags (Title words a b bold tf x python shown 1 also 2 = 12; Predict is x 1
    # = 4; python def f return 2 = 5).
    assert (measured.visible_code_lines, measured.prose_words) == (7, 21)
    expected = (
        11 / minutes.WORDS_PER_MINUTE
        + 6 * minutes.SECONDS_PER_CODE_LINE / 60
        + minutes.PREDICT_MINUTES
        + minutes.RUN_MINUTES
        + 12
    )
    assert measured.total == pytest.approx(expected)
    assert (minutes.WORDS_PER_MINUTE, minutes.SECONDS_PER_CODE_LINE) == (200, 6)


def test_exercise_minutes_come_from_the_notebooks_own_section(tmp_path):
    each = _instructors(
        tmp_path, "- **Exercises 9.1** (a) **and 9.2** (b): about 15\n  minutes each, as homework."
    )
    assert minutes.exercise_minutes("99_tiny", 2, each) == 30
    assert minutes.exercise_minutes("99_tiny", 0, each) == 0
    none = _instructors(tmp_path, "- **Students run:** everything.")
    with pytest.raises(ValueError, match="Exercise"):
        minutes.exercise_minutes("99_tiny", 1, none)


def test_instructors_minutes_read_each_sections_line_and_homework(tmp_path):
    path = tmp_path / "INSTRUCTORS.md"
    path.write_text(
        "### 00 · Start\n\n**Minutes (12):** cells live 6\n**Homework (4):** 0.1.\n\n"
        "### 01 · Next\n\n**Minutes (35):** cells live 35\n\n- **Exercise 1.1**: 7 minutes.\n\n"
        "### Classroom cut list\n\n**Minutes (9):** not a notebook\n"
    )
    assert minutes.instructors_minutes(path) == {
        "00": ("**Minutes (12):** cells live 6", 4),
        "01": ("**Minutes (35):** cells live 35", None),
    }


def _cell(kind: str, text: str, **metadata) -> dict:
    cell = {"cell_type": kind, "metadata": metadata, "source": text}
    return {**cell, "outputs": [], "execution_count": None} if kind == "code" else cell


def test_class_speed_counts_cells_prompts_summaries_and_exercises_in_class(tmp_path):
    """The model INSTRUCTORS.md states: 1 minute per cell run live, 2 more per Predict prompt
    asked, 1 per part summarised, an exercise in class at twice its solo minutes; homework is
    the solo measure of the rest. A proof cell costs nothing in class."""
    words = " ".join(["word"] * 200)  # a minute of reading alone
    path = _notebook(
        tmp_path,
        [
            _cell("markdown", "# Tiny"),
            _cell("code", "x = 1"),
            _cell("markdown", "## Live part\n\n**Predict:** what?"),
            _cell("code", "y = 2"),
            _cell("code", "assert y", tags=["proof"]),
            _cell("markdown", f"## Summarised part\n\n{words}"),
            _cell("code", "z = 3"),
            _cell("markdown", f"## Home part\n\n{words}"),
            _cell("markdown", "## Exercise 9.1: in class"),
            _cell("code", "def f(): pass", exercise={"checker": "m:c", "function": "f"}),
            _cell("code", "c(f)"),
            _cell("markdown", "## Exercise 9.2: at home"),
            _cell("code", "def g(): pass", exercise={"checker": "m:c", "function": "g"}),
            _cell("code", "c(g)"),
        ],
    )
    instructors = tmp_path / "INSTRUCTORS.md"
    instructors.write_text(
        "### 99 · Tiny\n\n- **Exercise 9.1** (`f`): 5 minutes alone.\n"
        "- **Exercise 9.2** (`g`): 7 minutes.\n"
    )
    plan = minutes.ClassPlan(
        1,
        parts=(("Summarised", minutes.SUMMARISED), ("Home", minutes.HOME)),
        in_class=("9.1",),
    )
    m = minutes.class_minutes(path, plan, instructors)
    assert (m.live_cells, m.asked, m.summarised, m.exercise) == (2, 1, 1, 10)
    assert m.in_class == 2 * 1 + 1 * 2 + 1 + 10
    # at home: the summarised part (a minute of words, 6 s of code), the home part (a minute),
    # exercise 9.2 with its heading (7 minutes and a few words), and a minute to run
    assert m.homework == minutes.rounded(1 + 0.1 + 1 + 7 + 5 / 200 + 1)
    assert m.homework_exercises == {"9.2": 7}
    assert minutes.minutes_line(m) == (
        "**Minutes (15):** cells live 2 · prompts asked 1 · parts summarised 1 · exercise 10"
    )
    wrong = minutes.ClassPlan(1, parts=(("No such heading", minutes.LIVE),), in_class=("9.7",))
    with pytest.raises(ValueError, match="'No such heading', '9.7'"):
        minutes.class_minutes(path, wrong, instructors)


def test_the_plan_table_and_homework_sheets_parse(tmp_path):
    text = (
        "## The two plans\n\nwords\n\n| part | 3 hours | s1 | s2 |\n|---|---|---|---|\n"
        "| 00 start | 14 | 14 | 0 |\n| total | 180 | 90 | 90 |\n\n"
        "### Homework 1 (after)\n\n| exercise | notebook | minutes | points |\n|---|---|---|---|\n"
        "| 0.1 | `00_start_here` | 4 | 4 |\n| total | | 4 | 4 |\n"
    )
    assert minutes.plan_table(text) == {"00 start": (14, 14, 0), "total": (180, 90, 90)}
    assert minutes.stated_homework_sheet(text, 1) == [("0.1", "00_start_here", 4, 4)]
    assert minutes.stated_homework_sheet(text, 2) == []
    with pytest.raises(ValueError, match="non-number"):
        minutes.plan_table(text.replace("| 14 | 14 |", "| 14 | x |"))


def test_bad_inputs_say_what_was_expected(tmp_path):
    with pytest.raises(ValueError, match="existing .ipynb"):
        minutes.notebook_minutes(tmp_path / "missing.ipynb")
    readme = tmp_path / "README.md"
    readme.write_text("# no course map here\n")
    with pytest.raises(ValueError, match="no course-map rows"):
        minutes.readme_minutes(readme)
    untimed = _notebook(tmp_path, [{"cell_type": "markdown", "metadata": {}, "source": "# x"}])
    with pytest.raises(ValueError, match="Time"):
        minutes.stated_minutes(untimed)


def test_write_puts_the_measure_in_the_time_line_and_the_readme(tmp_path):
    """The minutes are generated: --write fixes a stale Time line and README row, a second
    run finds nothing to do, and --write's check mode names what is stale."""
    (tmp_path / "notebooks").mkdir()
    opening = "# Tiny\n\nWords.\n\n- **Time:** about 50 minutes"
    path = _notebook(
        tmp_path / "notebooks",
        [{"cell_type": "markdown", "id": "opening", "metadata": {}, "source": opening}],
    )
    _instructors(tmp_path, "")
    readme = tmp_path / "README.md"
    readme.write_text("| notebook | what | minutes |\n|---|---|---|\n| [`99_tiny`](x) | y | 50 |\n")
    figure = minutes.rounded(minutes.notebook_minutes(path, tmp_path / "INSTRUCTORS.md").total)
    assert figure != 50
    stale = minutes.write(tmp_path, check=True)
    assert stale == [
        f"99_tiny.ipynb: the Time line says 50, not {figure}",
        f"README.md: 99_tiny's row says 50, not {figure}",
    ]
    assert minutes.stated_minutes(path) == 50  # check mode changed nothing
    assert minutes.write(tmp_path) == stale
    assert minutes.stated_minutes(path) == figure
    assert minutes.readme_minutes(readme) == {"99_tiny": figure}
    assert minutes.write(tmp_path) == []
    assert (minutes.rounded(28.5), minutes.rounded(31.3)) == (29, 31)


def test_write_puts_the_plan_into_instructors_and_a_second_run_changes_nothing():
    """INSTRUCTORS.md's minutes lines, plan table and homework sheets are generated: a stale
    figure in each is written back to the plan's, and the page as it is needs no change."""
    text = (ROOT / "INSTRUCTORS.md").read_text()
    plan = minutes.class_plan()
    assert minutes.write_instructors(text, plan) == text
    stale = text.replace("**Minutes (14):** cells live 9", "**Minutes (14):** cells live 8")
    stale = re.sub(r"^(\| 00 start here \| )\d+", r"\g<1>99", stale, flags=re.M)
    stale = stale.replace("| 0.1 | `00_start_here` | 4 | 4 |", "| 0.1 | `00_start_here` | 4 | 5 |")
    assert stale.count("99") > text.count("99") and stale != text
    assert minutes.write_instructors(stale, plan) == text


def test_a_homework_sheet_says_its_time_with_the_reading_and_leaves_optional_work_ungraded():
    plan = minutes.class_plan()
    for session in (1, 2):
        graded = [m for m in plan if m.session == session and not m.optional]
        sheet = " ".join(minutes.sheet_text(session, plan).split())
        assert f"is about {sum(m.homework for m in graded)} minutes" in sheet
    assert all(e != "7.1" for e, *_ in minutes.homework_sheet(2))
    assert "with 7.1) is optional and not graded" in " ".join(minutes.sheet_text(2, plan).split())


def test_a_class_pace_is_the_timed_one_or_the_slowest_timed_for_a_notebook_nobody_timed():
    ratios = {nb: taken / model for nb, (taken, model) in minutes.TIMED_PACE.items()}
    for notebook, ratio in ratios.items():
        assert minutes.pace(f"{notebook}_timed") == ratio
    assert minutes.pace("99_never_timed") == max(ratios.values()) == minutes.SLOW_PACE


def test_a_session_at_a_class_pace_counts_its_notebooks_at_their_pace_and_its_other_parts(
    tmp_path,
):
    """The paragraph on the plan at a class's pace comes from the plan and the table: a
    session's notebooks at their pace, its other rows as planned, the rest its slack."""
    text = (ROOT / "INSTRUCTORS.md").read_text()
    plan = minutes.class_plan()
    table = minutes.plan_table(text)
    for s in minutes.sessions_at_pace(plan, text):
        ours = [m for m in plan if m.session == s.session]
        at_pace = sum(m.in_class * minutes.pace(m.notebook) for m in ours)
        assert abs(s.notebooks - at_pace) <= 0.5
        rows = [v[s.session] for part, v in table.items() if part[:2].isdigit()]
        slack = next(v[s.session] for part, v in table.items() if part.startswith("slack"))
        assert s.other == minutes.SESSION_MINUTES - sum(rows) - slack
        assert s.slack == minutes.SESSION_MINUTES - s.notebooks - s.other
        assert s.timed == any(m.notebook[:2] in minutes.TIMED_PACE for m in ours)
        sentence = f"session {s.session}'s notebooks take {s.notebooks} minutes"
        if not s.timed:
            sentence = f"its notebooks would take {s.notebooks} minutes"
        assert sentence in " ".join(minutes.PACE_PARAGRAPH.search(text).group(0).split())
    stale = minutes.PACE_PARAGRAPH.sub("At the slow end of that pace, all is well.", text)
    assert minutes.write_instructors(stale, plan) == text
