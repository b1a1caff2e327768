"""What dfslab may destroy: only what it made, only inside its own roots.

Two rules, both enforced here so no caller can forget them:
- every name a user gives (cluster, node, experiment) matches one plain pattern *before* a
  path, namespace or container name is built from it (`check_name`);
- nothing is removed unless it resolves inside one of dfslab's roots, is not reached through
  a symlink, has no mount under it, and the caller says how it knows the thing is dfslab's
  (`remove_owned_tree`). A refusal raises `UnsafeRemoval`: loud, never a silent skip.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

NAME_PATTERN = r"[a-z][a-z0-9-]{0,23}"
NAME_RULE = "lower-case letters, digits and '-', starting with a letter, at most 24 characters"


class BadName(ValueError):
    """A user-given name that cannot safely become a path or a namespace name."""


class UnsafeRemoval(RuntimeError):
    """dfslab was about to remove something it cannot prove is its own; nothing was removed."""


def check_name(value: object, what: str) -> str:
    """Names become namespace, directory, container and pool names: short and plain, whole-string
    match (so "small\\n", "../x" or "/etc" can never pass)."""
    if not isinstance(value, str) or re.fullmatch(NAME_PATTERN, value) is None:
        raise BadName(f"{what} names are {NAME_RULE} (got {value!r})")
    return value


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below `path` (the host's mount table)."""
    top = str(path)
    points = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        # /proc/mounts escapes spaces and the like as octal (\040).
        point = line.split()[1].encode().decode("unicode_escape")
        if point == top or point.startswith(top.rstrip("/") + "/"):
            points.append(point)
    return points


def inside(path: Path, root: Path) -> bool:
    """`path` is strictly below `root`, both taken as the kernel resolves them."""
    try:
        return Path(os.path.realpath(path)).relative_to(os.path.realpath(root)) != Path(".")
    except ValueError:
        return False


def check_owned(path: Path, roots: list[Path], proof: str) -> Path:
    """`path` itself (not a symlink), below one of `roots`; `proof` says why it is dfslab's."""
    path = Path(path)
    if not os.path.isabs(path):
        raise UnsafeRemoval(f"refusing to remove {path}: not an absolute path")
    if path.is_symlink():
        raise UnsafeRemoval(f"refusing to remove {path}: it is a symlink (to {os.readlink(path)}), not a directory dfslab made")
    if not any(inside(path, root) for root in roots):
        raise UnsafeRemoval(f"refusing to remove {path}: it is not inside dfslab's own directories "
                            f"({', '.join(str(r) for r in roots)})")
    # The last component must be where the kernel finds it: no symlinked parent either.
    if os.path.realpath(path) != os.path.normpath(path):
        raise UnsafeRemoval(f"refusing to remove {path}: it resolves to {os.path.realpath(path)} through a symlink")
    if not proof:
        raise UnsafeRemoval(f"refusing to remove {path}: nothing records it as dfslab's")
    return path


def remove_owned_tree(path: Path, roots: list[Path], proof: str) -> bool:
    """Remove a directory tree dfslab made. Refuses (UnsafeRemoval) unless `check_owned` holds
    and nothing is mounted below it (rmtree would otherwise delete through the mount)."""
    path = check_owned(Path(path), roots, proof)
    if not path.exists():
        return False
    mounted = mounts_under(Path(os.path.realpath(path)))
    if mounted:
        raise UnsafeRemoval(f"refusing to remove {path}: still mounted below it: {', '.join(mounted)}; unmount first")
    shutil.rmtree(path)
    return True


def write_private(path: Path, text: str) -> None:
    """Write a secret (a cephx keyring) readable by its owner only from the first byte: the
    file is created 0600, never written first and chmod-ed after."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT: set it before writing
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
