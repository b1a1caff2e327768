"""The MooseFS backend: orders its daemon modules; everything dfslab knows about MooseFS lives in
this package."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ...polling import wait_until
from ...runtime import CLIENT
from ..silence import SilenceOf
from ..abilities import ClientSetup, HealthAlarms, RollingUpgrade, SecondClients
from .. import Backend, BackendError, Chart, Facts, Progress, release_versions, table
from . import SET_COPIES, chunkserver, cli, client, context, master, metalogger
from .context import Daemon, MooseContext


class MooseFSBackend(Backend, SecondClients, HealthAlarms, ClientSetup, RollingUpgrade):
    name = "moosefs"
    facts = Facts(
        required_programs=("mfsmaster", "mfschunkserver", "mfsmetalogger", "mfsmount", "mfscli"),
        log_dirs=("logs", "moosefs/*/data"),
        offers={"fs": ""},
        peek="mfscli -SIN",
        metadata_servers=r"master\..+",
        metadata_path="MooseFS's one master, which holds every file's metadata in memory (Lustre's MDS)",
        client_write_ack=("mfsmount acknowledges O_DIRECT and O_SYNC writes from its write-back cache (1 MiB at least: "
                          "moosefs.write_cache) and sends them on after; only fsync waits for the chunk servers. fio's "
                          "4 KiB writes, 4 jobs at depth 1: 28.8 k IOPS at 0.043 ms with O_DIRECT, 27.1 k with O_SYNC, "
                          "2.37 k with fsync=1 (GlusterFS with strict-o-direct: 2.39 k): the write rows' latency is "
                          "the client's, their bytes reach the chunk servers within the step (from_storage)"),
        # A chunk server's outage under writes (its stale chunks found by the master's 60 s chunk
        # loop, master.py): whole again 71 and 104 s after the undo; a killed master: 5 s.
        typical_recovery_seconds=70.0,
        # A chunk locked for writing is never replicated and the lock lasts 120 s (LOCKTIMEOUT): a
        # master killed mid-write can leave one chunk with one copy for 120 s plus a 60 s loop (CI
        # once: 1 chunk endangered 180 s after the undo).
        recovery_timeout_seconds=300.0,
        charts=(Chart(r"moosefs\..*", "count", "MooseFS: chunk servers connected, chunks under goal and missing, "
                      "degraded (0 OK, 1 degraded) over time"),),
    )

    @classmethod
    def versions(cls, spec=None) -> dict[str, str]:
        return release_versions(spec, "moosefs", ["mfsmaster", "-v"])

    @classmethod
    def targets_for(cls, spec) -> frozenset[str]:
        return frozenset({"fs"})

    @classmethod
    def daemon_names(cls, spec) -> list[str] | None:
        m = spec.moosefs
        logger = m.metalogger_node(spec)
        return ([f"master.{m.master_node(spec)}"] + ([f"metalogger.{logger}"] if logger else [])
                + [f"chunkserver.{n}" for n in m.chunk_nodes(spec)])

    def __init__(self, runtime, spec):
        super().__init__(runtime, spec)
        self.ctx = MooseContext(spec, runtime, self.state.dir / "moosefs", self.state.read().get("addresses", {}))

    def daemons(self) -> list[Daemon]:
        """Every daemon configured, in the order they start: the master, its metalogger, the chunk servers."""
        logger = metalogger.daemon(self.ctx)
        return [master.daemon(self.ctx), *([logger] if logger else []),
                *(chunkserver.daemon(self.ctx, n) for n in self.spec.moosefs.chunk_nodes(self.spec))]

    def deploy(self, progress: Progress, timeout: float) -> None:
        if not self.runtime.network_per_node:
            raise BackendError(f"MooseFS needs an address per node (runtime local or docker; this is "
                               f"{self.runtime.where}): a chunk server refuses to register through the loopback")
        progress("starting the master", f"on {self.ctx.master} ({self.ctx.master_address})")
        for daemon in self.daemons():
            context.start(self.ctx, daemon)
        self.join(progress, timeout)

    def join(self, progress: Progress, timeout: float) -> None:
        """Wait for every chunk server and metalogger to register with the master, then mount the
        client and set the copies."""
        m, chunk = self.spec.moosefs, self.spec.moosefs.chunk_nodes(self.spec)
        loggers = int(m.metalogger)
        progress("waiting for chunk servers", f"{len(chunk)} ({', '.join(chunk)}) and {loggers} metalogger(s) "
                 f"registered with the master")

        def registered() -> bool:
            view = self._view()
            return len(view.servers) == len(chunk) and len(view.metaloggers) == loggers
        wait_until(registered, f"{len(chunk)} chunk servers and {loggers} metalogger(s) registered", timeout, 0.2,
                   lambda _: BackendError(f"not every chunk server and metalogger registered within {timeout:.0f} s; "
                                          f"see their logs in {self.state.dir / 'logs'}"))
        progress("mounting", f"mfsmount in the client namespace at {client.mount_point(self.ctx, CLIENT)[1]}")
        mnt = self.mount(CLIENT)
        self._set_copies(mnt)

    def _set_copies(self, mnt: Path) -> None:
        """Every file under the mount kept in moosefs.goal copies, as this release says it (SET_COPIES)."""
        goal = self.spec.moosefs.goal
        for words in SET_COPIES[self.spec.moosefs.release]:
            argv = [w.format(goal=goal, mnt=mnt, copies=",".join("*" * goal)) for w in words]
            res = self.runtime.run(CLIENT, argv, timeout=60, check=False)
            if res.returncode != 0:
                raise BackendError(f"{' '.join(argv[:2])} on the client's mount failed (exit {res.returncode}): "
                                   f"{(res.stderr or res.stdout).strip()[-300:]}")

    def _view(self) -> cli.MasterView:
        """The master's answer, or an empty view while it does not answer."""
        try:
            return cli.ask(self.ctx, timeout=3)
        except BackendError:
            return cli.MasterView()

    def status(self) -> dict[str, Any]:
        view = cli.ask(self.ctx)
        m = self.spec.moosefs
        want = len(m.chunk_nodes(self.spec))
        chunks = ", ".join(f"{n} {k}" for k, n in view.chunks.items() if n) or "none yet"
        return {"health": "HEALTH_OK" if self._intact(view) else "HEALTH_WARN", "chunk_servers": view.servers,
                "metaloggers": view.metaloggers, "chunks": view.chunks, "write_amplification": m.goal,
                "summary": [f"master on {self.ctx.master} ({view.info.get('master version', '?')}), "
                            f"{len(view.servers)} of {want} chunk server(s), {len(view.metaloggers)} metalogger(s); "
                            f"goal {m.goal}; chunks: {chunks}",
                            f"space: {_gib(view.info.get('avail space'))} GiB free of {_gib(view.info.get('total space'))} "
                            f"GiB (every chunk server shares this machine's disk)"],
                "tables": [table("chunk servers", ["address", "chunks", "used GiB", "total GiB"],
                                 [[s["ip"], s["chunks"], _gib(s["used"]), _gib(s["total"])] for s in view.servers])]}

    def _intact(self, view: cli.MasterView) -> bool:
        return (len(view.servers) == len(self.spec.moosefs.chunk_nodes(self.spec))
                and not view.chunks.get("missing") and not view.lacking())

    def healthy(self) -> bool:
        return self._intact(cli.ask(self.ctx))

    # RollingUpgrade, in the order MooseFS starts its modules and documents upgrading them (its
    # "Upgrade" chapter: metaloggers, the master, then the chunk servers one by one, each only
    # while no chunk is under its goal; the clients last, which dfslab leaves to the user).
    def upgrade_groups(self) -> list[list[str]]:
        names = self.daemon_names(self.spec) or []
        order = ("metalogger", "master", "chunkserver")
        return [[n] for kind in order for n in names if n.split(".")[0] == kind]

    def may_stop(self, names: list[str]) -> bool:
        if not any(n.startswith("chunkserver.") for n in names):
            return True
        view = cli.ask(self.ctx)
        return self._intact(view)  # every chunk server back and every chunk at its goal

    def upgraded(self, names: list[str], version: str) -> bool:
        try:
            view = cli.ask(self.ctx)
        except BackendError:  # the master restarting
            return False
        for name in names:
            kind, node = name.split(".", 1)
            address = self.ctx.addresses.get(node)
            if kind == "master" and view.info.get("master version") != version:
                return False
            if kind == "metalogger" and view.logger_versions.get(address) != version:
                return False
            if kind == "chunkserver" and not any(s["ip"] == address and s["version"] == version for s in view.servers):
                return False
        return True

    seen: cli.MasterView | None = None
    MASTER_SILENCE = 20.0  # s of questions unanswered by the master: every client's metadata call waits
    silence = SilenceOf(MASTER_SILENCE)

    def sample(self) -> dict[str, tuple[float, str]]:
        try:
            with self.silence.asking():
                view = cli.ask(self.ctx, timeout=3)
        except BackendError:
            return {"moosefs.degraded": (1, "0=OK,1=degraded")}
        self.seen = view
        return {"moosefs.chunk_servers": (len(view.servers), "servers"),
                "moosefs.chunks_undergoal": (view.lacking(), "chunks"),
                "moosefs.chunks_missing": (view.chunks.get("missing", 0), "chunks"),
                "moosefs.degraded": (int(not self._intact(view)), "0=OK,1=degraded")}

    def alarms(self) -> list[str]:
        """Missing chunks (no copy left: their reads and writes wait), a master that stopped answering."""
        found = []
        if self.seen is not None and self.seen.chunks.get("missing"):
            found.append(f"{self.seen.chunks['missing']} chunk(s) missing: no chunk server holds a copy")
        if (silent := self.silence.seconds()) is not None:
            found.append(f"the master on {self.ctx.master} has not answered for {silent:.0f} s")
        return found

    def warnings(self) -> list[str]:
        """Chunks under their goal, a chunk server gone: writes go on, with fewer copies."""
        if self.seen is None:
            return []
        want = len(self.spec.moosefs.chunk_nodes(self.spec))
        return ([f"{want - len(self.seen.servers)} of {want} chunk servers gone"] if len(self.seen.servers) < want else []) \
            + ([f"{self.seen.lacking()} chunk(s) under goal {self.spec.moosefs.goal}"] if self.seen.lacking() else [])

    def on_node(self, node: str, argv: list[str]) -> list[str]:
        """`mfscli` asks the master at the host name `mfsmaster` unless told: told where it is."""
        if argv[:1] == ["mfscli"] and "-H" not in argv:
            return ["mfscli", "-H", self.ctx.master_address, *argv[1:]]
        return argv

    def mount(self, node: str = CLIENT) -> Path:
        return client.mount(self.ctx, node)

    def mount_instance(self, node: str, instance: str) -> Path:
        return client.mount(self.ctx, node, instance)

    def unmount_instance(self, node: str, instance: str) -> None:
        client.unmount(self.ctx, node, instance)


BACKEND = MooseFSBackend


def _gib(value: object) -> str:
    try:
        return f"{int(value) / 2**30:.1f}"
    except (TypeError, ValueError):
        return "?"
