"""TensorFlow's thread count follows the CPUs a kernel is given: the hub's variable, else the
container's cgroup quota (v2 and v1, made here as files under tmp_path), else the cores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.course import (
    MAX_THREADS,
    THREADS_VARIABLE,
    apply_thread_count,
    cgroup_cpu_limit,
    thread_count,
)

ROOT = Path(__file__).resolve().parents[1]


def cgroup_v2(tmp_path: Path, cpu_max: dict[str, str], path: str = "/") -> tuple[Path, Path]:
    """A cgroup v2 file system with ``cpu.max`` in the named folders, and a membership file
    saying the process is in ``path``."""
    root = tmp_path / "cgroup"
    root.mkdir()
    for folder, text in cpu_max.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "cpu.max").write_text(text + "\n")
    membership = tmp_path / "self-cgroup"
    membership.write_text(f"0::{path}\n")
    return root, membership


def cgroup_v1(tmp_path: Path, quota: int, period: int = 100000) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    folder = root / "cpu,cpuacct"
    folder.mkdir(parents=True)
    (folder / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (folder / "cpu.cfs_period_us").write_text(f"{period}\n")
    membership = tmp_path / "self-cgroup"
    membership.write_text("5:memory:/\n4:cpu,cpuacct:/\n0::/\n")
    return root, membership


@pytest.fixture
def eight_cores(monkeypatch):
    """A machine whose process may run on eight cores, and no thread variable set."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)


def test_the_hubs_variable_wins_and_is_not_capped(tmp_path, eight_cores, monkeypatch):
    root, membership = cgroup_v2(tmp_path, {".": "100000 100000"})
    monkeypatch.setenv(THREADS_VARIABLE, "8")
    assert thread_count(root=root, membership=membership) == 8
    monkeypatch.setenv(THREADS_VARIABLE, " 1 ")
    assert thread_count(root=root, membership=membership) == 1


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_a_bad_value_of_the_variable_says_what_is_expected(bad, eight_cores, monkeypatch):
    monkeypatch.setenv(THREADS_VARIABLE, bad)
    with pytest.raises(ValueError, match=f"{THREADS_VARIABLE} must be a whole number.*{bad!r}"):
        thread_count()


def test_applying_a_bad_value_warns_and_follows_the_cpus(tmp_path, eight_cores):
    """What ``import helpers`` does with a malformed variable: a warning, never an error."""
    root, membership = cgroup_v2(tmp_path, {".": "200000 100000"})
    environ = {THREADS_VARIABLE: "two"}
    with pytest.warns(RuntimeWarning, match=f"{THREADS_VARIABLE} must be.*'two'.*Using 2"):
        applied = apply_thread_count(environ, root, membership)
    assert applied == {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "2"}


def test_import_helpers_never_raises_on_a_malformed_variable():
    code = "import helpers, os\nprint(os.environ['TF_NUM_INTRAOP_THREADS'])"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("TF_NUM_")},
            THREADS_VARIABLE: "1.5",
        },
        cwd=ROOT / "notebooks",
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 1
    assert f"{THREADS_VARIABLE} must be a whole number" in result.stderr


@pytest.mark.parametrize(
    "cpu_max, threads", [("200000 100000", 2), ("50000 100000", 1), ("150000 100000", 2)]
)
def test_a_cgroup_v2_quota_sets_the_threads(tmp_path, eight_cores, cpu_max, threads):
    root, membership = cgroup_v2(tmp_path, {".": cpu_max})
    assert thread_count(root=root, membership=membership) == threads


def test_no_quota_means_the_cores_capped(tmp_path, eight_cores):
    root, membership = cgroup_v2(tmp_path, {".": "max 100000"})
    assert cgroup_cpu_limit(root, membership) is None
    assert thread_count(root=root, membership=membership) == MAX_THREADS == 4


def test_a_quota_above_the_cores_is_the_cores(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    root, membership = cgroup_v2(tmp_path, {".": "800000 100000"})
    assert thread_count(root=root, membership=membership) == 2


def test_the_smallest_quota_along_the_processs_cgroup_counts(tmp_path, eight_cores):
    """The Littlest JupyterHub's limits.cpu is a systemd unit's quota: the process sees its
    cgroup's path in /proc/self/cgroup, below the root of the file system."""
    root, membership = cgroup_v2(
        tmp_path,
        {
            ".": "max 100000",
            "system.slice": "max 100000",
            "system.slice/jupyter-ada.service": "100000 100000",
        },
        path="/system.slice/jupyter-ada.service",
    )
    assert cgroup_cpu_limit(root, membership) == 1.0
    assert thread_count(root=root, membership=membership) == 1


def test_a_container_whose_cgroup_path_is_not_under_its_mount(tmp_path, eight_cores):
    """Without a cgroup namespace the reported path is the host's; the mount's own root is
    the container's cgroup."""
    root, membership = cgroup_v2(tmp_path, {".": "300000 100000"}, path="/kubepods/pod1/abc")
    assert thread_count(root=root, membership=membership) == 3


@pytest.mark.parametrize("quota, threads", [(-1, MAX_THREADS), (100000, 1), (250000, 3)])
def test_a_cgroup_v1_quota_sets_the_threads(tmp_path, eight_cores, quota, threads):
    root, membership = cgroup_v1(tmp_path, quota)
    assert thread_count(root=root, membership=membership) == threads


def test_no_cgroup_file_system_means_the_cores(tmp_path, eight_cores):
    assert cgroup_cpu_limit(tmp_path / "none", tmp_path / "none-either") is None
    assert thread_count(root=tmp_path / "none", membership=tmp_path / "none-either") == 4


def test_apply_sets_both_tensorflow_variables_and_keeps_values_already_set(tmp_path, eight_cores):
    root, membership = cgroup_v2(tmp_path, {".": "200000 100000"})
    environ = {}
    applied = apply_thread_count(environ, root, membership)
    assert applied == environ == {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "2"}
    environ = {"TF_NUM_INTRAOP_THREADS": "6", THREADS_VARIABLE: "3"}
    assert apply_thread_count(environ, root, membership) == {
        "TF_NUM_INTRAOP_THREADS": "6",
        "TF_NUM_INTEROP_THREADS": "3",
    }


def run_python(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TF_NUM_")}
    environ.pop(THREADS_VARIABLE, None)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**environ, **env},
        cwd=ROOT / "notebooks",
        check=True,
    )
    return result.stdout.strip()


def test_import_helpers_hands_the_variable_to_tensorflow():
    code = (
        "import helpers, os\n"
        "print(os.environ['TF_NUM_INTRAOP_THREADS'], os.environ['TF_NUM_INTEROP_THREADS'])"
    )
    assert run_python(code, **{THREADS_VARIABLE: "3"}) == "3 3"
    assert run_python(code, **{THREADS_VARIABLE: "3", "TF_NUM_INTEROP_THREADS": "1"}) == "3 1"


def test_tensorflow_makes_its_pools_from_the_variable_even_when_imported_first():
    """TensorFlow reads the variables at its first operation: one thread each gives fewer
    threads in the process than eight each."""
    code = (
        "import os, tensorflow as tf, helpers\n"
        "tf.linalg.matmul(tf.ones([64, 64]), tf.ones([64, 64])).numpy()\n"
        "print(len(os.listdir('/proc/self/task')))"
    )
    if not Path("/proc/self/task").is_dir():
        pytest.skip("counts threads in /proc (Linux)")
    one = int(run_python(code, **{THREADS_VARIABLE: "1", "TF_CPP_MIN_LOG_LEVEL": "3"}))
    eight = int(run_python(code, **{THREADS_VARIABLE: "8", "TF_CPP_MIN_LOG_LEVEL": "3"}))
    assert eight >= one + 2 * (8 - 1), (one, eight)
