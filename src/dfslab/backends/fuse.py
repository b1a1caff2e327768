"""FUSE clients (ceph-fuse, glusterfs): started in the foreground on a node, tracked like a
daemon, and recorded as a mount before it exists so `down` unmounts it even after a crash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..runtime import Runtime
from . import BackendError
from ..polling import wait_until


def is_mounted(path: Path) -> bool:
    return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())


def fuse_mount(runtime: Runtime, name: str, node: str, argv: list[str], mnt: Path,
               env: dict[str, str] | None = None, timeout: float = 60) -> Path:
    if is_mounted(mnt):
        return mnt
    mnt.mkdir(parents=True, exist_ok=True)
    runtime.state.add_resource("mounts", str(mnt))
    # nsenter --net only (not `ip netns exec`): the mount stays visible to every process.
    proc = runtime.spawn(name, node, argv, env=env, meta={"kind": "client", "mount": str(mnt)})
    def mounted() -> bool:
        if is_mounted(mnt):
            return True
        if runtime.procs.exited(name) is not None:
            raise BackendError(f"{argv[0]} exited without mounting {mnt}; see {proc.log}")
        return False
    wait_until(mounted, f"{argv[0]} to mount {mnt}", timeout, 0.1,
               lambda _: BackendError(f"{argv[0]} did not mount {mnt} within {timeout:.0f} s; see {proc.log}"))
    return mnt


def unmount(mountpoint: str) -> None:
    """Lazy unmount: a FUSE mount whose daemon is gone would hang every stat() of it."""
    for argv in (["fusermount", "-u", "-z", mountpoint], ["umount", "-l", mountpoint]):
        if shutil.which(argv[0]) and subprocess.run(argv, capture_output=True).returncode == 0:
            return


def fuse_unmount(runtime: Runtime, name: str, mnt: Path) -> None:
    """Unmount, stop the client process, forget both."""
    unmount(str(mnt))
    runtime.procs.stop(name, timeout=10)
    runtime.state.remove_resource("mounts", str(mnt))
