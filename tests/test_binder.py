"""repo2docker (Binder, or a hub's image) builds the repository as it is: Python 3.11, the course
lock, the course's own package and the learner's workspace.

``jupyter-repo2docker --no-build`` renders the Dockerfile it would build and prints it, without
a Docker daemon (``DOCKER_HOST`` points at nothing here to prove it). The files it reads:
``runtime.txt`` (the Python), ``requirements.txt`` (installed with its hashes),
``pyproject.toml`` (``pip install .``: ``helpers`` and the course data) and ``postBuild``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPO2DOCKER = shutil.which("jupyter-repo2docker", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def rendered() -> tuple[str, str]:
    """``(Dockerfile, log)`` as repo2docker renders them for this checkout, for Binder's user."""
    if REPO2DOCKER is None:
        pytest.fail("jupyter-repo2docker is not installed: ./course.sh test installs the dev lock")
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    command = [REPO2DOCKER, "--no-build", "--debug", "--user-id", "1000", "--user-name", "jovyan"]
    result = subprocess.run(
        [*command, "."], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout, result.stderr


def run_lines(dockerfile: str) -> list[str]:
    return [line for line in dockerfile.splitlines() if line.startswith("RUN ")]


def test_repo2docker_renders_a_dockerfile_without_docker(rendered):
    dockerfile, _ = rendered
    assert dockerfile.startswith("FROM ") or "\nFROM " in dockerfile
    assert "CMD [" in dockerfile


def test_the_image_runs_python_3_11_in_one_environment(rendered):
    dockerfile, log = rendered
    assert "Building conda environment for python=3.11" in log
    # The environment file repo2docker copies in is its Python 3.11 one (names are escaped).
    assert re.search(r"environment-2epy-2d3-2e11-2dlinux-2d", dockerfile), dockerfile
    # The kernel runs in the server's environment, so the lock's JupyterLab and ipywidgets'
    # extension are the ones the learner sees.
    assert "ENV KERNEL_PYTHON_PREFIX=${NB_PYTHON_PREFIX}" in dockerfile


def test_the_image_installs_the_lock_then_the_course_package_then_the_workspace(rendered):
    dockerfile, _ = rendered
    runs = run_lines(dockerfile)
    lock = runs.index(
        'RUN ${KERNEL_PYTHON_PREFIX}/bin/pip install --no-cache-dir -r "requirements.txt"'
    )
    package = runs.index("RUN ${KERNEL_PYTHON_PREFIX}/bin/pip install --no-cache-dir .")
    post_build = runs.index("RUN ./postBuild")
    assert lock < package < post_build
    assert "COPY --chown=1000:1000 src/requirements.txt ${REPO_DIR}/requirements.txt" in dockerfile


def test_runtime_txt_names_the_python_whose_outputs_ci_proves():
    assert (ROOT / "runtime.txt").read_text().strip() == "python-3.11"
    assert "python3.11 python3.12 python3.13" in (ROOT / "course.sh").read_text()


def test_the_image_python_is_3_11_5_or_later():
    """runtime.txt takes only major.minor (repo2docker refuses ``python-3.11.5``); the 3.11 the
    image gets is the one repo2docker's conda lock pins (the environment file the Dockerfile
    copies, above), and the course lock's soupsieve 4.1.3 needs 3.11.5 or later."""
    import repo2docker

    conda = Path(repo2docker.__file__).parent / "buildpacks" / "conda"
    lock = (conda / "environment.py-3.11-linux-64.lock").read_text()
    micros = {int(m) for m in re.findall(r"/python-3\.11\.(\d+)-", lock)}
    assert micros and min(micros) >= 5, f"repo2docker's Python 3.11 is 3.11.{micros}"


def test_post_build_makes_the_learners_workspace():
    post_build = ROOT / "postBuild"
    assert os.access(post_build, os.X_OK)
    assert "python -m scripts.workspace sync" in post_build.read_text()


def test_requirements_txt_is_the_hashed_course_lock():
    lock = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^tensorflow==2\.21\.\d+ ", lock, re.M)
    assert "--hash=sha256:" in lock


def test_the_readme_binder_badge_opens_the_first_notebook_of_the_workspace_post_build_makes():
    """The badge's address is Binder's (``/v2/gh/<owner>/<repository>/<branch>``) for this
    project on ``main``, and opens 00 in the workspace; the owner is the one placeholder, and
    the README says so beside it."""
    from scripts.workspace import FOLDER

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (badge,) = re.findall(
        r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]\((https://mybinder[^)]*)\)",
        readme,
    )
    match = re.fullmatch(
        r"https://mybinder\.org/v2/gh/(\w+)/([\w-]+)/(\w+)\?urlpath=lab/tree/(\S+)", badge
    )
    assert match, badge
    owner, repository, branch, path = match.groups()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (repository, branch) == (project["name"], "main")
    first = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))[0]
    assert path == f"{FOLDER}/{first.name}"
    note = "the badge works once `OWNER` names the publishing account"
    assert owner != "OWNER" or note in " ".join(readme.split())
