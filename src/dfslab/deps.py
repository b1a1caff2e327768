"""What a cluster needs from Debian beyond `make demo`'s packages, installed on its first use:
GlusterFS's packages for `filesystem: gluster`, docker.io and debootstrap for `runtime: docker`,
and for `runtime: kubernetes` the local cluster's packages and the Kubernetes and Rook build
(scripts/build-kubernetes.sh, ~10 min cold, cached after). Groups and packages are listed once,
in debian-packages.txt, which scripts/install-deps.sh reads too."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

from .registry import debian_groups, release_of, rooted_release, runtime_class
from .runtime import Runtime, RuntimeError_
from .spec import ClusterSpec
from .state import dfslab_home

PACKAGES = Path(__file__).with_name("debian-packages.txt")
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"  # the repository's, beside src/
KUBERNETES_BUILD_MINUTES = 10  # measured cold on this 2-core machine (scripts/build-kubernetes.sh)


class DepsError(RuntimeError_):
    """A missing package or build that could not be installed here (a user's error: exit 2 names the command)."""


def groups() -> dict[str, list[str]]:
    out = {}
    for line in PACKAGES.read_text().splitlines():
        name, sep, packages = line.partition(":")
        if sep and not line.startswith("#"):
            out[name.strip()] = packages.split()
    return out


def missing(group: str) -> list[str]:
    """The group's packages dpkg does not have installed."""
    wanted = groups()[group]
    # One dpkg-query for the group; a package it does not know is on stderr, absent from stdout.
    res = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\n", *wanted], capture_output=True, text=True)
    installed = {line.split()[0].partition(":")[0] for line in res.stdout.splitlines() if line.endswith("install ok installed")}
    return [p for p in wanted if p not in installed]


def _script(name: str, args: list[str], what: str, log_name: str) -> None:
    script = SCRIPTS / name
    if os.geteuid() != 0 or not script.is_file():
        raise DepsError(f"{what} is missing; as root, from the repository: bash scripts/{name} {' '.join(args)}")
    log = dfslab_home() / "logs" / log_name
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        res = subprocess.run(["bash", str(script), *args], stdout=out, stderr=subprocess.STDOUT, cwd=script.parent.parent)
    if res.returncode != 0:
        tail = log.read_text()[-600:].strip()
        raise DepsError(f"installing {what} failed (bash scripts/{name} {' '.join(args)}; log {log}): {tail}")


def ensure(spec: ClusterSpec, runtime: type[Runtime], progress: Callable[[str, str], None]) -> None:
    """Install what `spec` on `runtime` needs and this machine lacks, saying what and why."""
    rooted = ["releases"] if rooted_release(spec) is not None else []
    ensure_groups([*runtime.debian_groups, *debian_groups(spec.filesystem, spec), *rooted], progress)
    for build in runtime.builds:
        BUILDS[build](progress, spec)


def ensure_runtime(runtime_kind: str, progress: Callable[[str, str], None]) -> None:
    """The runtime's own packages, for a command that uses it without a cluster (`images build`)."""
    ensure_groups(list(runtime_class(runtime_kind).debian_groups), progress)


def ensure_groups(wanted: list[str], progress: Callable[[str, str], None]) -> None:
    for group in dict.fromkeys(wanted):
        lacking = missing(group)
        if lacking:
            progress("installing", f"first use of {group}: Debian's {' '.join(lacking)} (about a minute)")
            started = time.monotonic()
            _script("install-deps.sh", [group], f"Debian's {' '.join(lacking)}", f"install-{group}.log")
            progress("installed", f"{group} in {time.monotonic() - started:.0f} s")


def _has_go() -> bool:
    return bool(shutil.which("go") or Path("/usr/local/go/bin/go").exists() or list(Path("/usr/lib").glob("go-*/bin/go")))


def ensure_fetched(marker: Path, args: list[str], what: str, progress: Callable[[str, str], None]) -> None:
    """`what`, fetched from the Go module proxy by `scripts/build-kubernetes.sh ARGS` on first use
    (seconds, no build; `marker` exists once it has), after Debian's Go where this machine has none."""
    if marker.exists():
        return
    if not _has_go():
        ensure_groups(["render"], progress)
    progress("fetching", f"first use of {what}: from the Go module proxy into {marker.parent}")
    started = time.monotonic()
    _script("build-kubernetes.sh", args, what, f"fetch-{'-'.join(args)}.log")
    if not marker.exists():
        raise DepsError(f"fetching {what} left no {marker}; see {dfslab_home() / 'logs'}/fetch-{'-'.join(args)}.log")
    progress("fetched", f"{what} in {time.monotonic() - started:.0f} s")


def ensure_kubernetes_build(progress: Callable[[str, str], None], spec: ClusterSpec | None = None) -> None:
    """Kubernetes' binaries and the engine build `spec`'s release names (the default without one)."""
    from .runtime.kubernetes import COMPONENTS
    from .runtime.kubernetes.binaries import engine_of, k8s_cache
    engine = engine_of(release_of(spec) if spec is not None else None)
    if all((k8s_cache() / "bin" / name).exists() for name in (*COMPONENTS, engine)):
        return
    progress(f"building Kubernetes and {engine}", f"first use: about {KUBERNETES_BUILD_MINUTES} min on 2 cores (an "
                                                  f"engine alone ~3), cached in {k8s_cache()} (log: {dfslab_home() / 'logs'})")
    started = time.monotonic()
    _script("build-kubernetes.sh", [engine], f"the Kubernetes and {engine} build", "build-kubernetes.log")
    progress("built", f"Kubernetes and {engine} in {(time.monotonic() - started) / 60:.1f} min")


# The one-time builds a runtime names in `Runtime.builds`.
BUILDS: dict[str, Callable[[Callable[[str, str], None], ClusterSpec | None], None]] = {"kubernetes": ensure_kubernetes_build}
