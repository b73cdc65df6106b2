"""The layers of helpers/: a module imports only from layers below its own.

    9  capstone (the capstone's public names, re-exported)
    8  capstone_evaluation
    7  capstone_model, widgets
    6  capstone_recipe, lab, exercises (the package and its submodules), probe (the package)
    5  training, loss_reach, capstone_data, probe.locate, lab_settings
    4  dataset, denoiser, voicing_loss, label_measurement, probe.location, probe.keras_marks
    3  labels, gru_state, probe.marks, probe.exits, noise, baselines
    2  synth, plots
    1  audio, gradients
    0  printing, reproducibility, checks, why_none, tracebacks, html_tables

``helpers/__init__.py`` imports nothing from helpers (every module may import the package
itself, ``import helpers``). A submodule of ``helpers.exercises`` may also import
``helpers.exercises`` (its ``CheckResult`` and ``run_check``), but not a sibling.

Every ``import`` counts, including those inside functions, relative ones and
``importlib.import_module("helpers....")`` with a literal name. A module that is not in the
table fails the test: a new module has to be given a layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import helpers

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "helpers"

LAYERS: dict[int, tuple[str, ...]] = {
    0: ("printing", "reproducibility", "checks", "why_none", "tracebacks",
        "html_tables"),
    1: ("audio", "gradients"),
    2: ("synth", "plots"),
    3: ("labels", "gru_state", "probe.marks", "probe.exits", "noise", "baselines"),
    4: ("dataset", "denoiser", "voicing_loss", "label_measurement", "probe.location",
        "probe.keras_marks"),
    5: ("training", "loss_reach", "capstone_data", "probe.locate", "lab_settings"),
    6: ("capstone_recipe", "lab", "exercises", "probe"),
    7: ("capstone_model", "widgets"),
    8: ("capstone_evaluation",),
    9: ("capstone",),
}
LAYER_OF: dict[str, int] = {f"{PACKAGE}.{name}": layer
                            for layer, names in LAYERS.items() for name in names}
EXERCISES = f"{PACKAGE}.exercises"  # a package: its submodules share its layer


# --------------------------------------------------------------------------- the checker


def module_name(path: Path, package_dir: Path) -> str:
    """``helpers/exercises/gru_state.py`` -> ``helpers.exercises.gru_state``;
    ``helpers/__init__.py`` -> ``helpers``."""
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    """The layer of a helpers module (a submodule of a listed package takes its layer);
    None when the table does not place it."""
    name = module
    while name.startswith(PACKAGE + "."):
        if name in LAYER_OF:
            return LAYER_OF[name]
        name = name.rpartition(".")[0]
    return None


def imported_modules(source: str, importer: str, is_package: bool = False,
                     known_modules: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """``(line, module)`` for every helpers module the source imports, anywhere in the file.

    ``from helpers import audio`` counts as importing ``helpers.audio`` when ``audio`` is one
    of ``known_modules``; ``from helpers.exercises import CheckResult`` as importing
    ``helpers.exercises``. Relative imports are resolved against ``importer``.
    """
    package = importer if is_package else importer.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                found.append((node.lineno, submodule if submodule in known_modules else module))
        elif isinstance(node, ast.Call) and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and _called_name(node.func) in ("import_module", "__import__"):
            found.append((node.lineno, node.args[0].value))
    unique = dict.fromkeys(found)  # `from helpers.x import a, b` is one import of helpers.x
    return [(line, module) for line, module in unique
            if module == PACKAGE or module.startswith(PACKAGE + ".")]


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def layer_violations(source: str, importer: str, is_package: bool = False,
                     known_modules: frozenset[str] = frozenset(), where: str = "") -> list[str]:
    """Why each helpers import of this module breaks the layers (empty when none does)."""
    where = where or importer
    if importer == PACKAGE:
        return [f"{where}:{line} imports {module}; helpers/__init__.py may import nothing from "
                "helpers (every module imports it)."
                for line, module in imported_modules(source, importer, is_package, known_modules)]
    own = layer_of(importer)
    if own is None:
        return [f"{where}: {importer} has no layer; add it to the table in tests/test_layers.py "
                "(and to CONTRIBUTING.md)."]
    problems = []
    for line, module in imported_modules(source, importer, is_package, known_modules):
        if module == PACKAGE:
            continue  # `import helpers`: the package itself, which imports no helpers module
        if module == EXERCISES and importer.startswith(EXERCISES + "."):
            continue  # an exercise module uses the package's CheckResult and run_check
        layer = layer_of(module)
        if layer is None:
            problems.append(f"{where}:{line} imports {module}, which has no layer.")
        elif layer >= own:
            relation = "the same layer" if layer == own else "a higher layer"
            problems.append(f"{where}:{line} imports {module} (layer {layer}) from {importer} "
                            f"(layer {own}): {relation}; a module may import only from layers "
                            "below its own.")
    return problems


def tree_violations(package_dir: Path) -> list[str]:
    """Every layer problem of the package in ``package_dir``."""
    files = sorted(package_dir.rglob("*.py"))
    known = frozenset(module_name(path, package_dir) for path in files)
    problems = []
    for path in files:
        name = module_name(path, package_dir)
        problems += layer_violations(path.read_text(), name, path.name == "__init__.py", known,
                                     where=str(path.relative_to(package_dir.parent)))
    return problems


# --------------------------------------------------------------------------- the real tree


def test_tests_import_this_checkouts_helpers():
    """Guard against a stale editable install pointing at another copy of the course."""
    assert Path(helpers.__file__).resolve() == ROOT / PACKAGE / "__init__.py"


def test_every_table_entry_is_a_module():
    missing = [name for name in LAYER_OF
               if not (ROOT / Path(*name.split("."))).with_suffix(".py").exists()
               and not (ROOT / Path(*name.split(".")) / "__init__.py").exists()]
    assert not missing, f"the layer table lists modules that do not exist: {missing}"


def test_helpers_modules_import_only_from_lower_layers():
    problems = tree_violations(ROOT / PACKAGE)
    assert not problems, "\n" + "\n".join(problems)


# --------------------------------------------------------------------------- the checker itself


KNOWN = frozenset({"helpers", "helpers.audio", "helpers.training", "helpers.widgets",
                   "helpers.exercises", "helpers.exercises.gru_state",
                   "helpers.exercises.diagnosis"})


@pytest.mark.parametrize("importer, source, expected", [
    ("helpers.audio", "from helpers.training import make_train_step\n",
     "imports helpers.training (layer 5) from helpers.audio (layer 1): a higher layer"),
    ("helpers.plots", "import numpy\n\ndef f():\n    from helpers.denoiser import enhance\n",
     "<fake>:4 imports helpers.denoiser (layer 4) from helpers.plots (layer 2)"),
    ("helpers.dataset", "import helpers.denoiser\n",
     "imports helpers.denoiser (layer 4) from helpers.dataset (layer 4): the same layer"),
    ("helpers.dataset", "from . import training\n",
     "imports helpers.training (layer 5)"),
    ("helpers.dataset", "from .widgets import GradientLab\n",
     "imports helpers.widgets (layer 7)"),
    ("helpers.gradients", "from helpers import audio\n",
     "imports helpers.audio (layer 1) from helpers.gradients (layer 1)"),
    ("helpers.audio", "import importlib\nm = importlib.import_module('helpers.training')\n",
     "imports helpers.training (layer 5)"),
    ("helpers.exercises.gru_state", "from helpers.exercises import diagnosis\n",
     "imports helpers.exercises.diagnosis (layer 6)"),
    ("helpers.exercises.gru_state", "from .diagnosis import check_delay\n",
     "imports helpers.exercises.diagnosis (layer 6)"),
    ("helpers.exercises", "from helpers.widgets import GradientLab\n",
     "imports helpers.widgets (layer 7)"),
    ("helpers.audio", "from helpers.nowhere import x\n", "helpers.nowhere, which has no layer"),
    ("helpers.new_module", "import numpy\n", "helpers.new_module has no layer"),
    ("helpers", "from helpers.audio import stft\n", "may import nothing from helpers"),
    ("helpers", "from . import audio\n", "may import nothing from helpers"),
])
def test_checker_finds_a_bad_import(importer, source, expected):
    problems = layer_violations(source, importer, importer in ("helpers", "helpers.exercises"),
                                KNOWN, where="<fake>")
    assert len(problems) == 1 and expected in problems[0], problems


@pytest.mark.parametrize("importer, source", [
    ("helpers.denoiser", "from helpers.audio import stft\nfrom helpers.gru_state import unroll\n"),
    ("helpers.plots", "def f():\n    from helpers.audio import stft_magnitude\n"),
    ("helpers.printing", "import math\nimport helpers  # noqa: F401\n"),
    ("helpers.widgets", "from helpers.training import snapshot\nimport tensorflow as tf\n"),
    ("helpers.exercises.gru_state",
     "from helpers.exercises import CheckResult, run_check\n"
     "from helpers.denoiser import enhance\n"),
    ("helpers.exercises.gru_state", "from . import CheckResult\n"),
    ("helpers.training", "import importlib\nimportlib.import_module('numpy')\n"),
    ("helpers", "import os as _os\n\ndef f():\n    import tensorflow\n"),
])
def test_checker_accepts_a_good_import(importer, source):
    assert layer_violations(source, importer, importer == "helpers", KNOWN) == []


def test_checker_reads_a_whole_tree(tmp_path):
    package = tmp_path / "helpers"
    (package / "exercises").mkdir(parents=True)
    (package / "__init__.py").write_text("import os\n")
    (package / "audio.py").write_text("import numpy as np\n")
    (package / "printing.py").write_text("def f():\n    from helpers.audio import stft\n")
    (package / "extra.py").write_text("from helpers.audio import stft\n")
    (package / "exercises" / "__init__.py").write_text("from helpers.audio import stft\n")
    (package / "exercises" / "one.py").write_text("from helpers.exercises import run_check\n")
    problems = tree_violations(package)
    assert len(problems) == 2, problems
    assert problems[0].startswith("helpers/extra.py: helpers.extra has no layer")
    assert problems[1].startswith("helpers/printing.py:2 imports helpers.audio (layer 1)")
