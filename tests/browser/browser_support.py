"""The pieces of the browser tests that are not fixtures: where things are, the server, and
driving JupyterLab's page.

``conftest.py`` builds the fixtures from these (``tests/conftest.py`` the browser, which the hub
test shares: pytest's ``pythonpath`` puts this folder on the path); ``test_jupyterlab.py`` and
``tests/test_hub.py`` drive JupyterLab with them.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("BROWSER_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))
# Every run's pictures of the course as the browser shows it: each notebook's top, and the lab
# after each control change (CONTRIBUTING.md, "Tests"; .ci/run keeps them).
SCREENSHOTS = ARTIFACTS / "screenshots"
START_TIMEOUT = 90  # seconds for the server to answer; generous for a loaded 2-core machine
KERNEL_TIMEOUT = 60_000  # milliseconds (Playwright's unit): a kernel's start, TensorFlow's import


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here (one line, with the fix), or None."""
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return None
    return (
        f"browser tests need Chromium, not found at {CHROMIUM}: "
        "sudo apt-get install -y chromium (or set CHROMIUM=/path/to/chromium)"
    )


def require_chromium() -> None:
    """Without Chromium a browser test skips, saying how to install it; under CI=true it
    fails."""
    if (missing := chromium_missing()) is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true, and {missing}", pytrace=False)
        pytest.skip(missing)


def open_page(browser: Browser) -> Page:
    """A new page in its own context (its own cookies), the size of a laptop's screen. Its
    console messages and uncaught errors are kept: ``page.console_lines`` for a failure's
    report, ``page.page_errors`` the uncaught ones. Close it with ``page.context.close()``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.console_lines = []
    page.page_errors = []
    page.on("console", lambda m: page.console_lines.append(f"[{m.type}] {m.text}"))
    page.on(
        "pageerror",
        lambda e: (page.page_errors.append(str(e)), page.console_lines.append(f"[pageerror] {e}")),
    )
    return page


def screenshot(target, name: str) -> Path:
    """Save what ``target`` (a Playwright page, or an element: scrolled into view, whole)
    shows as ``SCREENSHOTS/<name>.png``; the path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / (re.sub(r"[^\w.=-]+", "_", name).strip("_") + ".png")
    target.screenshot(path=str(path))
    return path


class LabServer:
    """A ``jupyter lab`` process over a temporary root, with its log in a file."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.root = tmp / "root"
        shutil.copytree(
            REPO / "notebooks",
            self.root / "notebooks",
            ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
        )
        self.log_path = tmp / "jupyter-server.log"
        self.token = secrets.token_hex(24)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        for variable in (
            "JUPYTERLAB_SETTINGS_DIR",
            "JUPYTERLAB_WORKSPACES_DIR",
            "JUPYTER_CONFIG_DIR",
            "JUPYTER_DATA_DIR",
            "JUPYTER_RUNTIME_DIR",
        ):
            env[variable] = str(tmp / variable.lower())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        # No "news?" toast, no update check: nothing on the page but the course.
        notification = Path(
            env["JUPYTERLAB_SETTINGS_DIR"],
            "@jupyterlab",
            "apputils-extension",
            "notification.jupyterlab-settings",
        )
        notification.parent.mkdir(parents=True)
        notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        command = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.terminals_enabled=False",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command,
            env=env,
            cwd=self.root,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def api(self, method: str, path: str, body: dict | None = None):
        """Call the server's REST API; the decoded JSON answer, or None."""
        request = urllib.request.Request(
            f"{self.url}/api/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"jupyter lab exited with code {self.process.returncode}; "
                    f"its log: {self.log_path}"
                )
            try:
                self.api("GET", "status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(
            f"jupyter lab did not answer within {START_TIMEOUT} s; its log: {self.log_path}"
        )

    def lab_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"

    def stop(self) -> None:
        """Shut down the server and its kernels: politely, then by signal."""
        if self.process.poll() is None:
            try:
                self.api("POST", "shutdown")
                self.process.wait(timeout=15)
            except Exception:  # whatever went wrong, the process must go
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        self._log.close()


# ------------------------------------------------------------------------ driving the page

CURRENT = re.compile(r"\blm-mod-current\b")  # the class of the current tab
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
# What JupyterLab shows when a document, a kernel or a widget goes wrong.
ERROR_SIGNS = (
    ".jp-Dialog",
    ".Toastify__toast--error",
    ".Toastify__toast--warning",
    ".jp-OutputArea-output:has-text('Error displaying widget')",
)


def menu(page: Page, *path: str) -> None:
    """Click through the main menu, e.g. ``menu(page, "File", "Close All Tabs")``."""
    page.locator("#jp-menu-panel").get_by_role("menuitem", name=path[0], exact=True).click()
    for label in path[1:]:  # by its label (a menu item's accessible name adds its shortcut)
        page.locator(".lm-Menu .lm-Menu-itemLabel").filter(
            has_text=re.compile(f"^{re.escape(label)}$")
        ).click()


def open_notebook(page: Page, path: str, wait: bool = True) -> None:
    """File > Open from Path…; the tab becomes the current one (``wait``: once it is there)
    and its kernel starts."""
    menu(page, "File", "Open from Path…")
    dialog = page.locator(".jp-Dialog")
    dialog.locator("input").fill(path)
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(dialog).to_have_count(0)
    if wait:
        expect(tab(page, Path(path).name)).to_have_class(CURRENT, timeout=KERNEL_TIMEOUT)


RAN = re.compile(r"\[\d+\]")  # a cell's prompt once it has run


def run_cell(page: Page, cell: Locator, wait: bool = True) -> Locator:
    """Run one cell as a learner does (click its prompt, Ctrl+Enter); with ``wait``, until its
    prompt shows an execution count. Its prompt."""
    prompt = cell.locator(".jp-InputPrompt")
    prompt.click()
    page.keyboard.press("Control+Enter")
    if wait:
        expect(prompt).to_have_text(RAN, timeout=KERNEL_TIMEOUT)
    return prompt


def tab(page: Page, name: str) -> Locator:
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name)


def notebook_panel(page: Page, name: str) -> Locator:
    """Make the notebook's tab current, wait until its kernel is idle, return its panel."""
    tab(page, name).click()
    expect(tab(page, name)).to_have_class(CURRENT)
    expect(
        page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle", exact=True)
    ).to_be_visible(timeout=KERNEL_TIMEOUT)
    return page.locator(f"#{tab(page, name).get_attribute('data-id')}")


def assert_no_error_shown(page: Page, where: str) -> None:
    for sign in ERROR_SIGNS:
        shown = page.locator(sign)
        assert shown.count() == 0, f"{where}: JupyterLab shows {sign}: {shown.all_inner_texts()}"
    assert not page.page_errors, f"{where}: uncaught errors in the page: {page.page_errors}"
