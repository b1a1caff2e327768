"""The images dfslab's containers run, made here: no registry can be reached.

A cluster of this machine's own release runs dfslab/storage, made as below; a cluster of another
release (`ceph: {release: reef}`) runs dfslab/release:<release>-<checksum>, that release's root
(runtime/roots.py) imported as it is (ensure_release).

debootstrap makes a minimal Debian 12 root from Debian's mirror, apt-get (chrooted, with
bookworm, -updates and -security, as the host) installs the storage daemons' packages, the
package caches are dropped, and the tree is imported into dfslab's engine. The tag names the Ceph and GlusterFS versions and a short hash of every included
package's version, so a build is skipped while the mirror offers the same versions and
redone when it does not.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from ..registry import FILESYSTEMS, Release, image_packages
from ..safety import UnsafeRemoval, remove_owned_tree
from .base import RuntimeError_
from . import dockerd, roots

REPO = "dfslab/storage"
RELEASE_REPO = "dfslab/release"  # a release's root as an image (ensure_release)
MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
# Each filesystem's daemons and what its engine on Kubernetes and its clients in a Job need (its
# package's IMAGE_PACKAGES); on the host runtimes the clients run from the host in the client
# node's namespace.
FILESYSTEM_PACKAGES = {fs: image_packages(fs) for fs in FILESYSTEMS}
PACKAGES = [p for pkgs in FILESYSTEM_PACKAGES.values() for p in pkgs] + ["iproute2", "procps", *roots.IMAGE_TOOLS]

Progress = Callable[[str, str], None]


def candidate_versions(packages: list[str] = PACKAGES) -> dict[str, str]:
    """The versions apt would install now (what debootstrap will fetch from the same mirror)."""
    res = subprocess.run(["apt-cache", "policy", *packages], capture_output=True, text=True)
    versions = parse_policy(res.stdout)
    missing = [p for p in packages if versions.get(p) in (None, "(none)")]
    if missing:
        raise RuntimeError_(f"images: apt knows no candidate for {missing}; run `apt-get update` (Debian 12 sources)")
    return versions


def parse_policy(text: str) -> dict[str, str]:
    """{package: candidate version} from `apt-cache policy` output."""
    versions, current = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            current = line.rstrip(":")
        elif current and line.strip().startswith("Candidate:"):
            versions[current] = line.split(":", 1)[1].strip()
    return versions


def tag_for(versions: dict[str, str]) -> str:
    digest = hashlib.sha256(repr(sorted(versions.items())).encode()).hexdigest()[:8]
    short = lambda pkg: re.sub(r"[^A-Za-z0-9_.-]", "_", versions[pkg].split("+")[0].split("-")[0])  # noqa: E731
    return "-".join(f"{fs}{short(pkgs[0])}" for fs, pkgs in FILESYSTEM_PACKAGES.items() if pkgs) + f"-{digest}"


def built_for(versions: dict[str, str]) -> str | None:
    """The image built when apt offered these versions, if the engine has one."""
    res = dockerd.docker("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter",
                        f"label=dfslab.candidates={tag_for(versions)}", REPO, check=False)
    names = res.stdout.split()
    return names[0] if names else None


def ensure(progress: Progress, rebuild: bool = False) -> str:
    """The image for the current package versions, built if the engine does not have it."""
    dockerd.start()
    versions = candidate_versions()
    image = built_for(versions)
    if image and not rebuild:
        return image
    return build(versions, progress)


def build(versions: dict[str, str], progress: Progress) -> str:
    """Build and import the image; return its name (tagged by the versions it holds)."""
    if shutil.which("debootstrap") is None:
        raise RuntimeError_("images: debootstrap is missing; `make install-deps` installs it")
    dockerd.engine_home().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dfslab-image-", dir=dockerd.engine_home()))
    root = work / "root"
    try:
        _debootstrap(root, progress)
        progress("building image", "dropping package caches")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(root / cache, ignore_errors=True)
            (root / cache).mkdir(parents=True, exist_ok=True)
        # The host's sources may differ from the tree's: the tag says what the tree holds, the
        # label which of the host's apt candidates it was built for.
        image = f"{REPO}:{tag_for(installed_versions(root, list(versions)))}"
        return _import(root, image, f"dfslab.candidates={tag_for(versions)}", progress)
    finally:
        _remove_tree(work)


def _import(tree: Path, image: str, label: str, progress: Progress) -> str:
    """`tree` imported into dfslab's engine as `image`, labelled `label`."""
    progress("importing image", image)
    tar = subprocess.Popen(["tar", "-C", str(tree), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
    res = dockerd.docker("import", "--change", f"LABEL {label}", "-", image, stdin=tar.stdout, timeout=600, check=False)
    tar.wait()
    if res.returncode != 0:
        raise RuntimeError_(f"images: docker import failed: {res.stderr.strip()}")
    return image


def release_image(release: Release, manifest: dict) -> str:
    """The name of the image of `release`'s root as built (its manifest): its package database's
    checksum and its build's time in the tag, so a rebuilt root is a new image (a root rebuilt
    for a changed patch of the release's files has the same packages)."""
    built = hashlib.sha256(f"{manifest['status_sha256']} {manifest.get('built')}".encode()).hexdigest()
    return f"{RELEASE_REPO}:{release.key}-{built[:12]}"


def ensure_release(release: Release, root: roots.SoftwareRoot, progress: Progress) -> str:
    """The image a docker cluster of `release` runs its daemons from: the release's `root` (as the
    runtime's roots.ensure gave it, for the clients and tools it runs on the host) imported as it
    is, once per root. Images of the release's earlier roots go, unless a container still runs one."""
    dockerd.start()
    image = release_image(release, roots.read_manifest(release))
    if dockerd.docker("image", "inspect", image, check=False).returncode == 0:
        return image
    _import(Path(root.path), image, f"dfslab.release={release.key}", progress)
    listed = dockerd.docker("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter",
                            f"label=dfslab.release={release.key}", check=False).stdout.split()
    for earlier in (name for name in listed if name != image):
        dockerd.docker("rmi", earlier, check=False)  # refused while a container of it exists: kept then
    return image


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path.resolve()) + "/"
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    return [m for m in mounts if m.startswith(prefix)]


def _remove_tree(work: Path) -> None:
    """Remove a build tree, but never through a mount: debootstrap mounts /proc and /sys (and
    may bind /dev) inside its target, and an interrupted build can leave them there."""
    for mount in sorted(_mounts_under(work), reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    if _mounts_under(work):
        raise RuntimeError_(f"images: {work} still has mounts under it ({_mounts_under(work)}); unmount them and remove it")
    if not work.name.startswith("dfslab-image-"):
        raise UnsafeRemoval(f"refusing to remove {work}: not an image build tree of dfslab's (dfslab-image-*)")
    remove_owned_tree(work, [dockerd.engine_home()], "image build tree made by mkdtemp")


SOURCES = """deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
"""
# debootstrap's own resolver ignores virtual packages (ceph-mgr -> python3-bcrypt -> cffi
# backend API), so it makes only the base and apt installs the daemons inside it.
APT_STEPS = ("Get:", "Unpacking", "Setting up")


def _debootstrap(root: Path, progress: Progress) -> None:
    _stream(["debootstrap", "--variant=minbase", SUITE, str(root), MIRROR], "debootstrap base", progress,
            lambda line: line.startswith("I: "))
    shutil.copy("/etc/resolv.conf", root / "etc/resolv.conf")
    (root / "etc/apt/sources.list").write_text(SOURCES)
    # Packages must not start services in the tree (there is no init; dfslab starts daemons).
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    apt = ["chroot", str(root), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-y"]
    _stream([*apt, "update"], "apt-get update", progress, lambda line: line.startswith(("Get:", "Hit:")))
    _stream([*apt, "install", "--no-install-recommends", *PACKAGES], f"installing {' and '.join(FILESYSTEM_PACKAGES)}", progress,
            lambda line: line.startswith(APT_STEPS))
    policy.unlink()


def _stream(argv: list[str], what: str, progress: Progress, shown) -> None:
    """Run a build step, its progress lines shown, its last lines in the error if it fails."""
    # Its own process group, so an interrupt stops debootstrap's and apt's children too.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    tail: list[str] = []
    count = 0
    try:
        for line in proc.stdout:
            tail = (tail + [line.rstrip()])[-20:]
            if shown(line):
                count += 1
                progress("building image", f"{what}: {count} · {line.strip()[:100]}")
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.wait() != 0:
        raise RuntimeError_(f"images: {what} failed (exit {proc.returncode}; is deb.debian.org reachable?):\n"
                            + "\n".join(tail))


def installed_versions(root: Path, packages: list[str]) -> dict[str, str]:
    res = subprocess.run(["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", *packages], capture_output=True, text=True)
    got = dict(line.split("\t", 1) for line in res.stdout.splitlines() if "\t" in line)
    missing = [p for p in packages if p not in got]
    if missing:
        raise RuntimeError_(f"images: debootstrap did not install {missing}")
    return got
