"""What the test suite leaves on the machine: the session takes a snapshot before the first test
and compares after the last (tests/conftest.py). Anything new that is the suite's kind of thing
fails the session, named: processes, mounts, network namespaces, links of the root namespace,
loop devices, dfslab clusters still recorded, Kubernetes node state dirs. Only what this session
made counts: processes by the mark they inherit, the rest as the difference of the two snapshots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

# Every process the suite starts carries this in its environment (tests/conftest.py sets it once,
# in the process that starts pytest-xdist's workers too; dfslab's daemons, engines and node agents
# inherit it): it marks this session's processes and no one else's.
SESSION_MARK = "DFSLAB_TEST_SESSION"


def _netns() -> set[str]:
    return set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()


def root_links() -> set[str]:
    """The links of the root network namespace, by name (a veth's '@peer' suffix dropped)."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def _mounts() -> set[str]:
    # mountinfo's fields 5 (mount point) and the file system type after the ' - ' separator
    # (/run/netns itself is iproute2's: the first `ip netns add` makes it a mount point for good.)
    points = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if left.split()[4] != "/run/netns":
            points.add(f"{left.split()[4]} ({right.split()[0]})")
    return points


def _loops() -> set[str]:
    out = subprocess.run(["losetup", "--json", "--list"], capture_output=True, text=True).stdout
    return {f"{d['name']} -> {d.get('back-file')}" for d in (json.loads(out).get("loopdevices", []) if out.strip() else [])}


def _k8s_state() -> set[str]:
    root = Path("/run/dfslab-k8s")
    return {str(p) for p in root.iterdir()} if root.is_dir() else set()


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:  # gone, or a zombie (a child killed by Ctrl-C, not reaped yet)
        return []


def _processes(session: str, own: set[int]) -> set[str]:
    """Live processes that carry this session's mark, other than pytest's own."""
    found = set()
    for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline", "status", "create_time"]):
        info = proc.info
        if info["pid"] in own:
            continue
        try:
            environ = proc.environ()
        except psutil.Error:  # gone, or a zombie (its environment went with its memory)
            continue
        if environ.get(SESSION_MARK) == session:
            found.add(f"pid {info['pid']} ({info['status']}, parent {info['ppid']}, started "
                      f"{time.strftime('%H:%M:%S', time.localtime(info['create_time']))}, "
                      f"{environ.get('DFSLAB_CLUSTER', 'no')} cluster mark) "
                      f"{' '.join(info['cmdline'] or [info['name']])[:160]}")
    return found


# What the machine holds, by kind: a snapshot before and after, compared.
MACHINE = {"network namespaces": _netns, "links": root_links, "mounts": _mounts, "loop devices": _loops,
           "Kubernetes node state": _k8s_state}


def machine_state() -> dict[str, set[str]]:
    return {kind: read() for kind, read in MACHINE.items()}


@dataclass
class Snapshot:
    """The machine as the suite found it. `left()` is this session's processes and clusters, and
    (unless `machine=False`: scripts/test-suite.sh, whose phases run side by side, checks those
    once around them all) what is on the machine now that was not then."""
    home: str
    machine: bool = True
    before: dict[str, set[str]] = field(default_factory=machine_state)

    def left(self) -> dict[str, list[str]]:
        """What is there now and was not before, by kind; empty when the suite left nothing."""
        me = psutil.Process()
        # pytest-xdist's workers (execnet starts them as `python -c "...sys.stdin.readline()..."`)
        own = {me.pid} | {c.pid for c in me.children() if "sys.stdin.readline()" in " ".join(_cmdline(c))}
        clusters = Path(self.home) / "clusters"
        now = {
            "processes": _processes(os.environ[SESSION_MARK], own),
            "dfslab clusters": {p.name for p in clusters.iterdir()} if clusters.is_dir() else set(),
        }
        if self.machine:
            now.update(self.machine_left())
        return {kind: sorted(items) for kind, items in now.items() if items}

    def machine_left(self) -> dict[str, set[str]]:
        return {kind: items - self.before[kind] for kind, items in machine_state().items()}


def main(argv: list[str]) -> int:
    """`leftovers.py snapshot FILE` before the phases, `leftovers.py check FILE` after them."""
    command, path = argv
    if command == "snapshot":
        Path(path).write_text(json.dumps({kind: sorted(items) for kind, items in machine_state().items()}))
        return 0
    before = Snapshot(home="", before={kind: set(items) for kind, items in json.loads(Path(path).read_text()).items()})
    left = {kind: sorted(items) for kind, items in before.machine_left().items() if items}
    for kind, items in left.items():
        print(f"the test suite left {kind}:" + "".join(f"\n    {item}" for item in items))
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
