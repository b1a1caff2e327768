"""A Ceph cluster someone else runs (filesystem: external): dfslab is only a client of it,
with the user's conf, keyring and user name. It may create pools with its own prefix and
remove those, and read the cluster's state; it never deletes or reconfigures anything else."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from .. import BackendError, table
from ...registry import BlockImage, ObjectPool
from .checks import HealthChecks
from .tools import set_image_cache
from ...polling import wait_until



class ExistingCeph:
    def __init__(self, conf: str, keyring: str, user: str):
        self.checks = HealthChecks()
        self.conf, self.keyring, self.user = conf, keyring, user

    def programs(self, cephfs: bool) -> list[str]:
        """The client tools this machine needs to measure the cluster."""
        return ["ceph", "rados", "rbd"] + (["ceph-fuse"] if cephfs else [])

    def env(self) -> dict[str, str]:
        """Client environment: every ceph/rados/rbd tool and librados reads these."""
        return {"CEPH_CONF": self.conf, "CEPH_ARGS": f"--name {self.user} --keyring {self.keyring}"}

    def cmd(self, *args: str, timeout: float = 60, check: bool = True) -> Any:
        """`ceph ARGS --format json`, parsed."""
        argv = ["ceph", "--connect-timeout", "20", *args, "--format", "json"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **self.env()})
        if res.returncode != 0:
            if check:
                raise BackendError(f"`{' '.join(argv)}` (as {self.user}) failed: {res.stderr.strip()[-400:]}")
            return None
        return json.loads(res.stdout) if res.stdout.strip() else {}

    def check_access(self) -> None:
        """Reach the monitors with the user's credentials, or say why not (before anything is made)."""
        for path, what in ((self.conf, "external.ceph.conf"), (self.keyring, "external.ceph.keyring")):
            if not Path(path).is_file():
                raise BackendError(f"{what}: no such file {path!r}; give the path of the cluster's "
                                   f"{'ceph.conf' if what.endswith('conf') else 'keyring for ' + self.user}")
            if not os.access(path, os.R_OK):
                raise BackendError(f"{what}: {path} is not readable by this user; fix its permissions")
        try:
            self.cmd("status", timeout=40)
        except subprocess.TimeoutExpired:
            raise BackendError(f"external.ceph.conf: no answer from the monitors in {self.conf} within 40 s; "
                               "check mon_host and that this machine can reach it") from None
        except BackendError as exc:
            denied = any(w in str(exc).lower() for w in ("permission denied", "auth", "access denied", "eacces"))
            field = "external.ceph.keyring" if denied else "external.ceph"
            hint = (f" (does {self.keyring} hold the key of {self.user}, with caps to read the cluster?)" if denied
                    else "")
            raise BackendError(f"{field}: {exc}{hint}") from None

    def mon_hosts(self) -> list[str]:
        """The MONs' addresses (hosts, no ports), as the monitor map gives them."""
        mons = (self.cmd("mon", "dump", check=False) or {}).get("mons", [])
        addrs = [a["addr"] for m in mons for a in m.get("public_addrs", {}).get("addrvec", [])]
        return sorted({a.rsplit(":", 1)[0].strip("[]") for a in addrs})

    def versions(self) -> dict[str, str]:
        found = self.cmd("versions", check=False) or {}
        return {f"ceph {kind}": ", ".join(sorted(v)) for kind, v in found.items() if isinstance(v, dict)}

    # -- what dfslab creates --------------------------------------------------------
    def create_pool(self, pool: str, pg_num: int, size: int | None, application: str) -> None:
        if any(p["pool_name"] == pool for p in self.pools()):
            raise BackendError(f"pool {pool} already exists on this cluster; dfslab only writes to pools it creates "
                               f"(remove it if it is a leftover of dfslab's, or give the cluster another name)")
        self.cmd("osd", "pool", "create", pool, str(pg_num), str(pg_num), "replicated")
        if size:
            self.cmd("osd", "pool", "set", pool, "size", str(size), *(["--yes-i-really-mean-it"] if size == 1 else []))
        self.cmd("osd", "pool", "application", "enable", pool, application)

    def remove_pool(self, pool: str) -> str | None:
        """Remove a pool dfslab created; a refusal (e.g. mon_allow_pool_delete off) is returned, not raised."""
        argv = ["ceph", "osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**os.environ, **self.env()})
        if res.returncode != 0 and any(p["pool_name"] == pool for p in self.pools()):
            return f"pool {pool}: {res.stderr.strip()[-200:]} (remove it with: {' '.join(argv)})"
        return None

    def wait_pool_clean(self, pool: str, timeout: float = 120) -> None:
        def active() -> bool:
            stats = (self.cmd("pg", "ls-by-pool", pool, check=False) or {}).get("pg_stats", [])
            return bool(stats) and all(s["state"].startswith("active") for s in stats)
        wait_until(active, f"pool {pool} to become active", timeout, 0.5, BackendError)

    # -- reading the cluster ------------------------------------------------------------
    def pools(self) -> list[dict[str, Any]]:
        return self.cmd("osd", "pool", "ls", "detail")

    def pool_free_bytes(self, pool: str) -> int:
        for _ in range(10):
            found = [p["stats"]["max_avail"] for p in self.cmd("df")["pools"] if p["name"] == pool]
            if found:
                return found[0]
            time.sleep(0.5)
        raise BackendError(f"pool {pool!r} is not in `ceph df`")

    def status(self, own_pools: list[str]) -> dict[str, Any]:
        st = self.cmd("status")
        osdmap, pgmap = st.get("osdmap", {}), st.get("pgmap", {})
        states = ", ".join(f"{e['count']} {e['state_name']}" for e in pgmap.get("pgs_by_state", []))
        ours = [p for p in self.pools() if p["pool_name"] in own_pools]
        return {
            "health": st["health"]["status"], "checks": sorted(st["health"].get("checks", {})), "fsid": st.get("fsid"),
            "osds": {"total": osdmap.get("num_osds"), "up": osdmap.get("num_up_osds"), "in": osdmap.get("num_in_osds")},
            "summary": [f"existing Ceph cluster {st.get('fsid')}: {osdmap.get('num_up_osds')}/{osdmap.get('num_osds')} "
                        f"OSDs up; PGs {pgmap.get('num_pgs')}: {states}"],
            "write_amplification": ours[0]["size"] if ours else None,
            "tables": [table("pools dfslab made (removed at the end)", ["pool", "size", "PGs", "application"],
                             [[p["pool_name"], p["size"], p["pg_num"], ",".join(p.get("application_metadata", {}))]
                              for p in ours])],
        }

    def sample(self) -> dict[str, tuple[float, str]]:
        with self.checks.silence.asking():
            st = self.cmd("status", timeout=15)
        self.checks.saw(st)  # what a step's watch reads (alarms, warnings)
        health = {"HEALTH_OK": 0, "HEALTH_WARN": 1}.get(st["health"]["status"], 2)
        pgmap = st.get("pgmap", {})
        return {"ceph.health": (health, "0=OK,1=WARN,2=ERR"),
                "ceph.degraded": (int(health > 0), "0=OK,1=degraded"),
                "ceph.osds_up": (st.get("osdmap", {}).get("num_up_osds", 0), "OSDs"),
                "ceph.client_read": (pgmap.get("read_bytes_sec", 0) / 1e6, "MB/s"),
                "ceph.client_write": (pgmap.get("write_bytes_sec", 0) / 1e6, "MB/s")}

    def healthy(self) -> bool:
        return self.cmd("health")["status"] == "HEALTH_OK"

    def rbd_image(self, runner: Any, pool: str, size_bytes: int, client_cache: bool | None = None) -> BlockImage:
        """An image in dfslab's own pool, written once end to end, librbd's
        cache as asked (an image setting: dfslab's image only, the site's conf untouched)."""
        image = "dfslab-fio"
        mib = max(64, -(-size_bytes // 2**20))
        clientname = self.user.removeprefix("client.")
        if not runner.run(["rbd", "info", "--format", "json", f"{pool}/{image}"], "rbd-info", timeout=60, check=False).strip():
            runner.run(["rbd", "create", "--size", str(mib), f"{pool}/{image}"], "rbd-create", timeout=60)
            runner.run(["fio", "--name=rbd-fill", "--output-format=json", "--ioengine=rbd", f"--clientname={clientname}",
                        f"--pool={pool}", f"--rbdname={image}", "--rw=write", "--bs=4M", "--iodepth=16",
                        f"--size={mib}M"], "rbd-fill", timeout=600)
        set_image_cache(runner, pool, image, False if client_cache is None else client_cache)  # the site's conf is not dfslab's
        return BlockImage(pool, image, clientname)

    def rados_pool(self, pool: str, conf_dir: Path) -> ObjectPool:
        """dfslab's own pool. A client that takes a conf file and no keyring option (fio's rados
        engine) finds the keyring there, and the site's conf is not dfslab's to edit: dfslab writes
        its own copy (in its state directory, removed with the cluster) whose user section names it."""
        conf = conf_dir / "fio-rados.conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"{Path(self.conf).read_text().rstrip()}\n\n# dfslab: fio's rados engine reads the key from here\n"
                        f"[{self.user}]\n\tkeyring = {self.keyring}\n")
        return ObjectPool(pool, self.user.removeprefix("client."), str(conf))

    def fuse_argv(self, mountpoint: Path, subdir: str | None = None) -> list[str]:
        """ceph-fuse in the foreground (a tracked client process), as the user, on `mountpoint`."""
        return ["ceph-fuse", "-f", "-c", self.conf, "--keyring", self.keyring, "--name", self.user, str(mountpoint)]
