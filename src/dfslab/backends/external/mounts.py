"""What a path is mounted on, from /proc/mounts: the report says which filesystem was measured."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

# File systems whose data crosses a network to their servers (FUSE clients by their subtype).
NETWORK_TYPES = frozenset({"nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p",
                           "fuse.ceph-fuse", "fuse.glusterfs", "fuse.mfsmount", "fuse.sshfs", "fuse.s3fs"})


def _unescape(field: str) -> str:
    # /proc/mounts escapes space, tab, newline and backslash as octal.
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mount_of(path: str, table: str | None = None) -> dict[str, Any]:
    """The mount holding `path` (the longest mount point that is a prefix of it)."""
    real = str(Path(path).resolve())
    best: dict[str, Any] = {}
    text = table if table is not None else Path("/proc/mounts").read_text()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        point = _unescape(parts[1])
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best.get("mountpoint", "")):
            best = {"source": _unescape(parts[0]), "mountpoint": point, "type": parts[2], "options": parts[3]}
    return best


def loopback(host: str | None) -> bool:
    """`host` (an address or a name) is this machine's loopback."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def over_network(mnt: dict[str, Any]) -> bool:
    """A mount whose data crosses a network link: a network file system whose server (`host:/path`
    sources) is not this machine's loopback; a local disk's (ext4, xfs, tmpfs, ...) does not."""
    if mnt.get("type") not in NETWORK_TYPES:
        return False
    source = mnt.get("source", "")
    return not (":" in source and loopback(source.rsplit(":", 1)[0]))
