"""The student edition (``scripts/make_student_edition.py``, ``./course.sh student``) works:
no stored code outputs except in cells tagged ``keep-output``, no solution code anywhere,
every checker answers "Not yet" on its starter, and every notebook runs top to bottom with no
error except in cells tagged ``raises-exception``.

Why the seven student notebooks are not executed here again. Running them would add a full
second pass over the course (about as long as the notebooks' part of this whole command) for
nothing nbval does not already prove, because of three facts this file checks:

1. The student edition's code cells are exactly the course's code cells: the same source,
   the same metadata (tags included, so the same cells are allowed to raise), in the same
   order. Only outputs, execution counts and solution Markdown differ, and a kernel reads
   none of them: the code a student runs is, cell for cell, the code nbval runs.
2. nbval runs every one of those cells top to bottom in one kernel, and fails on any error in
   a cell not tagged ``raises-exception`` (``nbval/plugin.py``, whatever a cell's
   output-comparison markers say), as long as no cell is skipped; so no course cell may carry
   ``NBVAL_SKIP`` / ``nbval-skip``. Its strict comparison also proves the checker's stored
   verdict on each starter, "Not yet", is what the checker says today, so the cell after
   each exercise must be compared by nbval and store "Not yet". (``test_exercises.py`` also
   calls each checker on the starter directly.)
3. What differs is where the kernel starts: nbval starts it in ``notebooks/``, a student in
   their folder, possibly outside the repository. The notebooks import ``helpers`` from the
   course environment, and ``helpers.audio.clips`` finds ``data/`` next to the package, not from
   the working directory. One notebook's opening cells (00's, up to loading a clip from
   ``data/``) really run here with nbclient from a student folder outside the repository,
   and print what they print in the course; and no code cell names a path relative to the
   working directory (``../``, ``data/``, ``notebooks/``). The kernel's environment does not
   matter either: importing ``helpers`` sets TensorFlow's settings itself, as under nbval.

So a student notebook runs, top to bottom, exactly as far as its course notebook does under
nbval in the same test command. If the student edition ever changes code (say, to blank the
starters), this reasoning no longer holds, ``test_code_cells_are_the_courses_...`` fails,
and the student notebooks must then be executed here in full.

``keep-output`` is tested on a small notebook built here, so the course needs no tagged cell.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import warnings
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbval.plugin import find_comment_markers, find_metadata_tags

from scripts import make_student_edition as edition

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = edition.course_notebooks(ROOT)
IDS = [p.stem for p in NOTEBOOKS]
KEEP = edition.KEEP_OUTPUT_TAG
SOLUTION = re.compile(r"<details>.*?```python\n(.*?)```.*?</details>", re.S)  # test_exercises'
RELATIVE_PATH = re.compile(r"""["'](\.\.?/|data/|notebooks/|student/)""")


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    """The student edition, written once into a folder outside the repository."""
    target = tmp_path_factory.mktemp("class") / "student"
    results = edition.write_student_edition(target)
    assert [path.name for path, _ in results] == [p.name for p in NOTEBOOKS] + ["GLOSSARY.md"]
    assert all(written for _, written in results)
    return target


@functools.cache
def _read(path: Path) -> nbformat.NotebookNode:
    """A notebook, read once per test process (reading validates it, which takes time);
    no test changes what it gets."""
    return nbformat.read(path, as_version=4)


def _pairs(student_dir, name):
    return _read(ROOT / "notebooks" / name), _read(student_dir / name)


def _code(notebook):
    return [c for c in notebook.cells if c.cell_type == "code"]


def _text(cell) -> str:
    """A cell's source and the text of its outputs."""
    parts = [cell.source]
    for output in cell.get("outputs", []):
        parts += [str(output.get("text", "")), str(output.get("evalue", ""))]
        parts += [str(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


def test_running_it_again_changes_nothing(student_dir):
    before = {p.name: p.read_bytes() for p in student_dir.iterdir()}
    again = edition.write_student_edition(student_dir)
    assert not any(written for _, written in again)
    assert {p.name: p.read_bytes() for p in student_dir.iterdir()} == before


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS], ids=IDS)
def test_code_cells_are_the_courses_with_no_stored_outputs(student_dir, name):
    course, student = _pairs(student_dir, name)
    assert [(c.source, c.metadata) for c in _code(student)] == [
        (c.source, c.metadata) for c in _code(course)
    ], "the student edition must run exactly the course's code (see this file's docstring)"
    assert student.metadata.get("kernelspec") == course.metadata.get("kernelspec")
    for index, cell in enumerate(_code(student)):
        assert cell.execution_count is None, f"code cell {index} keeps its execution count"
        if KEEP not in cell.metadata.get("tags", []):
            assert cell.outputs == [], f"code cell {index} keeps its outputs"
    assert "widgets" not in student.metadata


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS], ids=IDS)
def test_proof_cells_are_kept_collapsed_and_run_like_any_cell(student_dir, name):
    """Proof cells (CONTRIBUTING.md, "Conventions") stay in the student edition, in
    place and collapsed: a student's run asserts the same claims, and nbval's run of the
    course (which runs them) stands for it as for every other code cell."""
    course, student = _pairs(student_dir, name)

    def proofs(notebook):
        return [
            (i, c.source)
            for i, c in enumerate(_code(notebook))
            if "proof" in c.metadata.get("tags", [])
        ]

    assert proofs(student) == proofs(course)
    for cell in [c for c in _code(student) if "proof" in c.metadata.get("tags", [])]:
        assert cell.metadata["jupyter"]["source_hidden"] is True
        assert cell.outputs == []
    if name.startswith(("00_", "01_", "02_")):
        assert proofs(student), f"{name} is converted to proof cells but has none"


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS], ids=IDS)
def test_markdown_is_the_courses_without_its_solutions(student_dir, name):
    course, student = _pairs(student_dir, name)
    expected = []
    for cell in course.cells:
        if cell.cell_type == "markdown" and SOLUTION.search(cell.source):
            cell = nbformat.from_dict(dict(cell))
            for block in re.finditer(r"<details>.*?</details>[ \t]*\n?", cell.source, re.S):
                if "```python" in block.group(0):
                    cell.source = cell.source.replace(block.group(0), "", 1)
            if not cell.source.strip():
                continue
        if cell.cell_type == "markdown":  # the glossary is beside the notebooks
            cell = nbformat.from_dict(dict(cell))
            cell.source = cell.source.replace("](../GLOSSARY.md", "](GLOSSARY.md")
        expected.append(cell if cell.cell_type == "markdown" else cell.source)
    got = [c if c.cell_type == "markdown" else c.source for c in student.cells]
    assert got == expected


def test_the_glossary_opens_from_the_student_edition(student_dir):
    """A server opened on the student folder reaches the glossary the notebooks link to."""
    links = set()
    for name in [p.name for p in NOTEBOOKS]:
        for cell in _read(student_dir / name).cells:
            if cell.cell_type == "markdown":
                links.update(re.findall(r"\]\(([^)#\s]*GLOSSARY\.md)", cell.source))
    assert links == {"GLOSSARY.md"}  # beside the notebook, in the folder a server opens
    copied = (student_dir / "GLOSSARY.md").read_text(encoding="utf-8")
    assert copied == (ROOT / "GLOSSARY.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS], ids=IDS)
def test_no_solution_code_anywhere(student_dir, name):
    course, student = _pairs(student_dir, name)
    code_lines = {line.strip() for c in _code(course) for line in c.source.splitlines()}
    solutions = [
        m.group(1)
        for c in course.cells
        if c.cell_type == "markdown"
        for m in SOLUTION.finditer(c.source)
    ]
    assert solutions, f"{name}: no solution found in the course notebook"
    # The lines only a solution has: the ones a student must not be able to read.
    secret = {line.strip() for s in solutions for line in s.splitlines()} - code_lines - {""}
    assert secret, f"{name}: every line of its solutions is already in its code"
    text = "\n".join(_text(c) for c in student.cells)
    assert not any(
        "```python" in m.group(0) for m in re.finditer(r"<details>.*?</details>", text, re.S)
    ), "a <details> block with Python code is left"
    lines = {line.strip() for line in text.splitlines()}
    assert not secret & lines, f"solution code left: {sorted(secret & lines)}"


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS], ids=IDS)
def test_no_solution_value_anywhere(student_dir, name):
    """What a solution's prose gives away (a code span that is a tuple of numbers, such as an
    exercise's answer on the real clip) is in no cell of the student edition, in any type."""
    course, student = _pairs(student_dir, name)
    values = {
        span
        for c in course.cells
        if c.cell_type == "markdown"
        for m in SOLUTION.finditer(c.source)
        for span in re.findall(r"`(\(?-?[\d.]+(?:, -?[\d.]+)+\)?)`", m.group(0))
    }
    text = "\n".join(_text(c) for c in student.cells)
    assert not [v for v in values if v in text], f"{name}: a solution's value is left"
    if name.startswith("07_"):
        assert values == {"(5, 4, 1)"}  # the answer the proof cell used to give away


def _nbval_runs(cell) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbval warns about conflicting markers
        options = dict(find_metadata_tags(cell.metadata))
        options.update(find_comment_markers(cell.source))
    return not options.get("skip", False)


def _nbval_compares(cell) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = dict(find_metadata_tags(cell.metadata))
        options.update(find_comment_markers(cell.source))
    return options.get("check", True) and cell.execution_count is not None


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS], ids=IDS)
def test_nbval_runs_every_cell_a_student_runs(name):
    """Fact 2 of the docstring: nbval executes each course code cell (none skipped)."""
    skipped = [
        i for i, c in enumerate(_code(_read(ROOT / "notebooks" / name))) if not _nbval_runs(c)
    ]
    assert not skipped, (
        f"nbval skips code cells {skipped}: a student runs them, so this "
        "file must then execute the student notebooks itself"
    )


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS], ids=IDS)
def test_each_checker_says_not_yet_on_the_starter(name):
    """Each exercise's next code cell calls its checker; nbval compares that cell, and its
    stored verdict (what the checker says on the starter today) is "Not yet"."""
    cells = _code(_read(ROOT / "notebooks" / name))
    exercises = [i for i, c in enumerate(cells) if c.metadata.get("exercise")]
    assert exercises
    for index in exercises:
        spec = cells[index].metadata["exercise"]
        checker = cells[index + 1]
        assert f"{spec['checker'].split(':')[1]}({spec['function']})" in checker.source
        assert _nbval_compares(checker), f"nbval does not compare code cell {index + 1}"
        verdicts = [
            o.data["text/plain"] for o in checker.outputs if "text/plain" in o.get("data", {})
        ]
        assert len(verdicts) == 1 and verdicts[0].startswith("Not yet: "), verdicts


def test_no_code_cell_names_a_path_relative_to_where_it_runs():
    found = [
        (p.name, m.group(0))
        for p in NOTEBOOKS
        for c in _code(_read(p))
        for m in RELATIVE_PATH.finditer(c.source)
    ]
    assert not found, f"a student folder elsewhere would not have these: {found}"


def test_a_student_notebook_runs_from_a_folder_outside_the_course(student_dir):
    """00's opening cells, up to the first that loads a clip from data/, run with nbclient in
    the student folder (outside the repository) and print what they print in the course."""
    assert ROOT not in student_dir.resolve().parents
    name = NOTEBOOKS[0].name
    course, student = _pairs(student_dir, name)
    count = next(i for i, c in enumerate(_code(student)) if "load_clip(" in c.source) + 1
    opening = nbformat.v4.new_notebook(
        cells=[nbformat.from_dict(dict(c)) for c in _code(student)[:count]],
        metadata=student.metadata,
    )
    NotebookClient(
        opening,
        timeout=120,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(student_dir)}},
    ).execute()

    def streams(cell):
        """Each stream's whole text: the kernel may split one print into several chunks, and
        nbval joins consecutive chunks too."""
        text: dict[str, str] = {}
        for output in cell.outputs:
            if output.output_type == "stream":
                text[output.name] = text.get(output.name, "") + output.text
        return text

    for ran, stored in zip(opening.cells, _code(course)[:count]):
        assert streams(ran) == streams(stored), (ran.source, ran.outputs)
    assert any("load_clip(" in c.source and streams(c) for c in opening.cells)


def test_keep_output_and_solutions_on_a_small_notebook():
    shown = nbformat.v4.new_output("stream", name="stdout", text="compare with this\n")
    result = nbformat.v4.new_output("execute_result", execution_count=2, data={"text/plain": "42"})
    hint = "<details><summary>Hint</summary>\n\nLook at the tape.\n</details>\n"
    solution = (
        "<details>\n<summary>Show a solution</summary>\n\n```python\n"
        "def f():\n    return 42\n```\n</details>\n"
    )
    course = nbformat.v4.new_notebook(
        metadata={"widgets": {"state": {}}},
        cells=[
            nbformat.v4.new_markdown_cell("# Title\n\nSome `code` in prose.\n"),
            nbformat.v4.new_code_cell(
                "print('compare with this')",
                execution_count=1,
                outputs=[shown],
                metadata={"tags": [KEEP]},
            ),
            nbformat.v4.new_code_cell(
                "6 * 7",
                execution_count=2,
                outputs=[result],
                metadata={"tags": ["raises-exception"]},
            ),
            nbformat.v4.new_markdown_cell("Before.\n\n" + hint + solution + "After.\n"),
            nbformat.v4.new_markdown_cell(solution),
        ],
    )
    original = nbformat.writes(course)
    student = edition.student_notebook(course)
    assert nbformat.writes(course) == original  # the course notebook is left alone
    nbformat.validate(student)
    kept, cleared = _code(student)
    assert kept.outputs == [shown] and kept.execution_count is None
    assert cleared.outputs == [] and cleared.execution_count is None
    assert cleared.metadata == {"tags": ["raises-exception"]}
    assert [c.source for c in student.cells if c.cell_type == "markdown"] == [
        "# Title\n\nSome `code` in prose.\n",
        "Before.\n\n" + hint + "After.\n",
    ]
    assert "widgets" not in student.metadata
    result_kept = edition.student_notebook(
        nbformat.v4.new_notebook(
            cells=[
                nbformat.v4.new_code_cell(
                    "6 * 7", execution_count=5, outputs=[result], metadata={"tags": [KEEP]}
                )
            ]
        )
    )
    assert result_kept.cells[0].outputs[0].execution_count is None


def test_bad_input_says_what_was_expected(tmp_path):
    with pytest.raises(ValueError, match="nbformat 4"):
        edition.student_notebook(nbformat.from_dict({"nbformat": 3, "metadata": {}}))
    (tmp_path / "a_file").write_text("")
    with pytest.raises(NotADirectoryError, match="expected a folder"):
        edition.write_student_edition(tmp_path / "a_file")
    with pytest.raises(FileNotFoundError, match="no notebooks"):
        edition.write_student_edition(tmp_path / "out", root=tmp_path)


def test_course_sh_hands_every_command_to_the_course_environment(tmp_path):
    """course.sh only finds a Python, makes the environment and hands over: with an
    environment in place, its Python runs scripts/course.py with the command's arguments."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stub = venv / "bin" / "python"  # a stand-in python that logs its arguments
    stub.write_text('#!/usr/bin/env bash\necho "$*" >> "$STUB_LOG"\n')
    stub.chmod(0o755)
    env = {**os.environ, "VENV": str(venv), "STUB_LOG": str(tmp_path / "log")}
    for args in (["student"], ["student", "elsewhere/class"], ["test", "-k", "x"]):
        result = subprocess.run(
            [str(ROOT / "course.sh"), *args], env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "log").read_text().splitlines() == [
        "scripts/course.py student",
        "scripts/course.py student elsewhere/class",
        "scripts/course.py test -k x",
    ]


@pytest.mark.parametrize(
    ("stub", "seen"),
    [
        ("exit 1", "not a Python that runs"),  # no Python at all
        ("echo 3.10.12", "3.10.12"),
        ("echo 3.11.2", "3.11.2"),  # Debian 12's python3: the lock needs 3.11.5
        ("echo 3.14.0", "3.14.0"),
    ],
)
def test_course_sh_refuses_a_python_the_course_does_not_run_on(tmp_path, stub, seen):
    old = tmp_path / "python3"
    old.write_text(f"#!/usr/bin/env bash\n{stub}\n")  # what sys.version_info prints
    old.chmod(0o755)
    env = {**os.environ, "VENV": str(tmp_path / "venv"), "PYTHON": str(old)}
    result = subprocess.run(
        [str(ROOT / "course.sh"), "lab"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and not (tmp_path / "venv").exists()
    assert result.stderr.startswith(
        "PROBLEM  Python: the course runs on Python 3.11.5 or later, 3.12 or 3.13 (the course "
        f"lock's soupsieve 4.1.3 needs 3.11.5), and PYTHON={old} is {seen}. Fix: "
    )


def test_student_folder_is_ignored_by_git_and_documented():
    assert "/student/" in (ROOT / ".gitignore").read_text().splitlines()
    assert f"`{KEEP}`" in (ROOT / "CONTRIBUTING.md").read_text()
    assert "./course.sh student" in (ROOT / "INSTRUCTORS.md").read_text()
    assert "student edition" in (ROOT / "README.md").read_text()  # and where to find it
