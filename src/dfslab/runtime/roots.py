"""Release roots: a release's software (a `registry.Release`: a Debian suite and its packages) in a
directory tree of its own, built once per machine with mmdebstrap from Debian's archive, checked by
checksum, shared by every cluster of that release, removed only by `dfslab releases remove`.

    $DFSLAB_RELEASES (default /var/cache/dfslab/releases)/<suite>-<release>/
        root/            the tree: what `mmdebstrap --variant=apt --include=PACKAGES SUITE` makes
        manifest.json    what it holds (package versions), its programs, checksums, the archive's date
        lock             flock: one build at a time, and no use while one runs

A machine-wide cache rather than under $DFSLAB_HOME: a root is ~700 MB and 3 minutes of apt, and
every cluster of the release (a test session's own DFSLAB_HOME too) is to share the one built.
The host's apt state is never touched: mmdebstrap keeps the suite's sources and lists in the root.
How a program of the root runs is rootexec.py's (a mount namespace where /usr is the root's).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from ..registry import Release, rooted_release
from ..safety import remove_owned_tree

DEFAULT_MIRROR = "http://deb.debian.org/debian"
ROOTEXEC = Path(__file__).with_name("rootexec.py")
Progress = Callable[[str, str], None]


class RootError(RuntimeError):
    """A release's root cannot be built or used; the message says why and what to do."""


def roots_dir() -> Path:
    return Path(os.environ.get("DFSLAB_RELEASES", "/var/cache/dfslab/releases"))


def root_home(release: Release) -> Path:
    return roots_dir() / release.key


@dataclass(frozen=True)
class SoftwareRoot:
    """A built root, as a cluster records it (state `software_root`) and runtimes use it."""

    path: str  # the tree
    # What runs from it: the release's packages' programs by name, its interpreters by full path
    # (Release.interpreters); the rest is this machine's.
    programs: tuple[str, ...]

    def wrap(self, argv: list[str], shared: str) -> list[str]:
        """`argv` run from this root if its program is one of the root's, else unchanged; `shared`:
        the cluster's directory of client mounts (rootexec.py)."""
        program = program_of(argv) if argv else ""
        if program not in self.programs and os.path.basename(program) not in self.programs:
            return argv
        return [sys.executable, "-S", str(ROOTEXEC), self.path, shared, "--", *argv]

    def as_json(self) -> dict:
        return {"path": self.path, "programs": list(self.programs)}

    @classmethod
    def from_json(cls, data: dict | None) -> "SoftwareRoot | None":
        return cls(data["path"], tuple(data["programs"])) if data else None


# unshare's options that take a value as the next word (the rest are flags or --opt=value).
_UNSHARE_VALUED = ("--propagation", "--setgroups", "-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd")


def program_of(argv: list[str]) -> str:
    """The program `argv` runs, past a `timeout [OPTIONS] DURATION` or an `unshare [OPTIONS]` before
    it, and inside `sh -c SCRIPT` the program its last `exec` runs (glusterd's start: its private
    mounts, then `exec glusterd`). The root has its own timeout, unshare, sh and mount."""
    name = os.path.basename(argv[0])
    rest = argv[1:]
    if name == "timeout":
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in ("-s", "--signal", "-k", "--kill-after") else rest[1:]
        return program_of(rest[1:]) if len(rest) > 1 else argv[0]
    if name == "unshare":
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in _UNSHARE_VALUED else rest[1:]
        return program_of(rest) if rest else argv[0]
    if name in ("sh", "dash", "bash") and len(rest) >= 2 and rest[0] == "-c":
        execs = re.findall(r"(?:^|[;&|]\s*|\bthen\s+)exec\s+([^\s;&|]+)", rest[1])
        return execs[-1] if execs else argv[0]
    return argv[0]


def mirror() -> str:
    """Debian's archive as this machine's apt reaches it (its sources' first .../debian URI)."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = path.read_text()
        except OSError:
            continue
        found = re.search(r"(?:^URIs:\s*|^deb\s+(?:\[[^]]*\]\s+)?)(\S+/debian)/?\s", text, re.M)
        if found:
            return found.group(1)
    return DEFAULT_MIRROR


def archive_stamp(release: Release, timeout: float = 20) -> str | None:
    """sha256 of the suite's InRelease as the archive serves it now (None: not reachable)."""
    try:
        with urllib.request.urlopen(f"{mirror()}/dists/{release.suite}/InRelease", timeout=timeout) as resp:
            return hashlib.sha256(resp.read()).hexdigest()
    except OSError:
        return None


@contextmanager
def _locked(release: Release) -> Iterator[None]:
    home = root_home(release)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def read_manifest(release: Release) -> dict | None:
    try:
        return json.loads((root_home(release) / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def _status_checksum(tree: Path) -> str:
    """sha256 of the root's dpkg status: which packages at which versions (changes with any install)."""
    return hashlib.sha256((tree / "var/lib/dpkg/status").read_bytes()).hexdigest()


def _programs(tree: Path, packages: tuple[str, ...]) -> list[str]:
    """The commands `packages` install (their dpkg file lists' /usr/bin and /usr/sbin entries)."""
    found = set()
    for package in packages:
        for name in (f"{package}.list", f"{package}:amd64.list"):
            listing = tree / "var/lib/dpkg/info" / name
            if listing.exists():
                for line in listing.read_text().splitlines():
                    if re.fullmatch(r"/(usr/)?s?bin/[^/]+", line):
                        found.add(os.path.basename(line))
    return sorted(found)


def _versions(tree: Path, packages: tuple[str, ...]) -> dict[str, str]:
    res = subprocess.run(["dpkg-query", f"--admindir={tree}/var/lib/dpkg", "-W", "-f", "${Package}\t${Version}\n",
                          *packages], capture_output=True, text=True)
    return dict(line.split("\t", 1) for line in res.stdout.splitlines() if "\t" in line)


def _tree_bytes(tree: Path) -> int:
    res = subprocess.run(["du", "-sb", "--one-file-system", str(tree)], capture_output=True, text=True)
    return int(res.stdout.split()[0]) if res.returncode == 0 and res.stdout else 0


def apply_patches(release: Release, tree: Path) -> None:
    """`release.patches` applied to a new root, each once; refused where its text is not there."""
    for relative, text, replacement in release.patches:
        target = tree / relative
        content = target.read_text() if target.is_file() else ""
        if text not in content:
            raise RootError(f"{release.says}: {relative} in the root does not hold the text dfslab patches "
                            f"({text.splitlines()[0]!r}...): the suite's package changed; the release's patches "
                            "in its filesystem's package need a look")
        target.write_text(content.replace(text, replacement, 1))


# What dfslab's images add to a filesystem's own packages on runtime kubernetes: tini as init, and
# the tools dfslab's Jobs run (fio, iperf3, and MariaDB for the sql workload, server and
# mysqlslap); boto3, tenacity and numpy for dfslab's own S3 load, the checksummed objects through a
# gateway and the pushdown worker, which on a Kubernetes you run run in the image's Python
# (runtime/kubernetes/images.py IMAGE_MODULES). The root of a release that runs on Kubernetes holds
# them too, so that its image there is its root as it is (runtime/images.py ensure_release).
# iptables: dfslab's fault agent cuts and caps daemons' networks with it (runtime/kubernetes/agent.py).
IMAGE_TOOLS = ("tini", "fio", "iperf3", "mariadb-server", "mariadb-client", "python3-boto3", "python3-tenacity",
               "python3-numpy", "iptables")


def installs(release: Release) -> tuple[str, ...]:
    """Every package `release`'s root is built with: its own, and dfslab's image tools where an
    engine runs the release on Kubernetes (`Release.engine`)."""
    return tuple(dict.fromkeys((*release.installs, *(IMAGE_TOOLS if release.engine else ()))))


def build(release: Release, progress: Progress) -> dict:
    """Build `release`'s root from Debian's archive now (replacing a built one); its manifest."""
    if shutil.which("mmdebstrap") is None:
        raise RootError("mmdebstrap is missing: `apt-get install mmdebstrap` (make install-deps installs it)")
    home = root_home(release)
    fresh, tree = home / "root.new", home / "root"
    if fresh.exists():
        remove_owned_tree(fresh, [roots_dir()], "a build of dfslab's that did not finish")
    argv = ["mmdebstrap", "--variant=apt", "--mode=root", f"--include={','.join(installs(release))}",
            *(f"--aptopt={opt}" for opt in release.apt_options), release.suite, str(fresh), mirror()]
    started = time.monotonic()
    stamp = archive_stamp(release)
    progress("building the release's root", f"{release.says}: mmdebstrap {release.suite} with "
             f"{', '.join(release.packages)} (~3 min, once per machine)")
    log = home / "build.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            last = ""
            while proc.poll() is None:
                time.sleep(2)
                lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("I: ")]
                if lines and lines[-1] != last:
                    last = lines[-1]
                    progress("building the release's root", f"{last[3:]} ({time.monotonic() - started:.0f} s)")
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if proc.returncode != 0:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-4:])
        raise RootError(f"building {release.says}'s root failed (mmdebstrap exit {proc.returncode}; log {log}): {tail}")
    apply_patches(release, fresh)
    manifest = {
        "release": release.name, "suite": release.suite, "packages": list(installs(release)),
        "versions": _versions(fresh, installs(release)), "patched": sorted({p for p, _, _ in release.patches}), "programs": _programs(fresh, release.packages),
        "status_sha256": _status_checksum(fresh), "archive_sha256": stamp, "mirror": mirror(),
        "built": time.time(), "build_seconds": round(time.monotonic() - started, 1), "bytes": _tree_bytes(fresh),
    }
    if tree.exists():
        remove_owned_tree(tree, [roots_dir()], "the root this build replaces")
    fresh.rename(tree)
    (home / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def problem(release: Release, manifest: dict | None) -> str | None:
    """Why the built root of `release` cannot be used as it is (None: it can)."""
    tree = root_home(release) / "root"
    if manifest is None or not tree.is_dir():
        return "not built"
    if (manifest.get("packages") != list(installs(release)) or manifest.get("suite") != release.suite
            or manifest.get("patched") != sorted({p for p, _, _ in release.patches})):
        return "built for other packages"
    try:
        if _status_checksum(tree) != manifest.get("status_sha256"):
            return "its packages changed since it was built (checksum)"
    except OSError:
        return "its package database is gone"
    return None


def ensure(release: Release, progress: Progress, check_archive: bool = True, rebuild: bool = False) -> SoftwareRoot:
    """`release`'s root, built first if it is not (or is stale: its checksum, or the suite's
    archive changed since it was built), or if `rebuild`."""
    with _locked(release):
        manifest = read_manifest(release)
        why = "asked to rebuild it" if rebuild else problem(release, manifest)
        if why is None and check_archive:
            stamp = archive_stamp(release, timeout=5)
            if stamp and manifest.get("archive_sha256") and stamp != manifest["archive_sha256"]:
                why = f"Debian's {release.suite} changed since it was built"
        if why is not None:
            if why != "not built":
                progress("building the release's root", f"rebuilding {release.says}'s root: {why}")
            manifest = build(release, progress)
        return _built(release, manifest)


def _built(release: Release, manifest: dict) -> SoftwareRoot:
    return SoftwareRoot(str(root_home(release) / "root"), (*manifest["programs"], *release.interpreters))


def users(release: Release) -> list[int]:
    """PIDs of processes running from `release`'s root (a mount namespace with its /usr bound in)."""
    tree = str(root_home(release) / "root") + "/"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # field 4 of a bind mount's line is the path it binds within its filesystem
            if any(line.split()[3].startswith(tree) for line in (entry / "mountinfo").read_text().splitlines()):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def remove(release: Release) -> bool:
    """Remove `release`'s root (its manifest proves it dfslab's); False where none was built."""
    with _locked(release):
        home = root_home(release)
        if read_manifest(release) is None:
            return False
        remove_owned_tree(home / "root", [roots_dir()], "its manifest.json")
        for name in ("manifest.json", "build.log", "lock"):
            (home / name).unlink(missing_ok=True)
    home.rmdir()
    return True


def release_argv(spec, argv: list[str], release: Any = "servers") -> list[str]:
    """`argv` as a cluster of `spec` runs it: from its release's root where that release has one
    (and it is built), else as it is (this machine's program). `release`: another release than the
    servers' (a client release), or None for this machine's own."""
    release = rooted_release(spec) if release == "servers" else release
    release = release if release is not None and release.suite else None
    manifest = read_manifest(release) if release is not None else None
    return argv if manifest is None else _built(release, manifest).wrap(argv, "")
