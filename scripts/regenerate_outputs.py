"""Re-execute notebooks in place so their stored outputs are what the code prints today.

    python -m scripts.regenerate_outputs                    # every notebook, in order
    python -m scripts.regenerate_outputs notebooks/02_*.ipynb # just these
    python -m scripts.regenerate_outputs --retime ...       # and store new timings

Run it in the course environment after any change to helpers/ or a notebook, then run the
test command: nbval compares the fresh run against what this stored. It then writes each
notebook's measured minutes into its Time line and the README (``notebook_minutes --write``),
and the course's figures by name into notebooks/figures.json (``scripts/figures.py``).
Cells tagged ``raises-exception`` are expected to fail; any other error stops the script.

What it stores is a function of the code alone, so re-running an unchanged notebook changes
no byte of it: consecutive prints are one stream output (however the kernel flushed them),
the widget state keeps only the models a stored view shows, and their ids are numbered in
the order the notebook shows them (``stable_widget_ids``), not the kernel's random ones. A
timing (a cell tagged ``nbval-ignore-output``, which nbval does not compare) keeps its stored
output while its code is unchanged; ``--retime`` stores the new measurement.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import re
import sys
import sysconfig
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from scripts import figures, notebook_minutes

ROOT = Path(__file__).resolve().parents[1]

TIMING_TAG = "nbval-ignore-output"


def regenerate(path: Path, retime: bool = False) -> float:
    notebook = nbformat.read(path, as_version=4)
    timings = {} if retime else stored_timings(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.metadata.get("source_of"):
            cell.source = shown_source(cell.metadata["source_of"])
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    env_backend = os.environ.pop("MPLBACKEND", None)  # Agg in a kernel stores no figures
    started = time.perf_counter()
    try:
        NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    finally:
        if env_backend is not None:
            os.environ["MPLBACKEND"] = env_backend
    elapsed = time.perf_counter() - started
    _drop_machine_paths(notebook)
    notebook, _ = CoalesceStreamsPreprocessor().preprocess(notebook, {})
    keep_timings(notebook, timings)
    stable_widget_ids(notebook, path.stem)
    lighten(notebook)
    nbformat.write(notebook, path)
    return elapsed


def shown_source(target: str) -> str:
    """A helper's code as a Markdown cell shows it (metadata ``source_of``:
    ``"module:function"``): a fenced block, so editing the helper never changes an output."""
    module, _, name = target.partition(":")
    code = inspect.getsource(getattr(importlib.import_module(module), name)).rstrip("\n")
    return f"```python\n{code}\n```"


def _drop_machine_paths(notebook) -> None:
    """Tracebacks name files by absolute path: the environment's site-packages and this
    checkout. Store them as ``site-packages/...`` and ``helpers/...``, the same on any machine
    (nbval does not compare tracebacks; this is for the reader, and keeps diffs quiet)."""
    prefixes = [
        (sysconfig.get_paths()["purelib"] + os.sep, "site-packages" + os.sep),
        (str(ROOT) + os.sep, ""),
    ]
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                lines = output["traceback"]
                for old, new in prefixes:
                    lines = [line.replace(old, new) for line in lines]
                output["traceback"] = lines


def stored_timings(notebook) -> dict[tuple[str, str], list]:
    """The stored outputs of the timing cells, by (cell id, source)."""
    return {
        (cell.get("id", ""), cell.source): cell.outputs
        for cell in notebook.cells
        if cell.cell_type == "code" and TIMING_TAG in cell.metadata.get("tags", []) and cell.outputs
    }


def keep_timings(notebook, timings: dict[tuple[str, str], list]) -> None:
    """Put back a timing cell's stored outputs where its code did not change: a timing
    differs on every run, and nbval does not compare it."""
    for cell in notebook.cells:
        kept = timings.get((cell.get("id", ""), cell.source))
        if kept is not None and not any(o.output_type == "error" for o in cell.outputs):
            cell.outputs = kept


# An audio player's bytes are not stored: nbval does not compare them (tests/nbval_sanitize.cfg
# replaces them by this same token in the run it compares), a notebook prints and asserts what
# it claims about the sound (the SNR beside a player), and a learner's own run plays it.
AUDIO_BYTES = re.compile(r"(data:audio/[-+.\w]+;base64,)[A-Za-z0-9+/=\n]+")
AUDIO_TOKEN = r"\1<audio bytes, not compared>"
# A figure is stored with at most this many colours: a plot reads the same, at a third of the
# bytes of matplotlib's full-colour PNG.
PNG_COLOURS = 128


def lighten(notebook) -> None:
    """Store less of what nbval does not compare: no audio bytes, figures in a palette of
    ``PNG_COLOURS`` colours, and widget models without the keys a view takes as unset."""
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    outputs += [o for model in state.values() for o in model["state"].get("outputs", [])]
    for output in outputs:
        data = output.get("data", {})
        if "image/png" in data:
            data["image/png"] = small_png(data["image/png"])
        if "text/html" in data:
            html = data["text/html"]
            html = "".join(html) if isinstance(html, list) else html
            data["text/html"] = AUDIO_BYTES.sub(AUDIO_TOKEN, html)
    for model in state.values():
        if model.get("model_name") == "LayoutModel":
            model["state"] = {k: v for k, v in model["state"].items() if v is not None}


def small_png(encoded: str) -> str:
    """A base64 PNG again, in a palette of ``PNG_COLOURS`` colours (no dithering: the same
    bytes from the same image)."""
    import base64
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(encoded))).convert("RGB")
    palette = image.quantize(PNG_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, format="png", optimize=True)
    return base64.b64encode(buffer.getvalue()).decode("ascii") + "\n"


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MODEL_REF = "IPY_MODEL_"


def stable_widget_ids(notebook, name: str) -> None:
    """Keep only the widget models a stored view shows (and the models they refer to), and
    rename them ``sha256(name:n)`` in the order the notebook shows them: the kernel's ids are
    random, so an unchanged lab would otherwise store a new file on every run."""
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state")
    if state is None:
        return
    renamed: dict[str, str] = {}

    def visit(model_id: str) -> None:
        if model_id in renamed or model_id not in state:
            return
        digest = hashlib.sha256(f"{name}:{len(renamed)}".encode()).hexdigest()
        renamed[model_id] = digest[:32]
        for ref in _references(state[model_id]):
            visit(ref)

    views = [o["data"][WIDGET_VIEW] for c in notebook.cells for o in _widget_outputs(c)]
    for view in views:
        visit(view["model_id"])
    for view in views:
        view["model_id"] = renamed.get(view["model_id"], view["model_id"])
    notebook.metadata.widgets[WIDGET_STATE]["state"] = {
        renamed[old]: _renamed(model, renamed) for old, model in state.items() if old in renamed
    }


def _widget_outputs(cell) -> list:
    return [o for o in cell.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]


def _references(value) -> list[str]:
    """The model ids ``value`` refers to (``IPY_MODEL_<id>``, or a view's ``model_id``), in
    the order of its sorted keys, as they are stored."""
    if isinstance(value, str):
        return [value.removeprefix(MODEL_REF)] if value.startswith(MODEL_REF) else []
    if isinstance(value, dict):
        found = [value["model_id"]] if isinstance(value.get("model_id"), str) else []
        return found + [ref for key in sorted(value) for ref in _references(value[key])]
    if isinstance(value, list):
        return [ref for item in value for ref in _references(item)]
    return []


def _renamed(value, renamed: dict[str, str]):
    if isinstance(value, str):
        old = value.removeprefix(MODEL_REF)
        return MODEL_REF + renamed[old] if value.startswith(MODEL_REF) and old in renamed else value
    if isinstance(value, dict):
        copy = {key: _renamed(item, renamed) for key, item in value.items()}
        if isinstance(copy.get("model_id"), str):
            copy["model_id"] = renamed.get(copy["model_id"], copy["model_id"])
        return type(value)(copy)
    if isinstance(value, list):
        return [_renamed(item, renamed) for item in value]
    return value


def main(argv: list[str]) -> int:
    retime = "--retime" in argv
    argv = [a for a in argv if a != "--retime"]
    paths = [Path(p) for p in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        seconds = regenerate(path.resolve(), retime)
        print(f"{path.name}: {seconds:.0f} s")
    for change in notebook_minutes.write(ROOT):  # the Time lines and the README's minutes
        print(f"updated {change}")
    if figures.write(ROOT):  # the course's figures by name, which the docs quote
        print(f"updated {figures.FIGURES_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
