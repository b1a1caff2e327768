"""Ceph from Debian's packages, vstart-style: MON(s), MGR, BlueStore OSDs, MDS + CephFS, RADOS gateways.

`section.py` is the spec's `ceph:` section; one module per daemon kind (mon, mgr, osd, mds, rgw), as
Rook keeps them apart; `backend.py` only orders them and answers for the cluster.
"""

# Its words (regular expressions of whole words): code outside its package that says one belongs
# in it (tests/test_layering.py reads them through registry.words_of).
WORDS = (r"ceph\w*", "rados", "radosgw", "rbd", "osds?", "mds", "mons?", "mgrs?", "bluestore", "crush", "pgs?", "rgw",
         "rook")

# Debian packages a daemon image needs for this filesystem (the first one names the image's version),
# then Rook's needs on Kubernetes (ceph-volume's udevadm, sgdisk, lvm, cryptsetup) and the client
# its Jobs mount CephFS with.
IMAGE_PACKAGES = ["ceph-osd", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-common", "radosgw",
                  "udev", "gdisk", "lvm2", "cryptsetup-bin", "ceph-fuse"]


from ...registry import Release  # noqa: E402 (data only: the registry imports nothing of dfslab's)

# What a root of a newer release holds: the daemons, their map tools (ceph-base: monmaptool, crushtool,
# osdmaptool), the clients (ceph CLI, rados, rbd, ceph-fuse)
# and fio, so that a cluster's tools are of its release.
_ROOT_PACKAGES = ("ceph-mon", "ceph-osd", "ceph-mgr", "ceph-mds", "ceph-base", "ceph-common", "ceph-fuse", "radosgw", "fio")
# Reef's mgr_util imports bcrypt at the top; Debian's bcrypt is a PyO3 module, which refuses to load
# in a second Python subinterpreter, and the MGR runs each module in its own: every module then
# fails (MGR_MODULE_DEPENDENCY, HEALTH_WARN for good). Only the dashboard's password hashing uses
# it, so the import moves into that function (upstream moved the hashing out of the MGR in Squid).
_REEF_BCRYPT = (
    ("usr/share/ceph/mgr/mgr_util.py", "import bcrypt\nimport cephfs\n", "import cephfs\n"),
    ("usr/share/ceph/mgr/mgr_util.py", "    if not password:\n        return None\n    if not salt_password:\n",
     "    import bcrypt  # here, not at the top: see dfslab.backends.ceph (PyO3 and subinterpreters)\n"
     "    if not password:\n        return None\n    if not salt_password:\n"),
)
# dfslab's own librados client (the admin channel, the integrity store) runs in the root's Python,
# whose rados module is the release's: Tentacle's AES-256 keys are beyond Pacific's librados.
_OWN_CLIENT = ("/usr/bin/python3",)
# ceph-fuse trims the kernel's dentries by `mount -i -o remount` of its mount point and aborts where
# that fails (exit 127 without /usr/bin/mount): trixie's packages bring `mount` along, forky's do not.
_FUSE_REMOUNT = ("mount",)
# Tentacle's ceph-volume reads every block device's udev record (/run/udev/data/b<major>:<minor>)
# and fails its whole inventory where one is missing ("No udev data could be retrieved for
# /sys/block/loop0"): Rook's OSD prepare then finds no device and makes no OSD (rook/rook#17746, a
# host without systemd-udevd). This machine runs no udevd, so the local Kubernetes' nodes have no
# records; a missing one is read as empty, as upstream's fix does for `raw list` (ceph/ceph#64833).
_UDEV_OPTIONAL = (
    ("usr/lib/python3/dist-packages/ceph_volume/util/disk.py",
     "        if not os.path.exists(self.udev_data_path):\n"
     "            raise RuntimeError(f'No udev data could be retrieved for {self.path}')\n\n"
     "        with open(self.udev_data_path, 'r') as f:\n"
     "            content: str = f.read().strip()\n"
     "            self.raw_data: List[str] = content.split('\\n') if content else []\n",
     "        content: str = ''\n"
     "        if os.path.exists(self.udev_data_path):  # dfslab: none without udevd (dfslab.backends.ceph)\n"
     "            with open(self.udev_data_path, 'r') as f:\n"
     "                content = f.read().strip()\n"
     "        self.raw_data: List[str] = content.split('\\n') if content else []\n"),
)
# The releases `ceph: {release: ...}` names, the default first (measured 2026-11-28, ../shared/FACTS.md).
# Pacific is this machine's own Ceph: `make demo` needs no root built (4 minutes fresh).
# On Kubernetes each runs under the Rook that supports it (`engine`): Rook v1.12.11 is the last
# that runs Pacific, v1.18 supports Reef, Squid and Tentacle (its pkg/operator/ceph/version).
# A root also holds what Rook's pods need of dfslab's image (udev's udevadm for ceph-volume; the
# rest comes with the daemons).
_ROOK_NEEDS = ("udev",)
RELEASES = (
    Release("pacific", "16.2.15", "Ceph 16 Pacific (Debian 12's own packages)", engine="rook-v1.12.11"),
    Release("reef", "18.2.7", "Ceph 18 Reef (Debian 13 trixie)", "trixie", _ROOT_PACKAGES, patches=_REEF_BCRYPT,
            interpreters=_OWN_CLIENT, helpers=_ROOK_NEEDS, engine="rook-v1.18.8"),
    # forky's Release file is past its Valid-Until on this machine's mirror (FACTS.md, "Newer releases").
    Release("tentacle", "20.2.4", "Ceph 20 Tentacle (Debian forky)", "forky", _ROOT_PACKAGES,
            apt_options=('Acquire::Check-Valid-Until "false"',), interpreters=_OWN_CLIENT,
            helpers=(*_FUSE_REMOUNT, *_ROOK_NEEDS), patches=_UDEV_OPTIONAL, engine="rook-v1.18.8"),
)

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
    (integrity checker, pushdown worker) reach a Ceph cluster."""
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
