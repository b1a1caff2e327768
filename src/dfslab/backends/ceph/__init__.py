"""Ceph from Debian's packages, vstart-style: MON(s), MGR, BlueStore OSDs, MDS + CephFS, RADOS gateways.

`section.py` is the spec's `ceph:` section; one module per daemon kind (mon, mgr, osd, mds, rgw), as
Rook keeps them apart; `backend.py` only orders them and answers for the cluster.
"""

# Debian packages a daemon image needs for this filesystem (the first one names the image's version),
# then Rook's needs on Kubernetes (ceph-volume's udevadm, sgdisk, lvm, cryptsetup) and the client
# its Jobs mount CephFS with.
IMAGE_PACKAGES = ["ceph-osd", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-common", "radosgw",
                  "udev", "gdisk", "lvm2", "cryptsetup-bin", "ceph-fuse"]


def debian_groups_for(spec) -> list[str]:
    """What a Ceph spec needs beyond `make demo`'s packages: radosgw and s3cmd for gateways."""
    return ["rgw"] if spec.ceph.rgw else []


# What `dfslab capabilities` judges a Ceph cluster on (every optional daemon on; Rook takes no OSD
# device under 5 GiB), on each runtime's sample: {cluster kind: spec fields}, "" for the runtime's.
SAMPLES = {"": {"ceph": {"mons": 1, "rgw": 1, "cephfs": True, "osd_size": "6GiB"}}}

# On runtime kubernetes Rook deploys Ceph; dfslab renders its objects and measures what it built.
ENGINES = {"kubernetes": "dfslab.backends.ceph.rook:RookCephBackend"}
# Fault kinds only this filesystem has (chaos adds the ones every cluster has).
FAULTS = {"out": "dfslab.backends.ceph.faults:MarkOut", "fill": "dfslab.backends.ceph.faults:FillOsd",
          "operator": "dfslab.backends.ceph.rookfaults:OperatorDown"}


# The sampler's Ceph series as Prometheus metrics (dfslab.monitor's form: series regex, metric,
# kind, labels from the groups, factor to base units, help).
EXPOSED = [
    (r"ceph\.health", "dfslab_ceph_health_status", "gauge", (), 1, "0 HEALTH_OK, 1 HEALTH_WARN, 2 HEALTH_ERR"),
    (r"ceph\.pgs\.(.+)", "dfslab_ceph_pgs", "gauge", ("state",), 1, "placement groups in each state"),
    (r"ceph\.osds_(up|in)", "dfslab_ceph_osds", "gauge", ("status",), 1, "OSDs up, OSDs in"),
    (r"ceph\.client_(read|write)", "dfslab_ceph_client_bytes_total", "counter", ("direction",), None,
     "client bytes as Ceph counts them"),
    (r"ceph\.client_ops", "dfslab_ceph_client_operations_total", "counter", (), None, "client operations as Ceph counts them"),
]
# What is worth keeping of the MGR's prometheus module when dfslab scrapes it (Rook's, a site's):
# metric (without a counter's _total) -> (unit, scale).
SCRAPED = {
    "ceph_health_status": ("0=OK,1=WARN,2=ERR", 1.0),
    "ceph_osd_up": ("OSDs", 1.0),
    "ceph_osd_in": ("OSDs", 1.0),
    "ceph_pool_rd_bytes": ("MB/s", 1e-6),
    "ceph_pool_wr_bytes": ("MB/s", 1e-6),
    "ceph_osd_op_r": ("op/s", 1.0),
    "ceph_osd_op_w": ("op/s", 1.0),
}


def connect_rados(**conf: str):
    """A connected `rados.Rados` from CEPH_CONF / CEPH_ARGS: the public way client-side tools
    (integrity checker, pushdown engine) reach a Ceph cluster."""
    from .helper import connect_from_env  # not at import: the spec imports this package
    return connect_from_env(**conf)


def existing_cluster(conf: str, keyring: str, user: str):
    """A Ceph cluster someone else runs, reached as `user` (filesystem: external): the public
    way another backend uses it; see `existing.ExistingCeph`."""
    from .existing import ExistingCeph  # not at import: the spec imports this package
    return ExistingCeph(conf, keyring, user)


def plan_maps():
    """Ceph's own map tools for a cluster that does not exist yet (`dfslab plan`): the
    `planning` module (ScratchMon, build_osdmap, map_pgs, balance, PoolPlan)."""
    from . import planning  # not at import: the spec imports this package
    return planning
