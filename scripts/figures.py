"""The course's figures by name: what the docs may quote, read from the stored outputs.

    python -m scripts.figures            # print every figure: name, text, notebook and cell
    python -m scripts.figures --write    # write them to notebooks/figures.json

A figure is named once here, by where it is printed: a notebook, the id of its code cell and a
pattern whose one group is the figure as printed (or a module-level constant of the course's
code, for a setting a doc quotes). ``./course.sh regenerate`` writes them all, with their
value, precision and source, to ``FIGURES_FILE``. A doc quotes a figure with its name beside
it, ``3.0<!-- figure: capstone.synthetic.seed0.margin -->``, and
``tests/test_quoted_figures.py`` compares the quoted text with the named one: value, sign and
precision. A figure whose pattern no longer matches stops the writing with its name.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES_FILE = ROOT / "notebooks" / "figures.json"
NUMBER = re.compile(r"[-+]?\d+(?:\.(\d+))?")


@dataclass(frozen=True)
class Printed:
    """A figure a notebook prints: the first match of ``pattern`` (its one group) in the text
    outputs of the code cell ``cell`` (its id) of ``notebook`` (its stem)."""

    notebook: str
    cell: str
    pattern: str


@dataclass(frozen=True)
class Constant:
    """A setting a doc quotes: a module-level constant ``name`` of ``module`` (a path under the
    repository), a number literal or another such constant it is set to."""

    module: str
    name: str


_ = r"\S+ \[\S+ \S+\] \S+ won\s+"  # one seed's cell of a margin table: skipped
FIGURES: dict[str, Printed | Constant] = {
    # 06: the ablation table (SI-SDR, dB): synthetic, real held back, real validation
    "capstone.ablation.synthetic.question_loss": Printed(
        "06_capstone", "c6r041", r"question's loss\s+(\S+)"
    ),
    "capstone.ablation.synthetic.no_silence_term": Printed(
        "06_capstone", "c6r041", r"masked, no silence term\s+(\S+)"
    ),
    "capstone.ablation.real.question_loss": Printed(
        "06_capstone", "c6r041", r"question's loss\s+\S+\s+\S+\s+(\S+)"
    ),
    "capstone.ablation.real.no_silence_term": Printed(
        "06_capstone", "c6r041", r"masked, no silence term\s+\S+\s+\S+\s+(\S+)"
    ),
    "capstone.ablation.real.silence_only": Printed(
        "06_capstone", "c6r041", r"\+ silence term only\s+\S+\s+\S+\s+(\S+)"
    ),
    "capstone.ablation.real.voiced_only": Printed(
        "06_capstone", "c6r041", r"\+ voiced reconstruction only\s+\S+\s+\S+\s+(\S+)"
    ),
    "capstone.ablation.real.both": Printed(
        "06_capstone", "c6r041", r"both \(masked-loss model\)\s+\S+\s+\S+\s+(\S+)"
    ),
    "capstone.ablation.validation.voiced_only": Printed(
        "06_capstone", "c6r041", r"\+ voiced reconstruction only(?:\s+\S+){4}\s+(\S+)"
    ),
    "capstone.ablation.validation.both": Printed(
        "06_capstone", "c6r041", r"both \(masked-loss model\)(?:\s+\S+){4}\s+(\S+)"
    ),
    # 06: the margins over the best baseline, per seed, with their intervals
    "capstone.interval_level": Printed("06_capstone", "c6r021", r"bootstrap (\d+) % interval"),
    "capstone.synthetic.seed0.margin": Printed(
        "06_capstone", "c6r021", r"synthetic\s+5 dB\s+(\S+)"
    ),
    "capstone.synthetic.seed0.low": Printed(
        "06_capstone", "c6r021", r"synthetic\s+5 dB\s+\S+ \[(\S+),"
    ),
    "capstone.synthetic.seed0.high": Printed(
        "06_capstone", "c6r021", r"synthetic\s+5 dB\s+\S+ \[\S+ (\S+)\]"
    ),
    "capstone.synthetic.seed1.margin": Printed(
        "06_capstone", "c6r021", rf"synthetic\s+5 dB\s+{_}(\S+)"
    ),
    "capstone.synthetic.seed2.margin": Printed(
        "06_capstone", "c6r021", rf"synthetic\s+5 dB\s+{_}{_}(\S+)"
    ),
    "capstone.generated.5db.seed0.margin": Printed(
        "06_capstone", "c37c05", r"generated\s+5 dB\s+(\S+)"
    ),
    "capstone.generated.5db.seed0.low": Printed(
        "06_capstone", "c37c05", r"generated\s+5 dB\s+\S+ \[(\S+),"
    ),
    "capstone.generated.5db.seed0.high": Printed(
        "06_capstone", "c37c05", r"generated\s+5 dB\s+\S+ \[\S+ (\S+)\]"
    ),
    "capstone.generated.5db.seed1.margin": Printed(
        "06_capstone", "c37c05", rf"generated\s+5 dB\s+{_}(\S+)"
    ),
    "capstone.generated.5db.seed2.margin": Printed(
        "06_capstone", "c37c05", rf"generated\s+5 dB\s+{_}{_}(\S+)"
    ),
    "capstone.recorded.all.seed0.margin": Printed(
        "06_capstone", "c37c05", r"recorded\s+all\s+(\S+)"
    ),
    "capstone.recorded.all.seed1.margin": Printed(
        "06_capstone", "c37c05", rf"recorded\s+all\s+{_}(\S+)"
    ),
    "capstone.recorded.all.seed2.margin": Printed(
        "06_capstone", "c37c05", rf"recorded\s+all\s+{_}{_}(\S+)"
    ),
    "capstone.target_margin": Constant("helpers/capstone/evaluation.py", "BEAT_CLASSICAL_DB"),
    # 06: real speech, STOI (mean over the noises)
    "capstone.real.stoi.masked": Printed(
        "06_capstone", "c6r034", r"stoi[^\n]*\n(?:[^\n]*\n)*?masked-loss model(?:\s+\S+){5}\s+(\S+)"
    ),
    "capstone.real.stoi.input": Printed(
        "06_capstone", "c6r034", r"stoi[^\n]*\n(?:[^\n]*\n)*?noisy input(?:\s+\S+){5}\s+(\S+)"
    ),
    # 06: how quiet the pauses are (dB quieter)
    "capstone.synthetic.silence_below_question_loss": Printed(
        "06_capstone", "c6r018", r"masked-loss model: (\S+) dB quieter on silence"
    ),
    "capstone.real.silence_below_question_loss": Printed(
        "06_capstone", "c6r034", r"masked-loss model: (\S+) dB quieter on pauses than the question"
    ),
    "capstone.synthetic.silence_below_input": Printed(
        "06_capstone", "c6r018", r"masked-loss model\s+silent\s+-(\S+) dB"
    ),
    "capstone.real.silence_below_input": Printed(
        "06_capstone", "c6r034", r"masked-loss model: \+(\S+) dB quieter on pauses than its input"
    ),
    # 07: the labelling rule against the phone alignment
    "labels.alignment_agreement": Printed(
        "07_appendix_labels", "c004", r"agreement (\S+)% of \d+ frames"
    ),
}


def _outputs(cell: dict) -> str:
    texts = []
    for output in cell.get("outputs", []):
        texts.append("".join(output.get("text", "")))
        texts.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(texts)


def _constant(path: Path, name: str) -> str:
    """The literal a module-level constant is set to (through other constants of the module
    or ones it imports from the same package folder)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            if isinstance(node.value, ast.Constant):
                return repr(node.value.value)
            if isinstance(node.value, ast.Name):
                return _constant(path, node.value.id)
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            module = (node.module or "").rpartition(".")[2]
            return _constant(path.with_name(f"{module}.py"), name)
    raise ValueError(f"{path}: no module-level constant {name} set to a number")


def figure_record(name: str, figure: Printed | Constant, root: Path = ROOT) -> dict:
    """One figure as the results file holds it: its name, text as printed, value, precision
    (digits after the point) and source."""
    if isinstance(figure, Constant):
        text = _constant(root / figure.module, figure.name)
        source = {"module": figure.module, "constant": figure.name}
    else:
        path = root / "notebooks" / f"{figure.notebook}.ipynb"
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        cell = next((c for c in cells if c.get("id") == figure.cell), None)
        match = re.search(figure.pattern, _outputs(cell)) if cell else None
        if match is None:
            raise ValueError(
                f"figure {name}: {figure.notebook}'s cell {figure.cell} prints nothing matching "
                f"{figure.pattern!r} (the output changed: name the figure where it is now)"
            )
        text = match[1]
        source = {"notebook": figure.notebook, "cell": figure.cell}
    number = NUMBER.fullmatch(text)
    if number is None:
        raise ValueError(f"figure {name}: {text!r} is not a number")
    return {
        "name": name,
        "text": text,
        "value": float(text),
        "precision": len(number[1] or ""),
        **source,
    }


def figures(root: Path = ROOT) -> list[dict]:
    """Every named figure, read from the stored outputs and the code, by name."""
    return [figure_record(name, FIGURES[name], root) for name in sorted(FIGURES)]


def write(root: Path = ROOT) -> bool:
    """Write the results file; whether it changed."""
    path = root / FIGURES_FILE.relative_to(ROOT)
    rows = ",\n".join(f"  {json.dumps(record)}" for record in figures(root))
    text = f"[\n{rows}\n]\n"  # one figure a line: a diff names the figures that moved
    changed = not path.exists() or path.read_text(encoding="utf-8") != text
    if changed:
        path.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        print(f"{FIGURES_FILE.relative_to(ROOT)}: {'written' if write() else 'up to date'}")
        return 0
    for record in figures():
        where = record.get("notebook", record.get("module"))
        print(f"{record['name']:50s} {record['text']:>8s}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
