"""rados bench's summary, parsed into dfslab's units: its "MB/sec" counts MiB, dfslab's MB/s is
10^6 bytes (as fio's rows). The output is a real run's (4 MiB objects, where a MiB and a MB differ
by 4.9 %), checked against what it counted: writes x size / time."""

import pytest

from dfslab.workloads.radosbench import parse

# `rados bench 5 write -t 16 -b 4194304` on examples/quickstart.yaml's cluster (make demo, 2026-11-25)
OUTPUT = """\
  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)
    0       0         0         0         0         0           -           0
    1      16       130       114   454.374       456   0.0555741    0.128793
    2      16       256       240   478.601       504    0.122671    0.127686
    3      16       384       368   489.685       512   0.0930662    0.127216
    4      16       520       504   503.218       544     0.13396    0.125106
    5      10       647       637   508.951       532     0.14562     0.12484
Total time run:         5.02843
Total writes made:      647
Write size:             4194304
Object size:            4194304
Bandwidth (MB/sec):     514.674
Stddev Bandwidth:       33.894
Max bandwidth (MB/sec): 544
Min bandwidth (MB/sec): 456
Average IOPS:           128
Stddev IOPS:            8.47349
Average Latency(s):     0.124005
"""


def test_bandwidth_is_in_decimal_megabytes_as_the_tool_counted_them():
    rows = {(r.metric, r.t): r for r in parse(OUTPUT, {}, 0)}
    bandwidth = rows[("bandwidth", None)]
    assert bandwidth.unit == "MB/s"
    assert bandwidth.value == pytest.approx(647 * 4194304 / 5.02843 / 1e6, rel=1e-4)  # 539.7, not 514.7
    # each second's sample: the objects finished in that second, 4 MiB each
    assert rows[("bandwidth_sample", 2)].value == pytest.approx((240 - 114) * 4194304 / 1e6)
    # IOPS as printed; latency printed in s, stored in ms as every workload's; Little's law holds
    assert rows[("iops", None)].value == 128
    assert rows[("latency_avg", None)].unit == "ms" and rows[("latency_avg", None)].value == pytest.approx(124.005)
    assert 16 / (rows[("latency_avg", None)].value / 1e3) == pytest.approx(128, rel=0.02)
    # each second's "last lat" (one operation's latency) is its own metric, in ms
    assert rows[("latency_last", 2)].value == pytest.approx(122.671) and ("latency_sample", 2) not in rows


def test_one_unit_per_metric_name_whatever_the_workload():
    from dfslab.workloads import Measurement
    with pytest.raises(ValueError, match="every latency_avg is in ms"):
        Measurement("radosbench", "latency_avg", 0.124, "s")
    with pytest.raises(ValueError, match="every disk_read_bandwidth is in MB/s"):
        Measurement("baseline", "disk_read_bandwidth", 500, "MiB/s")
    assert Measurement("sql", "time_avg", 0.2, "s").unit == "s"
