"""A Ceph cluster that dfslab did not make, for the external-cluster tests: brought up by hand
(as bench/bringup_by_hand.sh does) on this machine's loopback, 1 MON + MGR + 2 BlueStore OSDs
+ MDS/CephFS, cephx on, in its own temporary directory. dfslab gets only its conf and the
keyring of client.bench. Every process it starts is its own, and only those are stopped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

# Unusual ports, so a MON left by a crashed run elsewhere is not mistaken for this one, and below
# the kernel's ephemeral range (32768-60999): the kubernetes phase runs beside this one, and its
# API server's connections to etcd on 127.0.0.1 take local ports from that range, any of which
# a fixed port in it can collide with.
MON_ADDR = "[v2:127.0.0.1:23300,v1:127.0.0.1:26789]"
PROMETHEUS_PORT = 29283
RGW_PORT = 27480


class ByHandCeph:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="byhand-ceph-"))
        self.conf = self.dir / "ceph.conf"
        self.admin = self.dir / "admin.keyring"
        self.bench_keyring = self.dir / "bench.keyring"
        self.procs: list[subprocess.Popen] = []

    def ceph(self, *args: str, check: bool = True, keyring: Path | None = None, name: str = "client.admin") -> str:
        res = subprocess.run(["ceph", "-c", str(self.conf), "-k", str(keyring or self.admin), "--name", name,
                              "--connect-timeout", "20", *args], capture_output=True, text=True, timeout=120)
        if check and res.returncode:
            raise RuntimeError(f"ceph {' '.join(args)}: {res.stderr[-500:]}")
        return res.stdout

    def _spawn(self, *argv: str) -> None:
        log = open(self.dir / "logs" / f"{argv[0]}-{len(self.procs)}.out", "w")
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def _write_conf(self, fsid: str) -> None:
        d = self.dir
        self.conf.write_text(f"""[global]
fsid = {fsid}
mon host = {MON_ADDR}
public network = 127.0.0.0/8
run dir = {d}/run
admin socket = {d}/run/$cluster-$name.asok
log file = {d}/logs/$cluster-$name.log
mon data = {d}/data/$name
mgr data = {d}/data/$name
osd data = {d}/data/$name
mds data = {d}/data/$name
keyring = {d}/data/$name/keyring
auth allow insecure global id reclaim = false
osd pool default size = 2
osd pool default pg num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool delete = true
mon data avail warn = 2
mgr stats period = 1
mon warn on pool no redundancy = false
[mon]
paxos propose interval = 0.2
[osd]
bluestore block create = true
bluestore block size = 6442450944
bluestore fsck on mkfs = false
osd memory target = 939524096
""")

    def start(self, timeout: float = 180) -> "ByHandCeph":
        """Brings the cluster up; if that fails, stops what it started before the error goes on
        (a fixture whose setup raises is never torn down)."""
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        d = self.dir
        for sub in ("data", "run", "logs"):
            (d / sub).mkdir()
        fsid = str(uuid.uuid4())
        self._write_conf(fsid)
        auth = ["ceph-authtool", "--create-keyring", "--gen-key"]
        subprocess.run([*auth, str(self.admin), "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *",
                        "--cap", "mds", "allow *", "--cap", "mgr", "allow *"], check=True, capture_output=True)
        subprocess.run([*auth, str(d / "mon.keyring"), "-n", "mon.", "--cap", "mon", "allow *"], check=True, capture_output=True)
        subprocess.run(["ceph-authtool", str(d / "mon.keyring"), "--import-keyring", str(self.admin)], check=True, capture_output=True)
        subprocess.run(["monmaptool", "--create", "--fsid", fsid, "--addv", "a", MON_ADDR, str(d / "monmap")], check=True, capture_output=True)
        subprocess.run(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", str(d / "monmap"),
                        "--keyring", str(d / "mon.keyring")], check=True, capture_output=True)
        self._spawn("ceph-mon", "-c", str(self.conf), "-f", "-i", "a")
        (d / "data" / "mgr.x").mkdir()
        (d / "data" / "mgr.x" / "keyring").write_text(self.ceph("auth", "get-or-create", "mgr.x", "mon", "allow profile mgr",
                                                                "osd", "allow *", "mds", "allow *"))
        self._spawn("ceph-mgr", "-c", str(self.conf), "-f", "-i", "x")
        for n in range(2):
            osd_uuid, key = str(uuid.uuid4()), subprocess.run(["ceph-authtool", "--gen-print-key"], capture_output=True,
                                                              text=True, check=True).stdout.strip()
            (d / f"osd{n}.json").write_text(json.dumps({"cephx_secret": key}))
            self.ceph("osd", "new", osd_uuid, str(n), "-i", str(d / f"osd{n}.json"))
            (d / "data" / f"osd.{n}").mkdir()
            subprocess.run(["ceph-osd", "-c", str(self.conf), "-i", str(n), "--mkfs", "--osd-uuid", osd_uuid, "--key", key],
                           check=True, capture_output=True)
            (d / "data" / f"osd.{n}" / "keyring").write_text(f"[osd.{n}]\n\tkey = {key}\n")
            self._spawn("ceph-osd", "-c", str(self.conf), "-f", "-i", str(n))
        (d / "data" / "mds.a").mkdir()
        (d / "data" / "mds.a" / "keyring").write_text(self.ceph("auth", "get-or-create", "mds.a", "mon", "allow profile mds",
                                                                "osd", "allow *", "mds", "allow", "mgr", "allow profile mds"))
        self._spawn("ceph-mds", "-c", str(self.conf), "-f", "-i", "a")
        # The pool the MGR's devicehealth module would make by itself once enough OSDs are up,
        # made here as that module makes it: whether the module makes it, and when, depends on
        # its timing (a MGR restarted by `mgr module enable` while OSDs were still starting
        # never tried again), and the tests' "before" inventory must not.
        self.ceph("osd", "pool", "create", "device_health_metrics", "1")
        self.ceph("osd", "pool", "application", "enable", "device_health_metrics", "mgr_devicehealth")
        # The site's own data, which dfslab must leave exactly as it is.
        self.ceph("osd", "pool", "create", "site-data", "8")
        self.ceph("osd", "pool", "application", "enable", "site-data", "rbd")
        self.ceph("osd", "pool", "create", "cephfs_metadata", "8")
        self.ceph("osd", "pool", "create", "cephfs_data", "8")
        self.ceph("fs", "new", "cephfs", "cephfs_metadata", "cephfs_data")
        # A benchmark user: may read the cluster, create and remove pools, do I/O, use CephFS, mark OSDs out and in.
        self.bench_keyring.write_text(self.ceph(
            "auth", "get-or-create", "client.bench", "mon", "allow r, allow command \"osd pool create\", "
            "allow command \"osd pool rm\", allow command \"osd pool set\", allow command \"osd pool application enable\", "
            "allow command \"osd out\", allow command \"osd in\"",
            "osd", "allow rwx", "mds", "allow rw", "mgr", "allow r"))
        # The monitors take a `mgr/<module>/...` option only once the MGR has told them its modules'
        # options: CI saw "unrecognized config option 'mgr/prometheus/server_addr'" with the machine loaded.
        self.wait_mgr_module("prometheus", timeout)
        self.ceph("config", "set", "mgr", "mgr/prometheus/server_addr", "127.0.0.1")
        self.ceph("config", "set", "mgr", "mgr/prometheus/server_port", str(PROMETHEUS_PORT))
        self.ceph("mgr", "module", "enable", "prometheus")
        self.wait_healthy(timeout)
        self.wait_prometheus(timeout)

    def start_rgw(self, port: int = RGW_PORT, timeout: float = 120) -> dict:
        """A RADOS gateway of the site's on 127.0.0.1:`port` and an S3 user of the site's: {endpoint,
        access_key, secret_key}. Started as an operator would, with radosgw-admin for the user."""
        if shutil.which("radosgw") is None:
            raise RuntimeError("radosgw is not installed: `bash scripts/install-deps.sh rgw` (make test installs it)")
        d = self.dir
        (d / "data" / "rgw").mkdir()
        keyring = d / "data" / "rgw" / "keyring"
        keyring.write_text(self.ceph("auth", "get-or-create", "client.rgw.site", "mon", "allow rw", "osd", "allow rwx",
                                     "mgr", "allow rw"))
        self._spawn("radosgw", "-f", "-c", str(self.conf), "-n", "client.rgw.site", "-k", str(keyring),
                    "--rgw-data", str(d / "data" / "rgw"), "--rgw-frontends", f"beast endpoint=127.0.0.1:{port}")
        gateway = self.procs[-1]
        endpoint = f"http://127.0.0.1:{port}"
        try:
            self._wait_answers(endpoint, gateway, timeout)
            user = subprocess.run(["radosgw-admin", "-c", str(self.conf), "-k", str(self.admin), "user", "create",
                                   "--uid=site", "--display-name=site"], capture_output=True, text=True, timeout=120,
                                  check=True)
        except (RuntimeError, subprocess.SubprocessError) as exc:
            # A CI run once failed here with nothing to go on: the gateway's own log says why.
            raise RuntimeError(f"{exc}\n{self.log_tail('ceph-client.rgw.site.log')}\n"
                               f"ceph status: {self.ceph('status', check=False)}") from None
        key = json.loads(user.stdout)["keys"][0]
        return {"endpoint": endpoint, "access_key": key["access_key"], "secret_key": key["secret_key"]}

    @staticmethod
    def _wait_answers(endpoint: str, proc: subprocess.Popen, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(endpoint, timeout=5):
                    return
            except urllib.error.HTTPError:
                return  # an S3 error document: it answers
            except OSError as e:
                if proc.poll() is not None:
                    raise RuntimeError(f"the by-hand radosgw exited ({proc.returncode}) before it answered at {endpoint}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the by-hand radosgw never answered at {endpoint} in {timeout:.0f} s: {e}") from None
            time.sleep(1)

    def log_tail(self, name: str, lines: int = 25) -> str:
        path = self.dir / "logs" / name
        text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else ["(no log)"]
        return f"last lines of {name}:\n" + "\n".join(text)

    def wait_prometheus(self, timeout: float) -> None:
        # Enabling the module returns before its HTTP server listens (a CI run once found the port
        # still closed after HEALTH_OK): the tests scrape it, so wait until it answers.
        url = f"http://127.0.0.1:{PROMETHEUS_PORT}/metrics"
        deadline = time.monotonic() + timeout
        why = "no answer yet"
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5):
                    return
            except OSError as e:
                why = str(e)
            time.sleep(1)
        raise RuntimeError(f"the by-hand cluster's MGR prometheus module never answered at {url}: {why}")

    def wait_mgr_module(self, module: str, timeout: float) -> None:
        from dfslab.polling import wait_until

        def known() -> bool:
            dump = json.loads(self.ceph("mgr", "dump", "--format", "json", check=False) or "{}")
            return dump.get("available") and any(m.get("name") == module for m in dump.get("available_modules", []))
        wait_until(known, f"the by-hand cluster's MGR offering its {module} module", timeout)

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = json.loads(self.ceph("status", "--format", "json", check=False) or "{}")
            pgs = status.get("pgmap", {})
            clean = sum(s["count"] for s in pgs.get("pgs_by_state", []) if s["state_name"] == "active+clean")
            if status.get("health", {}).get("status") == "HEALTH_OK" and pgs.get("num_pgs") and clean == pgs["num_pgs"] \
                    and status.get("fsmap", {}).get("up", 0) >= 1:
                return
            time.sleep(1)
        raise RuntimeError(f"the by-hand cluster did not become healthy: {self.ceph('status', check=False)}")

    def inventory(self) -> dict:
        """Pools, their images and objects: what must be the same before and after a run."""
        out = {}
        for pool in json.loads(self.ceph("osd", "pool", "ls", "--format", "json")):
            objects = subprocess.run(["rados", "-c", str(self.conf), "-k", str(self.admin), "-p", pool, "ls"],
                                     capture_output=True, text=True, timeout=60).stdout.split()
            out[pool] = sorted(objects)
        return out

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs:
            proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)
