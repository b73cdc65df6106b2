"""The course in a real JupyterLab, driven by headless Chromium through Playwright.

One ``jupyter lab`` server and one browser page serve the whole module. The server runs from
this environment (``sys.executable``) on 127.0.0.1, a free port and a random token, with its
own empty JupyterLab settings, workspaces, config, data and IPython directories (no user
state leaks in), over a temporary copy of ``notebooks/``: nothing the browser does can touch
the repository's notebooks. ``helpers`` comes from this checkout (``PYTHONPATH``).

Chromium is the system's (``/usr/bin/chromium``, Debian package ``chromium``, or ``CHROMIUM``);
Playwright downloads no browser. Without it a local run skips these tests; under ``CI=true``
they fail. On a failure the page's screenshot, its console log and the server's log go to
``tests/browser/artifacts/<time>-<test>/`` (or ``$BROWSER_TEST_ARTIFACTS``), named in the
failure's report.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("BROWSER_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))
START_TIMEOUT = 90  # seconds for the server to answer; generous for a loaded 2-core machine
KERNEL_TIMEOUT = 60_000  # milliseconds, Playwright's unit


class LabServer:
    """A ``jupyter lab`` process over a temporary root, with its log in a file."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.root = tmp / "root"
        shutil.copytree(REPO / "notebooks", self.root / "notebooks",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        self.log_path = tmp / "jupyter-server.log"
        self.token = secrets.token_hex(24)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        for variable in ("JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR",
                         "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR",
                         "IPYTHONDIR"):
            env[variable] = str(tmp / variable.lower())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        # No "news?" toast, no update check: nothing on the page but the course.
        notification = Path(env["JUPYTERLAB_SETTINGS_DIR"], "@jupyterlab", "apputils-extension",
                            "notification.jupyterlab-settings")
        notification.parent.mkdir(parents=True)
        notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        command = [
            sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}", "--ServerApp.terminals_enabled=False",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(command, env=env, cwd=self.root, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def api(self, method: str, path: str, body: dict | None = None):
        """Call the server's REST API; the decoded JSON answer, or None."""
        request = urllib.request.Request(
            f"{self.url}/api/{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with code {self.process.returncode}; "
                                   f"its log: {self.log_path}")
            try:
                self.api("GET", "status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(f"jupyter lab did not answer within {START_TIMEOUT} s; "
                           f"its log: {self.log_path}")

    def lab_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"

    def stop(self) -> None:
        """Shut down the server and its kernels: politely, then by signal."""
        if self.process.poll() is None:
            try:
                self.api("POST", "shutdown")
                self.process.wait(timeout=15)
            except Exception:  # noqa: BLE001 - whatever went wrong, the process must go
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        self._log.close()


_server: LabServer | None = None  # for the failure report, whichever fixture failed


def _check_chromium() -> None:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        message = (f"browser tests need Chromium at {CHROMIUM}: "
                   "sudo apt-get install -y chromium (or set CHROMIUM=/path/to/chromium)")
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no browser: {message}", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="module")
def lab_server():
    """One ``jupyter lab`` for the module, stopped afterwards even when a test failed."""
    global _server
    _check_chromium()
    tmp = Path(tempfile.mkdtemp(prefix="gradient-clinic-lab-"))
    server = _server = LabServer(tmp)
    try:
        server.wait_until_ready()
        yield server
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    _check_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def page(browser, lab_server):
    """One JupyterLab page for the module (loading JupyterLab takes seconds), opened at
    notebook 00. Console messages and uncaught page errors are kept for the failure report;
    ``page.page_errors`` lists the uncaught ones."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.console_lines = []
    page.page_errors = []
    page.on("console", lambda m: page.console_lines.append(f"[{m.type}] {m.text}"))
    page.on("pageerror", lambda e: (page.page_errors.append(str(e)),
                                    page.console_lines.append(f"[pageerror] {e}")))
    page.goto(lab_server.lab_url("notebooks/00_start_here.ipynb"))
    page.locator("#jp-main-statusbar").get_by_text("| Idle").wait_for(timeout=KERNEL_TIMEOUT)
    try:
        yield page
    finally:
        context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failed browser test: screenshot, console log and server log into one directory,
    named in the report."""
    report = yield
    if report.failed and report.when in ("setup", "call") and _server is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        where = ARTIFACTS / f"{time.strftime('%Y%m%d-%H%M%S')}-{item.name}"
        where.mkdir()
        page = item.funcargs.get("page")
        if page is not None:
            try:
                page.screenshot(path=str(where / "page.png"), full_page=True)
            except Exception as error:  # noqa: BLE001 - the report matters more
                (where / "screenshot-failed.txt").write_text(repr(error))
            (where / "console.log").write_text("\n".join(page.console_lines))
        shutil.copy(_server.log_path, where / "jupyter-server.log")
        report.sections.append(("browser test artifacts",
                                f"screenshot, console and server log: {where}"))
    return report
