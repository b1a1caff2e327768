"""O_DIRECT on this machine's own disk (fio target machine): a block size the device's logical
block does not divide is refused before anything starts. The device here is a loop device made
with 4096-byte sectors (a 4Kn disk's shape), so a size the 512-byte rule lets through (2 KiB)
is one only the device's own figure refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dfslab.blockdev import direct_io_problem, logical_block_size
from dfslab.experiment import parse_experiment
from dfslab.run import check_against_cluster
from dfslab.spec import SpecError, load_spec

pytestmark = pytest.mark.cluster  # root: losetup, mkfs, mount
EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture(scope="module")
def disk_4kn(tmp_path_factory):
    """A filesystem on a loop device with 4096-byte logical blocks, mounted; removed after."""
    base = tmp_path_factory.mktemp("4kn")
    image, mount = base / "disk.img", base / "mnt"
    mount.mkdir()
    with image.open("wb") as f:
        f.truncate(64 << 20)
    dev = subprocess.run(["losetup", "--find", "--show", "--sector-size", "4096", str(image)], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        subprocess.run(["mount", dev, str(mount)], check=True)
        try:
            yield mount
        finally:
            subprocess.run(["umount", str(mount)], check=True)
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)


def test_the_logical_block_is_the_devices(disk_4kn):
    assert logical_block_size(disk_4kn / "not" / "made" / "yet") == 4096  # its nearest existing ancestor
    assert logical_block_size("/") in (512, 4096)
    assert direct_io_problem(8192, disk_4kn) is None
    problem = direct_io_problem(2048, disk_4kn)
    assert problem and "logical block is 4096 B" in problem and "bs: 4096B" in problem and "direct: false" in problem


def test_fio_local_with_a_block_the_disk_cannot_take_is_refused_before_the_run(disk_4kn, monkeypatch):
    monkeypatch.setenv("DFSLAB_HOME", str(disk_4kn / "home"))  # the clusters' scratch directories live there
    spec = load_spec(EXAMPLES / "ceph-small.yaml")
    exp = parse_experiment({"name": "e", "cluster": "ceph-small.yaml",
                            "workloads": [{"type": "fio", "target": "machine", "bs": "2KiB", "rw": "randread"}]}, EXAMPLES)
    with pytest.raises(SpecError) as err:
        check_against_cluster(exp, spec)
    assert "workloads[0].bs" in str(err.value) and "4096 B" in str(err.value)
    buffered = parse_experiment({"name": "e", "cluster": "ceph-small.yaml",
                                 "workloads": [{"type": "fio", "target": "machine", "bs": "2KiB", "rw": "randread",
                                                "direct": False, "iodepth": 1}]}, EXAMPLES)
    check_against_cluster(buffered, spec)  # buffered I/O has no alignment to keep
