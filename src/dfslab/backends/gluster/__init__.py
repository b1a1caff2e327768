"""GlusterFS from Debian's packages: one glusterd per server node (glusterd.py), a volume of
bricks on those nodes (volume.py), FUSE clients (client.py). `section.py` is the spec's
`gluster:` section; `backend.py` only orders them and answers for the cluster."""

# Its words (regular expressions of whole words; registry.words_of).
WORDS = (r"gluster\w*", "bricks?")

# Debian packages a daemon image needs for this filesystem (the first one names the image's version).
IMAGE_PACKAGES = ["glusterfs-server"]

from ...registry import Release  # noqa: E402 (data only: the registry imports nothing of dfslab's)

# The releases `gluster: {release: ...}` names, the default first (measured 2026-11-28, ../shared/FACTS.md).
# 10 is this machine's own; 11 runs from a root of Debian trixie: glusterd (and the bricks and
# self-heal daemon it starts, in its mount namespace), the gluster CLI (run in that namespace), the
# FUSE client, and fio with its gfapi engine, linked against 11's libgfapi; fuse3 for /bin/mount.
RELEASES = (
    Release("10", "10.3", "GlusterFS 10 (Debian 12's own packages)"),
    Release("11", "11.1", "GlusterFS 11 (Debian 13 trixie)", "trixie",
            ("glusterfs-server", "glusterfs-client", "glusterfs-cli", "fio", "fuse3")),
)
# Groups of src/dfslab/debian-packages.txt this filesystem needs here beyond `make demo`'s
# (installed on its first use, dfslab.deps).
DEBIAN_GROUPS = ["gluster"]
# What `dfslab capabilities` judges a GlusterFS cluster on: the section's defaults.
SAMPLES: dict[str, dict] = {"": {}}
# Fault kinds only this filesystem has (chaos adds the ones every cluster has).
FAULTS = {"brick": "dfslab.backends.gluster.faults:KillBrick"}
# Runtimes on which an engine of their own deploys it (kubernetes: glusterd StatefulSet + bootstrap Job).
ENGINES = {"kubernetes": "dfslab.backends.gluster.kube:GlusterKubernetesBackend"}
# The sampler's GlusterFS series as Prometheus metrics (dfslab.monitor's form), one metric each.
EXPOSED = [(r"gluster\.(\w+)", "dfslab_gluster_{0}", "gauge", (), 1, "GlusterFS: {0}")]
