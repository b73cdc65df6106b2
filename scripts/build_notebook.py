"""Authoring aid: turn a percent-format script into a notebook without outputs.

    python scripts/build_notebook.py draft.py notebooks/07_new.ipynb
    python scripts/regenerate_outputs.py notebooks/07_new.ipynb

Cells start with ``# %%`` (code) or ``# %% [markdown]`` (Markdown; each line starts with
``# ``). Cell metadata follows the marker as ``key=<json>`` pairs, e.g.
``# %% tags=["raises-exception"]`` or
``# %% exercise={"checker": "helpers.exercises.gru_state:check_x", "function": "x"}``.
The committed ``.ipynb`` is the source of truth afterwards; edit it in JupyterLab.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat

MARKER = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?P<meta>.*)$")
META = re.compile(r"(\w+)=(\[.*?\]|\{.*?\})(?=\s+\w+=|\s*$)")


def parse(text: str) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata.update({
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"},
    })
    current: dict | None = None
    for line in text.splitlines():
        match = MARKER.match(line)
        if match:
            if current:
                notebook.cells.append(_cell(current))
            meta = {key: json.loads(value) for key, value in META.findall(match["meta"])}
            current = {"markdown": bool(match["markdown"]), "meta": meta, "lines": []}
        elif current is not None:
            current["lines"].append(line)
    if current:
        notebook.cells.append(_cell(current))
    return notebook


def _cell(spec: dict) -> nbformat.NotebookNode:
    lines = spec["lines"]
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if spec["markdown"]:
        text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines)
        cell = nbformat.v4.new_markdown_cell(text)
    else:
        cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata.update(spec["meta"])
    cell.pop("id", None)
    return cell


def main(source: str, target: str) -> int:
    notebook = parse(Path(source).read_text())
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"c{index:03d}"  # stable ids keep diffs small
    nbformat.validate(notebook)
    nbformat.write(notebook, target)
    print(f"{target}: {len(notebook.cells)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
