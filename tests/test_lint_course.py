"""scripts/lint_course.py, the course's conventions in one lint run: each rule catches the
departures it is for, on small synthetic cells, and the run reports every violation at once."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from scripts import lint_course as lint
from scripts import notebook_minutes as minutes

ROOT = Path(__file__).resolve().parents[1]

CODE_BOX = lint.CODE_BOX
opening_problems, exercise_heading, checker_label = (
    lint.opening_problems,
    lint.exercise_heading,
    lint.checker_label,
)
exercise_problems, seed_as_a_case, step_sections, shows_a_plot = (
    lint.exercise_problems,
    lint.seed_as_a_case,
    lint.step_sections,
    lint.shows_a_plot,
)


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _details(summary: str, body: str) -> dict:
    return _markdown(f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>")


SOLUTION_BODY = f"A sentence.\n\n{CODE_BOX}\n\n```python\ndef f(x):\n    return x\n```\n\n</div>"
GOOD_OPENING = (
    "# 02 · A title\n\nWhat this covers.\n\n"
    "- **You will be able to:** do a thing\n- **You need:** `01_x`\n"
    "- **Time:** about 25 minutes"
)


def _exercise(
    heading="## Exercise 2.1: stream it\n\nWrite `f`.",
    label="Exercise 2.1 (stream it)",
    reveals=None,
) -> list[dict]:
    if reveals is None:
        reveals = [
            _details("Hint", "Carry the state."),
            _details("A second hint", "Look at what it returns."),
            _details("Show a solution", SOLUTION_BODY),
        ]
    return [
        _markdown(heading),
        {
            "cell_type": "code",
            "metadata": {"exercise": {"function": "f"}},
            "source": "def f(x):\n    return None",
            "outputs": [],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "source": "check(f)",
            "outputs": [
                {
                    "output_type": "execute_result",
                    "data": {
                        "text/plain": f"Not yet: {label}. you returned None.\nHint: carry it."
                    },
                }
            ],
        },
        *reveals,
    ]


def test_the_opening_parser_passes_the_form_and_catches_each_departure():
    assert opening_problems(_markdown(GOOD_OPENING)) == []
    table = (
        "# 02 · A title\n\n| | |\n|---|---|\n| **You will be able to:** | x |\n"
        "- **You will be able to:** x\n- **You need:** y\n- **Time:** about 5 minutes"
    )
    wrong = {
        "a table": table,
        "no title": GOOD_OPENING.replace("# 02 · A title", "02 · A title"),
        "no colon inside the bold": GOOD_OPENING.replace("**You need:**", "**You need**:"),
        "no Time": GOOD_OPENING.replace("- **Time:** about 25 minutes", ""),
        "Time without minutes": GOOD_OPENING.replace("about 25 minutes", "half an hour"),
        "out of order": (
            "# 02 · A title\n\n- **You need:** y\n"
            "- **You will be able to:** x\n- **Time:** about 25 minutes"
        ),
    }
    for what, text in wrong.items():
        assert opening_problems(_markdown(text)), what
    assert opening_problems({"cell_type": "code", "source": GOOD_OPENING})


def test_heading_and_label_parsers():
    assert exercise_heading("## Exercise 2.1: stream it\n\nWrite it.") == (2, 1, "stream it")
    assert exercise_heading("## Exercise: stream it") is None
    assert exercise_heading("## Exercise 2: stream it") is None
    assert exercise_heading("Some words first.\n\n## Exercise 2.1: stream it") is None
    assert checker_label(
        "Not yet: Exercise 0.1 (the status of one gradient). for a gradient that is all zeros..."
    ) == (0, 1, "the status of one gradient")
    assert checker_label("Solved: Exercise 4.1 (a masked log distance without NaN). ok") == (
        4,
        1,
        "a masked log distance without NaN",
    )
    assert checker_label("Not yet: Exercise 1.1. your loss is 0.0033") is None


def test_the_exercise_parser_passes_the_form():
    assert exercise_problems(_exercise(), 2) == []
    assert exercise_problems(_exercise() + [_markdown("## Next part")], 2) == []


def test_the_exercise_parser_catches_realistic_mistakes():
    hint, second, solution = (
        _details("Hint", "Carry the state."),
        _details("A second hint", "Look at what it returns."),
        _details("Show a solution", SOLUTION_BODY),
    )
    wrong = {
        "a heading without a number": _exercise(heading="## Exercise: stream it"),
        "the heading inside the summary cell": _exercise(
            heading="## Summary\n\n* things\n\n## Exercise 2.1: stream it"
        ),
        "another notebook's number": _exercise(
            heading="## Exercise 1.1: stream it", label="Exercise 1.1 (stream it)"
        ),
        "a heading the checker does not print": _exercise(label="Exercise 2.2 (stream it)"),
        "another title in the checker": _exercise(label="Exercise 2.1 (stream the chunks)"),
        "no second hint": _exercise(reveals=[hint, solution]),
        "hints swapped": _exercise(reveals=[second, hint, solution]),
        "05's old 'Solution' summary": _exercise(
            reveals=[hint, second, _details("Solution", SOLUTION_BODY)]
        ),
        "two blocks in one cell": _exercise(
            reveals=[
                _markdown(
                    "<details>\n<summary>Hint</summary>\n\nx\n\n</details>\n<details>\n"
                    "<summary>A second hint</summary>\n\ny\n\n</details>"
                ),
                solution,
            ]
        ),
        "code in a hint": _exercise(
            reveals=[_details("Hint", "```python\nstate = next_state\n```"), second, solution]
        ),
        "no python block in the solution": _exercise(
            reveals=[hint, second, _details("Show a solution", "Carry the state.")]
        ),
        "two python blocks": _exercise(
            reveals=[
                hint,
                second,
                _details("Show a solution", SOLUTION_BODY + "\n\n```python\nf(1)\n```"),
            ]
        ),
        "no blank line before </details>": _exercise(
            reveals=[
                hint,
                second,
                _markdown(
                    "<details>\n<summary>Show a solution</summary>\n\n"
                    "```python\nf(1)\n```\n</details>"
                ),
            ]
        ),
        "a solution without the code box": _exercise(
            reveals=[
                hint,
                second,
                _details(
                    "Show a solution", "A sentence.\n\n```python\ndef f(x):\n    return x\n```"
                ),
            ]
        ),
        "a fourth reveal": _exercise(
            reveals=[hint, second, solution, _details("A third hint", "More.")]
        ),
    }
    for what, cells in wrong.items():
        assert exercise_problems(cells, 2), what
    no_output = _exercise()
    no_output[2]["outputs"] = []
    assert exercise_problems(no_output, 2), "a checker cell with no stored verdict"
    assert exercise_problems([_markdown("# only prose")], 2), "no exercise at all"


def test_the_seed_guard_catches_case_names_and_passes_random_seeds():
    for wrong in (
        "seed 000 of this course",
        "seed case 004",
        "the seed's loss",
        "The seed's question",
        "the seed-loss model",
        "per-frame (seed)",
        "which the seed never says",
        "the two seed questions",
    ):
        assert seed_as_a_case(wrong), wrong
    for fine in (
        "make_deterministic(seed=0)",
        "a random seed",
        "seeded, so the same",
        "each from a seed",
        "other seeds",
        'train_denoiser(loss="seed")',
        "def clip_excerpt(excerpt_of, seed: int = 0)",
        "the seed of the generator",
        "make_deterministic(seed)",
    ):
        assert not seed_as_a_case(fine), fine


def test_step_sections_split_at_each_level_two_heading():
    code = {
        "cell_type": "code",
        "metadata": {},
        "source": "x",
        "outputs": [{"output_type": "display_data", "data": {"image/png": "..."}}],
    }
    cells = [
        {"cell_type": "markdown", "source": "## Step 1: a\n\ntext"},
        code,
        {"cell_type": "markdown", "source": "## Summary"},
        code,
        {"cell_type": "markdown", "source": "## Step 2: b"},
    ]
    sections = step_sections(cells)
    assert [len(sections[1]), len(sections[2])] == [1, 0] and shows_a_plot(sections[1][0])


def _code(source: str, tags=(), outputs=(), **metadata) -> dict:
    meta = {**metadata, **({"tags": list(tags)} if tags else {})}
    return {"cell_type": "code", "metadata": meta, "source": source, "outputs": list(outputs)}


def _stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_the_proof_rule_catches_asserts_where_learners_read_and_open_proofs():
    hidden = {"jupyter": {"source_hidden": True}}
    good = [
        _code("x = 1"),
        _code("assert x == 1", ["proof"], **hidden),
        _code("y = 2"),
        _code("assert y == 2", ["proof"], **hidden),
        _code("z = 3"),
        _code("assert z == 3", ["proof"], **hidden),
    ]
    assert lint.proof_problems(good) == []
    checked = _code("assert z", ["proof"], outputs=[_stream("checked: 3 clips\n")], **hidden)
    assert lint.proof_problems([*good[:5], checked]) == []
    wrong = {
        "an assert a learner reads": good + [_code("assert x")],
        "an open proof": [*good[:5], _code("assert z == 3", ["proof"])],
        "a proof that proves nothing": [*good[:5], _code("print(z)", ["proof"], **hidden)],
        "a proof after a proof": [*good, _code("assert z", ["proof"], **hidden)],
        "a proof that talks": [
            *good[:5],
            _code("assert z", ["proof"], outputs=[_stream("a\nb\n")], **hidden),
        ],
        "a proof that teaches": [
            *good[:5],
            _code("assert z", ["proof"], outputs=[_stream("ratio 0.61\n")], **hidden),
        ],
        "two proofs only": good[:4],
        "a lesson-assert without an assert": good + [_code("z", ["lesson-assert"])],
    }
    for what, cells in wrong.items():
        assert lint.proof_problems(cells), what


def test_the_prediction_rule_wants_prompts_right_before_runs_and_answers_after_them():
    predict = _markdown("**Predict:** what does it print?")
    reveal = _details(lint.REVEAL, "It prints 3: f adds one.")
    proof = _code("assert f() == 3", ["proof"], jupyter={"source_hidden": True})
    assert lint.prediction_problems([predict, _code("f()"), reveal], 1) == []
    assert (
        lint.prediction_problems([predict, _code("f()"), proof, reveal, _markdown("Next.")], 1)
        == []
    )
    assert (
        lint.prediction_problems([_markdown("The **predict:** step"), _code("f()"), reveal], 1)
        == []
    )
    wrong = {
        "the answer above the run": [predict, _markdown("It prints 3."), _code("f()")],
        "the answer in plain sight": [predict, _code("f()"), _markdown("It prints 3.")],
        "the answer under another title": [predict, _code("f()"), _details("Answer", "3.")],
        "no answer at all": [predict, _code("f()")],
        "a reveal that answers nothing": [_markdown("Intro."), _code("f()"), reveal],
        "an unannounced failure": [_code("f()", ["raises-exception"])],
    }
    for what, cells in wrong.items():
        assert lint.prediction_problems(cells, 0), what
    assert lint.prediction_problems([predict, _code("f()"), reveal], 2)  # too few prompts


def _copy_of_the_course(root: Path) -> Path:
    """The notebooks, README.md and INSTRUCTORS.md, copied to ``root``."""
    (root / "notebooks").mkdir()
    for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"):
        shutil.copy(path, root / "notebooks" / path.name)
    for name in ("README.md", "INSTRUCTORS.md"):
        shutil.copy(ROOT / name, root / name)
    return root


def test_the_run_reports_every_violation_at_once(tmp_path):
    """A copy of the course with two notebooks broken in different ways: one run names both;
    a case called "seed" goes to the report, which does not fail the lint."""
    _copy_of_the_course(tmp_path)
    assert lint.lint_course(tmp_path) == []  # the course as it is keeps every structural rule
    first = tmp_path / "notebooks" / "00_start_here.ipynb"
    notebook = json.loads(first.read_text())
    notebook["cells"][0]["source"] = "# A title without bullets"
    first.write_text(json.dumps(notebook))
    second = tmp_path / "notebooks" / "03_voicing_loss_reproduce.ipynb"
    notebook = json.loads(second.read_text())
    notebook["cells"].insert(1, _code("assert True", ["proof"]))
    notebook["cells"].append(_markdown("The seed's loss, once more."))
    second.write_text(json.dumps(notebook))
    instructors = tmp_path / "INSTRUCTORS.md"
    planned = re.sub(
        r"(### 04 [^\n]*\n\n\*\*Minutes \()\d+", r"\g<1>5", instructors.read_text(), count=1
    )
    instructors.write_text(planned)  # 04 planned at 5 minutes in class, not at class speed
    found = lint.lint_course(tmp_path)
    assert {where for where, _ in found} == {first.name, second.name, "INSTRUCTORS.md"}
    assert any("04's section says '**Minutes (5):**" in problem for _, problem in found)
    assert any("You need" in problem for _, problem in found)
    assert any("proof cell must be collapsed" in problem for _, problem in found)
    assert not any("voicing-loss question" in problem for _, problem in found)
    report = lint.course_report(tmp_path)
    assert any("voicing-loss question" in note for where, note in report if where == second.name)


def test_a_sentence_in_00_and_a_cell_in_02_fail_no_check(tmp_path):
    """Growing a notebook a little, then writing its minutes as the regeneration does, breaks
    no structural rule and crosses no size limit; growing it far is a warning, not a failure."""
    _copy_of_the_course(tmp_path)
    before = lint.course_report(tmp_path)  # a report, whatever it holds, fails nothing
    first = tmp_path / "notebooks" / "00_start_here.ipynb"
    notebook = json.loads(first.read_text())
    prose = next(i for i, c in enumerate(notebook["cells"][1:], 1) if c["cell_type"] == "markdown")
    notebook["cells"][prose]["source"] = (
        "".join(notebook["cells"][prose]["source"]) + "\n\nOne more sentence, for a learner."
    )
    first.write_text(json.dumps(notebook))
    fix = tmp_path / "notebooks" / "02_gru_state_fix.ipynb"
    notebook = json.loads(fix.read_text())
    summary = max(
        i for i, c in enumerate(notebook["cells"]) if "".join(c["source"]).startswith("## Summary")
    )
    notebook["cells"].insert(
        summary,
        {
            **_code("steps = 5\nprint(steps)", outputs=[_stream("5\n")]),
            "id": "added",
            "execution_count": 1,
        },
    )
    fix.write_text(json.dumps(notebook))
    minutes.write(tmp_path)
    assert lint.lint_course(tmp_path) == []  # INSTRUCTORS.md's plan included
    grown = {first.name, fix.name}
    new_notes = [n for n in lint.course_report(tmp_path) if n not in before]
    assert [(w, n) for w, n in new_notes if not (w in grown and "above its limit" in n)] == []
    step_2 = next(
        i for i, c in enumerate(notebook["cells"]) if "".join(c["source"]).startswith("## Step 2")
    )  # the words go to a part taught live, so the plan's homework stays as it is
    notebook["cells"].insert(step_2, {**_markdown("word " * 400), "id": "long"})
    fix.write_text(json.dumps(notebook))
    minutes.write(tmp_path)
    assert lint.lint_course(tmp_path) == []
    assert any(
        where == fix.name and "words of prose, above its limit of" in note
        for where, note in lint.course_report(tmp_path)
    )
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text() + " word" * lint.DOC_WORDS["README.md"])
    assert lint.lint_course(tmp_path) == []
    assert ("README.md", f"{len(readme.read_text().split())} words, above its limit of 1000") in (
        lint.course_report(tmp_path)
    )
    (tmp_path / "notebooks" / "padding.ipynb").write_bytes(b" " * lint.NOTEBOOKS_BYTES)
    assert lint.lint_course(tmp_path) == []
    assert any("bytes stored, above" in note for _, note in lint.course_report(tmp_path))


def test_the_size_limits_sit_above_todays_sizes_with_headroom(tmp_path):
    """The limits the tool writes are HEADROOM (10 to 15 %) above each notebook's sizes, and
    a notebook above one gets a warning for each."""
    assert 1.10 <= lint.HEADROOM <= 1.15
    written = lint.write_size_limits(ROOT, tmp_path / "size_limits.json")
    assert lint.size_limits(tmp_path / "size_limits.json") == written
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        sizes = lint.notebook_sizes(path)
        assert all(
            size <= limit <= lint.HEADROOM * size + 1
            for size, limit in zip(sizes, written[path.stem], strict=True)
        )
        assert list(lint.size_warnings(path, written)) == []
        squeezed = {path.stem: tuple(int(s) - 1 for s in sizes)}
        assert len(list(lint.size_warnings(path, squeezed))) == 3


def _prompted(before: str, printed: str, reveal: str = "It printed the figure.") -> list[dict]:
    """An opening, a Markdown cell, a Predict prompt, its run printing ``printed``, a proof
    cell, and its reveal."""
    hidden = {"jupyter": {"source_hidden": True}}
    return [
        _markdown(GOOD_OPENING),
        _markdown(before),
        _markdown("**Predict:** how far do the weights move?"),
        _code("print(move)", outputs=[_stream(printed)]),
        _code("assert move", ["proof"], **hidden),
        _details(lint.REVEAL, reveal),
    ]


def test_the_spoiler_rule_finds_a_printed_figure_shown_before_its_reveal():
    printed = "weights move 91% of a voiced step; momentum 0.033 -> 0.0297; loss 2e-05\n"
    clean = _prompted("Adam keeps a momentum.", printed, reveal="It moved 91%: 0.0297 is left.")
    assert lint.spoiler_problems(clean, "04_x") == []
    for shown in ("most of it: 91 %", "a momentum of 0.0297", "a loss of 2.0e-5", "-0.033"):
        found = lint.spoiler_problems(_prompted(shown, printed), "04_x")
        assert len(found) == 1 and found[0].startswith("cell 1 shows "), (shown, found)
    in_the_prompt = _prompted("Adam.", printed)
    in_the_prompt[2] = _markdown("**Predict:** will it move 91 % of a step?")
    assert [p[:12] for p in lint.spoiler_problems(in_the_prompt, "04_x")] == ["cell 2 shows"]
    # counts and settings are not results: whole numbers up to 10, and integers without a %
    assert (
        lint.spoiler_problems(_prompted("5 steps, 3 layers", "5 steps; 3.0 dB; 47 frames"), "04_x")
        == []
    )
    assert len(lint.spoiler_problems(_prompted("it gains 3.0 dB", "gain 3.0 dB\n"), "04_x")) == 1


def test_the_spoiler_rule_reads_readme_rows_and_instructors_notes_above_after_class():
    cells = _prompted("Adam.", "agreement 90.7 %\n")
    row = "| [`07_x`](notebooks/07_x.ipynb) | labels: they agree on 90.7 % of frames | 20 |"
    readme = f"| notebook | what | minutes |\n|---|---|---|\n{row}\n"
    assert lint.readme_row(readme, "07_x") == row
    (found,) = lint.spoiler_problems(cells, "07_x", readme_row=row)
    assert found.startswith("README's course map shows 90.7")
    instructors = (
        "## Per notebook\n\n### 07 · Labels\n\n**Minutes (0):** 90.7\n\n- **Demo:** 90.7 %.\n\n"
        f"### 08 · Next\n\n- 1.5\n\n{lint.AFTER_CLASS}\n\n### 07 · Labels: the answers\n\n90.7 %.\n"
    )
    notes = lint.instructors_notes(instructors, "07_x")
    assert (
        "Demo" in notes and "Minutes" not in notes and "1.5" not in notes and "answers" not in notes
    )
    (found,) = lint.spoiler_problems(cells, "07_x", instructors_notes=notes)
    assert found.startswith("INSTRUCTORS.md shows 90.7")


def test_a_figure_printed_earlier_or_listed_with_a_reason_is_not_a_spoiler():
    cells = _prompted("It scales by 1e-10; the noise is at -40 dB.", "1e-10 hack: -40.0 dB\n")
    assert len(lint.spoiler_problems(cells, "02_x")) == 2  # a notebook without listed figures
    assert lint.spoiler_problems(cells, "04_voicing_loss_fix") == []  # both listed, with reasons
    earlier = [_code("print(level)", outputs=[_stream("level -40.0 dB, 1e-10\n")]), *cells]
    assert lint.spoiler_problems(earlier, "02_x") == []  # the learner has seen them printed


def test_a_time_line_one_minute_off_the_measure_is_out_of_date(tmp_path):
    """The Time lines and the README's minutes are generated, so they are exact."""
    copy = tmp_path / "00_start_here.ipynb"
    notebook = json.loads((ROOT / "notebooks" / copy.name).read_text())
    assert list(lint.lint_notebook(ROOT / "notebooks" / copy.name)) == []
    opening = "".join(notebook["cells"][0]["source"])
    stated = int(re.search(r"about (\d+) minutes", opening).group(1))
    notebook["cells"][0]["source"] = opening.replace(f"about {stated} ", f"about {stated + 1} ")
    copy.write_text(json.dumps(notebook))
    (problem,) = lint.lint_notebook(copy)
    assert f"the opening's Time line says {stated + 1} minutes" in problem
    assert "scripts.notebook_minutes --write" in problem


def _course_copy(tmp_path: Path, instructors: str) -> Path:
    """A course root with the real notebooks and README and this INSTRUCTORS.md."""
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")
    (tmp_path / "INSTRUCTORS.md").write_text(instructors)
    return tmp_path


def test_instructors_plan_is_the_one_computed_at_class_speed():
    """INSTRUCTORS.md's minutes lines, plan table (its sums, each plan's slack) and homework
    sheets are what notebook_minutes.py computes; exercise 4.1 gets 15 minutes in class."""
    assert lint.plan_problems(ROOT) == []


def test_the_plan_rule_catches_a_stale_figure_short_slack_and_a_wrong_sheet(tmp_path):
    text = (ROOT / "INSTRUCTORS.md").read_text()
    stale = re.sub(r"\*\*Minutes \(14\):\*\* cells live 9", "**Minutes (14):** cells live 8", text)
    slack = re.sub(  # session 1 keeps 9, session 2 the rest: the rows still add up
        r"^\| slack([^|]*)\| (\d+) \| (\d+) \| (\d+) \|$",
        lambda m: f"| slack{m[1]}| {m[2]} | 9 | {int(m[4]) + int(m[3]) - 9} |",
        text,
        flags=re.M,
    )
    sheet = text.replace(
        "| 2.1 | `02_gru_state_fix` | 8 | 8 |", "| 2.1 | `02_gru_state_fix` | 8 | 9 |"
    )
    for broken, wanted in (
        (stale, "00's section says"),
        (slack, "every plan keeps 10 minutes"),
        (sheet, "homework sheet 1 lists"),
    ):
        assert broken != text
        root = tmp_path / wanted.split()[0].strip("'")
        root.mkdir()
        problems = lint.plan_problems(_course_copy(root, broken))
        assert any(wanted in p for p in problems), problems


def test_the_plan_rule_fails_a_timed_session_short_of_slack_at_a_class_pace(monkeypatch):
    """Session 2 at the slow end of its timed pace keeps 10 minutes or more; teaching 03's
    section 3 live again (as the plan did before the timing) takes them."""
    assert lint.plan_problems(ROOT) == []
    plan = minutes.CLASS_PLAN["03"]
    live_again = tuple(part for part in plan.parts if part[0] != "3. ")
    monkeypatch.setitem(minutes.CLASS_PLAN, "03", minutes.ClassPlan(plan.session, parts=live_again))
    problems = lint.plan_problems(ROOT)
    assert any("session 2 at the slow end of a class's pace" in p for p in problems), problems
    assert not any("session 1 at the slow end" in p for p in problems)  # session 1: untimed
