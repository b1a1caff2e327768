"""What Ceph gives client-side workloads: fio's rbd engine on a pre-written image, and a pool
confined to some servers' OSDs (throughput vs number of servers). Tools run through the
workload's runner, so their output is kept in the run's raw/ like any tool's; the confined pool's
monitor commands go through the backend's admin connection, their transcript kept there too."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

from .. import BackendError, Confinement
from ...registry import BlockImage, ObjectPool
from .pools import BENCH_POOL
from ...polling import wait_until

RBD_IMAGE = "dfslab-fio"


def ensure_rbd_image(runner: Any, size_bytes: int) -> None:
    """An RBD image of at least `size_bytes`, written once end to end: reads of a never-written
    (sparse) image return zeros without touching an OSD and would measure nothing."""
    mib = max(64, -(-size_bytes // 2**20))
    info = runner.run(["rbd", "info", "--format", "json", f"rbd/{RBD_IMAGE}"], "rbd-info", timeout=60, check=False)
    if info.strip():
        if json.loads(info)["size"] >= mib * 2**20:
            return
        runner.run(["rbd", "rm", f"rbd/{RBD_IMAGE}"], "rbd-rm", timeout=120)
    runner.run(["rbd", "create", "--size", str(mib), f"rbd/{RBD_IMAGE}"], "rbd-create", timeout=60)
    runner.run(["fio", "--name=rbd-fill", "--output-format=json", "--group_reporting", "--ioengine=rbd",
                "--clientname=admin", "--pool=rbd", f"--rbdname={RBD_IMAGE}", "--rw=write", "--bs=4M",
                "--iodepth=16", f"--size={mib}M"], "rbd-fill", timeout=600)


def set_image_cache(runner: Any, pool: str, image: str, on: bool | None) -> None:
    """librbd's cache for every client that opens `image` (an image setting, read at open, above
    ceph.conf). On by default, it acknowledges small writes itself: 4 KiB randwrite at depth 16
    ran 8,167 IOPS at p50 0.105 ms with it and 1,602 IOPS at p50 9.2 ms without (fio by hand): off
    unless asked, a write is timed until the cluster has it. None: no image setting (the conf's
    [client] rbd_cache decides)."""
    if on is None:
        runner.run(["rbd", "config", "image", "remove", f"{pool}/{image}", "rbd_cache"], "rbd-cache-conf",
                   timeout=60, check=False)  # absent already: nothing to remove
        return
    runner.run(["rbd", "config", "image", "set", f"{pool}/{image}", "rbd_cache", str(on).lower()],
               f"rbd-cache-{str(on).lower()}", timeout=60)


def reach(runner: Any, target: str, size_bytes: int, client_cache: bool | None = None) -> ObjectPool | BlockImage:
    if target == "rados":  # dfslab's bench pool; a client that takes only a conf finds the keyring there
        return ObjectPool(BENCH_POOL, "admin", runner.env["CEPH_CONF"])
    if target != "rbd":
        raise BackendError(f"ceph offers no target {target!r} here")
    ensure_rbd_image(runner, size_bytes)
    set_image_cache(runner, "rbd", RBD_IMAGE, client_cache)
    return BlockImage("rbd", RBD_IMAGE, "admin")


@contextmanager
def confine(runner: Any, admin: Any, nodes: list[str], pgs: int) -> Iterator[Confinement]:
    """A size-1 pool (and how many OSDs it spans) CRUSH confines to the OSDs of `nodes`, for the length
    of a `with` block. The nodes' host buckets are linked (not moved) under a root of their own,
    so the cluster's other pools are untouched; pool, rule and root go afterwards.

    The commands go through the backend's admin connection (`CephAdmin`), not a `ceph` process
    each: about 17 of them at ~0.35 s of CLI start-up apiece were 6 s of every variant's 12 s
    (quickstart, 3 s of writes). Each command and its answer is kept in raw/<pool>-commands.txt."""
    name = f"dfslab-scale-{len(nodes)}"
    transcript: list[str] = []

    def ceph(prefix: str, check: bool = True, target: str = "mon", **args: Any) -> Any:
        ret, out, err = admin.raw(prefix, target=target, timeout=120, **args)
        transcript.append(f"{prefix} {json.dumps(args, sort_keys=True)} -> {ret} {err.strip()}")
        if ret != 0 and check:
            raise BackendError(f"`ceph {prefix}` for the servers workload's pool failed ({ret}): {err.strip()}")
        return json.loads(out) if ret == 0 and out.strip() else None

    try:
        ceph("osd crush add-bucket", name=name, type="root")
        for node in nodes:
            ceph("osd crush link", name=node, args=[f"root={name}"])
        ceph("osd crush rule create-replicated", name=name, root=name, type="host")
        ceph("osd pool create", pool=name, pg_num=pgs, pgp_num=pgs, pool_type="replicated", rule=name)
        ceph("osd pool set", pool=name, var="size", val="1", yes_i_really_mean_it=True)
        ceph("osd pool application enable", pool=name, app="rados")
        _wait_clean(lambda: ceph("pg ls-by-pool", check=False, target="mgr", poolstr=name), name, pgs)
        osds = len(ceph("osd ls-tree", name=name))
        yield Confinement(pool=name, spans={"osds": osds})
    finally:
        ceph("osd pool rm", check=False, pool=name, pool2=name, yes_i_really_really_mean_it=True)
        ceph("osd crush rule rm", check=False, name=name)
        for node in nodes:
            ceph("osd crush unlink", check=False, name=node, ancestor=name)
        ceph("osd crush remove", check=False, name=name)
        runner.keep(f"{name}-commands", ["ceph (admin connection)"], "\n".join(transcript) + "\n", "")


def _wait_clean(pg_list, pool: str, pgs: int, timeout: float = 120) -> None:
    def clean() -> bool:
        stats = (pg_list() or {}).get("pg_stats", [])
        return len(stats) == pgs and all(s["state"] == "active+clean" for s in stats)
    wait_until(clean, f"pool {pool} to become active+clean", timeout, 0.2, BackendError)


def pool_free_bytes(admin: Any, pool: str) -> int:
    """Bytes `pool` may still take (`ceph df` max_avail)."""
    def avail() -> tuple[int] | None:  # a tuple: a full pool's 0 is an answer too
        df = admin.cmd("df", timeout=60)
        return next(((p["stats"]["max_avail"],) for p in df["pools"] if p["name"] == pool), None)
    # `ceph df` is the MGR's view: a pool made a moment ago may not be in it for a second or two.
    return wait_until(avail, f"pool {pool!r} to appear in `ceph df`", 10, 0.2, BackendError)[0]
