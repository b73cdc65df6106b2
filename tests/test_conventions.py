"""The course conventions (CONTRIBUTING.md, "Course conventions"), enforced.

On the notebooks converted to them (``CONVERTED``; the issues for 03-06 extend the list):

* no ``assert`` in a learner-facing cell: asserts live in proof cells (tag ``proof``), or in a
  cell tagged ``lesson-assert`` when asserting is itself the lesson;
* the opening says what the learner will be able to do, key experiments open with a
  **Predict** line, and each demonstration is shown once;
* visible code lines, prose words and minutes stay within the notebook's limits.

On every notebook: each proof cell is collapsed, comes right after the code cell it checks
and prints nothing or one short line. And nowhere a learner reads (every notebook's Markdown,
the converted notebooks' code and outputs, README.md, INSTRUCTORS.md, the helpers' docstrings
and messages) is "seed" a name for the course's two cases: they are "the GRU question" and
"the voicing-loss question". ``make_deterministic(seed=...)``, random seeds and the
``loss="seed"`` value of the capstone API are not names for a case, and pass.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CONVERTED = ["00_start_here", "01_gru_state_reproduce", "02_gru_state_fix",
             "03_voicing_loss_reproduce", "04_voicing_loss_fix", "05_field_guide",
             "06_capstone", "07_appendix_labels"]
# (visible code lines, prose words, minutes) at most, per converted notebook (issue 22).
LIMITS = {
    "00_start_here": (60, 900, 45),
    "01_gru_state_reproduce": (130, 1500, 45),
    "02_gru_state_fix": (110, 1000, 45),
    "03_voicing_loss_reproduce": (110, 1600, 45),  # issue 23
    "04_voicing_loss_fix": (170, 1700, 60),
    "05_field_guide": (300, 2800, 60),
    "06_capstone": (120, 1800, 60),  # issue 24
    "07_appendix_labels": (60, 1000, 30),  # the optional appendix (issue 24)
}
# At most this many helper names imported where a learner reads them (issue 23): every code
# cell except the standard first cell (make_deterministic, versions), proof cells and the
# exercise's own cells.
HELPER_NAMES = {"04_voicing_loss_fix": 6}
# At least this many Predict prompts: one before each experiment whose result is the lesson.
PREDICTIONS = {"00_start_here": 2, "01_gru_state_reproduce": 7, "02_gru_state_fix": 5,
               "03_voicing_loss_reproduce": 5, "04_voicing_loss_fix": 5,
               "05_field_guide": 13, "06_capstone": 5, "07_appendix_labels": 2}
# Each demonstration once in the course: an output text, and how many converted notebooks
# may show it (later notebooks refer back instead).
SHOWN_ONCE = {
    "No gradients provided for any variable": 1,  # the all-None ValueError
    "Gradients do not exist for variables": 1,  # the partial-None warning
}

_spec = importlib.util.spec_from_file_location("notebook_minutes",
                                               ROOT / "scripts" / "notebook_minutes.py")
minutes = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = minutes
_spec.loader.exec_module(minutes)


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _output_text(cell: dict) -> str:
    parts = []
    for output in cell.get("outputs", []):
        text = output.get("text") or output.get("data", {}).get("text/plain") \
            or output.get("evalue", "")
        parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def _path(stem: str) -> Path:
    return ROOT / "notebooks" / f"{stem}.ipynb"


def test_converted_notebooks_exist_and_have_limits():
    assert all(_path(stem).is_file() for stem in CONVERTED)
    assert set(LIMITS) == set(PREDICTIONS) == set(CONVERTED)


# --------------------------------------------------------------------------- proof cells


@pytest.mark.parametrize("stem", CONVERTED)
def test_no_assert_outside_proof_and_lesson_assert_cells(stem):
    offending = [(index, line.strip()) for index, cell in enumerate(_cells(_path(stem)))
                 if cell["cell_type"] == "code" and not minutes.is_proof(cell)
                 and minutes.LESSON_ASSERT_TAG not in minutes.tags(cell)
                 and not cell.get("metadata", {}).get("exercise")
                 for line in _source(cell).splitlines() if minutes.ASSERT.match(line)]
    assert not offending, f"{stem}: asserts in learner-facing cells (move them to a proof " \
                          f"cell right after): {offending}"
    assert minutes.notebook_minutes(_path(stem)).asserts == 0


@pytest.mark.parametrize("stem", CONVERTED)
def test_converted_notebooks_prove_their_claims_in_proof_cells(stem):
    proofs = [cell for cell in _cells(_path(stem)) if minutes.is_proof(cell)]
    assert len(proofs) >= 3, f"{stem}: {len(proofs)} proof cells"
    assert all(re.search(r"^\s*assert\b", _source(cell), re.M) for cell in proofs), \
        f"{stem}: a proof cell that asserts nothing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_proof_cell_is_collapsed_follows_code_and_prints_little(path):
    cells = _cells(path)
    for index, cell in enumerate(cells):
        if minutes.LESSON_ASSERT_TAG in minutes.tags(cell):
            assert re.search(r"^\s*assert\b", _source(cell), re.M), f"{path.stem} cell {index}: " \
                "tagged lesson-assert but asserts nothing"
        if not minutes.is_proof(cell):
            continue
        where = f"{path.stem} cell {index}"
        assert cell["metadata"].get("jupyter", {}).get("source_hidden") is True, \
            f"{where}: a proof cell must be collapsed (metadata.jupyter.source_hidden: true)"
        assert index > 0 and cells[index - 1]["cell_type"] == "code" \
            and not minutes.is_proof(cells[index - 1]), \
            f"{where}: a proof cell goes right after the code cell whose claim it checks"
        kinds = {output["output_type"] for output in cell.get("outputs", [])}
        assert kinds <= {"stream"}, f"{where}: a proof cell prints text only, got {kinds}"
        lines = _output_text(cell).strip().splitlines()
        assert len(lines) <= 1 and all(len(line) <= 100 for line in lines), \
            f"{where}: a proof cell prints nothing or one short line, got {lines}"


# --------------------------------------------------------------------------- predict, run


@pytest.mark.parametrize("stem", CONVERTED)
def test_intro_says_what_the_learner_will_be_able_to_do(stem):
    opening = _source(_cells(_path(stem))[0])
    assert re.search(r"\*\*You will be able to(?::\*\*|\*\*)", opening), \
        f"{stem}: no 'You will be able to' line"
    assert "**In this notebook**" not in opening, \
        f"{stem}: the intro lists what the runs show; say what the learner will be able to do"


@pytest.mark.parametrize("stem", CONVERTED)
def test_key_experiments_open_with_a_prediction(stem):
    cells = _cells(_path(stem))
    prompts = [index for index, cell in enumerate(cells)
               if cell["cell_type"] == "markdown" and "**Predict" in _source(cell)]
    assert len(prompts) >= PREDICTIONS[stem], f"{stem}: {len(prompts)} Predict prompts"
    for index in prompts:
        assert index + 1 < len(cells) and cells[index + 1]["cell_type"] == "code", \
            f"{stem} cell {index}: a Predict prompt is followed by the run it asks about"
    for index, cell in enumerate(cells):
        if "raises-exception" in minutes.tags(cell):
            assert index - 1 in prompts, f"{stem} cell {index}: an intended failure is a " \
                                         "key experiment; ask for a prediction first"


def _demonstrations(stem: str) -> list[dict]:
    """The code cells of a notebook, without the exercises' checker cells: a checker's verdict
    on the starting code ("your code raised ...") is feedback, not a demonstration."""
    cells = _cells(_path(stem))
    return [cell for index, cell in enumerate(cells) if cell["cell_type"] == "code"
            and not (index > 0 and cells[index - 1].get("metadata", {}).get("exercise"))]


def test_each_demonstration_is_shown_once_in_the_converted_notebooks():
    for text, allowed in SHOWN_ONCE.items():
        showing = [stem for stem in CONVERTED
                   if any(text in _output_text(cell) for cell in _demonstrations(stem))]
        assert 1 <= len(showing) <= allowed, f"{text!r} is shown in {showing}"


# --------------------------------------------------------------------------- the figures


@pytest.mark.parametrize("stem", CONVERTED)
def test_code_prose_and_minutes_within_the_limits(stem):
    measured = minutes.notebook_minutes(_path(stem))
    code, words, total = LIMITS[stem]
    assert measured.visible_code_lines <= code, \
        f"{stem}: {measured.visible_code_lines} visible code lines"
    assert measured.prose_words <= words, f"{stem}: {measured.prose_words} words of prose"
    assert measured.total <= total, f"{stem}: {measured.total:.0f} minutes"


def helper_names_imported(cells: list[dict]) -> list[str]:
    """The names a notebook's learner-facing code cells import from ``helpers``."""
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    names = []
    for index, cell in enumerate(code[1:], start=1):  # code[0]: the standard first cell
        if minutes.is_proof(cell) or cell.get("metadata", {}).get("exercise") \
                or code[index - 1].get("metadata", {}).get("exercise"):
            continue
        for node in ast.walk(ast.parse(_source(cell))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"):
                names += [alias.asname or alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                names += [alias.asname or alias.name for alias in node.names
                          if alias.name.startswith("helpers")]
    return names


@pytest.mark.parametrize("stem", sorted(HELPER_NAMES))
def test_few_helper_names_in_learner_cells(stem):
    names = helper_names_imported(_cells(_path(stem)))
    assert len(names) <= HELPER_NAMES[stem], f"{stem} imports {len(names)} helper names: {names}"


# --------------------------------------------------------------------------- words


SEED_AS_A_CASE = re.compile(r"""(?ix)
    \bseed(?:['’]s\b|[\s-]+(?:case|cases|question|questions|file|answer|answers|loss|
                            model|loop|conditions)\b)   # the seed's loss, seed case, seed-loss
  | \bseed\s+\d{3}\b                                    # seed 000
  | (?<!\w)\(seed\)                                     # per-frame (seed), not f(seed)
  | \bthe\s+seed\b(?!\s*(?:=|value|of\s+the|for\s+the|generator|\)))  # the seed says
""")


def seed_as_a_case(text: str) -> list[str]:
    """The places where ``text`` uses "seed" as a name for one of the course's cases."""
    return [text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")
            for m in SEED_AS_A_CASE.finditer(text)]


def test_the_seed_guard_catches_case_names_and_passes_random_seeds():
    for wrong in ("seed 000 of this course", "seed case 004", "the seed's loss",
                  "The seed's question", "the seed-loss model", "per-frame (seed)",
                  "which the seed never says", "the two seed questions"):
        assert seed_as_a_case(wrong), wrong
    for fine in ("make_deterministic(seed=0)", "a random seed", "seeded, so the same",
                 "each from a seed", "other seeds", 'train_denoiser(loss="seed")',
                 "def clip_excerpt(excerpt_of, seed: int = 0)", "the seed of the generator",
                 "make_deterministic(seed)"):
        assert not seed_as_a_case(fine), fine


def _learner_texts():
    for path in NOTEBOOKS:
        for index, cell in enumerate(_cells(path)):
            if cell["cell_type"] == "markdown":
                yield f"{path.name} cell {index}", _source(cell)
            elif path.stem in CONVERTED:
                yield f"{path.name} cell {index}", _source(cell) + "\n" + _output_text(cell)
    for name in ("README.md", "INSTRUCTORS.md"):
        yield name, (ROOT / name).read_text(encoding="utf-8")
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value


def test_no_seed_as_a_name_for_the_cases_where_learners_read():
    found = [(where, hit) for where, text in _learner_texts() for hit in seed_as_a_case(text)]
    assert not found, "name the cases 'the GRU question' and 'the voicing-loss question': " \
                      + "; ".join(f"{where}: ...{hit}..." for where, hit in found[:20])


# --------------------------------------------------------------------------- a plot per fix step

# After every fix step, the gradient report and the per-variable plot (DEVELOPERS' guide). The
# steps of the fix notebooks that change the model's gradients; 04's step 3 is a derivative
# table of a small tensor, not of the model's variables.
STEPS_WITH_A_PLOT = {"02_gru_state_fix": (1, 2, 3, 4, 5), "04_voicing_loss_fix": (1, 2, 4, 5)}
STEP_HEADING = re.compile(r"^## Step (\d+)\b", re.M)


def step_sections(cells: list[dict]) -> dict[int, list[dict]]:
    """The cells of each ``## Step N`` section, up to the next ``## `` heading."""
    sections: dict[int, list[dict]] = {}
    current = None
    for cell in cells:
        if cell["cell_type"] == "markdown":
            headings = re.findall(r"^## (.*)$", _source(cell), re.M)
            if headings:
                match = STEP_HEADING.match(f"## {headings[-1]}")
                current = int(match.group(1)) if match else None
                if current is not None:
                    sections[current] = []
                continue
        if current is not None:
            sections[current].append(cell)
    return sections


def _shows_a_plot(cell: dict) -> bool:
    return cell["cell_type"] == "code" and not minutes.is_proof(cell) and any(
        "image/png" in output.get("data", {}) for output in cell.get("outputs", []))


def _shows_a_report(cell: dict) -> bool:
    text = "".join("".join(output.get("text", "")) + "".join(
        output.get("data", {}).get("text/plain", "")) for output in cell.get("outputs", []))
    return re.search(r"\d+ variables: ", text) is not None or "gradient_report(" in _source(cell)


@pytest.mark.parametrize("stem", sorted(STEPS_WITH_A_PLOT))
def test_every_fix_step_shows_its_gradient_report_and_a_per_variable_plot(stem):
    sections = step_sections(_cells(_path(stem)))
    for step in STEPS_WITH_A_PLOT[stem]:
        cells = [cell for cell in sections.get(step, []) if cell["cell_type"] == "code"
                 and not minutes.is_proof(cell)]
        assert any(_shows_a_plot(cell) for cell in cells), f"{stem} step {step}: no plot"
        assert any(_shows_a_report(cell) for cell in cells), f"{stem} step {step}: no report"


def test_step_sections_split_at_each_level_two_heading():
    code = {"cell_type": "code", "metadata": {}, "source": "x", "outputs": [
        {"output_type": "display_data", "data": {"image/png": "..."}}]}
    cells = [{"cell_type": "markdown", "source": "## Step 1: a\n\ntext"}, code,
             {"cell_type": "markdown", "source": "## Summary"}, code,
             {"cell_type": "markdown", "source": "## Step 2: b"}]
    sections = step_sections(cells)
    assert [len(sections[1]), len(sections[2])] == [1, 0] and _shows_a_plot(sections[1][0])
