"""ceph.conf, keys and the on-disk layout of one Ceph cluster inside dfslab's state dir."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...native import populate_class_dir
from .keys import gen_key  # noqa: F401 (the daemon modules take it from here with keyring_text)
from ...spec import ClusterSpec

MON_IDS = "abc"


def keyring_text(entity: str, key: str, caps: dict[str, str]) -> str:
    lines = [f"[{entity}]", f"\tkey = {key}"]
    lines += [f'\tcaps {kind} = "{cap}"' for kind, cap in caps.items()]
    return "\n".join(lines) + "\n"


ADMIN_CAPS = {"mon": "allow *", "osd": "allow *", "mds": "allow *", "mgr": "allow *"}
MGR_CAPS = {"mon": "allow profile mgr", "osd": "allow *", "mds": "allow *"}
OSD_CAPS = {"mon": "allow profile osd", "mgr": "allow profile osd", "osd": "allow *"}
MDS_CAPS = {"mon": "allow profile mds", "osd": "allow *", "mds": "allow", "mgr": "allow profile mds"}


@dataclass
class CephLayout:
    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "conf" / "ceph.conf"

    @property
    def admin_keyring(self) -> Path:
        return self.root / "conf" / "ceph.client.admin.keyring"

    def data(self, daemon: str) -> Path:
        """daemon is like 'mon.a', 'osd.0'."""
        return self.root / "data" / daemon

    def make_dirs(self) -> None:
        for sub in ("conf", "data", "run", "logs", "crash"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        populate_class_dir(self.root / "classes")


def mon_placement(spec: ClusterSpec) -> dict[str, str]:
    """{mon id: node}: one MON per node, on the first nodes."""
    return {MON_IDS[i]: spec.nodes[i].name for i in range(spec.ceph.mons)}


def mon_addrvec(ip: str) -> str:
    return f"[v2:{ip}:3300,v1:{ip}:6789]"


def format_value(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def box_tuning() -> dict[str, dict[str, object]]:
    """Options that fit Ceph to a 2-core / 24 GiB test box, whoever deploys it (dfslab or Rook)."""
    return {
        "global": {
            "mon allow pool delete": True,
            "mon allow pool size one": True,
            "mon warn on pool no redundancy": False,
            "mon max pg per osd": 1000,
            # A pool's PG count is the spec's, not the autoscaler's. Left on (Ceph's default, which
            # Rook's pools kept), the MGR may change a pool's pg_num whenever its share of the data
            # moves (a data pool that takes most writes: 32 -> 128 PGs), splitting and remapping
            # PGs under a later step or fault check (a CI run: 225 PGs for 224, remapped, after
            # a recovery dfslab had declared).
            "osd pool default pg autoscale mode": "off",
            # A test box's disk is shared with everything else: 30 % free is not "low" here.
            "mon data avail warn": 5,
            "mon data avail crit": 2,
            # The MGR's PG stats otherwise lag by seconds and HEALTH_OK shows before PGs are clean.
            "mgr stats period": 1,
            # A MON marks an OSD down after this long without a beacon; beacons must come well
            # within it (the default 300 s interval let a quiet spell after an election mark every
            # OSD down while all were running).
            "mon osd report timeout": 30,
            "osd beacon report interval": 5,
        },
        # Each pool create or OSD boot waits for a Paxos commit; 1 s batching is for big clusters.
        "mon": {"paxos propose interval": 0.2},
        "osd": {
            # Debian's build has no tcmalloc, so osd_memory_target cannot shrink the heap;
            # small caches and write buffers are what keep an OSD in a few hundred MiB.
            "bluestore cache autotune": False,
            "bluestore cache size": "128M",
            "bluestore rocksdb options": "compression=kNoCompression,max_write_buffer_number=2,"
            "min_write_buffer_number_to_merge=1,recycle_log_file_num=2,write_buffer_size=33554432,"
            "writable_file_max_buffer_size=0,compaction_readahead_size=2097152,max_background_compactions=1",
            # File-backed OSDs are taken for rotational disks: no recovery sleep here.
            "osd recovery sleep hdd": 0,
            "osd recovery sleep": 0,
            "osd max backfills": 4,
            "osd op num shards": 2,
            "osd op num threads per shard": 2,
        },
        "mds": {"mds cache memory limit": "256M"},
    }


# ceph.conf options a release needs beside box_tuning's. Reef's restful module imports
# cryptography's PyO3 core, which loads in one Python subinterpreter only (the MGR gives each
# module its own): loaded, it fails and holds HEALTH_WARN (MGR_MODULE_DEPENDENCY) for good.
# Nothing of dfslab's uses it; Pacific's own default keeps diskprediction_local out.
RELEASE_CONF: dict[str, dict[str, dict[str, object]]] = {
    "reef": {"global": {"mgr disabled modules": "restful diskprediction_local"}},
}


def render_conf(spec: ClusterSpec, layout: CephLayout, fsid: str, addresses: dict[str, str], public_network: str | None) -> str:
    """ceph.conf tuned for a 2-core / 24 GiB machine: small caches, no recovery sleep."""
    ceph = spec.ceph
    root = layout.root
    mons = mon_placement(spec)
    osd_bytes = ceph.osd_size
    g: dict[str, object] = {
        "fsid": fsid,
        "mon host": ",".join(mon_addrvec(addresses[node]) for node in mons.values()),
        "mon initial members": ",".join(mons),
        "auth cluster required": "cephx",
        "auth service required": "cephx",
        "auth client required": "cephx",
        "auth allow insecure global id reclaim": False,
        "keyring": f"{root}/data/$name/keyring",
        # Daemons' admin sockets default to $run_dir/$cluster-$name.asok; clients add pid and
        # context ids to theirs, so many `ceph` commands at once do not collide.
        "run dir": f"{root}/run",
        "crash dir": f"{root}/crash",
        "log file": f"{root}/logs/$cluster-$name.log",
        "pid file": "",
        "mon data": f"{root}/data/$name",
        "mgr data": f"{root}/data/$name",
        "osd data": f"{root}/data/$name",
        "mds data": f"{root}/data/$name",
        "ms bind ipv6": False,
        "osd pool default size": ceph.replica_size,
        "osd pool default min size": max(1, ceph.replica_size - ceph.replica_size // 2),
        "osd pool default pg num": ceph.pg_num,
        "osd pool default pgp num": ceph.pg_num,
        "osd crush chooseleaf type": 1 if ceph.failure_domain == "host" else 0,
    }
    if public_network:
        g["public network"] = public_network
    sections = box_tuning()
    sections["global"] = {**g, **sections["global"]}
    sections["mon"]["mon cluster log file"] = f"{root}/logs/$cluster.log"
    sections["mgr"] = {"mgr initial modules": "iostat"}
    sections["osd"].update({
        "osd objectstore": "bluestore",
        "bluestore block create": True,
        "bluestore block size": osd_bytes,
        "bluestore fsck on mkfs": False,
        "osd crush update on start": True,
        # Debian's classes and dfslab's cls_dfslab (pushdown), linked into one directory.
        "osd class dir": f"{root}/classes",
        "osd class load list": "*",
        "osd class default list": "*",
    })
    # Clients that read only the conf (fio's rados engine) find the admin key by it.
    sections["client.admin"] = {"keyring": str(layout.admin_keyring)}
    for osd_id, node in osd_placement(spec).items():
        sections[f"osd.{osd_id}"] = {"crush location": f"root=default host={node}"}
    for section, options in [*RELEASE_CONF.get(ceph.release, {}).items(), *ceph.conf.items()]:
        sections.setdefault(section, {}).update(options)
    return conf_text(sections)


def conf_text(sections: dict[str, dict[str, object]]) -> str:
    """ceph.conf text of {section: {option: value}}."""
    out = []
    for section, options in sections.items():
        out.append(f"[{section}]")
        out += [f"\t{key} = {format_value(value)}" for key, value in options.items()]
        out.append("")
    return "\n".join(out)


def osd_placement(spec: ClusterSpec) -> dict[int, str]:
    """{osd id: node}: ids are assigned in node order, osds_per_node each."""
    placement, osd_id = {}, 0
    for node in spec.node_names():
        for _ in range(spec.ceph.osds_per_node):
            placement[osd_id] = node
            osd_id += 1
    return placement
