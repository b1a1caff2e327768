"""Ceph's own maps for a cluster that does not exist yet (`dfslab plan`): a CRUSH map compiled
by crushtool, an OSD map made by a real ceph-mon (OSDs created, the CRUSH map set, pools and
erasure-code profiles created by the monitor's own commands, as on a real cluster), then
every PG mapped by osdmaptool (`--test-map-pgs-dump`, `--upmap`, `--adjust-crush-weight`).

The monitor is a scratch one: its own directory, auth off, loopback on a free port, started
and stopped here (its PID is ours). Nothing else of Ceph runs."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import BackendError

PG_LINE = re.compile(r"^(\d+)\.([0-9a-f]+)\t\[([\d,]*)\]\t(-?\d+)$")


@dataclass(frozen=True)
class PoolPlan:
    name: str
    pg_num: int
    rule: str  # a rule of the CRUSH map
    size: int  # replicas, or k + m
    k: int = 0  # > 0: erasure-coded k+m
    m: int = 0
    failure_domain: str = "host"
    device_class: str | None = None


class PlanError(BackendError):
    """Ceph's tools refused what dfslab built; the message says which step, in words."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tool(argv: list[str], what: str, timeout: float = 600, **kw: Any) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if res.returncode != 0:
        detail = (res.stderr.strip() or res.stdout.strip()).splitlines()[-1:] or ["no message"]
        raise PlanError(f"{what} failed ({argv[0]}: {detail[0][:200]})")
    return res.stdout


class ScratchMon:
    """A single ceph-mon that only holds maps, for the length of a `with` block."""

    def __init__(self, parent: Path):
        parent.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix="mon-", dir=parent.absolute()))  # removed by a check that wants it absolute
        self.conf = self.dir / "ceph.conf"
        self.proc: subprocess.Popen | None = None
        self.cluster = None

    def __enter__(self) -> "ScratchMon":
        port = _free_port()
        fsid = "00000000-0000-4000-8000-00000000d15b"
        d = self.dir
        self.conf.write_text(f"""[global]
fsid = {fsid}
mon host = [v2:127.0.0.1:{port}]
run dir = {d}
admin socket = {d}/$name.asok
log file = {d}/$name.log
mon data = {d}/data
auth cluster required = none
auth service required = none
auth client required = none
mon max pg per osd = 1000000
mon osd max initial pgs = 1048576
osd pool default pg autoscale mode = off
mon warn on pool no redundancy = false
mon allow pool size one = true
# The MON forks a CRUSH smoke test with a 5 s limit on every setcrushmap; on a loaded 2-core
# machine a 1000-OSD map timed out (-110, a make test run beside Kubernetes). The plan maps every
# PG with osdmaptool itself, which is the test that matters here.
mon osd crush smoke test = false
[mon]
paxos propose interval = 0.01
""")
        _tool(["monmaptool", "--create", "--fsid", fsid, "--addv", "a", f"[v2:127.0.0.1:{port}]", str(d / "monmap")],
              "making the scratch monitor's map")
        _tool(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", str(d / "monmap")],
              "making the scratch monitor")
        log = open(d / "mon.out", "w")
        self.proc = subprocess.Popen(["ceph-mon", "-c", str(self.conf), "-f", "-i", "a"], stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        import rados
        self.cluster = rados.Rados(conffile=str(self.conf), conf={"log_file": ""})
        self.cluster.connect(timeout=30)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.cluster is not None:
            self.cluster.shutdown()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def cmd(self, inbuf: bytes = b"", **command: Any) -> bytes:
        ret, out, err = self.cluster.mon_command(json.dumps(command), inbuf, timeout=120)
        if ret != 0:
            raise PlanError(f"the monitor refused `{command['prefix']}`: {err.strip()[:300]}")
        return out


def build_osdmap(mon: ScratchMon, crush_text: str, n_osds: int, pools: list[PoolPlan], out: Path) -> Path:
    """The OSD map of the planned cluster, written to `out`."""
    crush_txt, crush_bin = out.with_suffix(".crush.txt"), out.with_suffix(".crush")
    crush_txt.write_text(crush_text)
    _tool(["crushtool", "-c", str(crush_txt), "-o", str(crush_bin)], "compiling the CRUSH map")
    with ThreadPoolExecutor(32) as pool:  # the monitor batches concurrent proposals
        list(pool.map(lambda _: mon.cmd(prefix="osd create"), range(n_osds)))
    mon.cmd(crush_bin.read_bytes(), prefix="osd setcrushmap")
    for p in pools:
        if p.k:
            profile = [f"k={p.k}", f"m={p.m}", f"crush-failure-domain={p.failure_domain}"]
            if p.device_class:
                profile.append(f"crush-device-class={p.device_class}")
            mon.cmd(prefix="osd erasure-code-profile set", name=f"{p.name}-profile", profile=profile)
            mon.cmd(prefix="osd pool create", pool=p.name, pg_num=p.pg_num, pgp_num=p.pg_num, pool_type="erasure",
                    erasure_code_profile=f"{p.name}-profile", rule=p.rule)
        else:
            mon.cmd(prefix="osd pool create", pool=p.name, pg_num=p.pg_num, pgp_num=p.pg_num, pool_type="replicated",
                    rule=p.rule)
            mon.cmd(prefix="osd pool set", pool=p.name, var="size", val=str(p.size), yes_i_really_mean_it=True)
    out.write_bytes(mon.cmd(prefix="osd getmap"))
    return out


def pool_ids(osdmap: Path) -> dict[int, str]:
    dump = json.loads(_tool(["osdmaptool", str(osdmap), "--dump", "json"], "reading the OSD map"))
    return {p["pool"]: p["pool_name"] for p in dump["pools"]}


def map_pgs(osdmap: Path, crush_weights: dict[int, float] | None = None, mark_up_in: bool = True) -> dict[str, list[int]]:
    """{pgid: up set} of every PG: all OSDs marked up and in first (unless the map was made so
    by `prepare`, which keeps OSDs marked out), with CRUSH weights changed as given."""
    marks = ["--mark-up-in"] if mark_up_in else []
    out = _tool(["osdmaptool", str(osdmap), *marks, *_weights(crush_weights), "--test-map-pgs-dump"],
                "mapping placement groups")
    pgs = {}
    for line in out.splitlines():
        m = PG_LINE.match(line)
        if m:
            pgs[f"{m.group(1)}.{m.group(2)}"] = [int(o) for o in m.group(3).split(",") if o]
    return pgs


def prepare(osdmap: Path, out: Path, crush_weights: dict[int, float]) -> Path:
    """A copy of the map with every OSD up and in and the CRUSH weights given (at least one;
    giving an OSD its own weight changes nothing), saved: osdmaptool saves a map only when a
    weight was adjusted."""
    out.write_bytes(osdmap.read_bytes())
    _tool(["osdmaptool", str(out), "--mark-up-in", *_weights(crush_weights), "--save"], "preparing the OSD map")
    return out


def mark_out(prepared: Path, out: Path, osds: dict[int, float]) -> Path:
    """A copy of a prepared map with `osds` ({osd: its own CRUSH weight}) marked out, as Ceph
    marks out failed OSDs; one osdmaptool call each, since it marks out one at a time."""
    out.write_bytes(prepared.read_bytes())
    for osd, weight in sorted(osds.items()):
        _tool(["osdmaptool", str(out), "--mark-out", str(osd), *_weights({osd: weight}), "--save"],
              f"marking osd.{osd} out")
    return out


def _weights(crush_weights: dict[int, float] | None) -> list[str]:
    if not crush_weights:
        return []
    return ["--adjust-crush-weight", ",".join(f"{o}:{w:.5f}" for o, w in sorted(crush_weights.items()))]


def balance(osdmap: Path, pools: list[str], crush_weights: dict[int, float] | None = None, deviation: int = 5,
            max_changes: int = 100000) -> dict[str, list[tuple[int, int]]]:
    """The upmap balancer's pg-upmap-items, {pgid: [(from, to), ...]}. Like the MGR's balancer
    module, it balances one pool at a time at its default max deviation (5 PGs); pools run in
    parallel, each osdmaptool on its own copy of the map."""
    def one(pool: str) -> str:
        copy = osdmap.parent / f"{osdmap.name}.{pool}"
        copy.write_bytes(osdmap.read_bytes())
        commands = osdmap.parent / f"{osdmap.name}.{pool}.upmap.txt"
        try:
            _tool(["osdmaptool", str(copy), "--mark-up-in", *_weights(crush_weights), "--upmap", str(commands),
                   "--upmap-pool", pool, "--upmap-max", str(max_changes), "--upmap-deviation", str(deviation)],
                  f"running the upmap balancer on pool {pool}")
            return commands.read_text()
        finally:
            copy.unlink(missing_ok=True)

    items: dict[str, list[tuple[int, int]]] = {}
    with ThreadPoolExecutor(max(1, min(len(pools), os.cpu_count() or 1))) as ex:
        for text in ex.map(one, pools):
            for line in text.splitlines():
                words = line.split()
                if words[:3] == ["ceph", "osd", "pg-upmap-items"]:
                    pairs = [int(w) for w in words[4:]]
                    items[words[3]] = list(zip(pairs[::2], pairs[1::2]))
    return items


def apply_upmaps(pgs: dict[str, list[int]], items: dict[str, list[tuple[int, int]]]) -> dict[str, list[int]]:
    """Up sets with pg-upmap-items applied as the OSD map does: each `from` replaced by its `to`
    unless `to` is already a member."""
    out = {}
    for pgid, up in pgs.items():
        up = list(up)
        for src, dst in items.get(pgid, []):
            if src in up and dst not in up:
                up[up.index(src)] = dst
        out[pgid] = up
    return out
