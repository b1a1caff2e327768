"""Clusters dfslab did not make (filesystem: external): an existing Ceph cluster reached with
the user's conf and keyring, and/or any mounted file system (Lustre, GPFS, BeeGFS, NFS,
kernel CephFS). Nothing is deployed: the host runtime runs the tools on this machine, and
only what a run creates (a pool with dfslab's prefix, a directory under the path) is removed."""

# Nothing to start, so nothing to put in namespaces or containers.
DEFAULT_RUNTIME = "host"
IMAGE_PACKAGES: list[str] = []
# What `dfslab capabilities` judges each kind of cluster you run on (no file is read: the spec only).
SAMPLES = {
    "external-ceph": {"external": {"ceph": {"conf": "/etc/ceph/ceph.conf", "cephfs": True,
                                            "keyring": "/etc/ceph/ceph.client.admin.keyring"}, "allow_faults": ["out", "fill"]}},
    "external-posix": {"external": {"posix": {"path": "/mnt/lustre"}}},
    "external-s3": {"external": {"s3": {"endpoint": "http://s3.example.org:7480", "access_key_env": "S3_ACCESS_KEY",
                                        "secret_key_env": "S3_SECRET_KEY"}}},
}
