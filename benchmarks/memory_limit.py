"""What a student sees when memory runs short, under a real memory limit: 06 in a kernel whose
memory cgroup has a limit below what 06 needs.

    sudo python benchmarks/memory_limit.py --output benchmarks/results/memory_limit.txt

It makes a memory cgroup (cgroup v1 ``memory.limit_in_bytes`` or v2 ``memory.max``; root, on
Linux), joins it, starts a kernel from there (so the kernel and this process, standing in for
the student's server, share the limit, as on a hub where the limit is the user's), and runs
``06_capstone`` with nbclient in a temporary copy of its folder. It reports how the kernel
ended (the signal, the cgroup's OOM-kill count), what nbclient raised, and the sentence
JupyterLab shows when a kernel dies (read from JupyterLab's own files, as
``class_load.py`` does). It leaves the cgroup and removes it at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import class_load  # noqa: E402  (the JupyterLab sentence, the RSS reader)

MIB = 2**20
V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


def make_cgroup(name: str, limit: int) -> tuple[Path, Path, str]:
    """(the cgroup's folder, its parent, the file whose ``oom_kill`` line counts kills)."""
    if (V1 / "memory.limit_in_bytes").exists():
        folder = V1 / name
        folder.mkdir()
        (folder / "memory.limit_in_bytes").write_text(str(limit))
        return folder, V1, "memory.oom_control"
    if (V2 / "cgroup.controllers").exists() and "memory" in (V2 / "cgroup.controllers").read_text():
        folder = V2 / name
        folder.mkdir()
        (folder / "memory.max").write_text(str(limit))
        (folder / "memory.swap.max").write_text("0")
        return folder, V2, "memory.events"
    raise SystemExit("no memory cgroup to write here (needs root and cgroup v1 or v2 memory)")


def peak_usage(folder: Path) -> int:
    """The cgroup's peak memory use in bytes (-1 where the kernel does not say)."""
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        if (folder / name).exists():
            return int((folder / name).read_text())
    return -1


def oom_kills(folder: Path, events: str) -> int:
    for line in (folder / events).read_text().splitlines():
        if line.startswith("oom_kill "):
            return int(line.split()[1])
    return -1


async def run_06(work: Path) -> tuple[str, int | None, int]:
    """Run 06 in a new kernel: (what nbclient raised, the kernel's exit code, cells run)."""
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    nb = nbformat.read(work / "06_capstone.ipynb", as_version=4)
    manager = AsyncKernelManager(kernel_name="python3")
    await manager.start_kernel(cwd=str(work))
    process = manager.provisioner.process
    client = NotebookClient(
        nb, km=manager, timeout=1800, resources={"metadata": {"path": str(work)}}
    )
    raised = "nothing: 06 ran to the end"
    try:
        await client.async_execute()
    except (CellExecutionError, DeadKernelError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raised = f"{type(error).__name__}: {first}"
    finally:
        code = process.poll()
        if await manager.is_alive():
            await manager.shutdown_kernel(now=True)
    return raised, code, getattr(client, "code_cells_executed", -1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-mib", type=int, nargs="+", default=[2000, 500])
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    lines = [
        f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"Python {platform.python_version()}; JupyterLab, when a kernel dies: "
        f"{class_load.jupyterlab_dialog()}"
    ]
    for limit_mib in args.limit_mib:
        folder, parent, events = make_cgroup(
            f"gradient-clinic-memory-{os.getpid()}", limit_mib * MIB
        )
        try:
            (folder / "cgroup.procs").write_text(str(os.getpid()))
            with tempfile.TemporaryDirectory(prefix="memory-limit-") as work:
                shutil.copy(ROOT / "notebooks" / "06_capstone.ipynb", work)
                raised, code, cells = asyncio.run(run_06(Path(work)))
            kills, peak = oom_kills(folder, events), peak_usage(folder)
        finally:
            (parent / "cgroup.procs").write_text(str(os.getpid()))
            folder.rmdir()
        ended = f"signal {-code}" if code is not None and code < 0 else "running to the end"
        lines += [
            f"limit {limit_mib} MiB ({'cgroup v1' if parent == V1 else 'cgroup v2'}) for this "
            f"process, the server's stand-in, and the kernel: peak use {peak / MIB:.0f} MiB; the "
            f"kernel: {ended}; OOM kills: {kills}; code cells run: {cells}; nbclient: {raised}"
        ]
    report = "\n".join(lines)
    print(report)
    if args.output:
        args.output.write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
