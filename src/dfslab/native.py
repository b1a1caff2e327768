"""Native code dfslab builds itself: the cls_dfslab object class (native/cls_dfslab, its own
Makefile). Built into build/cls/ of the checkout; Ceph OSDs find it through a symlink in
their `osd class dir` (next to Debian's classes), loading it at its first call."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "native" / "cls_dfslab"
BUILD = REPO / "build" / "cls"
CLASS_LIB = BUILD / "libcls_dfslab.so"
DEBIAN_CLASSES = sorted(Path("/usr/lib").glob("*/rados-classes"))


# Where Debian's ceph-osd loads classes from (its `osd class dir`, amd64): in dfslab's image,
# which Rook's OSD pods run, the class goes beside Debian's.
IMAGE_CLASS_DIR = "/usr/lib/x86_64-linux-gnu/rados-classes"


def image_layer(library: Path, context: Path) -> str:
    """The Dockerfile line that puts the built class `library` in the image's class directory
    (the library copied into the build `context`)."""
    shutil.copy2(library, context / library.name)
    return f"COPY {library.name} {IMAGE_CLASS_DIR}/{library.name}"


class BuildError(RuntimeError):
    """The object class could not be built; the message has the compiler's output."""


def build_class() -> Path:
    """make -C native/cls_dfslab (a no-op when the library is up to date)."""
    if shutil.which("g++") is None or shutil.which("make") is None:
        raise BuildError("building cls_dfslab needs g++ and make (apt-get install g++ make)")
    res = subprocess.run(["make", "-C", str(SOURCE), f"OUT={BUILD}"], capture_output=True, text=True)
    if res.returncode != 0:
        raise BuildError(f"building cls_dfslab failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return CLASS_LIB


def populate_class_dir(class_dir: Path) -> None:
    """Debian's classes (rbd, lock, ... are needed by RBD and CephFS) plus ours, as symlinks."""
    class_dir.mkdir(parents=True, exist_ok=True)
    for src_dir in DEBIAN_CLASSES:
        for lib in src_dir.glob("libcls_*.so*"):
            link = class_dir / lib.name
            if not link.exists():
                link.symlink_to(lib)
    ours = class_dir / CLASS_LIB.name
    if not ours.is_symlink():
        ours.symlink_to(CLASS_LIB)  # may dangle until built: the OSD loads it only when called
