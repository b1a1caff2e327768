"""The container engine dfslab runs for itself: Debian's dockerd, started by hand (no
systemd), inside a network namespace dfslab owns.

Why a namespace: dockerd's bridges, veths and any firewall rules it writes then live in
`dfs-engine`, never in the host's namespace, so the host's routes and FORWARD policy are
what they were (Docker's own iptables management sets the host's FORWARD policy to DROP). It is
also started with iptables/ip-forward/masquerade off: containers only talk on their bridge.

One engine serves every docker-runtime cluster (images are built once): it is started by
the first cluster's `up` and stopped by the `down` that leaves no dfslab container or
network behind. Its PID and kernel start time are recorded, like every daemon dfslab starts.

    $DFSLAB_ENGINE_HOME (default /var/lib/dfslab/engine)   data-root (images, layers)
    /run/dfslab-engine/                                  exec-root, socket, pid file, log
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from ..procs import ENV_MARK, proc_start_time, terminate
from .base import RuntimeError_
from ..polling import poll

NETNS = "dfs-engine"
LABEL = "dfslab.cluster"
RUN_DIR = Path("/run/dfslab-engine")


def engine_home() -> Path:
    return Path(os.environ.get("DFSLAB_ENGINE_HOME", "/var/lib/dfslab/engine"))


def socket_path() -> Path:
    return RUN_DIR / "docker.sock"


def docker_cli() -> str:
    # Debian's client matches Debian's dockerd; another one on PATH may speak a newer API.
    cli = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else shutil.which("docker")
    if cli is None or shutil.which("dockerd") is None:
        raise RuntimeError_("runtime docker: the docker CLI and dockerd are missing; "
                            "install Debian's docker.io (`make install-deps`)")
    return cli


def docker(*args: str, check: bool = True, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """The docker CLI against dfslab's engine (never the host's default socket)."""
    res = subprocess.run([docker_cli(), "-H", f"unix://{socket_path()}", *args], capture_output=True, text=True,
                         timeout=timeout, **kw)
    if check and res.returncode != 0:
        raise RuntimeError_(f"`docker {' '.join(args[:3])} ...` failed: {res.stderr.strip() or res.stdout.strip()}")
    return res


def _record() -> dict:
    try:
        return json.loads((RUN_DIR / "engine.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def running() -> bool:
    rec = _record()
    return bool(rec) and proc_start_time(rec["pid"]) == rec["start_time"]


def responding() -> bool:
    return running() and docker("version", "--format", "{{.Server.Version}}", check=False, timeout=10).returncode == 0


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], capture_output=True, text=True)


def start(timeout: float = 60) -> None:
    """Start the engine unless it already answers."""
    if responding():
        return
    if running():  # alive but silent: do not start a second one over its data-root
        raise RuntimeError_(f"dfslab's dockerd (pid {_record()['pid']}) does not answer on {socket_path()}; "
                            f"see {RUN_DIR / 'dockerd.log'}, then `dfslab down` every docker cluster")
    docker_cli()
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    engine_home().mkdir(parents=True, exist_ok=True)
    if not Path(f"/run/netns/{NETNS}").exists():
        _ip("netns", "add", NETNS)
        _ip("-n", NETNS, "link", "set", "lo", "up")
    argv = ["nsenter", f"--net=/run/netns/{NETNS}", "--", "dockerd",
            "--data-root", str(engine_home()), "--exec-root", str(RUN_DIR / "exec"),
            "--pidfile", str(RUN_DIR / "dockerd.pid"), "-H", f"unix://{socket_path()}",
            "--iptables=false", "--ip6tables=false", "--ip-forward=false", "--ip-masq=false",
            "--bridge=none", "--userland-proxy=false"]
    # Shared by every cluster: it must not carry one cluster's mark, or that cluster's `down` kills it.
    env = {k: v for k, v in os.environ.items() if k != ENV_MARK}
    with open(RUN_DIR / "dockerd.log", "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, close_fds=True)
    (RUN_DIR / "engine.json").write_text(json.dumps({"pid": proc.pid, "start_time": proc_start_time(proc.pid) or 0}))
    def answering() -> bool:
        if proc.poll() is not None:
            raise RuntimeError_(f"dockerd exited with {proc.returncode}; see {RUN_DIR / 'dockerd.log'}")
        return responding()
    if not poll(answering, "dockerd to answer", timeout, 0.3):
        stop()
        raise RuntimeError_(f"dockerd did not answer within {timeout:.0f} s; see {RUN_DIR / 'dockerd.log'}")


def in_use() -> bool:
    """Any dfslab container or network left in the engine (of any cluster)."""
    if not responding():
        return False
    containers = docker("ps", "-aq", "--filter", f"label={LABEL}", check=False).stdout.split()
    networks = docker("network", "ls", "-q", "--filter", f"label={LABEL}", check=False).stdout.split()
    return bool(containers or networks)


def stop() -> None:
    """Stop the engine (SIGTERM: it stops its containerd and shims) and remove its namespace."""
    rec = _record()
    if rec:
        terminate([rec["pid"]], {rec["pid"]: rec["start_time"]}, timeout=20)
    (RUN_DIR / "engine.json").unlink(missing_ok=True)
    if Path(f"/run/netns/{NETNS}").exists():
        _ip("netns", "del", NETNS)


def stop_if_unused() -> bool:
    if in_use():
        return False
    stop()
    return True


def leftovers() -> list[str]:
    """The engine counts as left over when it runs with nothing of dfslab's in it."""
    found = []
    if running() and not in_use():
        found.append(f"dockerd pid {_record()['pid']}")
    if not running() and Path(f"/run/netns/{NETNS}").exists():
        found.append(f"netns {NETNS}")
    return found
