"""A class on a real JupyterHub, as INSTRUCTORS.md's hub recipe sets it up: the hub on
127.0.0.1 (configurable-http-proxy from npm, the dummy authenticator, a local spawner), each
student's server from the students' hub environment (``./course.sh hub``: requirements-hub.txt,
nbgrader's authoring tools off), each student's copy of the student edition by nbgitpuller.

Two students log in, each gets a copy, and 00 runs in both their kernels at once; their
JupyterLab's settings have ipywidgets' extension and none of nbgrader's authoring tools; a
second pull keeps a student's change. Then a student, in Chromium, follows the course's
nbgitpuller link to 06 through the hub's login page into JupyterLab on their copy: no
authoring tool shows in its menus, command palette, launcher, side bars or notebook toolbar,
and 06's gradient labs, run there, are drawn as widgets (not their text fallback) and answer
a control. Everything the test starts is stopped at the end.

It needs the hub environment (``GRADIENT_CLINIC_HUB_VENV``, made by ``VENV=... ./course.sh
hub``) and configurable-http-proxy (``CONFIGURABLE_HTTP_PROXY`` or on PATH; ``npm install
configurable-http-proxy``); ``.ci/run`` makes both. Without them it skips, and fails under CI;
so do the browser tests without Chromium (``tests/browser/browser_support.py``).
Measured on two cores beside one other job: 36 s (20 s without the browser part), of it 00
in both kernels at once 7 s and 06's cells in the browser 10 s; while other jobs loaded them,
152 s before the browser part (00: 92 s). Most of it is the kernels running the notebooks.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest
import requests
from browser_support import (
    KERNEL_TIMEOUT,
    STDERR,
    assert_no_error_shown,
    menu,
    notebook_panel,
    open_page,
    run_cell,
    screenshot,
    tab,
)
from playwright.sync_api import Locator, Page, expect

ROOT = Path(__file__).resolve().parents[1]
HUB_VENV = os.environ.get("GRADIENT_CLINIC_HUB_VENV")
PROXY = os.environ.get("CONFIGURABLE_HTTP_PROXY") or shutil.which("configurable-http-proxy")
STUDENTS = ("alice", "bob")
COPY = "gradient-clinic"  # the folder nbgitpuller makes in each student's home
_spec = importlib.util.spec_from_file_location("course_tasks", ROOT / "scripts" / "course.py")
course_tasks = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = course_tasks
_spec.loader.exec_module(course_tasks)
AUTHORING = course_tasks.AUTHORING_PLUGINS  # what ./course.sh hub turns off
CAPSTONE = "06_capstone.ipynb"  # the notebook whose gradient labs a student's browser draws
# What nbgrader's authoring plugins would show in JupyterLab: the formgrader's and the course
# list's commands, "Create Assignment" (a side panel and a command), the "Validate" button.
AUTHORING_LABEL = re.compile(r"\b(formgrader|create assignment|course list|validate)\b", re.I)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _git(folder: Path, *args: str) -> None:
    identity = ["-c", "user.name=Instructor", "-c", "user.email=instructor@example.org"]
    subprocess.run(["git", *identity, *args], cwd=folder, check=True, capture_output=True)


@dataclass
class Hub:
    url: str
    token: str  # the test's own service: creates users' tokens, reads servers
    folder: Path
    edition: Path  # the student edition's git repository, what nbgitpuller pulls

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"token {self.token}"}
        response = requests.request(
            method, f"{self.url}/hub/api{path}", headers=headers, timeout=60, **kwargs
        )
        response.raise_for_status()
        return response

    def home(self, student: str) -> Path:
        return self.folder / "home" / student


CONFIG = """
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.command = ["{proxy}"]
c.ConfigurableHTTPProxy.pid_file = "{folder}/proxy.pid"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"  # a local process per student, homes below
c.SimpleLocalProcessSpawner.home_dir_template = "{folder}/home/{{username}}"
c.Spawner.cmd = ["{venv}/bin/jupyterhub-singleuser"]
c.Spawner.args = {args}
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {{"PATH": "{venv}/bin:/usr/bin:/bin"}}
c.JupyterHub.services = [{{"name": "class-test", "api_token": "{token}"}}]
c.JupyterHub.load_roles = [
    {{
        "name": "class-test",
        "scopes": ["admin:users", "admin:servers", "tokens", "access:servers"],
        "services": ["class-test"],
    }}
]
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    missing = [
        text
        for text, absent in (
            (
                "the hub environment: GRADIENT_CLINIC_HUB_VENV=... (VENV=... ./course.sh hub)",
                not HUB_VENV or not (Path(HUB_VENV) / "bin" / "jupyterhub").is_file(),
            ),
            ("configurable-http-proxy: npm install configurable-http-proxy", PROXY is None),
        )
        if absent
    ]
    if missing:
        reason = "the hub test needs " + " and ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("hub")
    edition = folder / "student-edition"
    subprocess.run(
        [sys.executable, ROOT / "scripts" / "make_student_edition.py", edition],
        check=True,
        capture_output=True,
    )
    _git(edition, "init", "--quiet", "--initial-branch", "main")
    _git(edition, "add", ".")
    _git(edition, "commit", "--quiet", "-m", "The student edition")
    port, token = _free_port(), secrets.token_hex(16)
    root_args = ["--allow-root"] if os.getuid() == 0 else []  # CI runs as root
    (folder / "jupyterhub_config.py").write_text(
        CONFIG.format(
            port=port,
            hub_port=_free_port(),
            proxy_api_port=_free_port(),
            folder=folder,
            proxy=PROXY,
            venv=HUB_VENV,
            args=root_args,
            token=token,
        )
    )
    log = (folder / "jupyterhub.log").open("w")
    process = subprocess.Popen(
        [f"{HUB_VENV}/bin/jupyterhub", "-f", "jupyterhub_config.py"],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    the_hub = Hub(f"http://127.0.0.1:{port}", token, folder, edition)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                the_hub.api("GET", "/")
                break
            except requests.RequestException:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterHub did not start:\n{_tail(folder)}")
                time.sleep(0.5)
        yield the_hub
    finally:
        servers = _server_pids(the_hub)
        process.send_signal(signal.SIGTERM)  # the hub stops the servers it spawned, and its proxy
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pid in servers + _proxy_pid(folder):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        log.close()


def _tail(folder: Path) -> str:
    return "\n".join((folder / "jupyterhub.log").read_text().splitlines()[-40:])


def _server_pids(hub: Hub) -> list[int]:
    try:
        users = hub.api("GET", "/users", params={"include_stopped_servers": "false"}).json()
    except requests.RequestException:
        return []
    return [
        server["state"]["pid"]
        for user in users
        for server in user.get("servers", {}).values()
        if server.get("state", {}).get("pid")
    ]


def _proxy_pid(folder: Path) -> list[int]:
    pid_file = folder / "proxy.pid"
    return [int(pid_file.read_text())] if pid_file.is_file() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _login(hub: Hub, student: str) -> requests.Session:
    """Log in through the hub's login form, as a student does (the dummy authenticator takes
    any password), and start the student's server."""
    session = requests.Session()
    session.get(f"{hub.url}/hub/login", timeout=30).raise_for_status()
    response = session.post(
        f"{hub.url}/hub/login",
        data={"username": student, "password": "any", "_xsrf": session.cookies["_xsrf"]},
        timeout=30,
        allow_redirects=False,
    )
    assert response.status_code == 302, response.text[-2000:]
    hub.api("POST", f"/users/{student}/server")
    deadline = time.monotonic() + 180
    while not hub.api("GET", f"/users/{student}").json()["servers"].get("", {}).get("ready"):
        assert time.monotonic() < deadline, (
            f"{student}'s server did not start:\n{_tail(hub.folder)}"
        )
        time.sleep(1)
    return session


def _pull(hub: Hub, token: str, student: str) -> str:
    """nbgitpuller's pull of the student edition into the student's home (what its link's
    page asks the server for)."""
    response = requests.get(
        f"{hub.url}/user/{student}/git-pull/api",
        params={"repo": str(hub.edition), "branch": "main", "targetpath": COPY},
        headers={"Authorization": f"token {token}"},
        timeout=300,
    )
    response.raise_for_status()
    return response.text


def _user_token(hub: Hub, student: str) -> str:
    return hub.api("POST", f"/users/{student}/tokens", json={"note": "class test"}).json()["token"]


async def _run_notebook(hub: Hub, student: str, token: str, path: str) -> dict:
    """Run every code cell of the student's copy of a notebook in a kernel of their server, as
    JupyterLab does (the kernel the notebook names, its folder as the working directory):
    ``{"errors": [...], "prefix": the kernel's sys.prefix}``."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Authorization": f"token {token}"}
    notebook = json.loads((hub.home(student) / path).read_text())
    kernel_name = notebook["metadata"]["kernelspec"]["name"]
    session = requests.post(
        f"{hub.url}/user/{student}/api/sessions",
        headers=headers,
        json={"path": path, "type": "notebook", "kernel": {"name": kernel_name}},
        timeout=60,
    )
    session.raise_for_status()
    kernel = session.json()["kernel"]["id"]
    url = f"{hub.url.replace('http', 'ws')}/user/{student}/api/kernels/{kernel}/channels"
    socket_ = await websocket_connect(HTTPRequest(url, headers=headers), max_message_size=2**28)
    errors = []
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    sources = [("".join(c["source"]), c["metadata"].get("tags", [])) for c in cells]
    sources.append(("import sys; print(sys.prefix, end='')", []))
    prefix = ""
    for source, tags in sources:
        msg_id = uuid.uuid4().hex
        await socket_.write_message(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "msg_type": "execute_request",
                        "session": kernel,
                        "username": student,
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "content": {"code": source, "silent": False, "stop_on_error": True},
                    "channel": "shell",
                }
            )
        )
        while True:
            message = json.loads(await asyncio.wait_for(socket_.read_message(), 600))
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if kind == "error" and "raises-exception" not in tags:
                errors.append(f"{message['content']['ename']}: {message['content']['evalue']}")
            if kind == "stream":
                prefix = message["content"]["text"]
            if kind == "status" and message["content"]["execution_state"] == "idle":
                break
    socket_.close()
    return {"errors": errors, "prefix": prefix}


@pytest.fixture(scope="module")
def class_run(hub):
    """Both students logged in and given their copy, then 00 run in both kernels at once."""
    sessions = {student: _login(hub, student) for student in STUDENTS}
    tokens = {student: _user_token(hub, student) for student in STUDENTS}
    pulls = {student: _pull(hub, tokens[student], student) for student in STUDENTS}

    async def both():
        runs = [_run_notebook(hub, s, tokens[s], f"{COPY}/00_start_here.ipynb") for s in STUDENTS]
        return dict(zip(STUDENTS, await asyncio.gather(*runs)))

    servers = dict(zip(STUDENTS, _server_pids(hub)))  # in the order the students started
    idle = {student: _rss_mib(pid) for student, pid in servers.items()}
    started = time.monotonic()
    runs = asyncio.run(both())
    seconds = time.monotonic() - started
    for student, pid in servers.items():  # a figure for INSTRUCTORS.md, not an assertion
        print(
            f"{student}: the server alone {idle[student][0]:.0f} MiB; after 00, the server "
            f"{_rss_mib(pid)[0]:.0f} MiB and its kernel {_rss_mib(pid)[1]:.0f} MiB"
        )
    return sessions, pulls, runs, seconds, tokens


def _rss_mib(pid: int) -> tuple[float, float]:
    """The resident memory of a process and of its children together, in MiB (Linux)."""

    def rss(p: int) -> float:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            return 0.0
        return next(
            (
                int(line.split()[1]) / 1024
                for line in status.splitlines()
                if line.startswith("VmRSS:")
            ),
            0.0,
        )

    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = [int(c) for c in children.read_text().split()] if children.exists() else []
    return rss(pid), sum(rss(k) for k in kids)


def test_each_student_gets_their_own_copy_of_the_student_edition(hub, class_run):
    _, pulls, _, _, _ = class_run
    for student in STUDENTS:
        copy = hub.home(student) / COPY / "00_start_here.ipynb"
        assert copy.is_file(), pulls[student]
        solutions = [
            cell
            for cell in json.loads(copy.read_text())["cells"]
            if cell["cell_type"] == "markdown" and "```python" in "".join(cell["source"])
        ]
        assert solutions == [], "the student edition has no solution"


def test_00_runs_in_both_students_kernels_at_once_in_the_hub_environment(hub, class_run):
    _, _, runs, seconds, _ = class_run
    print(f"00 in two kernels at once: {seconds:.0f} s")
    for student in STUDENTS:
        assert runs[student]["errors"] == [], runs[student]["errors"]
        assert Path(runs[student]["prefix"]).resolve() == Path(HUB_VENV).resolve()


def test_the_students_jupyterlab_has_the_widgets_and_no_authoring_tools(hub, class_run):
    sessions, _, _, _, _ = class_run
    for student in STUDENTS:
        page = sessions[student].get(f"{hub.url}/user/{student}/lab", timeout=60)
        page.raise_for_status()
        config = json.loads(
            page.text.split('<script id="jupyter-config-data" type="application/json">')[1].split(
                "</script>"
            )[0]
        )
        extensions = {e["name"] for e in config["federated_extensions"]}
        assert "@jupyter-widgets/jupyterlab-manager" in extensions
        disabled = set(config["disabledExtensions"])
        assert set(AUTHORING) <= disabled, disabled
        formgrader = sessions[student].get(f"{hub.url}/user/{student}/formgrader", timeout=60)
        assert formgrader.status_code == 404


def test_pulling_again_keeps_a_students_change(hub, class_run):
    _, _, _, _, tokens = class_run
    student = STUDENTS[0]
    mine = hub.home(student) / COPY / "00_start_here.ipynb"
    notebook = json.loads(mine.read_text())
    notebook["cells"][0]["source"] = ["# My notes on the first cell\n"]
    mine.write_text(json.dumps(notebook, indent=1))
    upstream = hub.edition / "00_start_here.ipynb"
    changed = json.loads(upstream.read_text())
    changed["cells"][0]["source"] = ["# The course changed this cell\n"]
    upstream.write_text(json.dumps(changed, indent=1))
    (hub.edition / "NEWS.md").write_text("A new file from the course.\n")
    _git(hub.edition, "add", ".")
    _git(hub.edition, "commit", "--quiet", "-m", "The course changed")
    _pull(hub, tokens[student], student)
    kept = json.loads(mine.read_text())
    assert kept["cells"][0]["source"] == ["# My notes on the first cell\n"]
    assert (hub.home(student) / COPY / "NEWS.md").is_file()


def test_the_hub_environment_culls_idle_kernels_with_open_tabs_and_names_the_exchange(hub):
    etc = Path(HUB_VENV) / "etc" / "jupyter"
    culling = json.loads((etc / "jupyter_server_config.d" / "gradient-clinic.json").read_text())
    assert culling["MappingKernelManager"]["cull_connected"] is True
    assert culling["MappingKernelManager"]["cull_idle_timeout"] == 3600
    students = (etc / "nbgrader_config.py").read_text()
    assert "c.Exchange.root = '/srv/nbgrader/exchange'" in students
    grading = [f"{HUB_VENV}/bin/python", "-c", "import gradient_clinic_grading"]
    assert subprocess.run(grading, capture_output=True).returncode != 0  # the instructor's only


# ------------------------------------------------------------------ in a student's browser


@pytest.fixture(scope="module")
def student_page(browser, hub, class_run):  # no Chromium: skip before the class runs
    """A student's browser (Chromium): the course's nbgitpuller link to 06 (INSTRUCTORS.md's),
    the hub's login page on the way, then JupyterLab on their copy of 06 with its kernel idle.
    The second student's: the first one's copy changes in another test. A screenshot of the
    page at the end, whatever happened."""
    student = STUDENTS[1]
    page = open_page(browser)
    link = f"{hub.url}/hub/user-redirect/git-pull?" + urlencode(
        {
            "repo": str(hub.edition),
            "branch": "main",
            "targetpath": COPY,
            "urlpath": f"lab/tree/{COPY}/{CAPSTONE}",
        }
    )
    try:
        page.goto(link)
        page.locator("#username_input").fill(student)  # the dummy authenticator: any password
        page.locator("#password_input").fill("any")
        page.locator("#login_submit").click()
        expect(tab(page, CAPSTONE)).to_be_visible(timeout=KERNEL_TIMEOUT)
        assert page.url.startswith(f"{hub.url}/user/{student}/lab"), page.url
        notebook_panel(page, CAPSTONE)
        yield page
    finally:
        screenshot(page, "hub-student-lab")
        page.context.close()


def labels_a_student_finds(page: Page) -> dict[str, list[str]]:
    """Every label JupyterLab shows the student, by place: each main menu's items, the command
    palette's items and categories, the launcher's cards, the side bars' tabs and the current
    notebook's toolbar (text and tooltips)."""
    found = {"menus": []}
    for item in page.locator("#jp-menu-panel").get_by_role("menuitem").all():
        item.click()
        expect(page.locator(".lm-Menu")).to_be_visible()
        found["menus"] += [item.inner_text(), *page.locator(".lm-Menu-itemLabel").all_inner_texts()]
        page.keyboard.press("Escape")
        expect(page.locator(".lm-Menu")).to_have_count(0)
    toolbar = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar")
    found["notebook toolbar"] = _texts_and_tooltips(toolbar.locator(".jp-Toolbar-item"))
    found["side bars"] = _texts_and_tooltips(page.locator(".jp-SideBar .lm-TabBar-tab"))
    menu(page, "View", "Activate Command Palette")
    palette = page.locator(".lm-CommandPalette")
    expect(palette.locator(".lm-CommandPalette-input")).to_be_visible()
    found["command palette"] = _texts_and_tooltips(  # hidden ones too (a disabled command)
        palette.locator(".lm-CommandPalette-header, .lm-CommandPalette-item")
    )
    page.keyboard.press("Escape")
    menu(page, "File", "New Launcher")
    launcher = page.locator(".jp-Launcher-body")
    expect(launcher.locator(".jp-LauncherCard").first).to_be_visible()
    found["launcher"] = launcher.locator(
        ".jp-Launcher-sectionTitle, .jp-LauncherCard-label"
    ).all_inner_texts()
    return found


def _texts_and_tooltips(elements: Locator) -> list[str]:
    return elements.evaluate_all(
        """elements => elements.flatMap(e => [e, ...e.querySelectorAll('[title]')])
            .flatMap(e => [e.textContent.trim(), e.getAttribute('title') || ''])
            .filter(text => text !== '')"""
    )


def test_a_students_jupyterlab_in_the_browser_shows_no_authoring_tool(student_page):
    """What the extension list says, as the student sees it: no formgrader, no "Create
    Assignment", no "Validate", no course list, in any menu, the command palette, the
    launcher, a side bar or the notebook's toolbar; and the Assignment List in a menu."""
    found = labels_a_student_finds(student_page)
    assert all(found.values()), (
        f"nothing read from {[p for p, labels in found.items() if not labels]}"
    )
    authoring = {
        place: [label for label in labels if AUTHORING_LABEL.search(label)]
        for place, labels in found.items()
    }
    assert not any(authoring.values()), f"nbgrader's authoring tools show: {authoring}"
    # What a student does use: the Assignments tab, opened from nbgrader's menu.
    assert "Assignment List" in found["menus"], found["menus"]
    assert_no_error_shown(student_page, "the student's JupyterLab")
    # JupyterLab's own question about Jupyter news is not put to a class (it shows at load).
    expect(student_page.get_by_text("official Jupyter news")).to_have_count(0)


def cells_the_labs_need(cells: list[dict]) -> list[int]:
    """The indices of 06's gradient-lab cells (their code makes a ``GradientLab``) and of the
    cells above them they need, in order: for each name a cell reads and does not bind, the
    last cell above it that binds it (never a proof), and what that cell needs in turn."""
    names = {
        index: _bound_and_read("".join(cell["source"]))
        for index, cell in enumerate(cells)
        if cell["cell_type"] == "code" and "proof" not in cell["metadata"].get("tags", [])
    }
    todo = [index for index in names if "GradientLab(" in "".join(cells[index]["source"])]
    needed = set(todo)
    while todo:
        index = todo.pop()
        for name in names[index][1]:
            binders = [above for above in names if above < index and name in names[above][0]]
            if binders and binders[-1] not in needed:
                needed.add(binders[-1])
                todo.append(binders[-1])
    return sorted(needed)


def _bound_and_read(source: str) -> tuple[set[str], set[str]]:
    """The names a cell's code binds (assigned, imported, defined; anywhere in it), and the
    names it reads without binding them (builtins left out)."""
    bound, read = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
    return bound, read - bound - set(dir(builtins))


def test_06s_gradient_labs_render_as_widgets_in_the_students_browser(hub, student_page):
    """The student runs the cells 06's two gradient labs need (``cells_the_labs_need``: about
    a fifth of 06's run time), in their page, in their copy; each lab is drawn as ipywidgets
    (its controls, its summary line, its table and plot), not as the text a page without
    ipywidgets' extension shows; and the second one (a learner's own) answers its clip
    dropdown."""
    page = student_page
    cells = json.loads((hub.home(STUDENTS[1]) / COPY / CAPSTONE).read_text())["cells"]
    needed = cells_the_labs_need(cells)
    panel = notebook_panel(page, CAPSTONE)
    on_page = panel.locator(".jp-Notebook .jp-Cell")
    expect(on_page).to_have_count(len(cells))
    for index in needed:
        run_cell(page, on_page.nth(index))
        errors = on_page.nth(index).locator(STDERR)
        assert errors.count() == 0, f"{CAPSTONE}, cell {index}: {errors.all_inner_texts()}"
    labs = [index for index in needed if "GradientLab(" in "".join(cells[index]["source"])]
    assert len(labs) == 2, f"06's lab cells are {labs}; this test knows two (06's, a learner's)"
    for index in labs:
        cell = on_page.nth(index)
        output = cell.locator(".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output")
        expect(output).to_have_count(1)
        # Without ipywidgets' extension the page draws the lab's text/plain fallback, and the
        # output says that MIME type; the widget renderer's output says none, and holds views.
        drawn_as = output.get_attribute("data-mime-type")
        assert drawn_as is None, (
            f"{CAPSTONE}, cell {index}: the lab is drawn as {drawn_as}, not as widgets:\n"
            f"{output.inner_text()}"
        )
        lab = output.locator(":scope > .jupyter-widgets.gradient-lab")  # the lab's box view
        for part in (
            ".gradient-lab-clip select",
            ".gradient-lab-else_scale .noUi-handle",
            ".gradient-lab-mode button",
            ".gradient-lab-table table",
            ".gradient-lab-table img",
        ):
            expect(lab.locator(part).first).to_be_visible(timeout=KERNEL_TIMEOUT)
        expect(lab.locator(".gradient-lab-summary")).to_contain_text("clip=")
        assert lab.locator(".gradient-lab-table img").evaluate("img => img.naturalWidth") > 0
        screenshot(cell.locator(".jp-Cell-outputArea"), f"hub-06-cell-{index}")
    own_lab = on_page.nth(labs[-1]).locator(".jupyter-widgets.gradient-lab")
    own_lab.locator(".gradient-lab-clip select").select_option(label="word")
    expect(own_lab.locator(".gradient-lab-summary")).to_contain_text(
        "clip=word", timeout=KERNEL_TIMEOUT
    )
    assert_no_error_shown(page, CAPSTONE)
