import pytest

from dfslab.analysis import Limits, bottleneck, cpu_during, mean_ci95, share_cells


def test_mean_ci95_matches_student_t():
    mean, half = mean_ci95([10.0, 12.0, 14.0])
    assert mean == 12.0
    assert half == pytest.approx(4.303 * 2.0 / 3**0.5, rel=1e-3)
    assert mean_ci95([5.0]) == (5.0, None)


def test_bottleneck_names_the_saturated_resource():
    limits = Limits(client_link=117.0, disk_read=2000.0, disk_write=1000.0, replicas=2)
    net = bottleneck(112.0, "MB/s", "read", 30.0, limits)
    assert net["verdict"] == "network-bound" and net["fractions"]["link"] == pytest.approx(112 / 117)
    cpu = bottleneck(246.0, "MB/s", "write", 94.0, Limits(1500.0, 2000.0, 2500.0, 2))
    assert cpu["verdict"] == "CPU-bound"
    assert cpu["fractions"]["disk"] == pytest.approx(246 * 2 / 2500)  # every replica hits the one disk
    idle = bottleneck(20.0, "MB/s", "read", 20.0, limits)
    assert idle["bound"] is None and "no resource saturated" in idle["verdict"]
    assert share_cells(cpu)["CPU"] == "94 %" and cpu["bound"] == "CPU"


def test_a_resource_the_result_exceeds_is_not_the_bottleneck():
    limits = Limits(client_link=1500.0, disk_read=1000.0, disk_write=1000.0)
    cached = bottleneck(1400.0, "MB/s", "read", 40.0, limits)
    assert cached["bound"] == "link"  # 93 % of the link; the disk was bypassed
    assert cached["exceeded"] == ["disk"] and "served from cache" in cached["verdict"]


def test_metadata_ops_compare_only_with_cpu():
    result = bottleneck(500.0, "op/s", "write", 90.0, Limits(100.0, 100.0, 100.0))
    assert set(result["fractions"]) == {"CPU"} and result["verdict"] == "CPU-bound"


def test_cpu_during_an_interval():
    samples = [(0.0, 10.0), (1.0, 50.0), (2.0, 90.0), (3.0, 10.0)]
    assert cpu_during(samples, 0.5, 2.5) == 70.0
    assert cpu_during(samples, 10, 20) is None
    assert cpu_during(samples, 1.2, 1.4) == 90.0  # shorter than the interval: the sample that covers it


def test_the_disk_limit_is_one_disk_or_the_nodes_disks_summed():
    one = [{"workload": "baseline", "metric": "disk_write_bandwidth", "value": 800.0, "params": {}}]
    assert Limits.from_rows(one, 3).disk_write == 800.0
    per_node = [{"workload": "baseline", "metric": "disk_write_bandwidth", "value": v, "params": {"node": n}}
                for n, v in (("node1", 500.0), ("node2", 300.0), ("node3", 200.0))]
    limits = Limits.from_rows(per_node, 3)
    assert limits.disk_write == 1000.0 and limits.disk_read is None
    # three replicas of 300 MB/s land on three nodes' disks: 90 % of what they take together
    assert bottleneck(300.0, "MB/s", "write", 10.0, limits)["fractions"]["disk"] == pytest.approx(0.9)


def test_measured_shares_replace_the_assumed_ones():
    limits = Limits(client_link=1000.0, disk_read=2000.0, disk_write=1000.0, replicas=2)
    # a cached read: 480 MB/s reported, its client's link carried 1 % of the bytes
    cached = bottleneck(480.0, "MB/s", "read", 30.0, limits, {"link": 0.01, "disk": 0.0})
    assert cached["fractions"]["link"] == pytest.approx(0.0048) and cached["assumed"] == []
    assumed = bottleneck(480.0, "MB/s", "read", 30.0, limits)
    assert assumed["fractions"]["link"] == pytest.approx(0.48) and set(assumed["assumed"]) == {"link", "disk"}
    assert share_cells(assumed)["link"] == "48 % (assumed)" and share_cells(cached)["link"] == "0 %"
    # a size-1 pool: its disks wrote each byte once (and BlueStore's metadata), not twice
    write = bottleneck(400.0, "MB/s", "write", 50.0, limits, {"link": 1.01, "disk": 1.07})
    assert write["fractions"]["disk"] == pytest.approx(400 * 1.07 / 1000)


def test_cpu_is_weighed_over_the_seconds_that_moved_data():
    """The servers sweep's case: a pool made and removed around the transfer (CPU low, links idle)
    must not dilute the transfer's CPU (measured: 82-93 % while moving, 45-52 % over the step)."""
    from dfslab.analysis import transfer_seconds
    series = {"net.node1.tx": [(1, 0.1), (2, 300.0), (3, 280.0), (4, 2.0)],
              "net.client.rx": [(1, 0.0), (2, 310.0), (3, 290.0), (4, 1.0)],
              "cpu.total": [(1, 10.0), (2, 90.0), (3, 86.0), (4, 12.0)]}
    moving = transfer_seconds(series, 0, 5)
    assert moving == {2, 3}
    assert cpu_during(series["cpu.total"], 0, 5, moving) == 88.0
    assert cpu_during(series["cpu.total"], 0, 5) == 49.5
    assert transfer_seconds({"net.client.rx": [(1, 0.0)]}, 0, 5) is None  # nothing moved: the whole step
    assert transfer_seconds(series, 10, 20) is None
