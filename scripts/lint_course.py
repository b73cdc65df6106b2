"""The course's conventions (CONTRIBUTING.md, "Conventions"), checked in one run that reports
every violation at once, in the spirit of ``tensorflow_docs``' nblint:

    python -m scripts.lint_course                 # every notebook, README.md and INSTRUCTORS.md
    python -m scripts.lint_course --write-limits  # size limits HEADROOM above today's sizes

Structure blocks: the opening says what the notebook covers, needs and takes; Predict prompts
come before their runs and their answers after them, collapsed; proofs sit in collapsed
``proof`` cells and only assert; exercises have their heading, two hints and a solution; every
fix step shows its gradient report and plot; the stated minutes are the measured ones; each
class session fits its time. A violation fails the lint.

Limits guide, words report: a notebook above its size limits, a prompt's figure shown before
its reveal, a case called "seed", a demonstration shown twice are printed in the lint's report
for a reader to judge, and do not fail it.
``tests/test_lint_course.py`` shows each rule catching what it is for.
"""

from __future__ import annotations

import ast
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from scripts import notebook_minutes as minutes

ROOT = Path(__file__).resolve().parents[1]

# The size limits (visible code lines, prose words, minutes), per notebook: a guide, not a gate.
# They sit HEADROOM above the sizes measured when they were set, written by
# ``python -m scripts.lint_course --write-limits`` (never by hand) into SIZE_LIMITS; crossing
# one is a warning in the lint's report, and a notebook that grew on purpose gets new limits
# from the tool in the same commit.
SIZE_LIMITS = Path(__file__).resolve().with_name("size_limits.json")
HEADROOM = 1.12
# The stored notebooks together weigh at most this much (a figure's colours, no audio bytes and
# the widget state a view needs: scripts/regenerate_outputs.py); above it, a warning.
NOTEBOOKS_BYTES = 1_000_000
# The docs stay short: the README is for learners, CONTRIBUTING.md for contributors (words).
DOC_WORDS = {"README.md": 1000, "CONTRIBUTING.md": 2000}
# The whole course, each notebook at a learner's own speed, fits this many minutes: this
# measure blocks (each class session's plan, with its slack, is checked in plan_problems).
COURSE_MINUTES = 6 * 60
# At least this many Predict prompts: one before each experiment whose result is the lesson.
PREDICTIONS = {
    "00_start_here": 2,
    "01_gru_state_reproduce": 7,
    "02_gru_state_fix": 5,
    "03_voicing_loss_reproduce": 5,
    "04_voicing_loss_fix": 5,
    "05_field_guide": 13,
    "06_capstone": 5,
    "07_appendix_labels": 2,
}
# At most this many helper names imported where a learner reads them.
HELPER_NAMES = {"04_voicing_loss_fix": 6}
# Each demonstration once in the course: an output text, and how many notebooks may show it.
SHOWN_ONCE = {
    "No gradients provided for any variable": 1,  # the all-None ValueError
    "Gradients do not exist for variables": 1,  # the partial-None warning
}
# The fix steps that change the model's gradients: each shows a report and a plot.
STEPS_WITH_A_PLOT = {"02_gru_state_fix": (1, 2, 3, 4, 5), "04_voicing_loss_fix": (1, 2, 4, 5)}
# The exercises that need the room, with their least minutes in class (INSTRUCTORS.md's plan:
# notebook_minutes.py computes it at class speed).
LEAST_IN_CLASS: dict[str, int] = {}  # none since 4.1 became homework: session 2 did not fit
# A prompt's deciding figures (what its run prints) stay out of everything a learner reads
# before its reveal. A figure that must appear earlier for another reason is listed here with
# that reason, per notebook (its README row and INSTRUCTORS section included).
SHOWN_BEFORE_THE_REVEAL = {
    ("03_voicing_loss_reproduce", "1e-10"): "the hack's scale: the question's own code",
    ("04_voicing_loss_fix", "1e-10"): "the hack's scale: the question's own code",
    ("04_voicing_loss_fix", "40"): "the noise's level (-40 dB), the yardstick the prompt names",
    ("06_capstone", "95"): "the confidence level of an interval, not a result",
    ("06_capstone", "0.5"): "the target margin, set before anything is measured",
}
# INSTRUCTORS.md: the results, for the instructor, go below this heading; above it, each
# notebook's section is checked like the notebook's Markdown before its reveals.
AFTER_CLASS = "## After class"

OPENING_BULLETS = (
    re.compile(r"^- \*\*You will be able to:\*\* \S", re.M),
    re.compile(r"^- \*\*You need:\*\* \S", re.M),
    re.compile(r"^- \*\*Time:\*\* about \d+ minutes\s*$", re.M),
)
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.M)
HEADING = re.compile(r"\A## Exercise (\d+)\.(\d+): (\S.*?)\s*$", re.M)
LABEL = re.compile(r"^(?:Not yet|Solved): Exercise (\d+)\.(\d+) \((.+?)\)\. ", re.M)
DETAILS = re.compile(r"\A<details>\n<summary>([^<\n]+)</summary>\n\n(.*?)\n\n</details>\s*\Z", re.S)
FENCE = re.compile(r"^```", re.M)
PYTHON_BLOCK = re.compile(r"(?:\A|\n\n)```python\n.*?\n```(?:\n\n|\Z)", re.S)
SUMMARIES = ("Hint", "A second hint", "Show a solution")
# The answer to a Predict prompt waits, collapsed, until the learner has run the cell.
REVEAL = "What happened, and why"
PROOF_OUTPUT = re.compile(r"checked\b[^\n]{0,90}")  # all a proof cell may print
# JupyterLab gives a code block its margins only directly in a cell, not inside <details>; this
# box sets the solution's code off from the prose, in the theme's own border colour.
CODE_BOX = (
    '<div style="margin: 0.5em 0 1em 1em; padding-left: 1em; '
    'border-left: 3px solid var(--jp-border-color1, #9e9e9e)">'
)
BOXED_BLOCK = re.compile(re.escape(CODE_BOX) + r"\n\n```python\n.*?\n```\n\n</div>", re.S)
# A figure a run prints: a decimal (6.7, -4.7, 0.0297), a power of ten (2e-05) or a
# percentage of two digits or more (91%); integers alone are counts and settings, not results.
PRINTED_FIGURE = re.compile(r"(?<![\w.])[-+−]?(\d+\.\d+(?:e[-+]?\d+)?|\d+e[-+]?\d+|\d{2,}(?=\s?%))")
NUMBER = re.compile(r"(?<![\w.])[-+−]?(\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?![\w])")
STEP_HEADING = re.compile(r"^## Step (\d+)\b", re.M)
SEED_AS_A_CASE = re.compile(r"""(?ix)
    \bseed(?:['’]s\b|[\s-]+(?:case|cases|question|questions|file|answer|answers|loss|
                            model|loop|conditions)\b)   # the seed's loss, seed case, seed-loss
  | \bseed\s+\d{3}\b                                    # seed 000
  | (?<!\w)\(seed\)                                     # per-frame (seed), not f(seed)
  | \bthe\s+seed\b(?!\s*(?:=|value|of\s+the|for\s+the|generator|\)))  # the seed says
""")

Violation = tuple[str, str]  # (where, what is wrong)


# --------------------------------------------------------------------------- reading cells


def source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def output_text(cell: dict) -> str:
    """The stream, text/plain and error text of a code cell's stored outputs."""
    parts = []
    for output in cell.get("outputs", []):
        text = (
            output.get("text")
            or output.get("data", {}).get("text/plain")
            or output.get("evalue", "")
        )
        parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def cells_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _is_exercise(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get("exercise"))


# --------------------------------------------------------------------------- the opening


def opening_problems(cell: dict) -> list[str]:
    """What is wrong with a notebook's first cell, as the opening (empty when fine)."""
    if cell.get("cell_type") != "markdown":
        return ["the first cell is not a Markdown cell"]
    text = source(cell)
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
    if "**In this notebook**" in text:
        problems.append(
            "the opening lists what the runs show; say what the learner will be able to do"
        )
    return problems


# --------------------------------------------------------------------------- exercises


def exercise_heading(text: str) -> tuple[int, int, str] | None:
    """(N, M, title) from a Markdown cell that starts '## Exercise N.M: title', else None."""
    match = HEADING.match(text)
    return (int(match[1]), int(match[2]), match[3]) if match else None


def checker_label(text: str) -> tuple[int, int, str] | None:
    """(N, M, title) from a checker's printed verdict 'Not yet: Exercise N.M (title). ...'."""
    match = LABEL.search(text)
    return (int(match[1]), int(match[2]), match[3]) if match else None


def previous_markdown(cells: list[dict], index: int) -> int:
    """The index of the last Markdown cell before ``index`` (-1 if none)."""
    return next((j for j in range(index - 1, -1, -1) if cells[j]["cell_type"] == "markdown"), -1)


def details_block(text: str) -> tuple[str, str] | None:
    """(summary, body) when ``text`` is exactly one '<details>' block in the course's form."""
    match = DETAILS.match(text.strip() + "\n")
    if match is None or "<details" in match[2] or "</details>" in match[2]:
        return None
    return match[1].strip(), match[2]


def exercise_problems(cells: list[dict], number: int) -> list[str]:
    """Every way the exercises of a notebook (``number``: 0 for 00_...) break the form."""
    problems = []
    exercises = [
        i for i, cell in enumerate(cells) if cell.get("cell_type") == "code" and _is_exercise(cell)
    ]
    if not exercises:
        return ["no exercise cell (code cell with metadata 'exercise')"]
    for index in exercises:
        name = cells[index]["metadata"]["exercise"].get("function", f"cell {index}")
        before = cells[index - 1] if index > 0 else {}
        heading = (
            exercise_heading(source(before)) if before.get("cell_type") == "markdown" else None
        )
        if heading is None:
            problems.append(
                f"{name}: the cell before is not a Markdown cell starting "
                "'## Exercise N.M: <title>'"
            )
        elif heading[0] != number:
            problems.append(
                f"{name}: heading Exercise {heading[0]}.{heading[1]} in notebook {number:02d}"
            )
        checker = cells[index + 1] if index + 1 < len(cells) else {}
        label = checker_label(output_text(checker)) if checker.get("cell_type") == "code" else None
        if label is None:
            problems.append(
                f"{name}: the checker-call cell after it has no stored "
                "'Exercise N.M (title)' verdict"
            )
        elif heading is not None and label != heading:
            problems.append(
                f"{name}: heading 'Exercise {heading[0]}.{heading[1]}: "
                f"{heading[2]}' but the checker prints 'Exercise {label[0]}."
                f"{label[1]} ({label[2]})'"
            )
        reveals = cells[index + 2 : index + 6]
        blocks = [
            details_block(source(cell)) if cell.get("cell_type") == "markdown" else None
            for cell in reveals
        ]
        summaries = tuple(block[0] if block else None for block in blocks[:3])
        if summaries != SUMMARIES:
            problems.append(
                f"{name}: after the checker cell, expected three <details> cells "
                f"{SUMMARIES}, got {summaries}"
            )
            continue
        if len(blocks) == 4 and blocks[3] is not None:
            problems.append(f"{name}: a fourth <details> cell ({blocks[3][0]!r}) follows")
        for summary, body in blocks[:2]:
            if FENCE.search(body) or not re.search(r"\w", body):
                problems.append(f"{name}: the {summary!r} cell must be words, no code block")
        solution = blocks[2][1]
        if len(FENCE.findall(solution)) != 2 or len(PYTHON_BLOCK.findall(solution)) != 1:
            problems.append(
                f"{name}: 'Show a solution' must hold exactly one fenced python "
                "block, with a blank line before and after it"
            )
        elif not BOXED_BLOCK.search(solution):
            problems.append(
                f"{name}: put the solution's code block in the code box "
                f"({CODE_BOX} ... </div>, blank lines around the block)"
            )
    return problems


# --------------------------------------------------------------------------- proofs, predictions


def proof_problems(cells: list[dict]) -> list[str]:
    """Asserts only in proof (or lesson-assert) cells; at least three proof cells, each
    asserting, collapsed, right after the code cell it checks, printing one short line at most."""
    problems = []
    for index, cell in enumerate(cells):
        where = f"cell {index}"
        if cell["cell_type"] != "code":
            continue
        lesson = minutes.LESSON_ASSERT_TAG in minutes.tags(cell)
        asserts = re.search(r"^\s*assert\b", source(cell), re.M)
        if not (minutes.is_proof(cell) or lesson or _is_exercise(cell)) and asserts:
            problems.append(
                f"{where}: an assert in a learner-facing cell (move it to a proof cell right after)"
            )
        if lesson and not asserts:
            problems.append(f"{where}: tagged lesson-assert but asserts nothing")
        if not minutes.is_proof(cell):
            continue
        if not asserts:
            problems.append(f"{where}: a proof cell that asserts nothing")
        if cell["metadata"].get("jupyter", {}).get("source_hidden") is not True:
            problems.append(
                f"{where}: a proof cell must be collapsed (metadata.jupyter.source_hidden: true)"
            )
        if (
            index == 0
            or cells[index - 1]["cell_type"] != "code"
            or minutes.is_proof(cells[index - 1])
        ):
            problems.append(f"{where}: a proof cell goes right after the code cell it checks")
        kinds = {output["output_type"] for output in cell.get("outputs", [])}
        printed = output_text(cell).strip()
        if not kinds <= {"stream"} or (printed and not PROOF_OUTPUT.fullmatch(printed)):
            problems.append(
                f"{where}: a proof cell prints nothing or 'checked...' on one short line; "
                "print what a learner should see in the visible cell above"
            )
    if sum(minutes.is_proof(cell) for cell in cells) < 3:
        problems.append("fewer than 3 proof cells: prove the notebook's claims in them")
    return problems


def is_reveal(cell: dict) -> bool:
    """A Markdown cell that is one collapsed "What happened, and why" block."""
    block = details_block(source(cell)) if cell["cell_type"] == "markdown" else None
    return block is not None and block[0] == REVEAL


def prediction_problems(cells: list[dict], at_least: int) -> list[str]:
    """At least ``at_least`` Predict prompts, each right before the run it asks about, one
    before every intended failure, and each answered only after the run: the first Markdown
    cell after the prompt's code cells is a collapsed "What happened, and why" block."""
    prompts = [
        i
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown" and minutes.PROMPT.search(source(cell))
    ]
    problems = (
        [f"{len(prompts)} Predict prompts, at least {at_least} expected"]
        if len(prompts) < at_least
        else []
    )
    for index in prompts:
        if index + 1 >= len(cells) or cells[index + 1]["cell_type"] != "code":
            problems.append(f"cell {index}: a Predict prompt is followed by the run it asks about")
            continue
        answer = next(
            (j for j in range(index + 1, len(cells)) if cells[j]["cell_type"] == "markdown"),
            None,
        )
        if answer is None or not is_reveal(cells[answer]):
            problems.append(
                f"cell {index}: the answer to a Predict prompt waits after its run, in a "
                f"Markdown cell that is one <details> block titled '{REVEAL}'"
            )
    for index, cell in enumerate(cells):
        if is_reveal(cell) and previous_markdown(cells, index) not in prompts:
            problems.append(f"cell {index}: a '{REVEAL}' block answers no Predict prompt")
    for index, cell in enumerate(cells):
        if "raises-exception" in minutes.tags(cell) and index - 1 not in prompts:
            problems.append(
                f"cell {index}: an intended failure is a key experiment; ask for a prediction first"
            )
    return problems


# --------------------------------------------------------------------------- spoilers


def figure_key(number: str) -> str:
    """A number as a figure, sign dropped: 44.0 and 44 are one figure, 2e-05 and 2.0e-5 too; a
    whole number up to 10 only as written (3.0 is a result, 3 a count)."""
    value = format(float(number), "g")
    return number if value.isdigit() and int(value) <= 10 else value


def printed_figures(text: str) -> set[str]:
    return {figure_key(m[1]) for m in PRINTED_FIGURE.finditer(text)}


def figures_in(text: str) -> set[str]:
    return {figure_key(m[1]) for m in NUMBER.finditer(text)}


def prompt_runs(cells: list[dict]) -> list[tuple[int, list[int], int]]:
    """Per Predict prompt: (its cell, the code cells of its run, proof cells left out, the cell
    of its reveal: the next Markdown cell). The site folds those runs' outputs too."""
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown" or not minutes.PROMPT.search(source(cell)):
            continue
        reveal = next(
            (j for j in range(index + 1, len(cells)) if cells[j]["cell_type"] == "markdown"),
            len(cells),
        )
        run = [j for j in range(index + 1, reveal) if not minutes.is_proof(cells[j])]
        found.append((index, run, reveal))
    return found


def deciding_figures(cells: list[dict]) -> list[tuple[int, int, set[str]]]:
    """Per Predict prompt: (its cell, its reveal's cell, the figures its run prints that no
    earlier cell printed). Proof cells print no figure."""
    found, seen = [], set()
    for index, run_cells, reveal in prompt_runs(cells):
        seen |= {
            f
            for c in cells[:index]
            if c["cell_type"] == "code"
            for f in printed_figures(output_text(c))
        }
        run = {f for j in run_cells for f in printed_figures(output_text(cells[j]))}
        found.append((index, reveal, run - seen))
    return found


def spoiler_problems(
    cells: list[dict], stem: str, readme_row: str = "", instructors_notes: str = ""
) -> list[str]:
    """Where a prompt's deciding figure is shown before its reveal: in the notebook's
    Markdown (title, opening, headings, the prompt itself), in the README's row for the
    notebook, or in its INSTRUCTORS section above the after-class line."""
    problems = []
    for prompt, reveal, deciding in deciding_figures(cells):
        deciding = {f for f in deciding if (stem, f) not in SHOWN_BEFORE_THE_REVEAL}
        places = [
            (f"cell {j}", source(cell))
            for j, cell in enumerate(cells[:reveal])
            if cell["cell_type"] == "markdown"
        ]
        places += [("README's course map", readme_row), ("INSTRUCTORS.md", instructors_notes)]
        for where, text in places:
            for figure in sorted(figures_in(text) & deciding):
                problems.append(
                    f"{where} shows {figure}, which the run after the Predict prompt in cell "
                    f"{prompt} prints: say it after the run, in its reveal (or list it, with "
                    "its reason, in SHOWN_BEFORE_THE_REVEAL)"
                )
    return problems


def readme_row(readme: str, stem: str) -> str:
    """The README course map's row for a notebook (empty if there is none)."""
    return next((line for line in readme.splitlines() if f"[`{stem}`]" in line), "")


def instructors_notes(instructors: str, stem: str) -> str:
    """A notebook's section of INSTRUCTORS.md above the after-class line ('### NN · ...' to the
    next heading), without its minutes lines."""
    before = instructors.split(f"\n{AFTER_CLASS}", 1)[0]
    match = re.search(rf"^### {stem[:2]} .*?(?=^##|\Z)", before, re.S | re.M)
    text = match[0] if match else ""
    return "\n".join(
        line
        for line in text.splitlines()
        if not line.startswith("**Minutes") and not line.startswith("**Homework")
    )


# --------------------------------------------------------------------------- fix steps


def step_sections(cells: list[dict]) -> dict[int, list[dict]]:
    """The cells of each ``## Step N`` section, up to the next ``## `` heading."""
    sections: dict[int, list[dict]] = {}
    current = None
    for cell in cells:
        if cell["cell_type"] == "markdown":
            headings = re.findall(r"^## (.*)$", source(cell), re.M)
            if headings:
                match = STEP_HEADING.match(f"## {headings[-1]}")
                current = int(match.group(1)) if match else None
                if current is not None:
                    sections[current] = []
                continue
        if current is not None:
            sections[current].append(cell)
    return sections


def shows_a_plot(cell: dict) -> bool:
    return (
        cell["cell_type"] == "code"
        and not minutes.is_proof(cell)
        and any("image/png" in output.get("data", {}) for output in cell.get("outputs", []))
    )


def shows_a_report(cell: dict) -> bool:
    return re.search(
        r"\d+ variables: ", output_text(cell)
    ) is not None or "gradient_report(" in source(cell)


def step_problems(cells: list[dict], steps: tuple[int, ...]) -> list[str]:
    sections = step_sections(cells)
    problems = []
    for step in steps:
        code = [
            c
            for c in sections.get(step, [])
            if c["cell_type"] == "code" and not minutes.is_proof(c)
        ]
        if not any(shows_a_plot(cell) for cell in code):
            problems.append(f"step {step}: no per-variable plot")
        if not any(shows_a_report(cell) for cell in code):
            problems.append(f"step {step}: no gradient report")
    return problems


# --------------------------------------------------------------------------- words


def seed_as_a_case(text: str) -> list[str]:
    """The places where ``text`` uses "seed" as a name for one of the course's cases."""
    return [
        text[max(0, m.start() - 30) : m.end() + 30].replace("\n", " ")
        for m in SEED_AS_A_CASE.finditer(text)
    ]


def helper_names_imported(cells: list[dict]) -> list[str]:
    """The names a notebook's learner-facing code cells import from ``helpers`` (not the
    first cell, proof cells or the exercises' own cells)."""
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    names = []
    for index, cell in enumerate(code[1:], start=1):
        if minutes.is_proof(cell) or _is_exercise(cell) or _is_exercise(code[index - 1]):
            continue
        for node in ast.walk(ast.parse(source(cell))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"):
                names += [alias.asname or alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                names += [a.asname or a.name for a in node.names if a.name.startswith("helpers")]
    return names


def _demonstrations(cells: list[dict]) -> list[dict]:
    """Code cells without the exercises' checker cells (a verdict is feedback)."""
    return [
        cell
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "code" and not (i > 0 and _is_exercise(cells[i - 1]))
    ]


# --------------------------------------------------------------------------- the course


def lint_notebook(path: Path, readme_minutes: dict[str, int] | None = None) -> Iterator[str]:
    """Every violation of a structural rule in one notebook, as text: its opening, exercises,
    proofs, prompts and reveals, fix steps and generated minutes. These block."""
    cells, stem = cells_of(path), path.stem
    yield from opening_problems(cells[0]) if cells else ["the notebook is empty"]
    yield from exercise_problems(cells, int(stem[:2]))
    yield from proof_problems(cells)
    if stem in PREDICTIONS:
        yield from prediction_problems(cells, PREDICTIONS[stem])
    else:
        yield "no row in PREDICTIONS (scripts/lint_course.py): how many prompts it needs"
    if stem in STEPS_WITH_A_PLOT:
        yield from step_problems(cells, STEPS_WITH_A_PLOT[stem])
    measured = minutes.notebook_minutes(path)
    stated = {}
    try:
        stated["the opening's Time line"] = minutes.stated_minutes(path)
    except ValueError as error:
        yield str(error).removeprefix(f"{path}: ")
    if readme_minutes is not None:
        stated["README's course map"] = readme_minutes.get(stem, 0)
    for where, figure in stated.items():
        if figure != minutes.rounded(measured.total):  # generated: current or out of date
            yield (
                f"{where} says {figure} minutes; the measure is "
                f"{minutes.rounded(measured.total)} (python -m scripts.notebook_minutes --write; "
                "./course.sh regenerate runs it)"
            )


def notebook_sizes(path: Path) -> tuple[int, int, float]:
    """(visible code lines, prose words, minutes) of a notebook, as the size limits count."""
    measured = minutes.notebook_minutes(path)
    return measured.visible_code_lines, measured.prose_words, measured.total


def size_limits(path: Path = SIZE_LIMITS) -> dict[str, tuple[int, int, int]]:
    """The size limits per notebook (empty when none were written)."""
    if not path.exists():
        return {}
    return {stem: tuple(limits) for stem, limits in json.loads(path.read_text()).items()}


def write_size_limits(
    root: Path = ROOT, path: Path = SIZE_LIMITS
) -> dict[str, tuple[int, int, int]]:
    """Set every notebook's size limits HEADROOM above its sizes today, rounded up."""
    limits = {
        path.stem: tuple(math.ceil(HEADROOM * size) for size in notebook_sizes(path))
        for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    }
    rows = ",\n".join(f"  {json.dumps(stem)}: {json.dumps(row)}" for stem, row in limits.items())
    path.write_text(f"{{\n{rows}\n}}\n", encoding="utf-8")
    return limits


def size_warnings(path: Path, limits: dict[str, tuple[int, int, int]]) -> Iterator[str]:
    """Where a notebook is above its size limits: worth a look, not a failure."""
    if path.stem not in limits:
        yield "no size limits (python -m scripts.lint_course --write-limits)"
        return
    names = ("visible code lines", "words of prose", "minutes")
    for name, size, limit in zip(names, notebook_sizes(path), limits[path.stem], strict=True):
        if size > limit:
            yield f"{size:.0f} {name}, above its limit of {limit}"


def prose_notes(path: Path, readme: str = "", instructors: str = "") -> Iterator[str]:
    """What the conventions about words and numbers find in one notebook (``readme`` and
    ``instructors``: the texts of README.md and INSTRUCTORS.md, read for what they show
    before the notebook's reveals). Reported for a reader to judge, not blocking."""
    cells, stem = cells_of(path), path.stem
    yield from spoiler_problems(
        cells, stem, readme_row(readme, stem), instructors_notes(instructors, stem)
    )
    if stem in HELPER_NAMES and len(names := helper_names_imported(cells)) > HELPER_NAMES[stem]:
        yield (
            f"imports {len(names)} helper names where learners read ({names}); at most "
            f"{HELPER_NAMES[stem]}"
        )
    for index, cell in enumerate(cells):
        text = source(cell) + ("\n" + output_text(cell) if cell["cell_type"] == "code" else "")
        for hit in seed_as_a_case(text):
            yield (
                f"cell {index}: '...{hit}...': call the cases 'the GRU question' and 'the "
                "voicing-loss question'"
            )


GLOSSARY_ENTRY = re.compile(r"^### (.+)\n((?:.+\n)*?.*)\*First in (\d\d)\.\*$", re.M)


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).lower()  # a term may break across lines


def glossary_notes(glossary: str, notebooks: list[Path]) -> list[str]:
    """Where a GLOSSARY.md entry's "First in NN" is not the first notebook whose text (prose
    or code, case and backticks ignored) uses the term as a whole word."""
    texts = {
        path.name[:2]: _plain("\n".join(source(cell) for cell in cells_of(path)))
        for path in notebooks
    }
    notes = []
    for term, _, first in GLOSSARY_ENTRY.findall(glossary):
        words = _plain(term).removeprefix("the ")
        pattern = re.compile(rf"(?<![\w-]){re.escape(words)}(?![\w-])")
        found = next((number for number, text in texts.items() if pattern.search(text)), None)
        if found != first:
            notes.append(f"{term!r}: first in {first}, but first used in {found or 'none'}")
    return notes


def _notebooks(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def lint_course(root: Path = ROOT) -> list[Violation]:
    """Every violation of a structural rule in the course: its notebooks and the plan in
    INSTRUCTORS.md (each session within its time, with its slack). These fail the lint."""
    readme_minutes = minutes.readme_minutes(root / "README.md")
    found = [
        (path.name, problem)
        for path in _notebooks(root)
        for problem in lint_notebook(path, readme_minutes)
    ]
    total = sum(notebook_sizes(path)[2] for path in _notebooks(root))
    if total > COURSE_MINUTES:
        found.append(("notebooks", f"{total:.0f} minutes in all, more than {COURSE_MINUTES}"))
    found += [("INSTRUCTORS.md", problem) for problem in plan_problems(root)]
    return found


def course_report(root: Path = ROOT) -> list[Violation]:
    """What the size limits and the rules about words and numbers find in the notebooks,
    README.md and INSTRUCTORS.md: printed by the lint for a reader to judge, never failing it."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    instructors = (root / "INSTRUCTORS.md").read_text(encoding="utf-8")
    limits = size_limits()
    found = [
        (path.name, note)
        for path in _notebooks(root)
        for note in (*size_warnings(path, limits), *prose_notes(path, readme, instructors))
    ]
    for name, most in DOC_WORDS.items():
        path = root / name
        if path.exists() and (words := len(path.read_text(encoding="utf-8").split())) > most:
            found.append((name, f"{words} words, above its limit of {most}"))
    weight = sum(path.stat().st_size for path in (root / "notebooks").glob("*.ipynb"))
    if weight > NOTEBOOKS_BYTES:
        found.append(("notebooks", f"{weight:,} bytes stored, above {NOTEBOOKS_BYTES:,}"))
    for text, allowed in SHOWN_ONCE.items():
        showing = [
            p.stem
            for p in _notebooks(root)
            if any(text in output_text(c) for c in _demonstrations(cells_of(p)))
        ]
        if not 1 <= len(showing) <= allowed:
            found.append(("notebooks", f"{text!r} is shown in {showing}: show it once"))
    if (root / "GLOSSARY.md").exists():
        glossary = (root / "GLOSSARY.md").read_text(encoding="utf-8")
        found += [("GLOSSARY.md", note) for note in glossary_notes(glossary, _notebooks(root))]
    found += [
        (name, f"'...{hit}...': not 'seed' for a case")
        for name in ("README.md", "INSTRUCTORS.md")
        for hit in seed_as_a_case((root / name).read_text(encoding="utf-8"))
    ]
    return found


def plan_problems(root: Path = ROOT) -> list[str]:
    """Where INSTRUCTORS.md's plan is not the one ``notebook_minutes.py`` computes at class
    speed: a notebook's minutes line or homework, the plan table's rows, its sums and slack,
    a homework sheet, an exercise that needs the room given too little of it."""
    try:
        plan = minutes.class_plan(root)
    except ValueError as error:
        return [str(error)]
    text = (root / "INSTRUCTORS.md").read_text(encoding="utf-8")
    stated = minutes.instructors_minutes(root / "INSTRUCTORS.md")
    problems = []
    for m in plan:
        number = m.notebook[:2]
        line, homework = stated.get(number, ("", None))
        if line != minutes.minutes_line(m):
            problems.append(
                f"{number}'s section says {line or 'no **Minutes (N):** line'!r}; at class "
                f"speed it is {minutes.minutes_line(m)!r} (python -m scripts.notebook_minutes "
                "--plan)"
            )
        if homework != (m.homework or None):
            problems.append(
                f"{number}'s section says **Homework ({homework})**; the plan gives "
                f"{m.homework} minutes at home"
            )
        for exercise, least in LEAST_IN_CLASS.items():
            if exercise in m.exercises and exercise not in m.in_class_exercises:
                problems.append(f"exercise {exercise} needs the room: do it in class")
            elif exercise in m.in_class_exercises:
                given = minutes.IN_CLASS_FACTOR * m.exercises[exercise]
                if given < least:
                    problems.append(
                        f"exercise {exercise} gets {given} minutes in class, at least {least}"
                    )
    try:
        table = minutes.plan_table(text)
    except ValueError as error:
        return [*problems, str(error)]
    sessions = max(m.session for m in plan)
    for m in plan:
        wanted = (m.in_class,) + tuple(
            m.in_class if m.session == s else 0 for s in range(1, sessions + 1)
        )
        row = next((v for part, v in table.items() if part.startswith(f"{m.notebook[:2]} ")), ())
        if row != wanted:
            problems.append(f"the plan table's row for {m.notebook} is {row}, not {wanted}")
    total = table.pop("total", ())
    if total != (2 * minutes.SESSION_MINUTES,) + (minutes.SESSION_MINUTES,) * sessions:
        problems.append(f"the plan table's total is {total}, not 180 and 90 per session")
    sums = tuple(map(sum, zip(*table.values())))
    if sums != total:
        problems.append(f"the plan table's rows add up to {sums}, not its total {total}")
    slack = next((v for part, v in table.items() if part.startswith("slack")), ())
    if not slack or min(slack) < minutes.SLACK_MINUTES:
        problems.append(f"slack {slack}: every plan keeps {minutes.SLACK_MINUTES} minutes or more")
    for s in minutes.sessions_at_pace(plan, text):
        if s.timed and s.slack < minutes.SLACK_MINUTES:
            problems.append(
                f"session {s.session} at the slow end of a class's pace (its timed notebooks "
                f"as timed, the others at {minutes.SLOW_PACE:.1f} times the model) keeps "
                f"{s.slack} minutes of slack, not {minutes.SLACK_MINUTES}: teach less of it "
                "live (CLASS_PLAN in scripts/notebook_minutes.py)"
            )
    pace = minutes.PACE_PARAGRAPH.search(text)
    wanted = minutes.pace_text(minutes.sessions_at_pace(plan, text))
    if pace is None or pace.group(0) != wanted:
        problems.append(
            "the paragraph on the plan at a class's pace is not "
            f"{wanted!r} (python -m scripts.notebook_minutes --write)"
        )
    for session in range(1, sessions + 1):
        sheet = minutes.stated_homework_sheet(text, session)
        if sheet != minutes.homework_sheet(session, root):
            problems.append(
                f"homework sheet {session} lists {sheet}; the plan gives "
                f"{minutes.homework_sheet(session, root)} (exercise, notebook, minutes, points)"
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--write-limits"]:
        for stem, limits in write_size_limits().items():
            print(f"{stem}: at most {limits[0]} code lines, {limits[1]} words, {limits[2]} minutes")
        return 0
    report = course_report()
    for where, note in report:
        print(f"{where}: {note}")
    print(f"lint_course: {len(report)} note(s) in the report (sizes, words, numbers; not failing)")
    found = lint_course()
    for where, problem in found:
        print(f"{where}: {problem}")
    verdict = f"{len(found)} violation(s)" if found else "every structural rule kept"
    print(f"lint_course: {verdict}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
