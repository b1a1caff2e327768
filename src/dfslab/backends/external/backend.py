"""The external backend: measure a cluster someone else runs. `deploy` only checks access and
makes dfslab's own room on it (a pool with dfslab's prefix, a directory under the path, a
CephFS directory through ceph-fuse); `release` removes exactly those, recorded in the state
directory before they were made. Faults are refused unless the spec allows them and the
cluster's own API undoes them (Ceph's out/in): dfslab never signals what it did not start."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ... import s3api
from ...runtime import CLIENT
from ...safety import remove_owned_tree
from ..abilities import ClientSetup, ClusterElsewhere, HealthAlarms, KubernetesManifests, Metrics, ObjectPools, ToolTargets
from .. import Backend, BackendError, Chart, Facts, PreflightError, Progress, Reach, table
from ...registry import S3Endpoint
from ..ceph import existing_cluster
from ..fuse import fuse_mount, fuse_unmount, is_mounted
from . import s3 as site_s3
from .mounts import loopback, mount_of, over_network
from .probe import FIO_PORT, IPERF_PORT, http_answers, split_endpoint, tcp_answers


class ExternalBackend(Backend, ToolTargets, ObjectPools, HealthAlarms, ClientSetup, Metrics, ClusterElsewhere, KubernetesManifests):
    name = "external"
    facts = Facts(
        offers={"fs": "external.posix, or external.ceph with cephfs: true", "rados": "external.ceph",
                "rbd": "external.ceph", "s3": "external.s3"},
        charts=(Chart(r"ceph\.(health|osds_up)", "count", "existing Ceph cluster: health (0 OK) and OSDs up"),
                Chart(r"prom\..*_bytes|prom\..*(receive|transmit|read|written).*", "MB/s",
                      "scraped Prometheus endpoints: network and disk throughput")),
        log_dirs=(),
        # Ceph's `out` (`ceph osd out`, undone by `ceph osd in`) and `fill` (an OSD filled under lowered
        # full ratios, undone by the ratios, device class and pool as they were), with the user's credentials.
        borrowed_faults=("out", "fill"),
    )

    @classmethod
    def targets_for(cls, spec) -> frozenset[str]:
        ext = spec.external
        found = set()
        if ext.ceph:
            found |= {"rados", "rbd"} | ({"fs"} if ext.ceph.cephfs else set())
        if ext.posix:
            found.add("fs")
        if ext.s3:
            found.add("s3")
        return frozenset(found)

    @classmethod
    def preflight(cls, spec) -> None:
        ext = spec.external
        ceph = existing_cluster(ext.ceph.conf, ext.ceph.keyring, ext.ceph.user) if ext.ceph else None
        needed = (["fio"] if ext.ceph or ext.posix or ext.clients else []) + (ceph.programs(ext.ceph.cephfs) if ceph else [])
        missing = [t for t in needed if shutil.which(t) is None]
        if missing:
            raise PreflightError(f"missing tools {missing}; run `make install-deps` (scripts/install-deps.sh) as root")
        problems = []
        if ext.posix:
            problems += _posix_problems(ext.posix.path)
        if ceph:
            try:
                ceph.check_access()
            except BackendError as exc:
                problems.append(str(exc))
        if ext.s3:
            problems += site_s3.problems(ext.s3)
        for i, endpoint in enumerate(ext.clients):
            if why := tcp_answers(*split_endpoint(endpoint, FIO_PORT)):
                problems.append(f"external.clients[{i}]: fio server {endpoint} does not answer ({why}); start "
                                f"`fio --server` there (docs/existing.md)")
        for i, endpoint in enumerate(ext.iperf):
            if why := tcp_answers(*split_endpoint(endpoint, IPERF_PORT)):
                problems.append(f"external.iperf[{i}]: iperf3 server {endpoint} does not answer ({why}); start `iperf3 -s` there")
        for i, url in enumerate(ext.prometheus):
            if why := http_answers(url):
                problems.append(f"external.prometheus[{i}]: {why}")
        if problems:
            raise PreflightError("\n".join(problems))

    @classmethod
    def versions(cls, spec=None) -> dict[str, str]:
        if spec is None:
            return {}
        ext, out = spec.external, {}
        if ext.ceph:
            out.update(existing_cluster(ext.ceph.conf, ext.ceph.keyring, ext.ceph.user).versions())
        if ext.posix:
            mnt = mount_of(ext.posix.path)
            out["posix mount"] = f"{mnt.get('type', '?')} {mnt.get('source', '?')} on {mnt.get('mountpoint', '?')} ({mnt.get('options', '')})"
        return out

    @classmethod
    def refusal(cls, spec, target: str | None = None, fault: str | None = None) -> str | None:
        if fault is not None:
            return cls._fault_refusal(spec, fault)
        if target == "objclass" and spec.external.ceph:
            return ("dfslab's object class: it must be in the OSDs' rados-classes directory, which only the site's "
                    "admin can install (native/cls_dfslab builds it); the query runs on the client (where: client)")
        if target == "confine":
            return ("storage on the first N servers only: dfslab builds it by linking hosts under a CRUSH root, rule "
                    "and pool of its own (Ceph) or a volume of new bricks (GlusterFS), changes to your CRUSH map or "
                    "your servers' paths that it makes only on clusters it made; measure a pool or volume you made "
                    "on those servers with fio or rados bench instead")
        return super().refusal(spec, target)

    @classmethod
    def _fault_refusal(cls, spec, kind: str) -> str | None:
        ext = spec.external
        if kind in ext.allow_faults and ext.ceph:
            return None
        if kind in cls.facts.borrowed_faults:
            return (f"fault {kind} on a cluster dfslab did not make needs the owner's consent: list it under "
                    f"external.allow_faults (and external.ceph)")
        return (f"fault {kind}: dfslab injects into a cluster it did not make only faults the cluster's own API "
                f"undoes ({', '.join(cls.facts.borrowed_faults)}, listed under external.allow_faults); it never signals "
                f"a process it did not start")

    @classmethod
    def manifests(cls, spec, image: str | None, progress=lambda *_: None) -> dict[str, list[dict]]:
        from .daemonset import manifests
        if spec.external.posix is None:
            raise BackendError("external.posix: render writes a fio server DaemonSet for a mounted file system "
                               "(Lustre, GPFS, BeeGFS, NFS); give posix: {path: /your/mount}")
        if not image:
            raise BackendError("render: give --image, dfslab's image as your nodes pull it (it holds fio; "
                               "`dfslab images build` makes it, push it to your registry)")
        k = spec.kubernetes  # its namespace's default is Rook's: a fio DaemonSet has its own unless one is named
        return manifests(spec, k.namespace if "namespace" in k.model_fields_set else "dfslab", image)

    def client_wire_visible(self) -> bool:
        """This machine's interfaces carry the clients' traffic only where every part of the cluster
        is reached over them: not where fio runs on other hosts (external.clients), nor where a part
        is on this machine's loopback (MONs, the S3 endpoint) or a local disk (the posix path)."""
        ext = self.ext
        if ext.clients or (ext.posix and not over_network(mount_of(ext.posix.path))):
            return False
        if ext.s3 and loopback(urlparse(ext.s3.endpoint).hostname):
            return False
        return not (self.ceph and all(loopback(host) for host in self.ceph.mon_hosts()))

    def __init__(self, runtime, spec):
        super().__init__(runtime, spec)
        self.ext = spec.external
        c = self.ext.ceph
        self.ceph = existing_cluster(c.conf, c.keyring, c.user) if c else None
        self.pool = f"dfslab-{spec.name}"  # dfslab's own pool: made by deploy, removed by release
        self.dirname = f"dfslab-{spec.name}"

    # -- what dfslab makes, and removes -------------------------------------------------
    def deploy(self, progress: Progress, timeout: float) -> None:
        if self.ceph:
            progress("existing Ceph cluster", f"creating pool {self.pool} (removed at the end)")
            self.state.add_resource("external_pools", self.pool)
            self.ceph.create_pool(self.pool, self.ext.ceph.pg_num, self.ext.ceph.replica_size, "rbd")
            self.ceph.wait_pool_clean(self.pool, timeout=min(timeout, 120))
            if self.ext.ceph.cephfs:
                progress("existing Ceph cluster", "mounting CephFS with ceph-fuse")
                self._own_dir(self._cephfs_mount())
        if self.ext.posix:
            progress("existing mount", f"{self.ext.posix.path}: making {self.dirname}/ (removed at the end)")
            self._own_dir(Path(self.ext.posix.path))

    def _own_dir(self, base: Path) -> Path:
        path = base / self.dirname
        if path.exists() or path.is_symlink():
            raise BackendError(f"{path} already exists; dfslab works only in a directory it makes (remove it if it "
                               f"is a leftover of dfslab's, or give the cluster another name)")
        self.state.add_resource("external_dirs", str(path))
        path.mkdir(mode=0o755)
        return path

    def release(self) -> list[str]:
        """Remove the directories, pools and buckets dfslab made here, and nothing else."""
        refused = self._release_buckets()
        roots = [Path(self.ext.posix.path)] if self.ext.posix else []
        roots += [self.state.sub("cephfs")] if self.ceph and self.ext.ceph.cephfs else []
        for d in self.state.resources("external_dirs"):
            try:
                if Path(d).exists():
                    remove_owned_tree(Path(d), roots, f"the directory dfslab made for cluster {self.spec.name}")
                self.state.remove_resource("external_dirs", d)
            except Exception as exc:  # reported by `down`; the state keeps it for another try
                refused.append(f"{d}: {exc}")
        # A clean unmount closes ceph-fuse's MDS session: only then does the MDS purge the files
        # removed above. A killed client holds their caps until the session times out (300 s).
        mnt = self.state.sub("cephfs")
        if self.ceph and is_mounted(mnt):
            fuse_unmount(self.runtime, "ceph-fuse.client", mnt)
        for pool in self.state.resources("external_pools"):
            why = self.ceph.remove_pool(pool) if self.ceph else None
            if why:
                refused.append(why)
            else:
                self.state.remove_resource("external_pools", pool)
        return refused

    def _release_buckets(self) -> list[str]:
        made = self.state.resources(site_s3.BUCKETS)
        if not made:
            return []
        try:
            s3 = site_s3.client(self.ext.s3)
        except BackendError as exc:  # the keys' variables are not set in this shell
            return [f"buckets {', '.join(made)} on {self.ext.s3.endpoint}: {exc}; then `dfslab down {self.spec.name}` again"]
        refused = []
        for bucket in made:
            try:
                s3api.empty_bucket(s3, bucket)
                self.state.remove_resource(site_s3.BUCKETS, bucket)
            except Exception as exc:  # reported by `down`; the state keeps it for another try
                refused.append(f"bucket {bucket} on {self.ext.s3.endpoint}: {exc}")
        return refused

    # -- what workloads use -------------------------------------------------------------
    def _s3(self) -> S3Endpoint:
        if not self.ext.s3:
            raise BackendError("this external cluster has no S3 endpoint: give external.s3 {endpoint, access_key_env, "
                               "secret_key_env}")
        site_s3.keys(self.ext.s3)  # the variables are set in this shell, or say which is not
        return S3Endpoint((self.ext.s3.endpoint,), site_s3.credentials_ref(self.ext.s3), self.ext.s3.region,
                          self.new_bucket())

    def new_bucket(self) -> str:
        name = site_s3.bucket_name(self.spec.name)
        self.state.add_resource(site_s3.BUCKETS, name)  # recorded before it is made: `down` removes it
        return name

    def _cephfs_mount(self) -> Path:
        mnt = self.state.sub("cephfs")
        if not is_mounted(mnt):
            fuse_mount(self.runtime, "ceph-fuse.client", CLIENT, self.ceph.fuse_argv(mnt), mnt)
        return mnt

    def mount(self, node: str = CLIENT) -> Path:
        if self.ext.posix:
            return Path(self.ext.posix.path) / self.dirname
        if self.ceph and self.ext.ceph.cephfs:
            return self._cephfs_mount() / self.dirname
        raise BackendError("this external cluster has no POSIX path: give external.posix.path, or "
                           "external.ceph.cephfs: true")

    def client_env(self) -> dict[str, str]:
        return self.ceph.env() if self.ceph else {}

    def bench_pool(self, requested: str | None) -> str:
        if not self.ceph:
            raise BackendError("this external cluster has no Ceph part (external.ceph)")
        if requested not in (None, self.pool):
            raise BackendError(f"pool {requested!r}: on a cluster dfslab did not make it writes only to its own pool "
                               f"{self.pool}; leave pool: out")
        return self.pool

    def pool_free_bytes(self, runner: Any, pool: str) -> int:
        return self.ceph.pool_free_bytes(self.bench_pool(pool))

    def reach(self, runner: Any, target: str, size_bytes: int, client_cache: bool | None = None) -> Reach:
        if target == "s3":
            return self._s3()
        if target not in ("rbd", "rados") or not self.ceph:
            raise BackendError(f"external offers no target {target!r} here")
        if target == "rados":
            return self.ceph.rados_pool(self.pool, self.state.dir / "fio-rados")
        return self.ceph.rbd_image(runner, self.pool, size_bytes, client_cache)

    def tool_servers(self, tool: str) -> list[str]:
        return list({"fio": self.ext.clients, "iperf3": self.ext.iperf}.get(tool, []))

    def scrape_urls(self) -> list[str]:
        return list(self.ext.prometheus)

    def disk_baseline_dir(self) -> Path | None:
        """fio's disk baseline runs where the workloads write (the mount), not on this machine's disk."""
        return self.mount() if "fs" in self.targets_for(self.spec) else None

    # -- answering for the cluster ----------------------------------------------------------
    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"health": "HEALTH_OK", "summary": [], "tables": [], "write_amplification": None}
        if self.ceph:
            out.update(self.ceph.status([self.pool]))
        if self.ext.posix:
            mnt = mount_of(self.ext.posix.path)
            usage = shutil.disk_usage(self.ext.posix.path)
            out["mount"] = mnt
            out["summary"] = out["summary"] + [f"{self.ext.posix.path}: {mnt.get('type')} from {mnt.get('source')}, "
                                               f"{usage.free / 2**30:.1f} GiB free of {usage.total / 2**30:.1f} GiB"]
            out["tables"] = out["tables"] + [table("mounted file system", ["path", "type", "source", "mount point", "options"],
                                                   [[self.ext.posix.path, mnt.get("type"), mnt.get("source"),
                                                     mnt.get("mountpoint"), mnt.get("options")]])]
        if self.ext.s3:
            made = self.state.resources(site_s3.BUCKETS)
            answers = self._s3_answers()
            out["summary"] = out["summary"] + [
                f"S3 {self.ext.s3.endpoint} ({'answers' if answers else 'DOES NOT ANSWER'}); keys from "
                f"${self.ext.s3.access_key_env} and ${self.ext.s3.secret_key_env}; buckets of dfslab's there now: "
                f"{', '.join(made) or 'none'}"]
            if not answers:
                out["health"] = "HEALTH_WARN"
        return out

    def healthy(self) -> bool:
        ok = self.ceph.healthy() if self.ceph else True
        return ok and (not self.ext.posix or os.access(self.ext.posix.path, os.W_OK)) and self._s3_answers()

    def _s3_answers(self) -> bool:
        return not self.ext.s3 or site_s3.unreachable(self.ext.s3, timeout=1) is None

    def alarms(self) -> list[str]:
        # Ceph's own health (full OSDs or pools, inactive PGs, silent monitors), as the sampler read it;
        # a POSIX mount or an S3 endpoint tells nothing of the kind.
        return self.ceph.checks.alarms() if self.ceph else []

    def warnings(self) -> list[str]:
        return self.ceph.checks.warnings() if self.ceph else []

    @classmethod
    def watches(cls, spec) -> bool:
        return spec.external.ceph is not None  # see alarms

    def sample(self) -> dict[str, tuple[float, str]]:
        if self.ceph:
            return self.ceph.sample()
        degraded = (self.ext.posix is not None and not os.access(self.ext.posix.path, os.W_OK)) or not self._s3_answers()
        return {"external.degraded": (int(degraded), "0=OK,1=degraded")}


def _posix_problems(path: str) -> list[str]:
    p = Path(path)
    if not p.is_dir():
        return [f"external.posix.path: {path} is not a directory (is the file system mounted?)"]
    if not os.access(path, os.W_OK | os.X_OK):
        return [f"external.posix.path: {path} is not writable by this user; dfslab needs to make a directory there"]
    return []


BACKEND = ExternalBackend
