"""The course as a learner meets it: in JupyterLab, in a browser (fixtures in conftest.py).

Every notebook opens and starts its kernel; the gradient lab answers clicks on its own
controls: the kernel's control takes the value, and the page shows the summary, the gradient
table and the Adam panel the kernel then holds; so does a lab on a learner's own model,
losses and clips; notebook 00 runs top to bottom with no error; after a reload of the page,
"Run Selected Cell and All Below" gives the stored outputs. Nothing here sets a widget's
value from Python in the kernel: the page's controls are clicked, chosen and moved with the
keyboard.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from itertools import zip_longest
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from browser_support import (
    KERNEL_TIMEOUT,
    REPO,
    STDERR,
    assert_no_error_shown,
    chromium_missing,
    menu,
    notebook_panel,
    open_notebook,
    run_cell,
    screenshot,
    tab,
)
from lab_state import squeeze
from nbval.plugin import (
    coalesce_streams,
    find_comment_markers,
    find_metadata_tags,
    get_sanitize_patterns,
)
from playwright.sync_api import Locator, Page, expect

if (_missing := chromium_missing()) is not None and os.environ.get("CI") != "true":
    pytest.skip(_missing, allow_module_level=True)  # under CI=true the fixtures fail instead

NOTEBOOKS = sorted(path.name for path in (REPO / "notebooks").glob("*.ipynb"))
LAB_SOURCE = "from helpers.lab.view import GradientLab\n\nGradientLab()"
# A learner's own model, losses and clips (06's example, smaller). The last line shows it.
OWN_LAB_SOURCE = """\
from keras import ops

from helpers.audio import excerpt, load_clip
from helpers.models import make_conv_denoiser
from helpers.voicing import cond_loop_voicing_loss
from helpers.lab import GradientLab


def mse(reference, estimate, labels):
    return ops.mean(ops.square(estimate - reference))


arctic = load_clip("arctic_a0009")
my_lab = GradientLab(make_conv_denoiser(seed=0),
                     losses={"mse": mse, "loop": cond_loop_voicing_loss},
                     clips={"pause": excerpt(arctic.clean, arctic.labels, 0, 9),
                            "word": excerpt(arctic.clean, arctic.labels, 24, 40)})
my_lab"""


# Both lab tests share one notebook and its kernel (a kernel that imports TensorFlow costs
# seconds of CPU to start): a cell per lab, in this order, then the barrier cell.
LABS = {"gradient_lab_test": LAB_SOURCE, "own_lab_test": OWN_LAB_SOURCE}
LABS_NOTEBOOK = "labs_test.ipynb"
# Run after each change: it prints the state of the lab that ran last (the newest entry of
# Out; the barrier itself adds none), with its own execution count, so the test knows the
# printout is this run's.
BARRIER_SOURCE = f"""\
import json, sys
if {str(Path(__file__).parent)!r} not in sys.path:
    sys.path.insert(0, {str(Path(__file__).parent)!r})
from lab_state import lab_state
print(json.dumps({{"count": len(In) - 1, **lab_state(Out[max(Out)])}}))"""


def labs_notebook() -> dict:
    """A fresh notebook: one cell per lab (``LABS``), then the barrier cell."""
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {
                "name": "python3",
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
            }
        },
        "cells": [{**cell, "source": source} for source in [*LABS.values(), BARRIER_SOURCE]],
    }


STDOUT = '[data-mime-type="application/vnd.jupyter.stdout"]'


# ------------------------------------------------------------------------ driving the page


def close_everything(page: Page, server) -> None:
    """Close every tab without saving, then shut down every kernel. JupyterLab's own errors
    while tearing down are in the console log, not held against the next test."""
    menu(page, "File", "Close All Tabs")
    discard = page.locator(".jp-Dialog .jp-Dialog-button", has_text="Discard")
    while True:  # one "save your changes?" dialog per modified notebook
        try:
            discard.click(timeout=1000)
        except Exception:  # no dialog left
            break
    sessions = server.api("GET", "sessions")
    with ThreadPoolExecutor(max(1, len(sessions))) as pool:  # each waits for its kernel's end
        list(pool.map(lambda s: server.api("DELETE", f"sessions/{s['id']}"), sessions))
    page.page_errors.clear()


# ------------------------------------------------------------------------------- the tests


def test_notebook_00_runs_top_to_bottom(page, lab_server):
    name = "00_start_here.ipynb"
    open_notebook(page, f"notebooks/{name}")
    panel = notebook_panel(page, name)
    prompts = panel.locator(".jp-CodeCell .jp-InputPrompt")
    code_cells = [
        cell
        for cell in json.loads((REPO / "notebooks" / name).read_text())["cells"]
        if cell["cell_type"] == "code"
    ]
    # A proof cell's source is collapsed (CONTRIBUTING.md, "Conventions"), and its
    # prompt with it; its number is the gap between its neighbours'.
    expected = [
        "" if cell["metadata"].get("jupyter", {}).get("source_hidden") else f"[{n}]:"
        for n, cell in enumerate(code_cells, start=1)
    ]
    menu(page, "Edit", "Clear Outputs of All Cells")  # so every output below is this run's
    expect(panel.locator(".jp-OutputArea-output")).to_have_count(0)
    menu(page, "Kernel", "Restart Kernel and Run All Cells…")
    page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept", has_text="Restart").click()
    # Done when the last cell has its number, or when a cell failed (the rest never run).
    page.wait_for_function(
        """([panel, stderr]) => {
            const p = [...document.querySelectorAll(`#${panel} .jp-CodeCell .jp-InputPrompt`)]
                .map(e => e.textContent.trim());
            return !p.some(t => t.includes('*')) && (/\\[\\d+\\]/.test(p[p.length - 1])
                || document.querySelector(`#${panel} ${stderr}`) !== null);
        }""",
        arg=[panel.get_attribute("id"), STDERR],
        timeout=180_000,
        polling=250,
    )
    errors = panel.locator(STDERR)
    assert errors.count() == 0, f"{name} printed errors: {errors.all_inner_texts()}"
    expect(prompts).to_have_text(expected)
    assert_no_error_shown(page, name)
    close_everything(page, lab_server)


def test_every_notebook_opens_and_its_kernel_starts(page, lab_server):
    for name in NOTEBOOKS:  # all at once: their kernels start side by side
        open_notebook(page, f"notebooks/{name}", wait=name == NOTEBOOKS[-1])
    for name in NOTEBOOKS:
        panel = notebook_panel(page, name)
        cells = json.loads((REPO / "notebooks" / name).read_text())["cells"]
        expect(panel.locator(".jp-Notebook .jp-Cell")).to_have_count(len(cells), timeout=30_000)
        assert_no_error_shown(page, name)
        screenshot(page, f"notebook-{Path(name).stem}")  # its top, as a learner opens it
    sessions = {
        s["path"]: s["kernel"]["execution_state"] for s in lab_server.api("GET", "sessions")
    }
    assert sessions == {f"notebooks/{name}": "idle" for name in NOTEBOOKS}
    close_everything(page, lab_server)
    assert lab_server.api("GET", "kernels") == []


# --------------------------------------------------------------------------- a page reload

# The notebooks whose outputs a reload changed before every model was seeded where it is
# built (strict nbval checks every notebook that way at kernel level: the root conftest.py).
RELOADED = [
    "00_start_here.ipynb",
    "01_gru_state_reproduce.ipynb",
    "02_gru_state_fix.ipynb",
    "05_field_guide.ipynb",
]
# Whether a run of a notebook's code cells is over: its cell ``last`` shows an execution count,
# or a cell not tagged ``raises-exception`` (not in ``mayRaise``) shows an error, which stops it.
RUN_OVER = r"""([panel, last, mayRaise]) => {
    const cells = [...document.querySelectorAll(`#${panel} .jp-CodeCell`)];
    const error = '[data-mime-type="application/vnd.jupyter.stderr"]';
    return /\[\d+\]/.test(cells[last].querySelector('.jp-InputPrompt').textContent)
        || cells.some((cell, n) => !mayRaise.includes(n) && cell.querySelector(error) !== null);
}"""
STARTED = re.compile(r"\[(\*|\d+)\]")  # a cell's prompt once it is queued, running or run
SANITIZER = get_sanitize_patterns((REPO / "tests" / "nbval_sanitize.cfg").read_text())


def _sanitized(text: str) -> str:
    for regex, replace in SANITIZER:
        text = re.sub(regex, replace, text)
    return text


def text_outputs(cell: nbformat.NotebookNode) -> list[tuple[str, ...]]:
    """What strict nbval compares of a code cell's outputs, as text: streams merged as nbval
    merges them, every text MIME type of a result or display (images left out), an error's
    name and value; nothing for a cell nbval does not compare (a timing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbval warns about conflicting markers; not ours
        options = dict(find_metadata_tags(cell.metadata))
        options.update(find_comment_markers(cell.source))
    if not options.get("check", True):
        return []
    found = []
    for output in coalesce_streams(copy.deepcopy(cell.outputs)):
        if output.output_type == "stream":
            found.append(("stream", output.name, _sanitized(output.text)))
        elif output.output_type == "error":
            found.append(("error", output.ename, output.evalue))
        else:
            for mime, value in sorted(output.get("data", {}).items()):
                if mime.startswith("text/"):
                    found.append((output.output_type, mime, _sanitized(value)))
    return found


def save(page: Page, name: str) -> None:
    """File > Save Notebook, and wait until the tab says it is saved."""
    tab(page, name).click()
    menu(page, "File", "Save Notebook")
    expect(tab(page, name)).not_to_have_class(re.compile(r"\bjp-mod-dirty\b"))


def run_below_the_first_cell(page: Page, name: str) -> None:
    """Select the notebook's second code cell and choose Run > Run Selected Cell and All Below,
    until that cell is queued or running in this notebook: while JupyterLab restores a page it
    may make another tab current under the click (the run then went there; it is not run
    again)."""
    for _ in range(5):
        panel = notebook_panel(page, name)  # the same kernel as before the reload
        prompt = panel.locator(".jp-CodeCell").nth(1).locator(".jp-InputPrompt")
        if STARTED.search(prompt.inner_text()):
            return
        if not panel.is_visible():
            continue
        prompt.click()
        menu(page, "Run", "Run Selected Cell and All Below")
        try:
            expect(prompt).to_have_text(STARTED, timeout=5000)
            return
        except AssertionError:
            continue
    raise AssertionError(f"{name}: Run Selected Cell and All Below did not start its second cell")


def test_the_same_outputs_after_a_reload(page, lab_server):
    """As a learner may: run a notebook's first cell, reload the page, select the next code
    cell and choose Run > Run Selected Cell and All Below, on the kernel that ran the first
    cell. A reconnecting page sends the kernel requests that move Python's random state;
    every output must still be the stored one (text outputs, compared as strict nbval
    compares them). The notebooks run side by side, one reload for all of them."""
    for name in RELOADED:
        open_notebook(page, f"notebooks/{name}", wait=name == RELOADED[-1])
    for name in RELOADED:
        panel = notebook_panel(page, name)
        menu(page, "Edit", "Clear Outputs of All Cells")  # so every output below is this run's
        prompt = run_cell(page, panel.locator(".jp-CodeCell").first, wait=False)
        expect(prompt).to_have_text("[1]:", timeout=KERNEL_TIMEOUT)
        save(page, name)  # a reload keeps what is saved, and asks nothing
    kernels = {s["path"]: s["kernel"]["id"] for s in lab_server.api("GET", "sessions")}
    # The page loads anew (a reload; with a reset layout, so that no tab restored late takes
    # the focus from a click), opening the first notebook, and each notebook reconnects to its
    # running kernel.
    page.goto(lab_server.lab_url(f"notebooks/{RELOADED[0]}"))
    notebook_panel(page, RELOADED[0])
    for name in RELOADED[1:]:
        open_notebook(page, f"notebooks/{name}", wait=name == RELOADED[-1])
    for name in RELOADED:
        run_below_the_first_cell(page, name)
    assert {s["path"]: s["kernel"]["id"] for s in lab_server.api("GET", "sessions")} == kernels
    differ = []  # every cell of every notebook whose outputs are not the stored ones
    for name in RELOADED:
        panel = notebook_panel(page, name)
        stored = nbformat.read(REPO / "notebooks" / name, as_version=4).cells
        code = [i for i, cell in enumerate(stored) if cell.cell_type == "code"]
        shown = [  # the code cells whose prompt shows (a proof's is collapsed with its source)
            n
            for n, i in enumerate(code)
            if not stored[i].metadata.get("jupyter", {}).get("source_hidden")
        ]
        tags = [stored[i].metadata.get("tags", []) for i in code]
        page.wait_for_function(
            RUN_OVER,
            arg=[
                panel.get_attribute("id"),
                shown[-1],
                [n for n, cell_tags in enumerate(tags) if "raises-exception" in cell_tags],
            ],
            timeout=300_000,
            polling=500,
        )
        save(page, name)
        ran = nbformat.read(lab_server.root / "notebooks" / name, as_version=4).cells
        for index in code[1:]:
            if not ran[index].execution_count:
                differ.append(f"{name}, cell {index}: did not run (the run stopped above it)")
                break
            now, then = text_outputs(ran[index]), text_outputs(stored[index])
            if now != then:
                got, want = next((n, t) for n, t in zip_longest(now, then) if n != t)
                differ.append(f"{name}, cell {index}: {got!r:.300}; stored: {want!r:.300}")
    assert not differ, "after a reload, outputs differ from the stored ones:\n" + "\n".join(differ)
    assert_no_error_shown(page, "after a reload")
    close_everything(page, lab_server)


# ------------------------------------------------------------------------------- the lab


def act(control_on_page: Locator, kind: str, action: tuple[str, object]) -> None:
    """Do it on the page, as a learner would."""
    how, what = action
    if how == "choose" and kind == "Dropdown":
        control_on_page.locator("select").select_option(value=str(what))
    elif how == "choose":
        role = "radio" if kind == "RadioButtons" else "button"
        control_on_page.get_by_role(role, name=str(what), exact=True).click()
    elif how == "key":
        control_on_page.locator(".noUi-handle").press(str(what))
    else:
        control_on_page.locator("input, button").first.click()


@pytest.fixture(scope="module")
def labs(page, lab_server) -> SimpleNamespace:
    """The labs' notebook (``labs_notebook``), open with its kernel idle, for the module's
    lab tests: ``panel``, and ``executed``, how many cells its kernel has run (as the page last
    showed it). Each test runs its own lab's cell. Closed, kernel and all, after the module's
    last test."""
    lab_server.api(
        "PUT",
        f"contents/{LABS_NOTEBOOK}",
        {"type": "notebook", "format": "json", "content": labs_notebook()},
    )
    open_notebook(page, LABS_NOTEBOOK)
    yield SimpleNamespace(panel=notebook_panel(page, LABS_NOTEBOOK), executed=0)
    close_everything(page, lab_server)


def drive_lab(page, labs: SimpleNamespace, lab_name: str, only=None) -> dict:
    """Run the cell of the lab ``lab_name`` (``LABS``), then change each of the lab's controls
    (``only`` those, if given) through the page. After each change the kernel prints the lab's
    state (``lab_state.py``): the control must hold the value the change gives it, the summary
    line must name it, and the page's views must show the kernel's. The first state, for
    more checks."""
    cells = labs.panel.locator(".jp-Cell")
    first, barrier = cells.nth(list(LABS).index(lab_name)), cells.nth(len(LABS))
    # its execution count, from the page: the count holds even if an earlier lab test failed
    prompt = run_cell(page, first)
    labs.executed = int(re.search(r"\d+", prompt.inner_text()).group())

    def settle() -> dict:
        """Run the barrier cell: once its output is there, the kernel has handled every
        message before it (the change and the redraw included). The lab's state it printed."""
        labs.executed += 1
        run_cell(page, barrier, wait=False)
        printed = barrier.locator(f".jp-OutputArea-output{STDOUT}")
        expect(printed).to_contain_text(f'{{"count": {labs.executed}, ', timeout=KERNEL_TIMEOUT)
        # and nothing else: a figure the lab left to the inline backend would show up here
        stray = barrier.locator(f".jp-OutputArea-output:not({STDOUT})")
        assert stray.count() == 0, (
            f"the barrier cell shows more than its line: "
            f"{[o.get_attribute('data-mime-type') for o in stray.all()]}"
        )
        return json.loads(printed.inner_text())

    def settled(after: str, setting: str = "") -> dict:
        """Run the barrier until the kernel's lab shows ``setting`` in its summary line and
        the page shows the views the kernel holds; return that state. Under load a change
        can reach the kernel, and its redraw the page, seconds later: a state read while a
        message is on its way is read again (for up to 30 s)."""
        deadline = time.monotonic() + 30
        while True:
            state = settle()
            expected = state["views"]
            shown = {name: squeeze(on_page(name).inner_text()) for name in expected}
            if setting in expected["summary"] and shown == expected or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert setting in expected["summary"], (
            f"after {after}, the kernel's lab does not show {setting}: {expected['summary']!r}"
        )
        for name in expected:
            assert shown[name] == expected[name], (
                f"after {after}, the lab's {name} on the page is\n  {shown[name]!r}\n"
                f"but its kernel holds\n  {expected[name]!r}"
            )
        return state

    shots = 0

    def snap(change: str) -> None:  # the lab (its cell's output), whole, after each change
        nonlocal shots
        screenshot(first.locator(".jp-Cell-outputArea"), f"lab-{lab_name}-{shots:02d}-{change}")
        shots += 1

    def on_page(part: str) -> Locator:  # a control or a view of this lab, by its CSS class
        return first.locator(f".gradient-lab-{part}")

    expect(on_page("summary")).to_be_visible(timeout=KERNEL_TIMEOUT)
    state = first_state = settled("creating the lab")
    assert {"summary", "table"} <= set(state["views"]), state["views"]
    names = list(state["controls"]) if only is None else list(only)
    snap("new")
    # Every control once: sliders first, then dropdowns, then buttons (the knobs before the
    # choices that enable or disable them; the execution mode late, so tf.function traces
    # once). A control that is disabled for the current setting (a knob the loss does not
    # take) waits until a later change enables it; if none does, the change that disabled
    # it is undone.
    rank = {"SelectionSlider": 0, "IntSlider": 0, "FloatSlider": 0, "Dropdown": 1}
    todo = sorted(names, key=lambda name: rank.get(state["controls"][name]["kind"], 2))
    disabled_by = {}  # name -> (the control whose change disabled it, its value before)
    while todo:
        controls = state["controls"]
        enabled = [name for name in todo if not controls[name]["disabled"]]
        if enabled:
            name = enabled[0]
            todo.remove(name)
            action, value, text = controls[name]["moves"][0]
        else:
            assert todo[0] in disabled_by, f"{todo[0]} is disabled from the start"
            name, before = disabled_by.pop(todo[0])
            action, value, text = next(m for m in controls[name]["moves"] if m[1] == before)
        before = controls[name]["value"]
        was_disabled = {n for n in todo if controls[n]["disabled"]}
        act(on_page(name), controls[name]["kind"], action)
        # the lab recomputes for the new value: its summary line starts with the setting
        state = settled(after := f"{name}: {action[0]} {action[1]!r}", f"{name}={text}")
        held = state["controls"][name]
        assert held["value"] == value, (
            f"after {after}, the kernel's {name} holds {held['value']}, not {value}"
        )
        for other in todo:
            if state["controls"][other]["disabled"] and other not in was_disabled:
                disabled_by[other] = (name, before)
        snap(f"{name}={text}")
    assert_no_error_shown(page, lab_name)
    return first_state


def test_the_lab_answers_its_controls(page, labs):
    drive_lab(page, labs, "gradient_lab_test")


def test_a_learners_own_model_losses_and_clips_in_the_lab(page, labs):
    """06's example: the learner's model, loss and clips appear in the page's lab, and its
    clip and loss choices answer on the page."""
    state = drive_lab(page, labs, "own_lab_test", only=["clip", "loss"])
    assert state["controls"]["loss"]["labels"] == ["mse", "loop"]
    assert state["controls"]["clip"]["labels"] == ["pause", "word"]
