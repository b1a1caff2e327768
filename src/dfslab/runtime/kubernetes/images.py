"""The images the local Kubernetes runs, made here (there is no registry).

`dfslab/rook:<tag>` is dfslab's storage image (Debian's Ceph, built by runtime/images.py)
plus the rook binary at /usr/local/bin/rook as its entrypoint: what Rook's own image holds on
top of Ceph's. `dfslab/pause:<tag>` is the same layers sleeping, the pods' sandbox. Both are
built in dfslab's docker engine (a COPY needs no network) and saved once as a docker-archive
that each node's containerd imports.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from .. import RuntimeError_, engine
from .. import images as storage_images

ROOK_REPO = "dfslab/rook"
PAUSE_REPO = "dfslab/pause"


def _rook_binary() -> Path:
    from . import binary
    return Path(binary("rook"))


def ensure(progress) -> dict[str, str]:
    """{rook, sandbox, archive}: image names and the docker-archive holding both."""
    base = storage_images.ensure(progress)
    rook = _rook_binary()
    digest = hashlib.sha256(rook.read_bytes()).hexdigest()[:8]
    tag = f"{base.split(':', 1)[1]}-rook{digest}"
    names = {"rook": f"{ROOK_REPO}:{tag}", "sandbox": f"{PAUSE_REPO}:{tag}"}
    archive = engine.engine_home() / f"k8s-images-{tag}.tar"
    if not archive.exists():
        progress("building image", names["rook"])
        _build(base, rook, names)
        progress("saving images", f"{archive} (imported into every node's containerd)")
        partial = archive.with_suffix(".partial")
        engine.docker("save", "-o", str(partial), names["rook"], names["sandbox"], timeout=900)
        partial.rename(archive)
        for old in engine.engine_home().glob("k8s-images-*.tar"):  # archives of earlier builds (dfslab's own)
            if old != archive:
                old.unlink()
    return {**names, "archive": str(archive)}


def _build(base: str, rook: Path, names: dict[str, str]) -> None:
    context = Path(tempfile.mkdtemp(prefix="dfslab-rook-image-", dir=engine.engine_home()))
    try:
        shutil.copy2(rook, context / "rook")
        (context / "Dockerfile").write_text(
            f"FROM {base}\nCOPY rook /usr/local/bin/rook\n"
            # Rook's image runs as root with the rook binary as entrypoint; its pods name commands.
            'ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/rook"]\n')
        engine.docker("build", "--network", "none", "-t", names["rook"], str(context), timeout=600)
        (context / "Dockerfile").write_text(f'FROM {names["rook"]}\nENTRYPOINT ["sleep", "infinity"]\n')
        engine.docker("build", "--network", "none", "-t", names["sandbox"], str(context), timeout=600)
    except RuntimeError_:
        raise
    finally:
        for child in context.iterdir():
            child.unlink()
        context.rmdir()
