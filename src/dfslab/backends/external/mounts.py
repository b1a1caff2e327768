"""What a path is mounted on, from /proc/mounts: the report says which filesystem was measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any


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
