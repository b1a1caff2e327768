"""MooseFS from Debian's packages: one master holding every file's metadata (Lustre's shape: one
metadata server beside many data servers), a metalogger keeping a copy of it, chunk servers on
the other nodes, and FUSE clients (`mfsmount`). `section.py` is the spec's `moosefs:` section;
one module per daemon kind (master, metalogger, chunkserver), `client.py` the mount, `cli.py`
what `mfscli` tells of the cluster; `backend.py` only orders them and answers for the cluster."""

# Its words (regular expressions of whole words; registry.words_of).
WORDS = ("moosefs", r"mfs\w*", "chunkservers?", "metaloggers?")

# Debian packages a daemon image needs for this filesystem (the first one names the image's version).
IMAGE_PACKAGES = ["moosefs-master", "moosefs-chunkserver", "moosefs-metalogger", "moosefs-client", "moosefs-cli"]

from ...registry import Release  # noqa: E402 (data only: the registry imports nothing of dfslab's)

# The releases `moosefs: {release: ...}` names, the default first (measured 2026-11-28, ../shared/FACTS.md).
# MooseFS 3.0 is this machine's own; 4 runs from a root of Debian trixie (its daemons, mfsmount,
# mfscli and fio: a cluster's tools are of its release; fuse3 for the /bin/mount mfsmount's libfuse
# runs, which a root of trixie lacks otherwise). 4's master reads 3.0's empty metadata file, byte
# for byte the same as trixie's.
RELEASES = (
    Release("3", "3.0.117", "MooseFS 3.0 (Debian 12's own packages)"),
    Release("4", "4.57.5", "MooseFS 4 (Debian 13 trixie)", "trixie",
            ("moosefs-master", "moosefs-chunkserver", "moosefs-metalogger", "moosefs-client", "moosefs-cli", "fio",
             "fuse3")),
)
# How a release sets the copies of everything under the client's mount ({goal}: moosefs.goal):
# 3.0 by goal; 4 replaced goals with storage classes ("mfssetgoal is deprecated, use mfssetsclass")
# and predefines only 2CP, 3CP, EC4+1 and EC8+1, so a class of {goal} copies on any servers
# ("*" once per copy) is made first.
SET_COPIES = {
    "3": (("mfssetgoal", "-r", "{goal}", "{mnt}"),),
    "4": (("mfsscadmin", "create", "-M", "{mnt}", "-K", "{copies}", "dfslab{goal}"),
          ("mfssetsclass", "-r", "dfslab{goal}", "{mnt}")),
}
# Groups of src/dfslab/debian-packages.txt it needs here beyond `make demo`'s (installed on first use).
DEBIAN_GROUPS = ["moosefs"]
# What `dfslab capabilities` judges a MooseFS cluster on: the section's defaults.
SAMPLES: dict[str, dict] = {"": {}}
# Runtimes on which an engine of their own deploys it (kubernetes: a StatefulSet per daemon).
ENGINES = {"kubernetes": "dfslab.backends.moosefs.kube:MooseFSKubernetesBackend"}
# The sampler's MooseFS series as Prometheus metrics (dfslab.monitor's form), one metric each.
EXPOSED = [(r"moosefs\.(\w+)", "dfslab_moosefs_{0}", "gauge", (), 1, "MooseFS: {0}")]
