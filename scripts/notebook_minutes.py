"""How long a notebook takes a learner, from the notebook itself (no execution).

    minutes = prose words / WORDS_PER_MINUTE          (200: reading prose)
            + visible code lines x SECONDS_PER_CODE_LINE   (6 s: reading a line of code)
            + Predict prompts x PREDICT_MINUTES       (1: deciding before each run)
            + RUN_MINUTES                             (running it)
            + each exercise's minutes, as INSTRUCTORS.md gives them

* Prose is every Markdown cell without its fenced code blocks, HTML tags and table rules;
  a word is a run of letters or digits (``tf.GradientTape`` is two words).
* Visible code lines are the non-blank, non-comment lines of the code cells and of the
  fenced code blocks in Markdown, except the exercises' own (the starting code, the checker
  cell and what sits in ``<details>``: the hints and the solution), which the exercise time
  covers, and except *proof cells* (tag ``proof``, source collapsed): a learner does not read
  them, so they count 0. Outputs are not counted: reading a gradient report is part of
  reading the prose around it.
* A Predict prompt is a Markdown cell with ``**Predict`` in it: a minute to think before the
  run, which reading speed leaves out.
* The run time is a constant, not a measurement: every notebook runs in about a minute or less
  on two cores (README), so one minute is a fair estimate.
* An exercise takes the minutes its bullet in INSTRUCTORS.md gives it
  (``- **Exercise 0.1** (`name`): 4 minutes``; ``about 15 minutes each`` counts once per
  exercise of that notebook).

The *size limits* of the course conventions (``scripts/lint_course.py``) count more strictly
than the minutes do:

* ``visible_code_lines``: every non-blank, non-comment line of every code cell except proof
  cells, the exercises' starting code and checker calls included;
* ``prose_words``: every run of word characters (``\\w+``) in the Markdown source, tables
  and the text inside ``<details>`` included, HTML tags and the folds' ``<summary>`` labels
  left out.

``python -m scripts.notebook_minutes --plan`` prints INSTRUCTORS.md's figures at class speed
(the model is at "at class speed" below). ``python -m scripts.notebook_minutes`` prints, per
notebook, the visible code lines, the prose words, the ``assert`` lines outside proof and
lesson-assert cells, the minutes, and the README's figure. ``--write`` puts each notebook's
rounded total into its own "Time" line and its README course-map row (``./course.sh
regenerate`` runs it); ``scripts/lint_course.py`` reports either when it is not the current
measure, and INSTRUCTORS.md's plan when it is not the one computed at class speed, or when
a timed session keeps too little slack at the slow end of a class's pace (``TIMED_PACE``).
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

WORDS_PER_MINUTE = 200
SECONDS_PER_CODE_LINE = 6
RUN_MINUTES = 1.0
PREDICT_MINUTES = 1.0
PROMPT = re.compile(r"\*\*Predict\b", re.I)  # **Predict:**, **Predict** before you run...
PROOF_TAG = "proof"
LESSON_ASSERT_TAG = "lesson-assert"

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"```.*?```", re.S)
DETAILS = re.compile(r"<details>.*?</details>", re.S)
TAG = re.compile(r"<[^>]+>")
SUMMARY = re.compile(r"<summary>.*?</summary>", re.S)  # a fold's label: read at a glance
WORD = re.compile(r"[A-Za-z0-9]+")
SOURCE_WORD = re.compile(r"\w+")
MAP_ROW = re.compile(r"^\|\s*\[`(\d\d_\w+)`\]\([^)]*\)\s*\|.*\|\s*(\d+)\s*\|\s*$", re.M)
TIME_LINE = re.compile(r"\*\*Time(?:\*\*\s*\||:\*\*)\s*about (\d+) minutes")
ASSERT = re.compile(r"^\s*assert\b")
EXERCISE_BULLET = re.compile(  # a bullet may go on over indented lines
    r"^- \*\*Exercises?\b(?:[^\n]|\n(?=  ))*?(\d+)\s+minutes(\s+each)?", re.M
)


@dataclass(frozen=True)
class Minutes:
    """The parts of a notebook's time, in minutes, and their total."""

    notebook: str
    words: int
    code_lines: int
    exercises: int
    exercise_minutes: float
    asserts: int = 0  # assert lines outside proof and lesson-assert cells
    visible_code_lines: int = 0  # the size limit's count: every non-proof code cell
    prose_words: int = 0  # the size limit's count: \\w+ runs in the Markdown source
    prompts: int = 0  # Predict prompts

    @property
    def reading(self) -> float:
        return self.words / WORDS_PER_MINUTE

    @property
    def code(self) -> float:
        return self.code_lines * SECONDS_PER_CODE_LINE / 60

    @property
    def total(self) -> float:
        return (
            self.reading
            + self.code
            + self.prompts * PREDICT_MINUTES
            + RUN_MINUTES
            + self.exercise_minutes
        )


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def tags(cell: dict) -> list[str]:
    """The cell's tags (an empty list when it has none)."""
    return list(cell.get("metadata", {}).get("tags", []))


def is_proof(cell: dict) -> bool:
    return cell["cell_type"] == "code" and PROOF_TAG in tags(cell)


def code_lines(text: str) -> int:
    """Non-blank lines that are not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def exercise_minutes(
    notebook: str, count: int, instructors: str | Path = ROOT / "INSTRUCTORS.md"
) -> float:
    """The minutes INSTRUCTORS.md gives the exercises of ``notebook`` (``NN_name``)."""
    if count == 0:
        return 0.0
    text = Path(instructors).read_text(encoding="utf-8")
    section = re.search(rf"^### {notebook[:2]} .*?(?=^### |^## |\Z)", text, re.M | re.S)
    bullets = EXERCISE_BULLET.findall(section.group(0)) if section else []
    if not bullets:
        raise ValueError(
            f"INSTRUCTORS.md has no '- **Exercise ...**: N minutes' bullet in a "
            f"'### {notebook[:2]} ...' section; {notebook} has {count} exercise(s)"
        )
    if len(bullets) == 1 and bullets[0][1]:  # "about 15 minutes each"
        return float(bullets[0][0]) * count
    return float(sum(int(minutes) for minutes, _ in bullets))


def _count(cells: list[dict]) -> tuple[int, ...]:
    """Prose words, code lines read, exercises, asserts, visible code lines, source words,
    Predict prompts and visible code cells of some cells (``notebook_minutes``' rules)."""
    words = lines = exercises = asserts = visible = source_words = prompts = code_cells = 0
    checker_cell_next = False
    for cell in cells:
        text = _source(cell)
        if cell["cell_type"] == "markdown" and cell.get("metadata", {}).get("source_of"):
            # a helper's code shown as Markdown (kept equal to it by a test): read like code,
            # not run (no visible code line) and not prose
            lines += sum(code_lines(b.strip("`").partition("\n")[2]) for b in FENCE.findall(text))
        elif cell["cell_type"] == "markdown":
            outside_details = DETAILS.sub(" ", text)
            lines += sum(
                code_lines(block.strip("`").partition("\n")[2])
                for block in FENCE.findall(outside_details)
            )
            prose = TAG.sub(" ", FENCE.sub(" ", text))
            prose = re.sub(r"^\|[-|: ]+\|$", " ", prose, flags=re.M)  # table rules
            words += len(WORD.findall(prose))
            prompts += bool(PROMPT.search(text))
            source_words += len(SOURCE_WORD.findall(TAG.sub(" ", SUMMARY.sub(" ", text))))
        elif cell["cell_type"] == "code":
            if not is_proof(cell):
                visible += code_lines(text)
            if not (is_proof(cell) or LESSON_ASSERT_TAG in tags(cell)):
                asserts += sum(1 for line in text.splitlines() if ASSERT.match(line))
            if cell.get("metadata", {}).get("exercise"):
                exercises += 1
                checker_cell_next = True
            elif checker_cell_next:
                checker_cell_next = False
            elif not is_proof(cell):
                lines += code_lines(text)
                code_cells += 1
    return words, lines, exercises, asserts, visible, source_words, prompts, code_cells


def notebook_minutes(
    path: str | Path, instructors: str | Path = ROOT / "INSTRUCTORS.md"
) -> Minutes:
    """Measure one notebook (``.ipynb``): prose words, visible code lines, exercises, and the
    ``assert`` lines a learner sees (outside proof and lesson-assert cells)."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"expected the path of an existing .ipynb notebook, got {path}")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    words, lines, exercises, asserts, visible, source_words, prompts, _ = _count(cells)
    return Minutes(
        path.stem,
        words,
        lines,
        exercises,
        exercise_minutes(path.stem, exercises, instructors),
        asserts,
        visible,
        source_words,
        prompts,
    )


# --------------------------------------------------------------------------- at class speed
#
# INSTRUCTORS.md's plan is a demonstration, not a reading: its minutes come from this model,
# and scripts/lint_course.py keeps INSTRUCTORS.md's figures equal to it.
#
#   in class = LIVE_CELL_MINUTES x code cells run and explained live   (proof cells: 0)
#            + ASK_MINUTES x Predict prompts asked to the room
#            + SUMMARY_MINUTES x parts summarised (their cells run, the result said)
#            + IN_CLASS_FACTOR x the solo minutes of each exercise done in class
#   homework = the solo measure above of every part not taught live (summarised parts
#              included: they are read at home), with its exercises at their solo minutes,
#              plus RUN_MINUTES when there is any
#
# A part is a "## " section (the opening: the cells before the first one). Points: one per
# solo minute of an exercise.

LIVE_CELL_MINUTES = 1
ASK_MINUTES = 2
SUMMARY_MINUTES = 1
IN_CLASS_FACTOR = 2
LIVE, SUMMARISED, HOME = "live", "summary", "home"
OPENING = ""  # the part before a notebook's first "## " heading
EXERCISE_HEADING = re.compile(r"^Exercise (\d+\.\d+)\b")
SESSION_MINUTES = 90
SLACK_MINUTES = 10  # every session keeps at least this much for what a plan cannot foresee

# A class's pace, as timed: an instructor taught session 2 to a class as the walkthrough said
# then, and timed each notebook. Notebook: (minutes at the slow end, the model's minutes for
# what was taught). 04 was taught with exercise 4.1 in class.
TIMED_PACE = {"03": (30, 20), "04": (45, 34)}
SLOW_PACE = max(taken / model for taken, model in TIMED_PACE.values())


def pace(notebook: str) -> float:
    """How many times the model's minutes a class takes over a notebook (``NN_name``), at the
    slow end: as timed, or the slowest timed pace for a notebook nobody timed."""
    if notebook[:2] not in TIMED_PACE:
        return SLOW_PACE
    taken, model = TIMED_PACE[notebook[:2]]
    return taken / model


@dataclass(frozen=True)
class ClassPlan:
    """How one notebook is taught: its session, how a part not named is taught (``default``),
    the parts named by the start of their heading with theirs, the exercises done in class
    (the others are homework), the scripted talks, and whether the notebook is optional."""

    session: int
    default: str = LIVE
    parts: tuple[tuple[str, str], ...] = ()
    in_class: tuple[str, ...] = ()
    # Minutes the instructor talks from a prepared script in a part taught live, by the start
    # of its heading: what a run does not show (06: what SI-SDR measures, what each baseline
    # does), said in the minutes given.
    scripts: tuple[tuple[str, int], ...] = ()
    optional: bool = False  # an optional notebook: its exercises are not graded


CLASS_PLAN = {
    "00": ClassPlan(1, parts=(("Summary", SUMMARISED),)),
    "01": ClassPlan(
        1,
        parts=(("Suspect 2", SUMMARISED), ("Suspect 4", SUMMARISED), ("Summary", SUMMARISED)),
        in_class=("1.1",),
    ),
    "02": ClassPlan(
        1, parts=(("Step 2", SUMMARISED), ("Step 5", SUMMARISED), ("Summary", SUMMARISED))
    ),
    # Session 2 at a class's pace (TIMED_PACE): 03's section 3 is summarised from its plot,
    # 4.1 is homework, 05 is read at home from the decision chart and 06's real speech goes
    # home, so that 06 gets its comparison, its silence measurement, its baselines and a
    # 2-minute script, and the session keeps its slack at the slow end.
    "03": ClassPlan(2, parts=(("3. ", SUMMARISED), ("4. ", SUMMARISED), ("Summary", SUMMARISED))),
    "04": ClassPlan(2, parts=(("Step 5", SUMMARISED), ("Summary", SUMMARISED))),
    "05": ClassPlan(2, default=HOME, parts=(("Summary", SUMMARISED),)),
    "06": ClassPlan(
        2,
        default=HOME,
        parts=(
            (OPENING, LIVE),
            ("The comparison", LIVE),
            ("Pauses", LIVE),
            ("Does it beat the baselines", LIVE),
            ("The ablation", SUMMARISED),
        ),
        scripts=(("Does it beat the baselines", 2),),
    ),
    "07": ClassPlan(2, default=HOME, optional=True),
}


@dataclass(frozen=True)
class Part:
    """One "## " section of a notebook, as the plan teaches it."""

    heading: str
    mode: str
    code_cells: int
    prompts: int
    solo: float  # the solo measure's minutes (reading, code, prompts, its exercise)
    exercise: str = ""  # the exercise's id ("4.1") in an exercise's section
    script: int = 0  # minutes of a scripted talk in this part (taught live)

    @property
    def in_class(self) -> int:
        if self.mode == LIVE and self.exercise:
            return 0  # counted with the exercise (ClassMinutes.exercise)
        if self.mode == LIVE:
            return self.code_cells * LIVE_CELL_MINUTES + self.prompts * ASK_MINUTES + self.script
        return SUMMARY_MINUTES if self.mode == SUMMARISED else 0


@dataclass(frozen=True)
class ClassMinutes:
    """A notebook's minutes at class speed: in class (its parts) and at home."""

    notebook: str
    session: int
    parts: tuple[Part, ...]
    exercises: dict[str, int]  # every exercise's solo minutes, by id
    in_class_exercises: tuple[str, ...]
    optional: bool = False  # its exercises are not graded

    @property
    def live_cells(self) -> int:
        return sum(p.code_cells for p in self.parts if p.mode == LIVE and not p.exercise)

    @property
    def asked(self) -> int:
        return sum(p.prompts for p in self.parts if p.mode == LIVE and not p.exercise)

    @property
    def scripted(self) -> int:
        return sum(p.script for p in self.parts if p.mode == LIVE)

    @property
    def summarised(self) -> int:
        return sum(p.mode == SUMMARISED for p in self.parts)

    @property
    def exercise(self) -> int:
        """Minutes of the exercises done in class."""
        return sum(IN_CLASS_FACTOR * self.exercises[e] for e in self.in_class_exercises)

    @property
    def in_class(self) -> int:
        return sum(p.in_class for p in self.parts) + self.exercise

    @property
    def homework_exercises(self) -> dict[str, int]:
        return {e: m for e, m in self.exercises.items() if e not in self.in_class_exercises}

    @property
    def homework(self) -> int:
        at_home = [p for p in self.parts if p.mode != LIVE]
        return rounded(sum(p.solo for p in at_home) + (RUN_MINUTES if at_home else 0))


def exercise_minutes_by_id(
    notebook: str, instructors: str | Path = ROOT / "INSTRUCTORS.md"
) -> dict[str, int]:
    """The solo minutes of each exercise of ``notebook`` (``NN_name``), as the exercise
    bullets of its INSTRUCTORS.md section give them: ``{"4.1": 8}``."""
    text = Path(instructors).read_text(encoding="utf-8")
    section = re.search(rf"^### {notebook[:2]} .*?(?=^### |^## |\Z)", text, re.M | re.S)
    bullets = re.finditer(
        r"^- \*\*Exercise (\d+\.\d+)\*\*(?:[^\n]|\n(?=  ))*?(\d+)\s+minutes",
        section.group(0) if section else "",
        re.M,
    )
    return {m.group(1): int(m.group(2)) for m in bullets}


def notebook_parts(path: str | Path) -> list[tuple[str, list[dict]]]:
    """A notebook's parts: (the "## " heading, or OPENING, and its cells), in order."""
    parts: list[tuple[str, list[dict]]] = [(OPENING, [])]
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        headings = re.findall(r"^## (.*)$", _source(cell), re.M)
        if cell["cell_type"] == "markdown" and headings:
            parts.append((headings[0].strip(), []))
        parts[-1][1].append(cell)
    return [(heading, cells) for heading, cells in parts if cells]


def class_minutes(
    path: str | Path,
    plan: ClassPlan | None = None,
    instructors: str | Path = ROOT / "INSTRUCTORS.md",
) -> ClassMinutes:
    """A notebook's minutes at class speed, under its plan (``CLASS_PLAN`` by default).
    Raises ValueError when the plan names a part or an exercise the notebook does not have."""
    path = Path(path)
    plan = plan or CLASS_PLAN[path.stem[:2]]
    minutes = exercise_minutes_by_id(path.stem, instructors)
    parts, named = [], {prefix: False for prefix, _ in plan.parts}
    for heading, cells in notebook_parts(path):
        exercise = EXERCISE_HEADING.match(heading)
        mode = plan.default
        for prefix, how in plan.parts:
            if heading.startswith(prefix) and (prefix or heading == OPENING):
                mode, named[prefix] = how, True
                break
        if exercise:
            if exercise.group(1) not in minutes:
                raise ValueError(
                    f"INSTRUCTORS.md gives exercise {exercise.group(1)} of {path.stem} no "
                    "'- **Exercise N.M** (...): M minutes' bullet"
                )
            mode = LIVE if exercise.group(1) in plan.in_class else HOME
        words, lines, _, _, _, _, prompts, code_cells = _count(cells)
        solo = words / WORDS_PER_MINUTE + lines * SECONDS_PER_CODE_LINE / 60
        solo += prompts * PREDICT_MINUTES + (minutes[exercise.group(1)] if exercise else 0)
        script = next((m for prefix, m in plan.scripts if heading.startswith(prefix)), 0)
        parts.append(
            Part(
                heading,
                mode,
                code_cells,
                prompts,
                solo,
                exercise.group(1) if exercise else "",
                script if mode == LIVE else 0,
            )
        )
    missing = [repr(prefix) for prefix, found in named.items() if not found]
    missing += [repr(e) for e in plan.in_class if e not in minutes]
    missing += [
        repr(prefix)
        for prefix, _ in plan.scripts
        if not any(p.heading.startswith(prefix) and p.mode == LIVE for p in parts)
    ]
    if missing:
        raise ValueError(
            f"the class plan of {path.stem} names {', '.join(missing)}, which it does not have "
            "(CLASS_PLAN in scripts/notebook_minutes.py: a heading's start, or an exercise)"
        )
    exercises = {p.exercise: minutes[p.exercise] for p in parts if p.exercise}
    return ClassMinutes(
        path.stem, plan.session, tuple(parts), exercises, plan.in_class, plan.optional
    )


def class_plan(root: Path = ROOT) -> list[ClassMinutes]:
    """Every notebook's minutes at class speed, in order."""
    return [
        class_minutes(path, instructors=root / "INSTRUCTORS.md")
        for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    ]


@dataclass(frozen=True)
class SessionAtPace:
    """A session of the plan at the slow end of a class's pace: its notebooks' minutes at
    ``pace``, and its other parts (welcome, recap, wrap-up) as the plan table gives them."""

    session: int
    notebooks: int  # rounded
    other: int
    timed: bool  # one of its notebooks was timed (TIMED_PACE)

    @property
    def slack(self) -> int:
        return SESSION_MINUTES - self.notebooks - self.other


def sessions_at_pace(plan: list[ClassMinutes], instructors: str) -> list[SessionAtPace]:
    """Each 90-minute session at the slow end of a class's pace, from the plan and the plan
    table of INSTRUCTORS.md (its rows that are not notebooks, slack or total)."""
    table = plan_table(instructors)
    out = []
    for session in sorted({m.session for m in plan}):
        ours = [m for m in plan if m.session == session]
        other = sum(
            figures[session]
            for part, figures in table.items()
            if not part[:2].isdigit() and not part.startswith(("slack", "total"))
        )
        notebooks = rounded(sum(m.in_class * pace(m.notebook) for m in ours))
        timed = any(m.notebook[:2] in TIMED_PACE for m in ours)
        out.append(SessionAtPace(session, notebooks, other, timed))
    return out


def pace_text(sessions: list[SessionAtPace]) -> str:
    """INSTRUCTORS.md's paragraph on the plan at the slow end of a class's pace: the timed
    sessions first (the paragraph starts "At the slow end of that pace"), then the others."""
    words = []
    for s in sorted(sessions, key=lambda s: not s.timed):
        if s.timed:
            words.append(
                f"At the slow end of that pace, session {s.session}'s notebooks take "
                f"{s.notebooks} minutes and its other parts {s.other}, which keeps {s.slack} "
                "minutes of slack."
            )
        else:
            over = f"{-s.slack} more than it has" if s.slack < 0 else f"{s.slack} of slack"
            words.append(
                f"Session {s.session} has not been timed: at that pace its notebooks would "
                f"take {s.notebooks} minutes and its other parts {s.other}, {over}."
            )
    return textwrap.fill(" ".join(words), width=95, break_on_hyphens=False)


PACE_PARAGRAPH = re.compile(r"^At the slow end of that pace\b.*?(?=\n\n|\Z)", re.M | re.S)


def homework_sheet(session: int, root: Path = ROOT) -> list[tuple[str, str, int, int]]:
    """The exercises a session gives as graded homework: (id, notebook, minutes, points), in
    order; a point per solo minute. An optional notebook's exercises are not graded."""
    return [
        (exercise, m.notebook, minutes, minutes)
        for m in class_plan(root)
        if m.session == session and not m.optional
        for exercise, minutes in m.homework_exercises.items()
    ]


def readme_minutes(readme: str | Path = ROOT / "README.md") -> dict[str, int]:
    """The minutes column of the README's course map: {notebook stem: minutes}."""
    rows = MAP_ROW.findall(Path(readme).read_text(encoding="utf-8"))
    if not rows:
        raise ValueError(f"no course-map rows ('| [`NN_name`](...) | ... | minutes |') in {readme}")
    return {name: int(minutes) for name, minutes in rows}


INSTRUCTORS_MINUTES = re.compile(
    r"^### (\d\d) [^\n]*\n\n(\*\*Minutes \(\d+\):\*\*[^\n]*)(?:\n\*\*Homework \((\d+)\):\*\*)?",
    re.M,
)


def instructors_minutes(instructors: str | Path = ROOT / "INSTRUCTORS.md") -> dict[str, tuple]:
    """Each notebook's plan in INSTRUCTORS.md: its ``**Minutes (N):** ...`` line and its
    ``**Homework (H):**`` minutes (None without one): ``{"00": ("**Minutes (14):** ...", 6)}``."""
    text = Path(instructors).read_text(encoding="utf-8")
    return {
        number: (line, int(homework) if homework else None)
        for number, line, homework in INSTRUCTORS_MINUTES.findall(text)
    }


def minutes_line(m: ClassMinutes) -> str:
    """A notebook's minutes line in INSTRUCTORS.md, as the model computes it."""
    script = f" · script {m.scripted}" if m.scripted else ""
    return (
        f"**Minutes ({m.in_class}):** cells live {m.live_cells} · prompts asked {m.asked} · "
        f"parts summarised {m.summarised} · exercise {m.exercise}{script}"
    )


def plan_table(instructors: str) -> dict[str, tuple[int, ...]]:
    """INSTRUCTORS.md's plan table (the first table under "## The two plans"):
    ``{part: (3 hours, session 1, session 2)}``."""
    after = instructors.split("## The two plans", 1)[-1]
    table = next((b for b in after.split("\n\n") if b.startswith("| part")), "")
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()]
    try:
        return {part: tuple(int(m) for m in figures) for part, *figures in rows[2:]}
    except ValueError:
        raise ValueError(
            "INSTRUCTORS.md's plan table ('| part | ...') holds a non-number"
        ) from None


def stated_homework_sheet(instructors: str, session: int) -> list[tuple[str, str, int, int]]:
    """The rows of INSTRUCTORS.md's homework sheet of a session (``### Homework N``):
    ``[(exercise, notebook, minutes, points)]``, its total row left out."""
    match = re.search(
        rf"^### Homework {session}\b.*?\n(\|.*?)(?:\n\n|\Z)", instructors, re.M | re.S
    )
    rows = []
    for line in match.group(1).splitlines()[2:] if match else []:
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"\d+\.\d+", cells[0]):
            rows.append((cells[0], cells[1], int(cells[2]), int(cells[3])))
    return rows


def stated_minutes(path: str | Path) -> int:
    """The minutes a notebook's opening cell states (``| **Time** | about N minutes ...`` or
    ``**Time:** about N minutes``)."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    match = TIME_LINE.search(_source(cells[0])) if cells else None
    if not match:
        raise ValueError(f"{path}: the first cell has no '| **Time** | about N minutes' line")
    return int(match.group(1))


def rounded(total: float) -> int:
    """Minutes as the README and the Time lines state them (half a minute rounds up)."""
    return int(total + 0.5)


def _with_figure(text: str, match: re.Match[str] | None, group: int, figure: int) -> str:
    if match is None or int(match.group(group)) == figure:
        return text
    return text[: match.start(group)] + str(figure) + text[match.end(group) :]


def write(root: Path = ROOT, *, check: bool = False) -> list[str]:
    """Put each notebook's measured minutes (``rounded``) into its opening's Time line and
    its README course-map row, and the plan at class speed into INSTRUCTORS.md (minutes lines,
    plan table, homework sheets); with ``check``, change nothing. What is (or was) out of
    date."""
    readme_path = root / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    rows = {m.group(1): m for m in MAP_ROW.finditer(readme)}
    changed, new_readme = [], readme
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        figure = rounded(notebook_minutes(path, root / "INSTRUCTORS.md").total)
        notebook = json.loads(path.read_text(encoding="utf-8"))
        opening = _source(notebook["cells"][0]) if notebook["cells"] else ""
        timed = _with_figure(opening, TIME_LINE.search(opening), 1, figure)
        if timed != opening:
            changed.append(f"{path.name}: the Time line says {stated_minutes(path)}, not {figure}")
            if not check:
                _write_opening(path, timed)
        row = rows.get(path.stem)
        if row is not None and int(row.group(2)) != figure:
            changed.append(f"README.md: {path.stem}'s row says {row.group(2)}, not {figure}")
            line = _with_figure(row.group(0), MAP_ROW.search(row.group(0)), 2, figure)
            new_readme = new_readme.replace(row.group(0), line, 1)
    if new_readme != readme and not check:
        readme_path.write_text(new_readme, encoding="utf-8")
    instructors_path = root / "INSTRUCTORS.md"
    instructors = instructors_path.read_text(encoding="utf-8")
    has_plan = "## The two plans" in instructors  # a course with a class plan
    planned = write_instructors(instructors, class_plan(root), root) if has_plan else instructors
    if planned != instructors:
        changed.append("INSTRUCTORS.md: the plan's minutes, table or homework sheets")
        if not check:
            instructors_path.write_text(planned, encoding="utf-8")
    return changed


def sheet_text(session: int, plan: list[ClassMinutes], root: Path = ROOT) -> str:
    """A session's homework sheet in INSTRUCTORS.md: the graded exercises' table, its total,
    and the time with the reading (the session's notebooks' **Homework** minutes, exercises
    included), so that the sheet's figures and its notebooks' lines agree."""
    rows = homework_sheet(session, root)
    ours = [m for m in plan if m.session == session]
    graded = [m for m in ours if not m.optional]
    reading = (
        f"With the reading, homework {session} is about {sum(m.homework for m in graded)} "
        "minutes: the **Homework** lines of "
        + ", ".join(f"{m.notebook[:2]} ({m.homework})" for m in graded if m.homework)
        + ", each with its exercises"
        + "".join(
            f"; {m.notebook[:2]} ({m.homework} minutes, with "
            f"{', '.join(m.homework_exercises) or 'no exercise'}) is optional and not graded"
            for m in ours
            if m.optional
        )
        + "."
    )
    lines = [
        "| exercise | notebook | minutes | points |",
        "|---|---|---|---|",
        *(
            f"| {e} | `{notebook}` | {minutes} | {points} |"
            for e, notebook, minutes, points in rows
        ),
        f"| total | | {sum(r[2] for r in rows)} | {sum(r[3] for r in rows)} |",
        "",
        textwrap.fill(reading, width=95, break_on_hyphens=False),
    ]
    return "\n".join(lines)


SHEET = re.compile(  # a homework sheet: its heading and words, its table, the reading line
    r"(^### Homework (\d+)\b[^\n]*\n(?:(?!\| exercise)[^\n]*\n)*)"
    r"\| exercise[^\n]*\n(?:\|[^\n]*\n)*"
    r"(?:\nWith the reading, homework \d+ [^\n]*\n(?:[^\n]+\n)*)?",
    re.M,
)


def write_instructors(text: str, plan: list[ClassMinutes], root: Path = ROOT) -> str:
    """INSTRUCTORS.md with the plan's figures written in: each notebook's minutes line and
    homework minutes, the plan table's notebook rows, slack and total, the homework sheets."""
    by_number = {m.notebook[:2]: m for m in plan}

    def minutes(match: re.Match[str]) -> str:
        m = by_number.get(match.group(1))
        if m is None:
            return match.group(0)
        out = match.group(0).replace(match.group(2), minutes_line(m), 1)
        if match.group(3):
            out = out.replace(f"**Homework ({match.group(3)}):**", f"**Homework ({m.homework}):**")
        return out

    text = INSTRUCTORS_MINUTES.sub(minutes, text)
    head, _, after = text.partition("## The two plans")
    blocks = after.split("\n\n")
    index = next((i for i, b in enumerate(blocks) if b.startswith("| part")), None)
    if index is not None:
        sessions = max(m.session for m in plan)
        totals = (2 * SESSION_MINUTES,) + (SESSION_MINUTES,) * sessions
        rows = blocks[index].splitlines()
        figures: dict[int, tuple[int, ...]] = {}
        for i, line in enumerate(rows[2:], 2):
            part = line.strip().strip("|").split("|")[0].strip()
            m = by_number.get(part[:2]) if part[:2].isdigit() else None
            if m is not None:
                figures[i] = (m.in_class,) + tuple(
                    m.in_class if m.session == s else 0 for s in range(1, sessions + 1)
                )
            elif not part.startswith(("slack", "total")):
                figures[i] = tuple(int(c) for c in line.strip().strip("|").split("|")[1:])
        used = tuple(map(sum, zip(*figures.values())))
        for i, line in enumerate(rows[2:], 2):
            part = line.strip().strip("|").split("|")[0].strip()
            if part.startswith("slack"):
                figures[i] = tuple(t - u for t, u in zip(totals, used))
            elif part.startswith("total"):
                figures[i] = totals
            rows[i] = f"| {part} | " + " | ".join(map(str, figures[i])) + " |"
        blocks[index] = "\n".join(rows)
        text = head + "## The two plans" + "\n\n".join(blocks)

    def sheet(match: re.Match[str]) -> str:
        return match.group(1) + sheet_text(int(match.group(2)), plan, root) + "\n"

    text = SHEET.sub(sheet, text)
    if index is not None and PACE_PARAGRAPH.search(text):
        paragraph = pace_text(sessions_at_pace(plan, text))
        text = PACE_PARAGRAPH.sub(lambda _: paragraph, text, count=1)
    return text


def _write_opening(path: Path, source: str) -> None:
    """The notebook with its first cell's source replaced, written as nbformat writes it."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    notebook.cells[0].source = source
    nbformat.write(notebook, path)


def print_plan(root: Path = ROOT) -> None:
    """INSTRUCTORS.md's figures at class speed: each section's lines, the plan table's rows,
    the homework sheets."""
    plan = class_plan(root)
    for m in plan:
        print(f"### {m.notebook}\n{minutes_line(m)}\n**Homework ({m.homework}):**")
        for part in m.parts:
            print(
                f"    {part.mode:10s} {part.in_class:3d} min in class  "
                f"{part.heading or '(opening)'}"
            )
    print("\nplan table (3 hours, session 1, session 2):")
    for m in plan:
        print(
            f"| {m.notebook} | {m.in_class} | {m.in_class if m.session == 1 else 0} | "
            f"{m.in_class if m.session == 2 else 0} |"
        )
    instructors = (root / "INSTRUCTORS.md").read_text(encoding="utf-8")
    print(f"\nat the slow end of a class's pace (timed: {TIMED_PACE}):")
    for s in sessions_at_pace(plan, instructors):
        print(
            f"    session {s.session}: notebooks {s.notebooks}, other parts {s.other}, "
            f"slack {s.slack}{'' if s.timed else ' (not timed)'}"
        )
    for session in sorted({m.session for m in plan}):
        print(
            f"\nsession {session}: {sum(m.in_class for m in plan if m.session == session)} "
            "minutes of notebooks in class; homework sheet (exercise, notebook, minutes, points):"
        )
        for row in homework_sheet(session, root):
            print(f"| {' | '.join(map(str, row))} |")


def main() -> int:
    if sys.argv[1:] == ["--plan"]:
        print_plan()
        return 0
    if sys.argv[1:] == ["--write"]:
        for change in write():
            print(f"updated {change}")
        return 0
    stated = readme_minutes()
    print(
        "size: visible code lines and prose words as the size limits count them;\n"
        "code/words: what the minutes count (exercise code and tags left out)"
    )
    print(
        f"{'notebook':28s} {'size':>10s} {'code':>5s} {'words':>6s} {'asserts':>7s} "
        f"{'ex':>3s} {'ask':>4s} {'minutes':>8s} {'README':>7s} {'Time':>5s}"
    )
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        m = notebook_minutes(path)
        size = f"{m.visible_code_lines}/{m.prose_words}"
        print(
            f"{m.notebook:28s} {size:>10s} {m.code_lines:5d} {m.words:6d} {m.asserts:7d} "
            f"{m.exercises:3d} {m.prompts:4d} {m.total:8.1f} {stated.get(m.notebook, '-'):>7} "
            f"{stated_minutes(path):>5}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
