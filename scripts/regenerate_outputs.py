"""Re-execute notebooks in place so their stored outputs are what the code prints today.

    python scripts/regenerate_outputs.py                      # every notebook, in order
    python scripts/regenerate_outputs.py notebooks/02_*.ipynb # just these

Run it in the course environment after any change to helpers/ or a notebook, then run the
test command: nbval compares the fresh run against what this stored. Cells tagged
``raises-exception`` are expected to fail; any other error stops the script.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import sysconfig
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def regenerate(path: Path) -> float:
    notebook = nbformat.read(path, as_version=4)
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


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        seconds = regenerate(path.resolve())
        print(f"{path.name}: {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
