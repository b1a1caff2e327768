"""What every MooseFS module shares: where a node's daemon keeps its files, the addresses, and
how a daemon is configured (`configure`: its command, in the foreground) and started on a node
(`start`; on runtime kubernetes kube.py makes a pod of it instead)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...runtime import Runtime
from ...spec import ClusterSpec

MATOML_PORT, MATOCS_PORT, MATOCL_PORT = 9419, 9420, 9421  # the master's ports: metaloggers, chunk servers, clients
CHUNK_PORT = 9422


@dataclass
class MooseContext:
    spec: ClusterSpec
    runtime: Runtime
    root: Path  # <state>/moosefs
    addresses: dict[str, str]

    @property
    def master(self) -> str:
        return self.spec.moosefs.master_node(self.spec)

    @property
    def master_address(self) -> str:
        return self.addresses[self.master]

    def daemon_dir(self, kind: str, node: str) -> Path:
        path = self.root / f"{kind}.{node}"
        (path / "data").mkdir(parents=True, exist_ok=True)
        return path


def config(values: dict[str, object]) -> str:
    """A MooseFS .cfg file: KEY = VALUE lines. Every daemon runs as root (dfslab's state is
    root's, 0700) and at normal priority (its default nice -19 would favour it over the tools)."""
    base = {"WORKING_USER": "root", "WORKING_GROUP": "root", "NICE_LEVEL": 0, "LOCK_MEMORY": 0,
            "DISABLE_OOM_KILLER": 0}
    return "".join(f"{key} = {value}\n" for key, value in {**base, **values}.items())


@dataclass(frozen=True)
class Daemon:
    """One MooseFS daemon as configured: where it runs, its home (config, data) and its command."""

    kind: str  # master, metalogger, chunkserver
    node: str
    home: Path
    argv: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.kind}.{self.node}"


def configure(ctx: MooseContext, kind: str, node: str, program: str, values: dict[str, object],
              extra: tuple[str, ...] = ()) -> Daemon:
    """Write `kind.node`'s config; the daemon that runs `program` with it in the foreground."""
    home = ctx.daemon_dir(kind, node)
    cfg = home / f"{program}.cfg"
    cfg.write_text(config({"DATA_PATH": home / "data", "SYSLOG_IDENT": f"{program}-{node}", **values}))
    return Daemon(kind, node, home, (program, "-f", *extra, "-c", str(cfg)))


def start(ctx: MooseContext, daemon: Daemon) -> None:
    """Start `daemon` on its node, tracked like every daemon of dfslab's."""
    # mounts: the paths a daemon in a container gets (its config, data and chunks), and no others.
    ctx.runtime.spawn(daemon.name, daemon.node, list(daemon.argv),
                      meta={"kind": daemon.kind, "log": str(daemon.home / "data"), "mounts": [[str(daemon.home), "rw"]]})
