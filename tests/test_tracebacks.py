"""Short tracebacks (helpers.course.tracebacks): the learner's lines and the message, still an error
to nbval; and, over the stored notebooks, no intended error after the course's first one
longer than 12 lines."""

from __future__ import annotations

import json
import linecache
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbval_run import KERNELSPEC, cell_outcomes

from helpers.course.tracebacks import MESSAGE_LINES, short_traceback, short_tracebacks

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))  # course order
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SHORT = 12  # lines, at most, for every intended error after the course's first
CELL = "<a learner's cell>"


def _short(source: str) -> list[str]:
    """The short traceback of what ``source`` raises when run as if from a notebook cell (a
    file named CELL, its lines cached as IPython caches a cell's)."""
    linecache.cache[CELL] = (len(source), None, source.splitlines(True), CELL)
    try:
        exec(compile(source, CELL, "exec"), {"json": json})
    except Exception as error:  # noqa: BLE001 - the error is the result
        return short_traceback(
            error, error.__traceback__, lambda filename: "Cell In[3]" if filename == CELL else None
        )
    finally:
        linecache.cache.pop(CELL, None)
    raise AssertionError("the source did not raise")


def test_a_short_traceback_is_the_cell_line_a_note_and_the_message():
    lines = _short("x = 1\njson.loads('{')\n")
    assert lines[:2] == ["Cell In[3], line 2", "----> 2 json.loads('{')"]
    assert re.fullmatch(r" +\(\d+ frames inside json not shown; %tb shows them\)", lines[2])
    assert lines[3:] == [
        "JSONDecodeError: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"
    ]


def test_every_cell_frame_is_kept_and_library_frames_are_counted_between_them():
    source = "def parse(text):\n    return json.loads(text)\n\nparse('[')\n"
    lines = _short(source)
    assert lines[:4] == [
        "Cell In[3], line 4",
        "----> 4 parse('[')",
        "Cell In[3], line 2",
        "----> 2 return json.loads(text)",
    ]
    assert "inside json" in lines[4] and lines[5].startswith("JSONDecodeError: Expecting value")


def test_an_error_raised_in_the_cell_itself_has_no_note():
    lines = _short("raise ValueError('No gradients provided for any variable.')")
    assert lines == [
        "Cell In[3], line 1",
        "----> 1 raise ValueError('No gradients provided for any variable.')",
        "ValueError: No gradients provided for any variable.",
    ]


def test_a_long_message_keeps_its_start_and_its_last_line():
    """TensorFlow's graph errors put dozens of lines (node definitions, machine paths) into
    the message (34 lines here); the short form shows its first lines and its last, and says
    how many it left out, in MESSAGE_LINES lines."""
    paths = [f"  File /somewhere/{n}.py" for n in range(30)]
    message = "\\n".join(
        [
            "Graph execution error:",
            "",
            "Detected at node x defined at:",
            *paths,
            "Input is not finite.",
        ]
    )
    lines = _short(f"raise ValueError('{message}')")
    shown = lines[2:]
    assert len(shown) == MESSAGE_LINES
    assert shown[:4] == [
        "ValueError: Graph execution error:",
        "",
        "Detected at node x defined at:",
        "  File /somewhere/0.py",
    ]
    assert re.fullmatch(r" +\(29 more lines of the message not shown; %tb shows them\)", shown[-2])
    assert shown[-1] == "Input is not finite."


def test_outside_ipython_it_leaves_the_interpreter_alone():
    hook = sys.excepthook
    short_tracebacks()
    short_tracebacks(on=False)
    assert sys.excepthook is hook


# ------------------------------------------------------------------ in a kernel, under nbval

TURN_ON = "from helpers.course import short_tracebacks\n\nshort_tracebacks()"  # no TensorFlow
SOURCES = {  # cell: (source, tags)
    "turn on": (TURN_ON, []),
    "still raises": ("import json\n\njson.loads('{')", ["raises-exception"]),
    "stopped raising": ("import json\n\njson.loads('{}')", ["raises-exception"]),
    "raises another error": ("raise ValueError('{')", ["raises-exception"]),
    "fails unmarked": ("json.loads('[')", []),
}
PASSES = {
    "turn on": True,
    "still raises": True,
    "stopped raising": False,
    "raises another error": False,
    "fails unmarked": False,
}


def test_in_a_kernel_errors_are_short_and_nbval_still_checks_them(tmp_path):
    """One notebook run by a kernel (as regenerate_outputs runs one), its error outputs
    short; then nbval on it with the sources of three cells changed: a cell that stops
    raising, raises another error, or fails without the tag fails under nbval."""
    cells = [
        nbformat.v4.new_code_cell(source)
        for source in [SOURCES["turn on"][0], *["import json\n\njson.loads('{')"] * 4]
    ]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC})
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True).execute()
    for cell in notebook.cells[1:]:
        (error,) = cell.outputs
        assert (error.output_type, error.ename) == ("error", "JSONDecodeError")
        text = ANSI.sub("", "\n".join(error.traceback))
        assert text.splitlines()[:2] == [
            f"Cell In[{cell.execution_count}], line 3",
            "----> 3 json.loads('{')",
        ], text
        assert len(text.splitlines()) == 4 and "site-packages" not in text, text
    for cell, (source, tags) in zip(notebook.cells, SOURCES.values(), strict=True):
        cell.source, cell.metadata = source, {"tags": tags} if tags else {}
    nbformat.write(notebook, tmp_path / "short.ipynb")
    outcomes, stdout = cell_outcomes(tmp_path / "short.ipynb")
    for index, (name, passes) in enumerate(PASSES.items()):
        assert index in outcomes, stdout[-2000:]
        assert outcomes[index] == passes, f"{name}: cell {index}\n{stdout[-3000:]}"


# ------------------------------------------------------------------ the stored notebooks


def _code_cells(path: Path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _stored_errors() -> list[tuple[str, int, int]]:
    """(notebook, code cell index, traceback lines with ANSI codes removed) in course order."""
    return [
        (path.name, index, len(ANSI.sub("", "\n".join(output.traceback)).splitlines()))
        for path in NOTEBOOKS
        for index, cell in enumerate(_code_cells(path))
        for output in cell.outputs
        if output.output_type == "error"
    ]


def test_every_intended_error_after_the_courses_first_is_short():
    errors = _stored_errors()
    assert errors, "the course shows no intended error: then the first one is gone"
    _, *later = errors
    long = [error for error in later if error[2] > SHORT]
    assert not long, (
        f"stored errors longer than {SHORT} lines (notebook, code cell, lines): "
        f"{long}; call short_tracebacks() before them and regenerate"
    )


def test_short_tracebacks_is_on_from_right_after_the_first_intended_error():
    """The notebook of the course's first intended error turns short tracebacks on in a code
    cell after it; every later notebook in its first code cell."""
    first_notebook, first_cell, _ = _stored_errors()[0]
    for path in NOTEBOOKS:
        if path.name < first_notebook:
            continue
        calls = [
            index
            for index, cell in enumerate(_code_cells(path))
            if re.search(r"^short_tracebacks\(\)", cell.source, re.MULTILINE)
        ]
        if path.name == first_notebook:
            assert calls and calls[0] > first_cell, (
                f"{path.name}: call short_tracebacks() in a code cell after its intended error "
                f"(code cell {first_cell}), so that one is shown in full"
            )
        else:
            assert calls[:1] == [0], f"{path.name}: call short_tracebacks() in the first code cell"
