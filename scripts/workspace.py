"""The learner's workspace: their own copies of the notebooks, outputs cleared, in a folder git
ignores, so the answer to a Predict prompt is not on the page before they run it, and so
running and saving a notebook changes no file of the course:

    python -m scripts.workspace sync           # what ./course.sh lab does before it opens it
    python -m scripts.workspace reset NN_name  # back to the course's version (asks; --yes)
    ./course.sh lab | ./course.sh reset NN_name [--yes]

Each copy is the course notebook as ``make_student_edition.without_outputs`` clears it:
code, hints and solutions (collapsed) as in the course, no stored output at all (not even a
``keep-output`` cell's: the learner's run makes every output), its glossary links pointing
at the copy of ``GLOSSARY.md`` that every ``sync`` keeps beside it (JupyterLab serves
``workspace/``, not the folder above). ``workspace/`` also holds ``.course.json``: per
notebook, the SHA-256 of the course version the copy was made from and of the copy as
written. On every ``sync``:

* a notebook with no copy gets one (on first use, all eight);
* a copy the learner has not changed (its bytes are as written) follows the course: when the
  course's version changed, it is replaced, with a one-line message;
* a copy the learner has changed (edited, run or saved) is never written to. When the course's
  version changed, the new one arrives beside it as ``NN_name.updated.ipynb``, with a
  one-line message; that file is refreshed by later updates unless the learner changes it too.

``reset`` is the only command that replaces a changed copy, and only after a y/N question or
``--yes``. The notebooks import ``helpers`` from the course environment and find ``data/``
next to the package, so they run from ``workspace/`` exactly as from ``notebooks/``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from scripts import make_student_edition as edition

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "workspace"  # under the course's root; /workspace/ is in .gitignore
RECORD = ".course.json"
UPDATED = ".updated.ipynb"  # NN_name.updated.ipynb: the course's newer version of a changed copy


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def course_version(path: Path) -> str:
    """The text a learner's copy of the course notebook ``path`` starts from."""
    notebook = nbformat.read(path, as_version=4)
    cleared = edition.without_outputs(notebook, keep=None)
    return edition.notebook_text(edition.with_glossary_beside(cleared))


@dataclass
class Workspace:
    """The workspace of the course at ``root`` (``root/workspace``)."""

    root: Path = ROOT

    @property
    def folder(self) -> Path:
        return Path(self.root) / FOLDER

    def _record(self) -> dict[str, dict[str, str]]:
        path = self.folder / RECORD
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def _save(self, record: dict[str, dict[str, str]]) -> None:
        text = json.dumps(record, indent=1, sort_keys=True) + "\n"
        (self.folder / RECORD).write_text(text, encoding="utf-8")

    def _write(self, path: Path, text: str) -> str:
        data = text.encode("utf-8")
        path.write_bytes(data)
        return _sha(data)

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)

    def changed(self, name: str, entry: dict[str, str] | None = None) -> bool:
        """Whether the learner changed their copy of ``name`` (an NN_name stem) since it was
        written (a missing copy is not changed: there is nothing of theirs in it)."""
        copy = self.folder / f"{name}.ipynb"
        entry = self._record().get(name) if entry is None else entry
        return copy.is_file() and (not entry or _sha(copy.read_bytes()) != entry["copy"])

    def sync(self) -> list[str]:
        """Bring the workspace up to the course, keeping every change of the learner's; one
        line per thing that happened."""
        self.folder.mkdir(parents=True, exist_ok=True)
        edition.copy_glossary(self.folder, self.root)  # the course's, not the learner's
        record, lines = self._record(), []
        for path in edition.course_notebooks(self.root):
            name, text = path.stem, course_version(path)
            version, entry = _sha(text.encode("utf-8")), record.get(path.stem)
            copy, updated = self.folder / path.name, self.folder / f"{name}{UPDATED}"
            if not copy.is_file():
                entry = record[name] = {"course": version, "copy": self._write(copy, text)}
                lines.append(f"new: {self._shown(copy)}")
            elif entry is None:  # a file of the learner's, never recorded: not ours to touch
                record[name] = {"course": "", "copy": ""}
                entry = record[name]
            if entry["course"] == version:
                continue
            if _sha(copy.read_bytes()) == version:  # the learner took the new version in
                entry.update(course=version, copy=version)
                continue
            if not self.changed(name, entry):
                entry.update(course=version, copy=self._write(copy, text))
                if updated.is_file() and _sha(updated.read_bytes()) == entry.get("offered"):
                    updated.unlink()
                    entry.pop("offered")
                lines.append(f"updated: {self._shown(copy)} (the course changed; you had not)")
            elif entry.get("offered") == version and updated.is_file():
                continue  # already offered
            elif updated.is_file() and _sha(updated.read_bytes()) != entry.get("offered"):
                lines.append(
                    f"kept: {self._shown(copy)} and {self._shown(updated)} are both yours; "
                    f"the course changed {path.name} again: rename {updated.name} to receive it"
                )
            else:
                entry["offered"] = self._write(updated, text)
                lines.append(
                    f"course update: {self._shown(updated)} is the new {path.name}; yours is "
                    f"kept as it is (./course.sh reset {name} replaces it)"
                )
        self._save(record)
        return lines

    def notebook(self, name: str) -> str:
        """The NN_name stem of the course notebook ``name`` names: ``01``, ``01_gru...``,
        ``workspace/01_gru....ipynb`` or ``notebooks/01_gru....ipynb``."""
        stem = Path(name).name.removesuffix(".ipynb").removesuffix(".updated")
        stems = [p.stem for p in edition.course_notebooks(self.root)]
        found = [s for s in stems if s == stem or s[:2] == stem]
        if len(found) != 1:
            raise ValueError(f"no course notebook {name!r}; expected one of {', '.join(stems)}")
        return found[0]

    def reset(self, name: str, confirm: Callable[[str], bool]) -> str:
        """Replace the learner's copy of ``name`` by the course's version, when it is changed
        only if ``confirm(question)`` says yes; a line saying what happened."""
        stem = self.notebook(name)
        copy = self.folder / f"{stem}.ipynb"
        if self.changed(stem):
            question = (
                f"Replace {self._shown(copy)}, and every change you made to it, by the "
                "course's version?"
            )
            if not confirm(question):
                return f"kept: {self._shown(copy)} (nothing changed)"
        self.folder.mkdir(parents=True, exist_ok=True)
        text = course_version(self.root / "notebooks" / f"{stem}.ipynb")
        record = self._record()
        entry = record.get(stem, {})
        updated = self.folder / f"{stem}{UPDATED}"
        if updated.is_file() and _sha(updated.read_bytes()) == entry.get("offered"):
            updated.unlink()
        record[stem] = {"course": _sha(text.encode("utf-8")), "copy": self._write(copy, text)}
        self._save(record)
        return f"reset: {self._shown(copy)} is the course's version, no outputs"


def ask(question: str) -> bool:
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:  # no terminal to answer: keep the learner's work
        return False


def main(argv: list[str]) -> int:
    usage = __doc__.split("\n\n")[1]
    workspace = Workspace()
    if argv == ["sync"]:
        for line in workspace.sync():
            print(line)
        print(f"Your work lives in {workspace.folder} (git ignores it).")
        return 0
    names = [a for a in argv[1:] if a != "--yes"]
    if argv[:1] == ["reset"] and len(names) == 1 and len(argv) <= 3:
        try:
            print(workspace.reset(names[0], (lambda q: True) if "--yes" in argv else ask))
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        return 0
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
