"""The course in a real JupyterLab, driven by headless Chromium through Playwright.

One ``jupyter lab`` server and one browser page serve the whole module. The server runs from
this environment (``sys.executable``) on 127.0.0.1, a free port and a random token, with its
own empty JupyterLab settings, workspaces, config and data directories and the test run's
IPython directory (the root ``conftest.py``; no user state leaks in), over a temporary copy of
``notebooks/``: nothing the browser does can touch the repository's notebooks. ``helpers``
comes from this checkout (``PYTHONPATH``).

Chromium is the system's (``/usr/bin/chromium``, Debian package ``chromium``, or ``CHROMIUM``);
Playwright downloads no browser (the ``browser`` fixture is ``tests/conftest.py``'s: the hub
test shares it). Without it a local run skips these tests (one line says how
to install it); under ``CI=true`` they fail. On a failure the page's screenshot, its console
log and the server's log go to ``tests/browser/artifacts/<time>-<test>/`` (or
``$BROWSER_TEST_ARTIFACTS``), named in the failure's report. Every run also leaves screenshots
of each notebook's top and of the lab after each change in ``<that folder>/screenshots/``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest
from browser_support import (
    ARTIFACTS,
    KERNEL_TIMEOUT,
    SCREENSHOTS,
    LabServer,
    open_page,
    require_chromium,
)

_server: LabServer | None = None  # for the failure report, whichever fixture failed


@pytest.fixture(scope="module")
def lab_server():
    """One ``jupyter lab`` for the module, stopped afterwards even when a test failed. It
    starts here; ``page`` waits until it answers (Chromium starts in the meantime)."""
    global _server
    require_chromium()
    tmp = Path(tempfile.mkdtemp(prefix="gradient-clinic-lab-"))
    server = _server = LabServer(tmp)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def page(lab_server, browser):
    """One JupyterLab page for the module (loading JupyterLab takes seconds), opened at
    notebook 00. Console messages and uncaught page errors are kept for the failure report;
    ``page.page_errors`` lists the uncaught ones."""
    lab_server.wait_until_ready()
    for old in SCREENSHOTS.glob("*.png"):  # this run's screenshots only (the site's and the
        if not old.name.startswith(("site-", "hub-")):  # hub test's: their own)
            old.unlink()
    page = open_page(browser)
    page.goto(lab_server.lab_url("notebooks/00_start_here.ipynb"))
    page.locator("#jp-main-statusbar").get_by_text("| Idle").wait_for(timeout=KERNEL_TIMEOUT)
    try:
        yield page
    finally:
        page.context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failed browser test: screenshot, the page's HTML, console log and server log into
    one directory, named in the report."""
    report = yield
    if report.failed and report.when in ("setup", "call") and _server is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        where = ARTIFACTS / f"{time.strftime('%Y%m%d-%H%M%S')}-{item.name}"
        where.mkdir()
        page = item.funcargs.get("page")
        if page is not None:
            try:
                page.screenshot(path=str(where / "page.png"), full_page=True)
            except Exception as error:  # the report matters more
                (where / "screenshot-failed.txt").write_text(repr(error))
            try:  # the DOM says which output went where
                (where / "page.html").write_text(page.content())
            except Exception as error:
                (where / "page-html-failed.txt").write_text(repr(error))
            (where / "console.log").write_text("\n".join(page.console_lines))
        shutil.copy(_server.log_path, where / "jupyter-server.log")
        report.sections.append(
            ("browser test artifacts", f"screenshot, page HTML, console and server log: {where}")
        )
    return report
