"""The pools workloads use: `dfslab` for RADOS benchmarks, `rbd` for RBD images."""

from __future__ import annotations

from .context import CephContext

BENCH_POOL = "dfslab"
POOLS = {BENCH_POOL: "rados", "rbd": "rbd"}


def create(ctx: CephContext) -> None:
    pg = ctx.spec.ceph.pg_num
    for pool, app in POOLS.items():
        ctx.admin.cmd("osd pool create", pool=pool, pg_num=pg, pgp_num=pg)
        ctx.admin.cmd("osd pool application enable", pool=pool, app=app, yes_i_really_mean_it=True)
