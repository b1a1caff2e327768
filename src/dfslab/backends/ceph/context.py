"""What every daemon module needs: the spec, the runtime, the layout, the admin channel."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...safety import write_private
from ...runtime import Runtime
from ...spec import ClusterSpec
from .admin import CephAdmin
from .conf import CephLayout

# glibc's per-thread arenas multiply a daemon's RSS on a small box; two is plenty here.
DAEMON_ENV = {"MALLOC_ARENA_MAX": "2"}


@dataclass
class CephContext:
    spec: ClusterSpec
    runtime: Runtime
    layout: CephLayout
    fsid: str
    addresses: dict[str, str]
    admin: CephAdmin = field(init=False)

    def __post_init__(self) -> None:
        self.admin = CephAdmin(self.runtime, self.layout)

    def start_daemon(self, kind: str, ident: str | int, node: str) -> None:
        """`ceph-<kind> -f` on `node`, tracked as `<kind>.<ident>`."""
        name = f"{kind}.{ident}"
        argv = [f"ceph-{kind}", "-f", "--cluster", "ceph", "-i", str(ident), "-c", str(self.layout.conf)]
        if kind != "mon":
            argv += ["--public-addr", self.addresses[node]]
        self.runtime.spawn(name, node, argv, env=DAEMON_ENV,
                           meta={"kind": kind, "log": self.daemon_log(name), "mounts": self.daemon_paths(name)})

    def daemon_paths(self, name: str) -> list[list[str]]:
        """[path, "ro"|"rw"] a daemon reads or writes (what a container of it gets): the conf file,
        its own data directory with its own keyring, and the shared run/log/crash/class dirs;
        never the admin keyring or another daemon's key."""
        root = self.layout.root
        return [[str(self.layout.conf), "ro"], [str(self.layout.data(name)), "rw"], [str(root / "run"), "rw"],
                [str(root / "logs"), "rw"], [str(root / "crash"), "rw"], [str(root / "classes"), "ro"]]

    def daemon_log(self, name: str) -> str:
        return str(self.layout.root / "logs" / f"ceph-{name}.log")

    def write_keyring(self, daemon: str, text: str) -> None:
        path = self.layout.data(daemon)
        path.mkdir(parents=True, exist_ok=True)
        write_private(path / "keyring", text)
