"""What nbval does not check on its own: that every stored output comes from one clean run,
that nothing noisy was stored, that failing cells are marked, that nbval compares nearly every
cell, that nbval really fails when a cell meant to fail stops failing, and that the sanitizer
hides audio bytes and nothing else."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import find_comment_markers, find_metadata_tags

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOISE = re.compile(r"I0000 |WARNING: All log messages|oneDNN custom operations|"
                   r"cpu_feature_guard|cudart_stub|at 0x[0-9a-f]{6,}|object at 0x")
IDS = [p.stem for p in NOTEBOOKS]
SANITIZER = ROOT / "tests" / "nbval_sanitize.cfg"  # what ./course.sh passes to nbval


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
        "run scripts/regenerate_outputs.py: some cells are unrun or were run out of order")


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
            assert not match, (f"code cell {index}: stored output names {match.group(0)!r}; "
                               "run scripts/regenerate_outputs.py")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_errors_only_where_a_cell_is_marked_to_fail(path):
    for index, cell in enumerate(_code_cells(path)):
        marked = "raises-exception" in cell.metadata.get("tags", [])
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if marked:
            assert len(errors) == 1, f"code cell {index} is tagged raises-exception but stored " \
                                     "no error: nbval would compare nothing"
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
    first_import = next(line for line in first_code.splitlines()
                        if line.startswith(("import ", "from ")))
    assert first_import.startswith(("import helpers", "from helpers")), \
        "import helpers before TensorFlow: it keeps TensorFlow's start-up log quiet"
    assert "make_deterministic" in first_code
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "## Summary" in text and "## Exercise" in text
    assert notebook.metadata["kernelspec"]["name"] == "python3"


def test_ci_runs_exactly_the_readme_test_command_then_the_portability_proof():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "```bash\n./course.sh test\n```" in readme
    commands = [line for line in ci.splitlines() if line.strip() and not line.startswith("#")]
    assert commands[-3:] == ["./course.sh test", "./course.sh portability", 'exit "$failed"']
    assert "trap 'failed=1' ERR" in ci  # any failing command fails CI, after both have run
    assert "rm -rf .venv" in ci  # a fresh environment, so a missing install step shows up


def test_the_test_commands_use_the_sanitizer_this_file_checks():
    course = (ROOT / "course.sh").read_text()
    assert '--nbval-sanitize-with="$PWD/tests/nbval_sanitize.cfg"' in course
    assert SANITIZER.is_file()


def _nbval_compares(cell) -> bool:
    """Whether strict nbval compares this code cell's outputs, by nbval's own reading of its
    comment markers and tags (a cell with no stored run is not compared either)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbval warns about conflicting markers; not our test
        options = dict(find_metadata_tags(cell.metadata))
        options.update(find_comment_markers(cell.source))
    return (options.get("check", True) and not options.get("skip", False)
            and cell.execution_count is not None)


def test_nbval_compares_the_outputs_of_at_least_nine_code_cells_in_ten():
    counts = {path.name: (sum(map(_nbval_compares, cells)), len(cells))
              for path in NOTEBOOKS for cells in [_code_cells(path)]}
    compared = sum(c for c, _ in counts.values())
    total = sum(n for _, n in counts.values())
    assert compared >= 0.9 * total, (
        f"nbval compares the outputs of {compared} of {total} code cells; "
        f"NBVAL_IGNORE_OUTPUT / NBVAL_SKIP are for timings only: {counts}")


# The meta-test: tiny notebooks with stored outputs, each run once by nbval exactly as the test
# commands run it (strict, with the sanitizer), all in one subprocess.
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
AUDIO = "from IPython.display import Audio\nAudio([0.0, 0.5, -0.5, 0.25], rate=8000)"
LABELLED_AUDIO = ("from IPython.display import HTML, Audio\n"
                  "HTML('<p>10.6 dB</p>' + Audio([0.0, 0.5, -0.5, 0.25], rate=8000)._repr_html_())")


def _error(name: str = "ValueError"):
    return nbformat.v4.new_output("error", ename=name, evalue="boom", traceback=[])


def _html(html: str, plain: str):
    return nbformat.v4.new_output("execute_result", execution_count=1,
                                  data={"text/html": html, "text/plain": plain})


def _audio(last_sample: float = 0.26) -> str:
    """A player's markup; another last sample gives other base64 bytes in the same markup,
    as training on another CPU does."""
    from IPython.display import Audio

    return Audio([0.0, 0.5, -0.5, last_sample], rate=8000)._repr_html_()


CASES = {  # notebook name: (the cell's source now, its stored outputs, its tags, should pass?)
    "still_raises": ("raise ValueError('boom')", [_error()], ["raises-exception"], True),
    "stopped_raising": ("x = 1  # the fix someone made by accident", [_error()],
                        ["raises-exception"], False),
    "raises_another_error": ("raise TypeError('boom')", [_error()], ["raises-exception"], False),
    "audio_bytes_differ": (AUDIO, [_html(_audio(), "<IPython.lib.display.Audio object>")],
                           [], True),
    "text_beside_audio_differs": (LABELLED_AUDIO, [_html(
        "<p>10.5 dB</p>" + _audio(), "<IPython.core.display.HTML object>")], [], False),
    "printed_number_differs": ("print(0.25)", [nbformat.v4.new_output(
        "stream", name="stdout", text="0.26\n")], [], False),
}


def test_nbval_fails_when_an_output_changes_except_audio_bytes(tmp_path):
    """nbval passes a cell meant to fail only while it fails the same way, and the sanitizer
    hides an audio player's bytes but not a printed number nor the text beside a player.
    nbval tests each cell on its own, so every case is one cell of one notebook: one kernel."""
    cells = [nbformat.v4.new_code_cell(source, execution_count=1, outputs=outputs,
                                       metadata={"tags": tags} if tags else {})
             for source, outputs, tags, _ in CASES.values()]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC})
    nbformat.write(notebook, tmp_path / "cases.ipynb")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
         f"--nbval-sanitize-with={SANITIZER}", f"--rootdir={tmp_path}", "-v",
         "-p", "no:cacheprovider", str(tmp_path / "cases.ipynb")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert _audio() != _audio(0.25)  # so only the sanitizer can make audio_bytes_differ pass
    for index, (name, (*_, passes)) in enumerate(CASES.items()):
        line = next((line for line in result.stdout.splitlines()
                     if re.match(rf"\S*::Cell {index} (PASSED|FAILED)", line)), None)
        assert line is not None, result.stdout[-2000:]
        assert ("PASSED" in line) == passes, f"{name}: {line}\n{result.stdout[-3000:]}"


# course.sh and .ci/run with stand-ins for the environment's programs: what they run, with
# which settings, and that any failure (pytest's exit 5, no tests, included) fails them.
STUB = """#!/usr/bin/env bash
if [ "${1:-}" = -c ]; then echo "X86_V4 AVX512_ICL"; exit 0; fi  # the numpy feature probe
printf '%s|%s|%s|%s\\n' "$(basename "$0") $*" "${NPY_DISABLE_CPU_FEATURES-unset}" \\
    "${TF_NUM_INTRAOP_THREADS-unset}" "${NUMBA_CACHE_DIR-unset}" >> "$STUB_LOG"
read -r code rest < "$STUB_EXIT_CODES"  # each call exits with the next code, then 0
echo "${rest:-0}" > "$STUB_EXIT_CODES"
exit "$code"
"""


def _run_course(tmp_path, *args, exit_codes="0"):
    """Run course.sh against a stand-in environment whose python and ruff log their
    arguments and the settings they see, and exit with the next of ``exit_codes``."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for program in ("python", "ruff"):
        (venv / "bin" / program).write_text(STUB)
        (venv / "bin" / program).chmod(0o755)
    (venv / ".installed").touch()
    os.utime(venv / ".installed", (2**31, 2**31))  # newer than requirements.txt: no install
    (tmp_path / "exit_codes").write_text(exit_codes)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPY_", "TF_NUM_", "NUMBA_"))}
    env.update(VENV=str(venv), STUB_LOG=str(tmp_path / "log"),
               STUB_EXIT_CODES=str(tmp_path / "exit_codes"))
    result = subprocess.run([str(ROOT / "course.sh"), *args], env=env, capture_output=True,
                            text=True, timeout=60)
    calls = (tmp_path / "log").read_text().splitlines() if (tmp_path / "log").exists() else []
    return result, [call.split("|") for call in calls]


def test_course_test_runs_ruff_then_pytest_on_two_workers_with_the_sanitizer(tmp_path):
    result, calls = _run_course(tmp_path, "test", "-x")
    assert result.returncode == 0, result.stderr
    assert [call[0].split()[0] for call in calls] == ["ruff", "python"]
    pytest_args = calls[1][0].split()
    assert pytest_args[1:3] == ["-m", "pytest"] and pytest_args[-1] == "-x"
    for option in ("-n 2 --dist loadfile", "--nbval --nbval-current-env",
                   f"--nbval-sanitize-with={SANITIZER}"):
        assert option in calls[1][0]
    assert calls[1][3] == str(tmp_path / "venv" / "numba-cache")  # writable, kept with .venv


def test_course_test_fails_when_pytest_collects_nothing(tmp_path):
    result, _ = _run_course(tmp_path, "test", exit_codes="0 5")
    assert result.returncode == 5


@pytest.mark.parametrize("exit_codes", ["0 0 0", "5 0 0", "0 1 0", "0 0 1"])
def test_portability_runs_all_three_passes_and_fails_if_any_fails(tmp_path, exit_codes):
    result, calls = _run_course(tmp_path, "portability", exit_codes=exit_codes)
    assert (result.returncode == 0) == (exit_codes == "0 0 0"), result.stdout
    passes = [call for call in calls if " -m pytest " in call[0]]
    if platform.machine() != "x86_64":
        passes.insert(0, None)  # the older-CPU pass is x86-64 only
    older, one_thread, eight_threads = passes
    for command, *_ in [p for p in passes if p]:
        assert f"--nbval-sanitize-with={SANITIZER}" in command
        assert "-n 2 --dist loadfile" in command and command.endswith(" notebooks")
    if older:  # the stand-in numpy reports X86_V4 and AVX512_ICL: exactly those are disabled
        assert older[1:3] == ["X86_V4 AVX512_ICL", "unset"]
    assert one_thread[1:3] == ["unset", "1"]
    assert eight_threads[1:3] == ["unset", "8"]


def test_ci_fails_if_either_command_fails_and_always_runs_both(tmp_path):
    (tmp_path / ".ci").mkdir()
    ci = tmp_path / ".ci" / "run"
    ci.write_text((ROOT / ".ci" / "run").read_text())
    course = tmp_path / "course.sh"  # a stand-in: logs its command, exits with CODE_<command>
    course.write_text('#!/usr/bin/env bash\necho "$1" >> log\nvar="CODE_$1"; exit "${!var}"\n')
    course.chmod(0o755)
    for test_code, portability_code in [(0, 0), (5, 0), (0, 5), (1, 1)]:
        (tmp_path / "log").unlink(missing_ok=True)
        result = subprocess.run(["bash", str(ci)], capture_output=True, text=True, timeout=60,
                                env={**os.environ, "CODE_test": str(test_code),
                                     "CODE_portability": str(portability_code)})
        assert (tmp_path / "log").read_text().split() == ["test", "portability"]
        assert (result.returncode == 0) == (test_code == portability_code == 0)
