"""How many threads TensorFlow uses: the CPUs the kernel is given, not the machine's cores.

TensorFlow sizes its thread pools from the cores it may be scheduled on
(``os.sched_getaffinity``), and a container on a hub is usually allowed all of the node's
cores but only a quota of their time (Zero to JupyterHub's ``singleuser.cpu.limit``, The
Littlest JupyterHub's ``limits.cpu``). Forty threads sharing a quota of two CPUs wait on each
other. ``thread_count`` decides, in order:

1. ``GRADIENT_CLINIC_THREADS``, if set (a hub sets it; ``./course.sh portability`` sets 1 and
   8): that many threads, not capped;
2. else the cgroup's CPU quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` over
   ``cpu.cfs_period_us``; the smallest along the process's cgroup and its parents), rounded
   up, at most the cores it may run on;
3. else the cores it may run on;

capped at ``MAX_THREADS`` in cases 2 and 3: the course's models are small (a batch of two
clips, 32 GRU units), and a learner's laptop keeps its other cores.

``import helpers`` calls ``apply_thread_count``, which never raises on a setting: a malformed
``GRADIENT_CLINIC_THREADS`` gets a warning and the count from the CPUs instead. It sets
``TF_NUM_INTRAOP_THREADS`` and ``TF_NUM_INTEROP_THREADS`` (values already set are kept).
TensorFlow reads both when it runs its first operation and makes its pools, so they work even
when TensorFlow was imported first, as long as nothing has run; after that the pools are made
and stay as they are.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, MutableMapping
from pathlib import Path

__all__ = [
    "THREADS_VARIABLE",
    "MAX_THREADS",
    "TENSORFLOW_VARIABLES",
    "cgroup_cpu_limit",
    "thread_count",
    "apply_thread_count",
]

THREADS_VARIABLE = "GRADIENT_CLINIC_THREADS"
MAX_THREADS = 4
TENSORFLOW_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
CGROUP_ROOT = Path("/sys/fs/cgroup")
MEMBERSHIP = Path("/proc/self/cgroup")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _folders(base: Path, cgroup_path: str) -> list[Path]:
    """``base`` joined with the process's cgroup path and each of its parents, and ``base``
    itself (in a container the cgroup file system is often mounted at the container's own
    cgroup, so the path the process reports is not under it)."""
    parts = [p for p in cgroup_path.split("/") if p]
    found = [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]
    return [folder for folder in found if folder.is_dir()]


def _v2_limit(folder: Path) -> float | None:
    text = _read(folder / "cpu.max")  # "max 100000" (no quota) or "200000 100000"
    if not text:
        return None
    quota, _, period = text.partition(" ")
    if quota == "max" or not quota.isdigit() or not period.isdigit() or int(period) == 0:
        return None
    return int(quota) / int(period)


def _v1_limit(folder: Path) -> float | None:
    quota = _read(folder / "cpu.cfs_quota_us")  # -1: no quota
    period = _read(folder / "cpu.cfs_period_us")
    if not quota or not period or not quota.isdigit() or not period.isdigit():
        return None
    return int(quota) / int(period) if int(period) and int(quota) else None


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, membership: Path = MEMBERSHIP) -> float | None:
    """The CPUs' worth of time this process's cgroup may use (quota over period, the smallest
    along its cgroup and their parents; v2 and v1), or None when there is no quota or no
    cgroup file system (macOS)."""
    limits = []
    for line in (_read(membership) or "").splitlines():
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":  # cgroup v2: "0::/path"
            limits += [_v2_limit(folder) for folder in _folders(root, path)]
        elif "cpu" in controllers.split(","):  # v1: "4:cpu,cpuacct:/path"
            for mount in {controllers, "cpu", "cpu,cpuacct"}:
                limits += [_v1_limit(folder) for folder in _folders(root / mount, path)]
    if not _read(membership):  # no /proc: the v2 root alone, if there is one
        limits.append(_v2_limit(root))
    found = [limit for limit in limits if limit is not None]
    return min(found) if found else None


def _schedulable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1  # macOS has no affinity


def thread_count(
    environ: Mapping[str, str] | None = None,
    root: Path = CGROUP_ROOT,
    membership: Path = MEMBERSHIP,
) -> int:
    """The threads TensorFlow should use here: ``GRADIENT_CLINIC_THREADS`` if set, else the
    cgroup's CPU quota rounded up, else the schedulable cores; the last two at most
    ``MAX_THREADS`` (module docstring). A value of the variable that is not a whole number of
    1 or more raises ``ValueError``."""
    environ = os.environ if environ is None else environ
    text = environ.get(THREADS_VARIABLE, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(
                f"{THREADS_VARIABLE} must be a whole number of threads, 1 or more; got "
                f"{text!r}. Unset it to follow the CPUs the kernel is given."
            )
        return int(text)
    cores = _schedulable_cores()
    quota = cgroup_cpu_limit(root, membership)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, min(cores, MAX_THREADS))


def apply_thread_count(
    environ: MutableMapping[str, str] | None = None,
    root: Path = CGROUP_ROOT,
    membership: Path = MEMBERSHIP,
) -> dict[str, str]:
    """Set ``TF_NUM_INTRAOP_THREADS`` and ``TF_NUM_INTEROP_THREADS`` to ``thread_count()``
    where they are not set yet; the two values now in force."""
    environ = os.environ if environ is None else environ
    count = None
    for name in TENSORFLOW_VARIABLES:
        if name not in environ:
            count = _count_or_warn(environ, root, membership) if count is None else count
            environ[name] = str(count)
    return {name: environ[name] for name in TENSORFLOW_VARIABLES}


def _count_or_warn(environ: Mapping[str, str], root: Path, membership: Path) -> int:
    """``thread_count``, or, when ``GRADIENT_CLINIC_THREADS`` is malformed, a warning that
    says so and the count from the CPUs (as if it were unset)."""
    try:
        return thread_count(environ, root, membership)
    except ValueError as error:
        unset = {k: v for k, v in environ.items() if k != THREADS_VARIABLE}
        count = thread_count(unset, root, membership)
        warnings.warn(f"{error} Using {count} for now.", RuntimeWarning, stacklevel=3)
        return count
