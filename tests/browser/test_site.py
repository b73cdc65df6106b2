"""The course as a website (``./course.sh site``), built from the stored outputs and read in
headless Chromium as a reader would: every page loads cleanly with its images, every internal
link resolves, proof cells and solutions start collapsed, the output under each Predict prompt
starts folded, search finds the field guide, the landing page lists the eight chapters in
order, and no output is wider than the text column. Screenshots of the landing page and of 05
in the light and the dark theme go with the other browser screenshots."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from browser_support import REPO, screenshot

from scripts import build_site

CHAPTERS = [p.stem for p in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
PAGES = ["index", *CHAPTERS, "glossary"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built into a temporary folder and served on 127.0.0.1: its base URL."""
    html = build_site.build(tmp_path_factory.mktemp("site"))
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request lines in the test output
        pass


@pytest.fixture(scope="module")
def reader(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.errors = []
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("requestfailed", lambda r: page.errors.append(f"{r.url}: {r.failure}"))
    try:
        yield page
    finally:
        context.close()


def _open(page, url: str) -> None:
    page.errors.clear()
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("name", PAGES)
def test_every_page_loads_with_its_images_and_no_console_error(site, reader, name):
    _open(reader, f"{site}{name}.html")
    assert reader.errors == [], f"{name}: {reader.errors}"
    broken = reader.eval_on_selector_all(
        "img", "images => images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    assert broken == [], f"{name}: images that did not load: {broken}"
    if name in CHAPTERS:  # every stored figure is on the page
        shown = reader.locator("div.cell_output img").count()
        assert shown == _stored_figures(name), f"{name}: {shown} figures shown"


def _stored_figures(name: str) -> int:
    """The figures a notebook stores: in its cells' outputs, and in each lab's widget state."""
    notebook = json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())
    return sum(
        "image/png" in output.get("data", {})
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        + [
            lab
            for o in cell.get("outputs", [])
            if build_site.WIDGET_VIEW in o.get("data", {})
            for lab in build_site.lab_outputs(
                notebook, o["data"][build_site.WIDGET_VIEW]["model_id"]
            )
        ]
    )


def test_every_internal_link_resolves(site, reader):
    """Every link from any page to a page of the site (with its anchor, if any) is there."""
    checked, missing = set(), []
    for name in PAGES:
        _open(reader, f"{site}{name}.html")
        for href in reader.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
            if urlparse(href).netloc != urlparse(site).netloc or href in checked:
                continue
            checked.add(href)
            page_url, anchor = urldefrag(href)
            response = reader.request.get(page_url)
            if not response.ok:
                missing.append(f"{name} -> {href} ({response.status})")
            elif anchor and page_url.endswith(".html"):
                html = response.text()
                if f'id="{anchor}"' not in html and f'name="{anchor}"' not in html:
                    missing.append(f"{name} -> {href} (no anchor)")
    assert len(checked) > 50 and missing == [], missing


def test_the_glossary_is_a_page_that_the_first_chapter_links_to(site, reader):
    _open(reader, f"{site}{CHAPTERS[0]}.html")
    reader.locator("a", has_text="glossary").first.click()
    reader.wait_for_load_state("load")
    assert reader.url.startswith(f"{site}glossary.html")
    terms = reader.locator("section section h3").count()
    assert terms == (REPO / "GLOSSARY.md").read_text().count("\n### ") >= 60


def test_the_landing_page_lists_the_eight_chapters_in_order(site, reader):
    _open(reader, f"{site}index.html")
    table = reader.locator("table").first
    listed = table.locator("a").evaluate_all("links => links.map(a => a.textContent.trim())")
    assert listed == CHAPTERS
    targets = table.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert [urljoin(site, t) for t in targets] == [f"{site}{c}.html" for c in CHAPTERS]
    assert "./course.sh lab" in reader.content() and "./course.sh test" in reader.content()
    assert "minutes" in table.inner_text()


def test_a_chapter_links_to_the_next_and_offers_its_notebook(site, reader):
    _open(reader, f"{site}02_gru_state_fix.html")
    assert reader.locator("a.right-next").get_attribute("href") == "03_voicing_loss_reproduce.html"
    assert reader.locator("a.left-prev").get_attribute("href") == "01_gru_state_reproduce.html"
    download = reader.locator("a[href$='02_gru_state_fix.ipynb']")
    assert download.count() >= 1
    assert reader.request.get(urljoin(site, download.first.get_attribute("href"))).ok


def test_proof_cells_and_solutions_are_collapsed_on_load(site, reader):
    _open(reader, f"{site}00_start_here.html")
    proofs = reader.locator("div.cell.tag_proof")
    assert proofs.count() >= 3
    for index in range(proofs.count()):
        details = proofs.nth(index).locator("details").first
        assert details.get_attribute("open") is None, f"proof cell {index} is open"
        assert not proofs.nth(index).locator("div.cell_input").is_visible()
    solutions = reader.locator("details", has=reader.locator("summary", has_text="Show a solution"))
    assert solutions.count() >= 1
    assert all(solutions.nth(i).get_attribute("open") is None for i in range(solutions.count()))
    assert not solutions.first.locator("pre").first.is_visible()


def test_each_prompts_output_is_folded_until_the_reader_shows_it(site, reader):
    """Under a Predict prompt the run's code shows and its output waits behind a "show output"
    toggle, as in the workspace, where it waits until the learner runs the cell; any other
    cell's output shows at once."""
    name = "01_gru_state_reproduce"
    notebook = json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())
    runs = [
        j
        for _, run, _ in build_site.lint_course.prompt_runs(notebook["cells"])
        for j in run
        if notebook["cells"][j]["cell_type"] == "code" and notebook["cells"][j]["outputs"]
    ]
    assert len(runs) >= 7
    _open(reader, f"{site}{name}.html")
    folded = reader.locator("div.cell.tag_hide-output")
    assert folded.count() == len(runs)
    for index in range(folded.count()):
        cell = folded.nth(index)
        assert cell.locator("div.cell_input").is_visible(), f"run {index}: its code is hidden"
        assert cell.locator("details").first.get_attribute("open") is None
        assert not cell.locator("div.cell_output").first.is_visible(), f"run {index} is open"
    first = folded.first
    first.locator("details > summary").first.click()
    shown = first.locator("div.cell_output").first
    shown.wait_for(state="visible")
    stored = "".join(notebook["cells"][runs[0]]["outputs"][0].get("text", ""))
    assert stored.strip(), "the first run prints no text to look for"
    assert stored.strip().splitlines()[0][:40] in shown.inner_text()
    opening = reader.locator("div.cell:not(.tag_hide-output):not(.tag_proof) div.cell_output")
    assert opening.first.is_visible(), "an output that answers no prompt is folded too"


def test_search_finds_the_field_guide(site, reader):
    _open(reader, f"{site}search.html?q=stop_gradient")
    results = reader.locator("#search-results ul li a")
    results.first.wait_for()
    found = results.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert any(href.startswith("05_field_guide.html") for href in found), found


def test_the_lab_shows_its_stored_fallback_and_says_to_run_it(site, reader):
    _open(reader, f"{site}06_capstone.html")
    assert "Run this cell to get the interactive gradient lab" in reader.content()
    labs = reader.locator("div.cell", has_text="Run this cell to get the interactive gradient lab")
    assert labs.count() == 2
    for index in range(2):  # each lab's table and figure, as its widget last showed them
        lab = labs.nth(index)
        assert lab.locator("table.gradient-clinic-table").count() == 1
        assert lab.locator("div.cell_output img").count() == 1


_WIDE_BLOCKS = """() => {
  const article = document.querySelector("article.bd-article");
  const style = getComputedStyle(article);
  const column = article.clientWidth - parseFloat(style.paddingLeft)
    - parseFloat(style.paddingRight);
  const wide = [];
  document.querySelectorAll("div.cell_output").forEach((output, index) => {
    output.querySelectorAll("pre, table, div.output").forEach((block) => {
      const width = Math.max(block.scrollWidth, block.getBoundingClientRect().width);
      if (width > column + 1) {
        const lines = block.textContent.split("\\n");
        const text = lines.reduce((a, b) => (a.length < b.length ? b : a));
        wide.push(`output ${index}: ${Math.round(width)} px: ${text.trim().slice(0, 70)}`);
      }
    });
  });
  return {column, wide};
}"""


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_output_is_wider_than_the_text_column(site, reader, name):
    """Every output block (printed text, a table, a widget's fallback), folded or not, fits
    the column the prose is set in, at the reader's 1400 px window: nothing scrolls sideways."""
    _open(reader, f"{site}{name}.html")
    found = reader.evaluate(_WIDE_BLOCKS)
    assert found["column"] > 500, found
    assert found["wide"] == [], f"{name}: column {found['column']} px; {found['wide']}"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_screenshots_of_the_landing_page_and_05(site, reader, theme):
    for name in ("index", "05_field_guide"):
        _open(reader, f"{site}{name}.html")
        reader.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        assert reader.evaluate("document.documentElement.dataset.theme") == theme
        path = screenshot(reader, f"site-{name}-{theme}")
        assert Path(path).stat().st_size > 10_000


def test_a_player_stored_without_its_bytes_becomes_a_note():
    import nbformat
    from IPython.display import Audio

    from scripts.regenerate_outputs import lighten

    html = "<p>SNR 5.0 dB</p>" + Audio([0.0, 0.5, -0.5], rate=8000)._repr_html_()
    notebook = {"metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "source": "", "outputs": [
            {"output_type": "display_data", "data": {"text/html": html}, "metadata": {}}
        ]}
    ]}  # fmt: skip
    notebook = nbformat.from_dict(notebook)
    lighten(notebook)
    staged = build_site.staged_notebook(notebook)
    shown = staged["cells"][0]["outputs"][0]["data"]["text/html"]
    assert " ".join(shown.split()) == f"<p>SNR 5.0 dB</p> {build_site.SILENT_NOTE}"
