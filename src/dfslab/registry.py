"""Every filesystem dfslab can deploy or measure, and every storage target workloads run
against, one line each. This module is at the bottom layer: it imports nothing of dfslab's and
names the modules it points to as strings, imported only when asked.

A filesystem is a package under `backends/`: its `__init__` (light, no imports) may declare
`FAULTS` (fault kinds only it has, kind -> "module:Class"), `DEBIAN_GROUPS` (what it needs installed
here beyond `make demo`'s), `IMAGE_PACKAGES` (the Debian packages its daemons need in a container
image), `ENGINES` (another Backend per runtime), `WORDS` (its own words), `EXPOSED` and `SCRAPED` (its Prometheus series)
and `DEFAULT_RUNTIME`; `section.py` (`SECTION`: the model of its
spec section, with a `check(cluster)` for what depends on the nodes) and `backend.py`
(`BACKEND`: its `Backend` class). This module imports neither until asked, so the spec can
build itself from the sections without importing daemons' code.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

FILESYSTEMS = {
    "ceph": "dfslab.backends.ceph",
    "gluster": "dfslab.backends.gluster",
    "external": "dfslab.backends.external",
    "moosefs": "dfslab.backends.moosefs",
}

# Where processes run (dfslab.runtime): each a `Runtime` whose class attributes declare what it
# can do. The spec's `runtime:` names one of the first four; a runtime may hand a spec to
# another (`Runtime.for_spec`: kubernetes with a kubeconfig is a Kubernetes you run).
RUNTIMES = {
    "local": "dfslab.runtime.local:LocalNetnsRuntime",
    "docker": "dfslab.runtime.docker:DockerRuntime",
    "kubernetes": "dfslab.runtime.kubernetes:KubernetesRuntime",
    "host": "dfslab.runtime.host:HostRuntime",
    "kubernetes-existing": "dfslab.runtime.kubernetes.existing:ExistingKubernetesRuntime",
    "loopback": "dfslab.runtime.loopback:LoopbackRuntime",
}
# What one of the runtimes a spec names becomes, never named by a spec itself.
RUNTIME_VARIANTS = frozenset({"kubernetes-existing", "loopback"})


def spec_runtimes() -> tuple[str, ...]:
    """The runtimes a spec's `runtime:` may name, in registration order."""
    return tuple(r for r in RUNTIMES if r not in RUNTIME_VARIANTS)


@dataclass(frozen=True)
class Target:
    """One way workloads reach storage (IOR's backend table has one entry per storage API).
    Filesystems offer targets (`Backend.targets_for`) and say how to reach each as data
    (`Backend.reach`: one of the descriptions below); each tool maps those to its own engine
    (fio's in workloads/fio.py). The target says what it is and how the fault runs' checksummed
    objects are written to it and read back (`store`: "module:Class" of an integrity store)."""

    says: str  # what it is, for messages: "a POSIX mount"
    store: str | None = None
    client_cache: str | None = None  # the client library's write-back cache, where it has one


# What a tool needs to reach a target that is not a mount, as a backend gives it (made ready for
# the I/O asked): the kinds of IOR's aiori table and cbt's client endpoints.
@dataclass(frozen=True)
class ObjectPool:
    """Objects in a pool of an object store (target rados)."""
    pool: str
    user: str  # the client's name without its type: "admin"
    conf: str  # the client's configuration file, which names its keyring


@dataclass(frozen=True)
class BlockImage:
    """A block image in a pool, written end to end so that reads read (target rbd)."""
    pool: str
    image: str
    user: str


@dataclass(frozen=True)
class VolumeLibrary:
    """A volume through its filesystem's client library, no mount (target gfapi)."""
    volume: str
    server: str  # the address of a server that gives the volume's layout
    directory: str  # where on the volume the tool's files go (made already)


@dataclass(frozen=True)
class S3Endpoint:
    """A new bucket's name behind S3 endpoints (target s3): the tool makes the bucket, and removes it."""
    endpoints: tuple[str, ...]
    keys: str  # where the keys are: a 0600 file's path, or env:ACCESS_VAR:SECRET_VAR (never the keys)
    region: str
    bucket: str


Reach = ObjectPool | BlockImage | VolumeLibrary | S3Endpoint


# In order of preference for the fault runs' checksummed writer: it writes to the first target
# a cluster offers that has a store (the most direct path to the storage first).
TARGETS = {
    "rados": Target("RADOS pools", "dfslab.backends.ceph.integrity:RadosStore"),
    "fs": Target("a POSIX mount", "dfslab.chaos.integrity:FileStore"),
    "s3": Target("an S3 gateway", "dfslab.chaos.integrity:S3Store"),
    "rbd": Target("RBD images", client_cache="librbd's write-back cache"),
    "gfapi": Target("libgfapi"),
    "confine": Target("storage built on some servers only (a pool or a file system)"),
    "objclass": Target("dfslab's object class (cls_dfslab) in the storage daemons, for queries pushed into them"),
}


@dataclass(frozen=True)
class Release:
    """One release of a filesystem's software, as data (its package's `RELEASES`, the default
    first): where its packages come from and what they gave when measured here. `suite` None:
    this machine's own packages (Debian 12's); else a Debian suite whose packages dfslab installs
    into a root of their own (dfslab.runtime.roots), shared by every cluster of that release."""

    name: str  # what a spec's `release:` says: "reef", "11"
    version: str  # the upstream version the suite gave when measured ("18.2.7")
    says: str  # for messages: "Ceph 18 Reef"
    suite: str | None = None
    packages: tuple[str, ...] = ()  # what its root holds (their dependencies come along)
    # Packages its programs need inside the root that dfslab never runs itself (ceph-fuse runs
    # `mount -o remount` in its own namespace): installed, not among the root's programs.
    helpers: tuple[str, ...] = ()
    # apt options the suite needs on this mirror (forky's Release file is past its Valid-Until).
    apt_options: tuple[str, ...] = ()
    # Edits to the suite's files a cluster needs, each (path in the root, text, its replacement)
    # with why in the package that declares it; applied once per build, refused if the text is not there.
    patches: tuple[tuple[str, str, str], ...] = ()
    # Programs of the root's dependencies that dfslab's own clients run from it, by their full path
    # (dfslab's own Python is a python3 too): Ceph's /usr/bin/python3, whose rados module is the
    # release's librados (a newer release's keys and protocol).
    interpreters: tuple[str, ...] = ()
    # The build of the engine that deploys it on Kubernetes (its package's ENGINES), as
    # scripts/build-kubernetes.sh names it (NAME-VERSION: Ceph's Rook, rook-v1.18.8), where it
    # needs another than the runtime's default: the one that supports it.
    engine: str | None = None

    @property
    def installs(self) -> tuple[str, ...]:
        """Every package its root is built with."""
        return (*self.packages, *self.helpers)

    @property
    def key(self) -> str:
        """The name of its root's directory: its suite and its name (reef from trixie: trixie-reef)."""
        return f"{self.suite}-{self.name}"


def load_class(path: str) -> Any:
    """The class a registry names as "module:Class", imported now (every registry's plugins)."""
    module, _, cls = path.partition(":")
    return getattr(import_module(module), cls)


def runtime_class(kind: str) -> Any:
    """The `Runtime` class registered as `kind`."""
    return load_class(RUNTIMES[kind])


def runtime_of(spec: Any) -> Any:
    """The `Runtime` class a cluster of `spec` runs on: what it can do, before anything is made."""
    return runtime_class(spec.runtime).for_spec(spec)


def store_class(target: str) -> Any:
    """The integrity store class of `target`; KeyError if it has none."""
    path = TARGETS[target].store
    if path is None:
        raise KeyError(target)
    return load_class(path)


def section_class(filesystem: str) -> Any:
    return import_module(f"{FILESYSTEMS[filesystem]}.section").SECTION


def engines_of(filesystem: str) -> dict[str, str]:
    """{runtime: "module:Class"} of the runtimes on which an engine of their own deploys `filesystem`."""
    return dict(getattr(import_module(FILESYSTEMS[filesystem]), "ENGINES", {}))


def backend_class_of(filesystem: str, runtime: str | None = None) -> Any:
    """The filesystem's Backend; on a runtime with an engine of its own (kubernetes: Rook) the
    class its package names in `ENGINES` instead."""
    engine = engines_of(filesystem).get(runtime or "")
    if engine:
        return load_class(engine)
    return import_module(f"{FILESYSTEMS[filesystem]}.backend").BACKEND


def samples_of(filesystem: str) -> dict[str, dict]:
    """{cluster kind: spec fields} `dfslab capabilities` judges `filesystem` on ("": on every
    runtime that starts nodes, under the runtime's own kind)."""
    return dict(getattr(import_module(FILESYSTEMS[filesystem]), "SAMPLES", {}))


def faults_of(filesystem: str) -> dict[str, str]:
    """Fault kinds only `filesystem` has."""
    return dict(getattr(import_module(FILESYSTEMS[filesystem]), "FAULTS", {}))


def fault_owner(kind: str) -> str | None:
    """The filesystem whose own fault kind `kind` is (None: a generic kind, or none)."""
    return next((fs for fs in FILESYSTEMS if kind in faults_of(fs)), None)


def words_of(filesystem: str) -> tuple[str, ...]:
    """`filesystem`'s own words (regular expressions of whole words, its package's `WORDS`): what
    code outside its package should not say (the layering test reads them)."""
    return tuple(getattr(import_module(FILESYSTEMS[filesystem]), "WORDS", ()))


def image_packages(filesystem: str) -> list[str]:
    """Debian packages `filesystem`'s daemons need in a container image."""
    return list(getattr(import_module(FILESYSTEMS[filesystem]), "IMAGE_PACKAGES", []))


def default_runtime(filesystem: str) -> str | None:
    """The runtime a spec of `filesystem` gets when it names none (None: the spec's default)."""
    return getattr(import_module(FILESYSTEMS[filesystem]), "DEFAULT_RUNTIME", None)


def debian_groups(filesystem: str, spec: Any = None) -> list[str]:
    """Groups of debian-packages.txt the filesystem needs beyond `make demo`'s: its `DEBIAN_GROUPS`,
    and with a spec what its `debian_groups_for(spec)` adds for what that spec asks (an optional daemon)."""
    module = import_module(FILESYSTEMS[filesystem])
    more = getattr(module, "debian_groups_for", None)
    return [*getattr(module, "DEBIAN_GROUPS", []), *(more(spec) if more and spec is not None else [])]


def exposed_series() -> list[tuple]:
    """Every filesystem's sampler series as Prometheus metrics (its package's `EXPOSED`)."""
    return [rule for fs in FILESYSTEMS for rule in getattr(import_module(FILESYSTEMS[fs]), "EXPOSED", [])]


def scraped_metrics() -> dict[str, tuple[str, float]]:
    """Every filesystem's exporter metrics worth sampling (its package's `SCRAPED`)."""
    return {name: how for fs in FILESYSTEMS for name, how in getattr(import_module(FILESYSTEMS[fs]), "SCRAPED", {}).items()}


def releases_of(filesystem: str) -> tuple[Release, ...]:
    """The releases of `filesystem` dfslab deploys (its package's `RELEASES`), the default first;
    () where it deploys none of its own (a cluster you run)."""
    return tuple(getattr(import_module(FILESYSTEMS[filesystem]), "RELEASES", ()))


def release_named(filesystem: str, name: str | None) -> Release | None:
    """`filesystem`'s release `name` (None: its default); None where it has no releases or none of that name."""
    known = releases_of(filesystem)
    if not known:
        return None
    if name is None:
        return known[0]
    return next((r for r in known if r.name == str(name)), None)


def release_of(spec: Any) -> Release | None:
    """The release a cluster of `spec` runs: its filesystem section's `release:` (None: none of
    dfslab's own, as for a cluster you run)."""
    section = getattr(spec, spec.filesystem, None)
    return release_named(spec.filesystem, getattr(section, "release", None))


def rooted_release(spec: Any) -> Release | None:
    """The release a cluster of `spec` runs when it runs from a root of its own (a Debian suite's
    packages); None where it runs this machine's own software or none of dfslab's."""
    release = release_of(spec)
    return release if release is not None and release.suite else None


def client_release_of(spec: Any) -> Release | None:
    """The release a cluster of `spec`'s clients run: its section's `client_release:`, else the
    servers' (release_of)."""
    section = getattr(spec, spec.filesystem, None)
    named = getattr(section, "client_release", None)
    return release_named(spec.filesystem, named) if named is not None else release_of(spec)


def mixed_releases(spec: Any) -> bool:
    """Whether a cluster of `spec` runs its clients from another release than its servers."""
    return client_release_of(spec) != release_of(spec)


def rooted_releases() -> list[Release]:
    """Every release of every filesystem that runs from a root (what `dfslab releases build --all` builds)."""
    return [r for fs in FILESYSTEMS for r in releases_of(fs) if r.suite]


def release_problem(filesystem: str, name: Any) -> str | None:
    """What is wrong with `release: NAME` in `filesystem`'s section (None: nothing): the known ones."""
    if name is not None and release_named(filesystem, name) is not None:
        return None
    known = releases_of(filesystem)
    listed = "; ".join(f"{r.name} ({r.says}, {r.version})" for r in known)
    return f"unknown release {name!r}; {filesystem} releases: {listed} (dfslab releases lists them)"
