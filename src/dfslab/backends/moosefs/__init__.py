"""MooseFS from Debian's packages: one master holding every file's metadata (Lustre's shape: one
metadata server beside many data servers), a metalogger keeping a copy of it, chunk servers on
the other nodes, and FUSE clients (`mfsmount`). `section.py` is the spec's `moosefs:` section;
one module per daemon kind (master, metalogger, chunkserver), `client.py` the mount, `cli.py`
what `mfscli` tells of the cluster; `backend.py` only orders them and answers for the cluster."""

# Debian packages a daemon image needs for this filesystem (the first one names the image's version).
IMAGE_PACKAGES = ["moosefs-master", "moosefs-chunkserver", "moosefs-metalogger", "moosefs-client", "moosefs-cli"]
# Groups of src/dfslab/debian-packages.txt it needs here beyond `make demo`'s (installed on first use).
DEBIAN_GROUPS = ["moosefs"]
# What `dfslab capabilities` judges a MooseFS cluster on: the section's defaults.
SAMPLES: dict[str, dict] = {"": {}}
# The sampler's MooseFS series as Prometheus metrics (dfslab.monitor's form), one metric each.
EXPOSED = [(r"moosefs\.(\w+)", "dfslab_moosefs_{0}", "gauge", (), 1, "MooseFS: {0}")]
