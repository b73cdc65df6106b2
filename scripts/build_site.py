"""Build the course as a static website from the notebooks' stored outputs (nothing runs):

    python -m scripts.build_site         # into site/_build/html
    python -m http.server -d site/_build/html 8000   # then open http://localhost:8000

Sphinx with MyST-NB and the book theme (``site/conf.py``), offline. The pages are staged in
``site/_build/src``: a landing page made from the README's opening, course map and two
commands, the glossary (``GLOSSARY.md``), and a copy of every notebook whose proof cells get
MyST-NB's ``hide-input`` tag, so they stay collapsed behind a toggle as in JupyterLab, and
whose Predict prompts' runs get ``hide-output``: a reader decides before a "show output" toggle
reveals the result, as a learner in the workspace decides before running the cell. The
notebooks themselves are not changed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from scripts import lint_course  # what a prompt's run is: one definition, the lint's
from scripts.make_student_edition import GLOSSARY, GLOSSARY_LINK  # the notebooks' link

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
STAGE = SITE / "_build" / "src"
HTML = SITE / "_build" / "html"
NOTEBOOK_LINK = re.compile(r"\]\(notebooks/(\d\d_\w+)\.ipynb\)")
ANCHOR = re.compile(r'^<a id="([\w-]+)"></a>$', re.M)
OTHER_LINK = re.compile(r"\[([^\]]+)\]\((?!https?://|#|\d\d_\w+\.ipynb)[^)]*\)")


def landing_page(readme: str, chapters: list[str]) -> str:
    """The README's opening, course map and two commands, linking the chapters; a link to a
    file that is not on the site keeps its text."""
    opening = readme.split("\n## When something goes wrong", 1)[0]
    text = OTHER_LINK.sub(r"\1", NOTEBOOK_LINK.sub(r"](\1.ipynb)", opening))
    toctree = "\n".join(["", "```{toctree}", ":hidden:", ":maxdepth: 1", "", *chapters, "```", ""])
    return text.rstrip() + "\n" + toctree


# A player the regeneration stored without its bytes: the page says so instead of showing a
# player that plays nothing.
SILENT_PLAYER = re.compile(
    r"<audio\b[^>]*>\s*<source src=\"data:audio/[^\"]*<audio bytes[^>]*>.*?</audio>", re.S
)
SILENT_NOTE = "<p><em>A sound: run the notebook to hear it.</em></p>"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def lab_outputs(notebook: dict, model_id: str) -> list[dict]:
    """What the Output widgets inside a stored widget held (a lab's table and figure): the
    site shows them under the lab's text fallback, as the widget showed them."""
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    found, todo = [], [model_id]
    while todo:  # a widget tree: each model appears once
        model = state.get(todo.pop(0), {})
        if model.get("model_name") == "OutputModel":
            found += model.get("state", {}).get("outputs", [])
        children = model.get("state", {}).get("children", [])
        todo += [child.removeprefix("IPY_MODEL_") for child in children]
    return found


def staged_notebook(notebook: dict) -> dict:
    """The notebook with its proof cells collapsed on the page (tag ``hide-input``), the
    outputs of each Predict prompt's run folded (tag ``hide-output``), its
    HTML anchors (``<a id="x"></a>``) as MyST targets, so ``[...](#x)`` links resolve, each
    lab's stored table and figure under its text fallback, and a note for each audio player
    stored without its bytes."""
    runs = {j for _, run, _ in lint_course.prompt_runs(notebook["cells"]) for j in run}
    for index, cell in enumerate(notebook["cells"]):
        if index in runs and cell["cell_type"] == "code":
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "hide-output" not in tags:
                tags.append("hide-output")
        for output in list(cell.get("outputs", [])):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view:
                cell["outputs"] += lab_outputs(notebook, view["model_id"])
            html = output.get("data", {}).get("text/html")
            if html:
                html = "".join(html) if isinstance(html, list) else html
                output["data"]["text/html"] = SILENT_PLAYER.sub(SILENT_NOTE, html)
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            source = source.replace(GLOSSARY_LINK, "](glossary.md")  # a page of the site
            cell["source"] = ANCHOR.sub(r"(\1)=", source)
        tags = cell.get("metadata", {}).get("tags", [])
        if "proof" in tags and "hide-input" not in tags:
            cell["metadata"]["tags"] = [*tags, "hide-input"]
    return notebook


def stage(where: Path = STAGE) -> list[str]:
    """Write the site's sources into ``where``; the chapters' names, in order."""
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    shutil.copy(SITE / "conf.py", where / "conf.py")
    shutil.copytree(SITE / "static", where / "static")
    chapters = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        notebook = staged_notebook(json.loads(path.read_text(encoding="utf-8")))
        (where / path.name).write_text(json.dumps(notebook, indent=1), encoding="utf-8")
        chapters.append(path.stem)
    shutil.copy(ROOT / GLOSSARY, where / "glossary.md")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (where / "index.md").write_text(landing_page(readme, [*chapters, "glossary"]), encoding="utf-8")
    return chapters


def build(build_dir: Path = SITE / "_build") -> Path:
    """Stage and build the site under ``build_dir``; the folder of its HTML. Sphinx's warnings
    fail the build: a broken reference is a broken page."""
    html = build_dir / "html"
    stage(build_dir / "src")
    if html.exists():
        shutil.rmtree(html)
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-q",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "-d",
        str(build_dir / "doctrees"),
        str(build_dir / "src"),
        str(html),
    ]
    subprocess.run(command, cwd=ROOT, check=True)
    return html


def main() -> int:
    try:
        html = build()
    except subprocess.CalledProcessError as error:
        return error.returncode
    shown = html.relative_to(ROOT)
    print(f"site: {shown}/index.html (serve it: python -m http.server -d {shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
