"""What this machine's block devices ask of the I/O dfslab sends them: the logical block size
O_DIRECT transfers must be a multiple of (512 B on most disks, 4096 B on 4Kn disks and loop
devices made with --sector-size 4096)."""

from __future__ import annotations

import os
from pathlib import Path

SYS_DEV_BLOCK = Path("/sys/dev/block")


def logical_block_size(path: str | os.PathLike) -> int | None:
    """The logical block size of the device holding `path` (its nearest existing ancestor), or
    None where no block device is behind it (tmpfs, overlay, a network filesystem)."""
    here = Path(path).absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    dev = os.stat(here).st_dev
    node = SYS_DEV_BLOCK / f"{os.major(dev)}:{os.minor(dev)}"
    if not node.exists():
        return None
    device = node.resolve()
    # A partition has no queue of its own: its disk (the parent directory in sysfs) has.
    for candidate in (device, device.parent):
        size = candidate / "queue" / "logical_block_size"
        if size.exists():
            return int(size.read_text().strip())
    return None


def direct_io_problem(block_size: int, path: str | os.PathLike) -> str | None:
    """Why O_DIRECT I/O of `block_size` bytes cannot run on the device holding `path`."""
    logical = logical_block_size(path)
    if logical is None or block_size % logical == 0:
        return None
    fits = max(logical, block_size // logical * logical)
    return (f"bs {block_size} B with direct: true on this machine's disk under {path}: its device's logical block is "
            f"{logical} B and O_DIRECT needs a multiple of it; write e.g. bs: {fits}B, or set direct: false")
