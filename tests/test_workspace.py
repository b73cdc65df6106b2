"""The learner's workspace (``scripts/workspace.py``, ``./course.sh lab``): copies of the
notebooks with no outputs, in a folder git ignores; a copy the learner changed survives a
second ``lab`` and a course update (which arrives beside it, with a message); ``reset`` asks
before it replaces one; running the copies leaves ``git status`` clean.

Most tests use a small course made here (two notebooks in ``tmp_path``), so they can change
the course as an update would."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from scripts import course, workspace
from scripts import make_student_edition as edition

ROOT = Path(__file__).resolve().parents[1]


SOLUTION = (
    "<details>\n<summary>Show a solution</summary>\n\n```python\nanswer = 42\n```\n\n</details>"
)
HINT = "<details>\n<summary>Hint</summary>\n\nThink about it.\n\n</details>"


def _notebook(printed: str) -> nbformat.NotebookNode:
    """A course notebook with stored outputs, a prompt, a hint and a solution."""
    code = nbformat.v4.new_code_cell(f"print({printed!r})", execution_count=1)
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{printed}\n")]
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "# A notebook\n\nTerms: [the glossary](../GLOSSARY.md).\n\n"
                "**Predict:** what does it print?"
            ),
            code,
            nbformat.v4.new_markdown_cell(HINT),
            nbformat.v4.new_markdown_cell(SOLUTION),
        ]
    )
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return notebook


def _publish(root: Path, name: str, printed: str) -> None:
    """Write (or update) the course notebook ``name`` as a course release would."""
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    nbformat.write(_notebook(printed), root / "notebooks" / f"{name}.ipynb")


@pytest.fixture
def root(tmp_path):
    """A course of two notebooks, a git repository with the course's .gitignore, committed."""
    root = tmp_path / "course"
    _publish(root, "00_first", "one")
    _publish(root, "01_second", "two")
    (root / "GLOSSARY.md").write_text("# Glossary\n\n### gradient\n", encoding="utf-8")
    shutil.copy(ROOT / ".gitignore", root / ".gitignore")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "."], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-q", "-m", "course"], check=True)
    return root


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


GLOSSARY_LINK = re.compile(r"\]\(([^)#\s]*GLOSSARY\.md)[#)]")


def glossary_targets(notebook: nbformat.NotebookNode, folder: Path, served: Path) -> set[Path]:
    """Where the glossary links of ``notebook``, opened from ``folder`` by a server whose root
    is ``served``, lead: a file outside ``served`` (JupyterLab's 404) fails here."""
    targets = set()
    for cell in notebook.cells:
        for link in GLOSSARY_LINK.findall(cell.source) if cell.cell_type == "markdown" else []:
            target = (folder / link).resolve()
            assert target.is_relative_to(served.resolve()), f"{link} leaves {served}"
            targets.add(target)
    return targets


def _edit(path: Path, text: str = "my own note") -> None:
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell(text))
    nbformat.write(notebook, path)


def test_first_use_makes_copies_with_no_outputs_and_the_hints_and_solutions_kept(root):
    lines = workspace.Workspace(root).sync()
    folder = root / "workspace"
    assert lines == ["new: workspace/00_first.ipynb", "new: workspace/01_second.ipynb"]
    assert sorted(p.name for p in folder.glob("*.ipynb")) == ["00_first.ipynb", "01_second.ipynb"]
    for name in ("00_first", "01_second"):
        mine = nbformat.read(folder / f"{name}.ipynb", as_version=4)
        course_nb = nbformat.read(root / "notebooks" / f"{name}.ipynb", as_version=4)
        glossary_beside = [c.source.replace("](../", "](") for c in course_nb.cells]
        assert [c.source for c in mine.cells] == glossary_beside
        assert all(c.outputs == [] and c.execution_count is None for c in mine.cells[1:2])
        assert course_nb.cells[1].outputs, "the course's own notebook keeps its outputs"
        assert SOLUTION in [c.source for c in mine.cells] and HINT in [c.source for c in mine.cells]


def test_a_second_lab_changes_nothing_and_keeps_a_changed_copy(root):
    space = workspace.Workspace(root)
    space.sync()
    _edit(root / "workspace" / "00_first.ipynb")
    before = _files(root / "workspace")
    assert space.sync() == []
    assert _files(root / "workspace") == before
    assert space.changed("00_first") and not space.changed("01_second")


def test_a_course_update_keeps_a_changed_copy_and_offers_the_new_version_beside_it(root):
    space = workspace.Workspace(root)
    space.sync()
    mine = root / "workspace" / "00_first.ipynb"
    _edit(mine)
    changed = mine.read_bytes()
    _publish(root, "00_first", "one, updated")
    _publish(root, "01_second", "two, updated")
    lines = space.sync()
    assert mine.read_bytes() == changed, "the learner's changed copy was written to"
    offered = root / "workspace" / "00_first.updated.ipynb"
    assert lines == [
        "course update: workspace/00_first.updated.ipynb is the new 00_first.ipynb; yours is "
        "kept as it is (./course.sh reset 00_first replaces it)",
        "updated: workspace/01_second.ipynb (the course changed; you had not)",
    ]
    assert "one, updated" in offered.read_text() and "one, updated" not in mine.read_text()
    unchanged = nbformat.read(root / "workspace" / "01_second.ipynb", as_version=4)
    assert "two, updated" in unchanged.cells[1].source and unchanged.cells[1].outputs == []
    assert space.sync() == [], "an update is announced once"
    _publish(root, "00_first", "one, updated twice")  # a second update refreshes the offer
    assert len(space.sync()) == 1 and "updated twice" in offered.read_text()
    assert mine.read_bytes() == changed


def test_an_offered_version_the_learner_changed_is_not_overwritten_either(root):
    space = workspace.Workspace(root)
    space.sync()
    _edit(root / "workspace" / "00_first.ipynb")
    _publish(root, "00_first", "v2")
    space.sync()
    offered = root / "workspace" / "00_first.updated.ipynb"
    _edit(offered, "working in the new version")
    kept = offered.read_bytes()
    _publish(root, "00_first", "v3")
    (line,) = space.sync()
    assert line.startswith("kept: ") and "rename 00_first.updated.ipynb" in line
    assert offered.read_bytes() == kept


def test_reset_asks_before_it_replaces_a_changed_copy(root):
    space = workspace.Workspace(root)
    space.sync()
    mine = root / "workspace" / "01_second.ipynb"
    _edit(mine)
    _publish(root, "01_second", "two, v2")
    space.sync()
    changed, questions = mine.read_bytes(), []
    answer = space.reset("01", lambda q: questions.append(q) or False)
    assert answer == "kept: workspace/01_second.ipynb (nothing changed)"
    assert mine.read_bytes() == changed and "every change you made" in questions[0]
    assert space.reset("workspace/01_second.ipynb", lambda q: True).startswith("reset: ")
    assert "two, v2" in mine.read_text() and not space.changed("01_second")
    assert not (root / "workspace" / "01_second.updated.ipynb").exists()
    asked = []
    space.reset("01_second", lambda q: asked.append(q) or True)
    assert asked == [], "an unchanged copy is reset without a question"
    assert space.sync() == []
    with pytest.raises(ValueError, match="no course notebook '07'"):
        space.reset("07", lambda q: True)


def test_reset_from_the_command_line_keeps_the_work_without_a_yes(root, monkeypatch, capsys):
    space = workspace.Workspace(root)
    space.sync()
    mine = root / "workspace" / "00_first.ipynb"
    _edit(mine)
    changed = mine.read_bytes()
    monkeypatch.setattr(workspace, "Workspace", lambda: space)
    monkeypatch.setattr("builtins.input", lambda prompt: "")  # Enter: the default, No
    assert workspace.main(["reset", "00_first"]) == 0
    assert mine.read_bytes() == changed
    assert workspace.main(["reset", "00_first", "--yes"]) == 0
    assert mine.read_bytes() != changed and not space.changed("00_first")
    assert workspace.main(["reset"]) == 2 and workspace.main(["reset", "00", "01"]) == 2
    assert "reset: workspace/00_first.ipynb" in capsys.readouterr().out


def test_running_the_copies_leaves_git_status_clean(root):
    """A session: make the workspace, run each copy in a kernel started there and save it;
    git sees no change, and the next lab keeps the run copies."""
    space = workspace.Workspace(root)
    space.sync()
    for path in sorted((root / "workspace").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        NotebookClient(
            notebook, timeout=60, resources={"metadata": {"path": str(path.parent)}}
        ).execute()
        assert notebook.cells[1].outputs, "the copy did not run"
        nbformat.write(notebook, path)
        (path.parent / ".ipynb_checkpoints").mkdir(exist_ok=True)  # as JupyterLab saves
        shutil.copy(path, path.parent / ".ipynb_checkpoints" / path.name)
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
    assert space.sync() == [] and space.changed("00_first") and space.changed("01_second")


def test_the_courses_gitignore_ignores_the_workspace():
    ignored = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "-q", "workspace/00_start_here.ipynb"]
    )
    assert ignored.returncode == 0


def test_every_course_notebook_arrives_without_outputs_and_with_its_solutions():
    """The workspace's version of each real notebook: the course's cells, outputs cleared
    by the student edition's one implementation, solutions kept."""
    notebooks = edition.course_notebooks(ROOT)
    assert len(notebooks) == 8
    for path in notebooks:
        copy = nbformat.reads(workspace.course_version(path), as_version=4)
        course_nb = nbformat.read(path, as_version=4)
        glossary_beside = [
            c.source.replace("](../GLOSSARY.md", "](GLOSSARY.md") for c in course_nb.cells
        ]
        assert [c.source for c in copy.cells] == glossary_beside
        code = [c for c in copy.cells if c.cell_type == "code"]
        assert all(c.outputs == [] and c.execution_count is None for c in code), path.name
        assert "widgets" not in copy.metadata
        assert any("Show a solution" in c.source for c in copy.cells), path.name


def test_the_glossary_opens_from_every_copy_and_follows_the_course(root):
    """JupyterLab serves ``workspace/``: a copy's link to ``../GLOSSARY.md`` would leave it (a
    404), so the link points at the glossary copied beside the notebooks, kept up to date."""
    space = workspace.Workspace(root)
    space.sync()
    for name in ("00_first", "01_second"):
        copy = nbformat.read(space.folder / f"{name}.ipynb", as_version=4)
        targets = glossary_targets(copy, space.folder, served=space.folder)
        assert targets == {(space.folder / "GLOSSARY.md").resolve()}
    assert (space.folder / "GLOSSARY.md").read_text() == (root / "GLOSSARY.md").read_text()
    (root / "GLOSSARY.md").write_text("# Glossary\n\n### gradient\n\n### tape\n")
    assert space.sync() == []  # the glossary is the course's: updated without a word
    assert "### tape" in (space.folder / "GLOSSARY.md").read_text()


def test_the_courses_glossary_link_opens_from_the_workspace_and_from_lab_stored():
    """The real notebooks: from a workspace copy (server root ``workspace/``) and from
    ``notebooks/`` as ``lab --stored`` serves it (server root: the course's folder)."""
    first = edition.course_notebooks(ROOT)[0]
    stored = glossary_targets(nbformat.read(first, as_version=4), first.parent, served=ROOT)
    assert stored == {(ROOT / "GLOSSARY.md").resolve()}
    folder = ROOT / "workspace"
    copy = nbformat.reads(workspace.course_version(first), as_version=4)
    assert glossary_targets(copy, folder, served=folder) == {(folder / "GLOSSARY.md").resolve()}


def test_doctor_says_where_the_work_lives(root):
    assert course.check_workspace(root).state == "--"
    assert "./course.sh lab makes" in course.check_workspace(root).text
    workspace.Workspace(root).sync()
    check = course.check_workspace(root)
    assert check.state == "ok" and f"{root / 'workspace'}: 2 notebooks" in check.text


def test_lab_opens_the_workspace_and_lab_stored_the_courses_notebooks(monkeypatch):
    ran = []
    monkeypatch.setattr(course.os, "geteuid", lambda: 1000)  # not root: no --allow-root
    monkeypatch.setattr(course, "setup", lambda lock: None)
    monkeypatch.setattr(course, "run", lambda *command, **kw: ran.append(command) or 0)
    assert course.main(["lab"]) == 0
    sync, lab = ran
    assert sync[1:] == ("-m", "scripts.workspace", "sync")
    assert f"--ServerApp.root_dir={course.ROOT / 'workspace'}" in lab
    assert course.ROOT / "workspace" / "00_start_here.ipynb" in lab
    ran.clear()
    assert course.main(["lab", "--stored", "--no-browser"]) == 0
    (lab,) = ran
    assert f"--ServerApp.root_dir={course.ROOT}" in lab and "--stored" not in lab
    assert lab[-2:] == ("notebooks/00_start_here.ipynb", "--no-browser")
    ran.clear()
    assert course.main(["reset", "01", "--yes"]) == 0
    assert ran == [(sys.executable, "-m", "scripts.workspace", "reset", "01", "--yes")]


def test_a_learner_who_takes_the_offered_version_in_is_not_offered_it_again(root):
    space = workspace.Workspace(root)
    space.sync()
    mine = root / "workspace" / "00_first.ipynb"
    _edit(mine)
    _publish(root, "00_first", "v2")
    space.sync()
    (root / "workspace" / "00_first.updated.ipynb").replace(mine)  # they rename it over theirs
    assert space.sync() == [] and not space.changed("00_first")
    assert not (root / "workspace" / "00_first.updated.ipynb").exists()
