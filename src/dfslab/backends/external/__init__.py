"""Clusters dfslab did not make (filesystem: external): an existing Ceph cluster reached with
the user's conf and keyring, and/or any mounted file system (Lustre, GPFS, BeeGFS, NFS,
kernel CephFS). Nothing is deployed: the host runtime runs the tools on this machine, and
only what a run creates (a pool with dfslab's prefix, a directory under the path) is removed."""

# Nothing to start, so nothing to put in namespaces or containers.
DEFAULT_RUNTIME = "host"
IMAGE_PACKAGES: list[str] = []
