"""What nbval does not check on its own: that every stored output comes from one clean run,
that nothing noisy was stored, that failing cells are marked, that nbval compares nearly every
cell, that nbval really fails when a cell meant to fail stops failing, and that the sanitizer
hides audio bytes and nothing else."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import find_comment_markers, find_metadata_tags
from nbval_run import KERNELSPEC, cell_outcomes

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOISE = re.compile(
    r"I0000 |WARNING: All log messages|oneDNN custom operations|"
    r"cpu_feature_guard|cudart_stub|at 0x[0-9a-f]{6,}|object at 0x"
)
IDS = [p.stem for p in NOTEBOOKS]


def _code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _output_text(output) -> str:
    parts = [output.get("text", ""), output.get("evalue", "")]
    parts += [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return "".join("".join(p) if isinstance(p, list) else str(p) for p in parts)


def test_the_course_has_its_notebooks():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "00_start_here.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_outputs_come_from_one_clean_top_to_bottom_run(path):
    counts = [c.execution_count for c in _code_cells(path) if c.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), (
        "run scripts/regenerate_outputs.py: some cells are unrun or were run out of order"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_log_noise_or_memory_addresses_in_outputs(path):
    for index, cell in enumerate(_code_cells(path)):
        for output in cell.outputs:
            match = NOISE.search(_output_text(output))
            assert not match, f"code cell {index}: stored output contains {match.group(0)!r}"
            if output.get("name") == "stderr":
                pytest.fail(f"code cell {index} stored stderr: {output['text'][:200]!r}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_path_of_the_machine_that_made_the_outputs(path):
    """Tracebacks are stored with site-packages/... and helpers/... paths (regenerate_outputs),
    not the absolute paths of one checkout or environment."""
    machine = re.compile(r"(/(work|home|Users|root|tmp|opt)/|[A-Z]:\\)\S*(site-packages|helpers)")
    for index, cell in enumerate(_code_cells(path)):
        for output in cell.outputs:
            text = "\n".join(output.get("traceback", [])) + _output_text(output)
            match = machine.search(text)
            assert not match, (
                f"code cell {index}: stored output names {match.group(0)!r}; "
                "run scripts/regenerate_outputs.py"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_errors_only_where_a_cell_is_marked_to_fail(path):
    for index, cell in enumerate(_code_cells(path)):
        marked = "raises-exception" in cell.metadata.get("tags", [])
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if marked:
            assert len(errors) == 1, (
                f"code cell {index} is tagged raises-exception but stored "
                "no error: nbval would compare nothing"
            )
        else:
            assert not errors, f"code cell {index} failed: {errors[0].ename}: {errors[0].evalue}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_opens_and_closes_as_the_course_promises(path):
    notebook = nbformat.read(path, as_version=4)
    opening = notebook.cells[0].source
    assert notebook.cells[0].cell_type == "markdown"
    for phrase in ("You need", "Time"):
        assert phrase in opening, f"the opening cell does not say {phrase!r}"
    first_code = _code_cells(path)[0].source
    first_import = next(
        line for line in first_code.splitlines() if line.startswith(("import ", "from "))
    )
    assert first_import.startswith(("import helpers", "from helpers")), (
        "import helpers before TensorFlow: it keeps TensorFlow's start-up log quiet"
    )
    assert "make_deterministic" in first_code
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "## Summary" in text and "## Exercise" in text
    assert notebook.metadata["kernelspec"]["name"] == "python3"


def _nbval_compares(cell) -> bool:
    """Whether strict nbval compares this code cell's outputs, by nbval's own reading of its
    comment markers and tags (a cell with no stored run is not compared either)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbval warns about conflicting markers; not our test
        options = dict(find_metadata_tags(cell.metadata))
        options.update(find_comment_markers(cell.source))
    return (
        options.get("check", True)
        and not options.get("skip", False)
        and cell.execution_count is not None
    )


def test_nbval_compares_the_outputs_of_at_least_nine_code_cells_in_ten():
    counts = {
        path.name: (sum(map(_nbval_compares, cells)), len(cells))
        for path in NOTEBOOKS
        for cells in [_code_cells(path)]
    }
    compared = sum(c for c, _ in counts.values())
    total = sum(n for _, n in counts.values())
    assert compared >= 0.9 * total, (
        f"nbval compares the outputs of {compared} of {total} code cells; "
        f"NBVAL_IGNORE_OUTPUT / NBVAL_SKIP are for timings only: {counts}"
    )


# The meta-test: tiny notebooks with stored outputs, each run once by nbval exactly as the test
# commands run it (strict, with the sanitizer), all in one subprocess.
AUDIO = "from IPython.display import Audio\nAudio([0.0, 0.5, -0.5, 0.25], rate=8000)"
LABELLED_AUDIO = (
    "from IPython.display import HTML, Audio\n"
    "HTML('<p>10.6 dB</p>' + Audio([0.0, 0.5, -0.5, 0.25], rate=8000)._repr_html_())"
)


def _error(name: str = "ValueError"):
    return nbformat.v4.new_output("error", ename=name, evalue="boom", traceback=[])


def _html(html: str, plain: str):
    return nbformat.v4.new_output(
        "execute_result", execution_count=1, data={"text/html": html, "text/plain": plain}
    )


def _audio(last_sample: float = 0.26) -> str:
    """A player's markup; another last sample gives other base64 bytes in the same markup,
    as training on another CPU does."""
    from IPython.display import Audio

    return Audio([0.0, 0.5, -0.5, last_sample], rate=8000)._repr_html_()


CASES = {  # notebook name: (the cell's source now, its stored outputs, its tags, should pass?)
    "still_raises": ("raise ValueError('boom')", [_error()], ["raises-exception"], True),
    "stopped_raising": (
        "x = 1  # the fix someone made by accident",
        [_error()],
        ["raises-exception"],
        False,
    ),
    "raises_another_error": ("raise TypeError('boom')", [_error()], ["raises-exception"], False),
    "audio_bytes_differ": (
        AUDIO,
        [_html(_audio(), "<IPython.lib.display.Audio object>")],
        [],
        True,
    ),
    "text_beside_audio_differs": (
        LABELLED_AUDIO,
        [_html("<p>10.5 dB</p>" + _audio(), "<IPython.core.display.HTML object>")],
        [],
        False,
    ),
    "printed_number_differs": (
        "print(0.25)",
        [nbformat.v4.new_output("stream", name="stdout", text="0.26\n")],
        [],
        False,
    ),
    # A page that reconnects between two cells moves Python's random state: a draw seeded in
    # an earlier cell changes, one seeded in its own cell does not.
    "seeds_for_the_next_cell": ("import random\nrandom.seed(0)", [], [], True),
    "draws_seeded_a_cell_before": (
        "print(round(random.random(), 3))",
        [nbformat.v4.new_output("stream", name="stdout", text="0.844\n")],
        [],
        False,
    ),
    "draws_seeded_in_its_cell": (
        "random.seed(0)\nprint(round(random.random(), 3))",
        [nbformat.v4.new_output("stream", name="stdout", text="0.844\n")],
        [],
        True,
    ),
}


def test_nbval_fails_when_an_output_changes_except_audio_bytes(tmp_path):
    """nbval passes a cell meant to fail only while it fails the same way, the sanitizer
    hides an audio player's bytes but not a printed number nor the text beside a player, and
    a random draw seeded a cell before fails (the reconnect ``conftest.py`` sends).
    nbval tests each cell on its own, so every case is one cell of one notebook: one kernel."""
    cells = [
        nbformat.v4.new_code_cell(
            source, execution_count=1, outputs=outputs, metadata={"tags": tags} if tags else {}
        )
        for source, outputs, tags, _ in CASES.values()
    ]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC})
    nbformat.write(notebook, tmp_path / "cases.ipynb")
    outcomes, stdout = cell_outcomes(tmp_path / "cases.ipynb")
    assert _audio() != _audio(0.25)  # so only the sanitizer can make audio_bytes_differ pass
    for index, (name, (*_, passes)) in enumerate(CASES.items()):
        assert index in outcomes, stdout[-2000:]
        assert outcomes[index] == passes, f"{name}: cell {index}\n{stdout[-3000:]}"
