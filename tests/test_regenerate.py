"""scripts/regenerate_outputs.py stores what the code prints and nothing that changes from run
to run: one stream output per run of prints, and widget models under ids numbered in the
order the notebook shows them, so re-running an unchanged notebook changes no byte of it."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path

import nbformat
import pytest

from scripts import regenerate_outputs as regenerate

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _lab_notebook(ids: list[str], stray: str) -> nbformat.NotebookNode:
    """A notebook showing one box (ids[0]) holding a slider (ids[1]) with a layout (ids[2])
    and an Output widget (ids[3]); ``stray``: a model no view shows."""
    box, slider, layout, output = ids
    state = {
        box: {"state": {"children": [f"IPY_MODEL_{slider}", f"IPY_MODEL_{output}"]}},
        slider: {"state": {"layout": f"IPY_MODEL_{layout}", "value": 3}},
        layout: {"state": {"width": "auto"}},
        output: {"state": {"outputs": [{"data": {"text/plain": "a table"}}]}},
        stray: {"state": {"value": "closed long ago"}},
    }
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["widgets"] = {regenerate.WIDGET_STATE: {"state": state}}
    view = {regenerate.WIDGET_VIEW: {"model_id": box}, "text/plain": "the lab's fallback"}
    cell = nbformat.v4.new_code_cell("lab", id="lab")
    cell.outputs = [nbformat.v4.new_output("display_data", data=view)]
    notebook.cells = [cell]
    return nbformat.from_dict(notebook)


def _stored(notebook) -> str:
    return nbformat.writes(notebook)


def test_two_runs_of_one_lab_store_the_same_bytes():
    runs = []
    for _ in range(2):
        notebook = _lab_notebook([uuid.uuid4().hex for _ in range(4)], uuid.uuid4().hex)
        regenerate.stable_widget_ids(notebook, "06_capstone")
        runs.append(_stored(notebook))
    assert runs[0] == runs[1]


def test_ids_are_renamed_everywhere_and_only_shown_models_are_kept():
    notebook = _lab_notebook(["b0x", "s1ider", "l4yout", "0utput"], "str4y")
    regenerate.stable_widget_ids(notebook, "nb")
    state = notebook.metadata.widgets[regenerate.WIDGET_STATE]["state"]
    box = notebook.cells[0].outputs[0].data[regenerate.WIDGET_VIEW]["model_id"]
    assert len(state) == 4 and box in state
    slider, output = (ref.removeprefix("IPY_MODEL_") for ref in state[box]["state"]["children"])
    assert state[slider]["state"]["value"] == 3
    assert state[state[slider]["state"]["layout"].removeprefix("IPY_MODEL_")]["state"] == {
        "width": "auto"
    }
    assert state[output]["state"]["outputs"][0]["data"]["text/plain"] == "a table"
    assert not any(old in _stored(notebook) for old in ("b0x", "s1ider", "l4yout", "0utput"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_stored_notebooks_are_stored_as_the_regeneration_stores_them(path):
    """Renumbering a stored notebook changes nothing (a lab saved from JupyterLab would)."""
    notebook = nbformat.read(path, as_version=4)
    again = copy.deepcopy(notebook)
    regenerate.stable_widget_ids(again, path.stem)
    assert json.dumps(again, sort_keys=True) == json.dumps(notebook, sort_keys=True)
    assert not regenerate.AUDIO_BYTES.search(path.read_text()), "audio bytes are stored"


def test_lighten_drops_audio_bytes_figures_colours_and_unset_layout_keys():
    import base64
    import io

    import matplotlib
    from IPython.display import Audio
    from PIL import Image

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(4, 3))
    axes.imshow([[i * j for i in range(50)] for j in range(40)])  # many colours
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    player = Audio([0.0, 0.5, -0.5, 0.25], rate=8000)._repr_html_()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            outputs=[
                nbformat.v4.new_output("display_data", {"image/png": png}),
                nbformat.v4.new_output("display_data", {"text/html": f"<p>5.0 dB</p>{player}"}),
            ]
        )
    ]
    layout = {"model_name": "LayoutModel", "state": {"width": "auto", "height": None}}
    output = {"model_name": "OutputModel", "state": {"outputs": [{"data": {"image/png": png}}]}}
    notebook.metadata["widgets"] = {regenerate.WIDGET_STATE: {"state": {"l": layout, "o": output}}}
    regenerate.lighten(notebook)
    state = notebook.metadata["widgets"][regenerate.WIDGET_STATE]["state"]
    layout, output = state["l"], state["o"]
    shown, played = (o["data"] for o in notebook.cells[0].outputs)
    assert played["text/html"].startswith("<p>5.0 dB</p>")  # what nbval compares stays
    assert "<audio" in played["text/html"] and not regenerate.AUDIO_BYTES.search(
        played["text/html"]
    )
    small = base64.b64decode(shown["image/png"])
    assert len(small) < len(buffer.getvalue()) / 2
    image = Image.open(io.BytesIO(small))
    assert image.mode == "P" and image.size == Image.open(buffer).size
    assert len(image.getcolors()) <= regenerate.PNG_COLOURS
    assert output["state"]["outputs"][0]["data"]["image/png"] == shown["image/png"]
    assert layout["state"] == {"width": "auto"}
    again = copy.deepcopy(notebook)
    regenerate.lighten(again)  # the same bytes from the same figure
    assert again.cells[0].outputs[1] == notebook.cells[0].outputs[1]


def test_the_sanitizer_hides_the_audio_bytes_the_regeneration_leaves_out():
    """Stored (no bytes) and a fresh run (bytes, sanitized) compare equal under nbval."""
    lines = (ROOT / "tests" / "nbval_sanitize.cfg").read_text().splitlines()
    pairs = [
        (line.removeprefix("regex: "), lines[i + 1].removeprefix("replace: "))
        for i, line in enumerate(lines)
        if line.startswith("regex: ")
    ]
    assert pairs == [(regenerate.AUDIO_BYTES.pattern, regenerate.AUDIO_TOKEN)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_consecutive_prints_are_stored_as_one_output(path):
    """How the kernel flushed a cell's prints is not stored (nbval compares them joined)."""
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        outputs = cell.get("outputs", [])
        for first, second in zip(outputs, outputs[1:]):
            split = first.output_type == second.output_type == "stream"
            assert not (split and first.name == second.name), (
                f"cell {index} stores one stream in two outputs: run scripts/regenerate_outputs.py"
            )


def _timing(source: str, text: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, id="t", metadata={"tags": [regenerate.TIMING_TAG]})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return cell


def test_a_timing_keeps_its_stored_output_until_its_code_changes():
    before = nbformat.v4.new_notebook(cells=[_timing("%timeit f()", "219 ms per loop\n")])
    stored = regenerate.stored_timings(before)
    again = nbformat.v4.new_notebook(cells=[_timing("%timeit f()", "649 ms per loop\n")])
    regenerate.keep_timings(again, stored)
    assert again.cells[0].outputs[0].text == "219 ms per loop\n"
    changed = nbformat.v4.new_notebook(cells=[_timing("%timeit g()", "12 ms per loop\n")])
    regenerate.keep_timings(changed, stored)
    assert changed.cells[0].outputs[0].text == "12 ms per loop\n"
