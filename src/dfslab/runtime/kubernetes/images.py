"""The images the local Kubernetes runs, made here (there is no registry).

`dfslab/rook:<tag>` is dfslab's storage image (Debian's Ceph, built by runtime/images.py)
plus the rook binary at /usr/local/bin/rook as its entrypoint: what Rook's own image holds on
top of Ceph's. `dfslab/pause:<tag>` is the same layers sleeping, the pods' sandbox. Both are
built in dfslab's docker engine (a COPY needs no network) and saved once as a docker-archive.

The archive (1.2 GB) is imported and unpacked once per image build into a containerd root of
its own, the seed; every node's containerd root starts as hard links to the seed's files
(`seed_root`), its two bolt databases copied. Imported into each node instead, a 4-node
bring-up wrote the image 4 times and unpacked it again at each node's first pod (12-16 s
from a pod's creation to its start). The seed's files are never written: content blobs are
immutable, unpacked layers are overlayfs lower directories, and a container writes in a
snapshot of its own. Where the seed and the cluster's state are on different filesystems
(no hard links), the node imports the archive as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ...polling import wait_until
from .. import dockerd
from ..base import RuntimeError_
from .. import images as storage_images
from ... import native
from .binaries import binary, engine_of

ROOK_REPO = "dfslab/rook"
PAUSE_REPO = "dfslab/pause"


# containerd's two bolt databases: written by every containerd that opens them, so each node
# gets copies (the rest of the seed is hard-linked).
SEED_DATABASES = ("io.containerd.metadata.v1.bolt/meta.db", "io.containerd.snapshotter.v1.overlayfs/metadata.db")
SEED_TIMEOUT = 600


# dfslab's own modules that run in its pods with the image's Python (Debian's, with python3-rados,
# -boto3, -tenacity and -numpy, not pydantic: none of them may import dfslab.workloads or
# dfslab.spec): the integrity checker (seed, writer, read-back), the S3 load and the pushdown
# engine. The image holds dfslab's source at DFSLAB_PATH, and dfslab's object class in Ceph's
# class directory, where Rook's OSD pods load it (their conf lets them load any class).
IMAGE_MODULES = frozenset({"dfslab.chaos.integrity", "dfslab.s3_worker", "dfslab.pushdown.worker"})
DFSLAB_PATH = "/opt/dfslab"


def image_module(argv: list[str]) -> str | None:
    """The module of `[sys.executable, -m, MODULE, ...]` if dfslab's image holds it."""
    return argv[2] if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m" and argv[2] in IMAGE_MODULES \
        else None


def dfslab_sources() -> list[Path]:
    """dfslab's Python source files, as the image carries them."""
    root = Path(__file__).resolve().parents[2]
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def sources_digest() -> str:
    """Which dfslab made the image: a hash of its source's paths and contents."""
    root = Path(__file__).resolve().parents[3]
    h = hashlib.sha256()
    for path in dfslab_sources():
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:8]


def ensure(progress, release=None, root=None) -> dict[str, str]:
    """{rook, sandbox, archive, seed}: image names, the docker-archive holding both, and the
    containerd root they are imported and unpacked in. The tag says which Ceph, Rook and dfslab
    (its source's hash) made it. A `release` with a root of its own (`root`, as roots.ensure gave
    it) is built on that root's image, with the Rook that release names."""
    base = storage_images.ensure(progress) if release is None else storage_images.ensure_release(release, root, progress)
    rook = Path(binary(engine_of(release)))
    digest = hashlib.sha256(rook.read_bytes()).hexdigest()[:8]
    try:
        object_class = native.build_class()  # dfslab's object class, which the image carries
    except native.BuildError as exc:
        raise RuntimeError_(f"images: {exc}") from None
    dfslab = hashlib.sha256((sources_digest() + hashlib.sha256(object_class.read_bytes()).hexdigest()).encode())
    tag = f"{base.split(':', 1)[1]}-rook{digest}-dfslab{dfslab.hexdigest()[:8]}"
    names = {"rook": f"{ROOK_REPO}:{tag}", "sandbox": f"{PAUSE_REPO}:{tag}"}
    # One archive and seed per software line (this machine's, or a release's): a Pacific cluster
    # and a Reef one keep theirs side by side; a newer build of the same line replaces the older.
    line = f"k8s-images-{release.key if release is not None else storage_images.SUITE}-"
    archive = dockerd.engine_home() / f"{line}{tag}.tar"
    if not archive.exists():
        progress("building image", names["rook"])
        _build(base, rook, object_class, names)
        progress("saving images", f"{archive} (unpacked once into the seed every node's containerd starts from)")
        partial = archive.with_suffix(".partial")
        dockerd.docker("save", "-o", str(partial), names["rook"], names["sandbox"], timeout=900)
        partial.rename(archive)
        for old in dockerd.engine_home().glob(f"{line}*.tar"):  # the line's earlier builds (dfslab's own)
            if old != archive:
                old.unlink()
    return {**names, "archive": str(archive), "seed": str(seed(archive, line, progress))}


def seed(archive: Path, line: str, progress) -> Path:
    """The containerd root holding `archive`'s images imported and unpacked (made once)."""
    done = archive.with_name(archive.stem + "-containerd")
    if done.is_dir():
        return done
    home = dockerd.engine_home()
    for old in home.glob(f"{line}*-containerd*"):  # the line's earlier seeds, or an interrupted one (dfslab's own)
        shutil.rmtree(old)
    partial = done.with_name(done.name + ".partial")
    progress("unpacking images", f"{archive.name} into the containerd root every node's starts from (once per build)")
    state = Path(tempfile.mkdtemp(prefix="dfslab-seed-", dir="/run"))  # a socket path under 104 characters
    config = state / "config.toml"
    config.write_text(f'version = 2\nroot = "{partial}"\nstate = "{state}"\n[grpc]\n  address = "{state}/c.sock"\n')
    # Its own mount namespace: unpacking mounts each layer's snapshot for a moment, never in the host's table.
    containerd = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "containerd", "--config",
                                   str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
    try:
        wait_until(lambda: (state / "c.sock").exists() or containerd.poll() is not None,
                   "the seed's containerd to listen", 30, 0.1)
        res = subprocess.run(["ctr", "--address", str(state / "c.sock"), "-n", "k8s.io", "images", "import",
                              str(archive)], capture_output=True, text=True, timeout=SEED_TIMEOUT)
        if res.returncode != 0:
            raise RuntimeError_(f"unpacking {archive} into a containerd root failed: {res.stderr.strip()[-400:]}")
    finally:
        os.killpg(containerd.pid, signal.SIGTERM)
        try:
            containerd.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(containerd.pid, signal.SIGKILL)
            containerd.wait()
        shutil.rmtree(state, ignore_errors=True)
    partial.rename(done)
    return done


def seed_root(seed_dir: Path, root: Path) -> bool:
    """Fill a node's empty containerd `root` from the seed: hard links, the databases copied.
    False (root left empty) where hard links cannot be made (another filesystem)."""
    res = subprocess.run(["cp", "-a", "--link", f"{seed_dir}/.", str(root)], capture_output=True, text=True)
    if res.returncode != 0:
        for child in root.iterdir():  # what cp made of it: the node's own root, empty before
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        return False
    for name in SEED_DATABASES:
        copy = root / (name + ".copy")
        shutil.copy2(seed_dir / name, copy)
        os.replace(copy, root / name)
    return True


def _build(base: str, rook: Path, object_class: Path, names: dict[str, str]) -> None:
    """dfslab's image: `base` with the rook binary, dfslab's source and `object_class`; and the sandbox."""
    context = Path(tempfile.mkdtemp(prefix="dfslab-rook-image-", dir=dockerd.engine_home()))
    try:
        shutil.copy2(rook, context / "rook")
        layer = native.image_layer(object_class, context)
        root = Path(__file__).resolve().parents[3]
        for path in dfslab_sources():
            dest = context / "dfslab-src" / path.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        (context / "Dockerfile").write_text(
            f"FROM {base}\nCOPY rook /usr/local/bin/rook\n"
            f"COPY dfslab-src {DFSLAB_PATH}\nENV PYTHONPATH={DFSLAB_PATH}\n"
            f"{layer}\n"
            # Rook's image runs as root with the rook binary as entrypoint; its pods name commands.
            'ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/rook"]\n')
        dockerd.docker("build", "--network", "none", "-t", names["rook"], str(context), timeout=600)
        (context / "Dockerfile").write_text(f'FROM {names["rook"]}\nENTRYPOINT ["sleep", "infinity"]\n')
        dockerd.docker("build", "--network", "none", "-t", names["sandbox"], str(context), timeout=600)
    except RuntimeError_:
        raise
    finally:
        shutil.rmtree(context)  # dfslab's own temporary build context
