"""What the master says of the cluster, through `mfscli` run on the client node: plain text, one
record a line, its fields split by a separator, the first field naming the section
("chunk servers:", "all chunks matrix:", "master info:", "metadata backup loggers:")."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from .. import BackendError
from .context import MATOCL_PORT, MooseContext

SEP = "\t"


@dataclass
class MasterView:
    """One answer of the master: chunk servers, metaloggers, chunks by state, its own figures."""

    servers: list[dict[str, object]] = field(default_factory=list)
    metaloggers: list[str] = field(default_factory=list)
    logger_versions: dict[str, str] = field(default_factory=dict)  # a metalogger's address: its version
    chunks: dict[str, int] = field(default_factory=dict)  # missing, endangered, undergoal, stable, overgoal, ...
    info: dict[str, str] = field(default_factory=dict)

    def lacking(self) -> int:
        """Chunks with fewer copies than their goal (endangered: one copy left, of a goal above 1)."""
        return self.chunks.get("undergoal", 0) + self.chunks.get("endangered", 0)


def records(text: str) -> list[list[str]]:
    return [line.split(SEP) for line in text.splitlines() if SEP in line]


def parse(text: str) -> MasterView:
    view = MasterView()
    for section, *fields in records(text):
        if section == "chunk servers:" and (m := _maintenance_at(fields)) is not None and len(fields) > m + 3:
            # ip, port, id, labels, version, load, [state (4: "Normal")], maintenance, chunks, used
            # bytes, total bytes, ...: read from the maintenance field on, which every release has
            view.servers.append({"ip": fields[0], "port": fields[1], "version": fields[4] if m > 4 else "",
                                 "chunks": _int(fields[m + 1]), "used": _int(fields[m + 2]), "total": _int(fields[m + 3])})
        elif section == "metadata backup loggers:" and fields:
            view.metaloggers.append(fields[0])
            view.logger_versions[fields[0]] = fields[1] if len(fields) > 1 else ""
        elif section == "all chunks matrix:" and len(fields) == 2 and fields[0].startswith("chunkclass "):
            view.chunks[fields[0].removeprefix("chunkclass ").rstrip(":")] = _int(fields[1])
        elif section in ("master info:", "cluster summary:") and len(fields) == 2:  # 3.0's name, 4's
            view.info[fields[0]] = fields[1]
    return view


def ask(ctx: MooseContext, timeout: float = 10) -> MasterView:
    """The master's view of its chunk servers, metaloggers, chunks and itself (one `mfscli`)."""
    argv = ["mfscli", "-H", ctx.master_address, "-P", str(MATOCL_PORT), "-n", "-s", SEP,
            "-SIG", "-SIC", "-SCS", "-SMB"]
    try:
        # On the master's node: its release's mfscli speaks the master's protocol (after a rolling
        # upgrade the clients still run the old release's).
        res = ctx.runtime.run(ctx.master, argv, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise BackendError(f"the master on {ctx.master} did not answer mfscli within {timeout:.0f} s") from None
    if res.returncode != 0 or not records(res.stdout):
        raise BackendError(f"mfscli asked the master on {ctx.master} and failed: "
                           f"{(res.stderr or res.stdout).strip()[-300:] or 'no answer'}")
    return parse(res.stdout)


def _maintenance_at(fields: list[str]) -> int | None:
    return next((i for i, f in enumerate(fields) if f.startswith("maintenance_")), None)


def _int(text: str) -> int:
    try:
        return int(float(text))
    except ValueError:
        return 0
