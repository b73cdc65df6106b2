"""A class on one machine: N students at once, each running notebooks 04 and 06 in kernels.

    python benchmarks/class_load.py --output benchmarks/results/class_load.txt

Each student is a coroutine that executes ``04_voicing_loss_fix`` and then ``06_capstone``
with nbclient, each notebook in its own kernel started in a temporary copy of the notebook's
folder (the course's notebooks are never written). As in JupyterLab, a student's first kernel
stays alive, idle, while the second runs; both are shut down when the student is done. Every
0.2 s the script reads each kernel's resident memory (RSS, psutil, its child processes
included) and keeps the peaks: per kernel, per student (both kernels together) and for the
machine (every kernel together). It reports the wall time of each notebook, with 1 student and
with 4 (on 2 cores, 0.5 CPU each: a class all pressing Run at once), and the idle server's own
RSS (``jupyter lab``, started on 127.0.0.1 with no browser, stopped after the reading).

Then **memory running short**: one kernel runs 06 while a watchdog sends it SIGKILL the
moment its RSS passes a limit below the measured peak, as the kernel OOM killer does to a
container over its memory limit (a cgroup limit, or ``prlimit``'s address-space limit, is not
used: the address-space limit breaks TensorFlow's import, which reserves far more address
space than it uses). It reports what nbclient raises and the sentence JupyterLab shows (read
from JupyterLab's own files).

From the figures it prints the sizing of a hub (``--class-size``, ``--node-cpus``,
``--node-memory-gib``): the memory guarantee and limit per user, the CPU guarantee and limit,
culling, and the nodes a class needs. Wall times depend on what else the machine runs: the
header gives the load average at the start.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

# Measure the helpers of this checkout, whatever an (editable) install of the course points at.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nbformat
import psutil
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError

from helpers.course import MAX_THREADS, THREADS_VARIABLE, thread_count

NOTEBOOKS = ("04_voicing_loss_fix", "06_capstone")
SAMPLE_SECONDS = 0.2
MIB = 2**20
GIB = 2**30


@dataclass
class Kernel:
    """One notebook's kernel: its process, its timings and its memory."""

    student: int
    notebook: str
    pid: int | None = None
    started: float = 0.0
    seconds: float = 0.0
    peak: int = 0  # bytes
    rss: int = 0  # the last reading
    error: str = ""
    alive: bool = False


@dataclass
class Run:
    students: int
    kernels: list[Kernel] = field(default_factory=list)
    student_peak: dict[int, int] = field(default_factory=dict)
    machine_peak: int = 0
    seconds: float = 0.0


def rss(pid: int) -> int:
    """Resident bytes of a process and its children (0 once it has gone)."""
    try:
        process = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
    except psutil.Error:
        return 0


async def sample(run: Run, stop: asyncio.Event, limit: int | None = None) -> None:
    """Read every live kernel's RSS until ``stop``; with ``limit``, SIGKILL a kernel over it."""
    while not stop.is_set():
        per_student: dict[int, int] = {}
        for kernel in run.kernels:
            if kernel.pid is None or not kernel.alive:
                continue
            kernel.rss = rss(kernel.pid)
            kernel.peak = max(kernel.peak, kernel.rss)
            per_student[kernel.student] = per_student.get(kernel.student, 0) + kernel.rss
            if limit is not None and kernel.rss > limit:
                os.kill(kernel.pid, signal.SIGKILL)
                kernel.error = f"SIGKILL at {kernel.rss / MIB:.0f} MiB"
        for student, total in per_student.items():
            run.student_peak[student] = max(run.student_peak.get(student, 0), total)
        run.machine_peak = max(run.machine_peak, sum(per_student.values()))
        try:
            await asyncio.wait_for(stop.wait(), SAMPLE_SECONDS)
        except TimeoutError:
            pass


async def student(run: Run, number: int, notebooks: tuple[str, ...], folder: Path) -> None:
    """Run the notebooks one after the other, each in its own kernel; keep them all alive
    until the last one is done, as a learner's JupyterLab does."""
    managers, kernels = [], []
    try:
        for name in notebooks:
            kernel = Kernel(number, name)
            run.kernels.append(kernel)
            kernels.append(kernel)
            work = folder / f"student{number}-{name}"
            work.mkdir()
            shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", work)
            nb = nbformat.read(work / f"{name}.ipynb", as_version=4)
            manager = AsyncKernelManager(kernel_name="python3")
            managers.append(manager)
            await manager.start_kernel(cwd=str(work))
            kernel.pid = manager.provisioner.process.pid
            kernel.alive = True
            client = NotebookClient(
                nb, km=manager, timeout=1800, resources={"metadata": {"path": str(work)}}
            )
            kernel.started = time.perf_counter()
            try:
                await client.async_execute()
            except (CellExecutionError, DeadKernelError) as error:
                where = getattr(client, "code_cells_executed", "?")
                first = str(error).strip().splitlines()[0] if str(error).strip() else ""
                kernel.error = (
                    f"{kernel.error}; " if kernel.error else ""
                ) + f"{type(error).__name__}: {first} (code cells run: {where})"
            kernel.seconds = time.perf_counter() - kernel.started
    finally:
        for manager, kernel in zip(managers, kernels):
            kernel.alive = False
            if await manager.is_alive():
                await manager.shutdown_kernel(now=True)


async def class_of(students: int, notebooks: tuple[str, ...], limit: int | None = None) -> Run:
    run = Run(students)
    stop = asyncio.Event()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="class-load-") as folder:
        sampler = asyncio.create_task(sample(run, stop, limit))
        try:
            await asyncio.gather(
                *(student(run, n, notebooks, Path(folder)) for n in range(1, students + 1))
            )
        finally:
            stop.set()
            await sampler
    run.seconds = time.perf_counter() - started
    return run


def server_rss(seconds: float = 5.0) -> int:
    """Peak RSS of an idle ``jupyter lab`` (the single-user server, no kernel), on 127.0.0.1."""
    with tempfile.TemporaryDirectory(prefix="class-load-server-") as folder:
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            "--port=0",
            f"--ServerApp.root_dir={folder}",
            "--IdentityProvider.token=class-load",
            *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        ]
        log = Path(folder) / "server.log"
        with log.open("w") as out:
            server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while "is running at" not in log.read_text() and "http://127.0.0.1" not in (
                log.read_text()
            ):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("jupyter lab did not start:\n" + log.read_text()[-2000:])
                time.sleep(0.5)
            port = re.search(r"http://127\.0\.0\.1:(\d+)/", log.read_text()).group(1)
            for page in ("lab", "api/kernelspecs", "lab/api/settings"):  # as a browser opens it
                url = f"http://127.0.0.1:{port}/{page}?token=class-load"
                with urllib.request.urlopen(url, timeout=60) as response:
                    response.read()
            peak, end = 0, time.monotonic() + seconds
            while time.monotonic() < end:
                peak = max(peak, rss(server.pid))
                time.sleep(SAMPLE_SECONDS)
            return peak
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()


def jupyterlab_dialog() -> str:
    """The sentence JupyterLab shows when a kernel dies (read from its own files)."""
    static = Path(sys.prefix) / "share" / "jupyter" / "lab" / "static"
    for path in sorted(static.glob("*.js")):
        match = re.search(r'"(The kernel for %1 appears to have died[^"]*)"', path.read_text())
        if match:
            return match.group(1).replace("%1", "<notebook>")
    return "(not found in JupyterLab's files)"


def round_up(value: float, step: float) -> float:
    return math.ceil(value / step - 1e-9) * step


def table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        )

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--notebooks", nargs="+", default=list(NOTEBOOKS), help=argparse.SUPPRESS)
    parser.add_argument("--class-size", type=int, default=60)
    parser.add_argument("--node-cpus", type=int, default=8)
    parser.add_argument("--node-memory-gib", type=int, default=32)
    parser.add_argument("--cull-seconds", type=int, default=3600)
    parser.add_argument("--no-oom", action="store_true", help="skip the memory-short run")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(sys.prefix) / "numba-cache"))

    notebooks = tuple(args.notebooks)
    out: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        out.append(text)

    load = os.getloadavg()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    say("# Class load: kernels running notebooks 04 and 06 at once (benchmarks/class_load.py)")
    say(
        f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"{cores} cores, {psutil.virtual_memory().total / GIB:.1f} GiB memory, "
        f"Python {platform.python_version()}"
    )
    say(
        f"# load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min). "
        "Other jobs shared these cores during the run,"
    )
    say(
        "# so wall times are inflated by them; memory is not. Each kernel uses "
        f"{thread_count()} TensorFlow threads ({THREADS_VARIABLE}, else the CPU quota, else"
    )
    say(f"# the cores, at most {MAX_THREADS}: helpers.course.threads).")
    say()

    server = server_rss()
    say(f"idle jupyter lab server (no kernel): {server / MIB:.0f} MiB RSS")
    say()

    runs = [asyncio.run(class_of(n, notebooks)) for n in args.students]
    rows = []
    for run in runs:
        for k in run.kernels:
            rows.append([
                f"{run.students}", f"{k.student}", k.notebook, f"{k.seconds:.0f}",
                f"{k.peak / MIB:.0f}", f"{k.rss / MIB:.0f}", k.error or "ok",
            ])  # fmt: skip
    header = ["students", "student", "notebook", "wall s", "peak MiB", "end MiB", "result"]
    for line in table(rows, header):
        say(line)
    say()
    for run in runs:
        per_notebook = {
            name: max(k.seconds for k in run.kernels if k.notebook == name) for name in notebooks
        }
        say(
            f"{run.students} at once on {cores} cores ({cores / run.students:.1f} CPU each): "
            + ", ".join(f"{n[:2]} took up to {s:.0f} s" for n, s in per_notebook.items())
            + f"; a student's two kernels peaked at {max(run.student_peak.values()) / MIB:.0f} "
            f"MiB; all kernels together at {run.machine_peak / MIB:.0f} MiB"
        )
    say()

    one = runs[0]
    kernel_peak = max(k.peak for k in one.kernels)
    student_peak = max(r_peak for run in runs for r_peak in run.student_peak.values())
    idle_kernel = max(k.rss for run in runs for k in run.kernels if k.notebook == notebooks[0])

    if not args.no_oom:
        peak_06 = max(k.peak for k in one.kernels if k.notebook == notebooks[-1])
        limit = int(peak_06 * 0.6)
        say(
            f"memory running short: 06 alone in a kernel SIGKILLed (as the OOM killer does) when "
            f"its RSS passes {limit / MIB:.0f} MiB (0.6 of its peak)"
        )
        short = asyncio.run(class_of(1, notebooks[-1:], limit=limit))
        kernel = short.kernels[0]
        say(f"  nbclient: {kernel.error}")
        say(f"  JupyterLab (its dialog 'Kernel Restarting'): {jupyterlab_dialog()}")
        say(
            "  The kernel's variables are gone: the server restarts it empty, and the learner "
            "reruns the notebook from the top."
        )
        say()

    memory_guarantee = round_up((server + student_peak) / GIB, 0.5)
    memory_limit = round_up(memory_guarantee * 1.5, 0.5)
    cpu_guarantee, cpu_limit = 0.5, 2.0
    reserve_cpus, reserve_gib = 1, 2  # the node's system pods and kubelet
    by_memory = int((args.node_memory_gib - reserve_gib) // memory_guarantee)
    by_cpu = int((args.node_cpus - reserve_cpus) // cpu_guarantee)
    per_node = min(by_memory, by_cpu)
    nodes = math.ceil(args.class_size / per_node)
    say("hub sizing, from the figures above:")
    say(
        f"  memory per user: guarantee {memory_guarantee:.1f} GiB (the server's "
        f"{server / MIB:.0f} MiB plus a student's two kernels' peak {student_peak / MIB:.0f} "
        f"MiB, rounded up to 0.5 GiB), limit {memory_limit:.1f} GiB (1.5 times: a third "
        "kernel, a rerun)"
    )
    say(
        f"  CPU per user: guarantee {cpu_guarantee:.1f} (the 4-at-once run on 2 cores), "
        f"limit {cpu_limit:.1f} (the 1-student run); TensorFlow then uses 2 threads"
    )
    say(
        f"  largest single kernel: {kernel_peak / MIB:.0f} MiB; a kernel left idle after its "
        f"notebook holds {idle_kernel / MIB:.0f} MiB until it is culled (idle kernels and "
        f"servers culled after {args.cull_seconds} s)"
    )
    say(
        f"  a node of {args.node_cpus} CPUs and {args.node_memory_gib} GiB, less {reserve_cpus} "
        f"CPU and {reserve_gib} GiB for the system: {by_memory} users by memory, {by_cpu} by "
        f"CPU, so {per_node} per node"
    )
    say(
        f"  a class of {args.class_size}: {nodes} nodes of {args.node_cpus} CPUs and "
        f"{args.node_memory_gib} GiB"
    )
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
