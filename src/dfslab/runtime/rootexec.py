"""Run a program of a release's root: `python3 -S rootexec.py ROOT SHARED -- PROGRAM ARGS...`.

The program runs in a mount namespace of its own in which /usr (and so /bin, /lib and /sbin,
symlinks into /usr on Debian since 12) and /etc/ld.so.cache are the root's, and every other path
is this machine's: dfslab's state directory, the run directory, /proc, /dev, a node's network
namespace (nsenter put us in it) stay what they are. A chroot would need each of those bound in.

Nothing of the swap may reach this machine's own mount namespace: every shared mount is made a
slave first (it still receives mounts from this machine, and sends none back), except SHARED, the
cluster's directory of client mounts, which dfslab made a shared mount of its own, so that a FUSE
client of the release (ceph-fuse) mounts where every process sees it.

Standalone on purpose (run with -S, no dfslab import): it starts every daemon and client tool of a
release, and a Python that imported the package would add ~0.3 s to each `ceph` command.
"""

import ctypes
import os
import sys
import warnings  # noqa: F401 (os.execvp imports it, and after the swap this Python's library is gone)

CLONE_NEWNS = 0x00020000
MS_BIND = 4096
MS_SLAVE = 1 << 19


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    return libc


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        sys.stderr.write(f"dfslab rootexec: {what}: {os.strerror(err)}\n")
        sys.exit(126)


def _unescape(field: str) -> str:
    """A mount point as /proc/self/mountinfo writes it (space, tab, newline, backslash in octal)."""
    return (field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\"))


def shared_mounts() -> list[str]:
    """Mount points of this namespace that propagate to peers (their optional fields say shared:N)."""
    found = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            optional = fields[6:fields.index("-")]
            if any(f.startswith("shared:") for f in optional):
                found.append(_unescape(fields[4]))
    return found


def enter(root: str, shared: str) -> None:
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    for mountpoint in shared_mounts():
        if mountpoint != shared:
            _check(libc.mount(None, mountpoint.encode(), None, MS_SLAVE, None), f"make {mountpoint} a slave")
    left = [m for m in shared_mounts() if m != shared]
    if left:  # never swap /usr where it could propagate back
        sys.stderr.write(f"dfslab rootexec: still shared: {left}\n")
        sys.exit(126)
    for path in ("/usr", "/etc/ld.so.cache"):
        _check(libc.mount((root + path).encode(), path.encode(), None, MS_BIND, None), f"bind {root}{path} on {path}")


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: rootexec.py ROOT SHARED -- PROGRAM [ARGS...]\n")
        sys.exit(2)
    root, shared, program = argv[0], argv[1], argv[3:]
    enter(root, shared)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        sys.stderr.write(f"dfslab rootexec: {program[0]}: {exc.strerror} in the release's root {root}\n")
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
