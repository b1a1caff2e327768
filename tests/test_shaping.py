"""Link shaping from the spec, measured with iperf3 between dfslab's own namespaces."""

import json
import subprocess

import pytest

from dfslab.polling import wait_until
from dfslab.runtime import CLIENT
from dfslab.runtime.local import LocalNetnsRuntime
from dfslab.spec import parse_spec
from dfslab.state import ClusterState

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def shaped():
    spec = parse_spec({
        "name": "t-shape",
        "network": {"bandwidth": "1gbit"},
        "nodes": [{"name": "fast"}, {"name": "slow", "bandwidth": "200mbit"}],
        "ceph": {"replica_size": 1},
    })
    state = ClusterState(spec.name)
    state.create({"name": spec.name, "runtime_kind": "local"})
    runtime = LocalNetnsRuntime(state)
    try:
        runtime.preflight(spec)
        addrs = runtime.create(spec)
        state.update(addresses=addrs)
        runtime.spawn("iperf3-server", CLIENT, ["iperf3", "-s", "-B", addrs[CLIENT]])
        wait_until(lambda: f"{addrs[CLIENT]}:5201" in runtime.run(CLIENT, ["ss", "-ltnH"]).stdout, "iperf3 listening",
                   timeout=30, interval=0.1)
        yield runtime, addrs
    finally:
        runtime.procs.stop_all(timeout=2)
        runtime.destroy()
        state.destroy()
    assert runtime.leftovers() == []


def iperf_bps(runtime, node, server, seconds=3):
    res = runtime.run(node, ["iperf3", "-c", server, "-t", str(seconds), "-J"], timeout=seconds + 30)
    return json.loads(res.stdout)["end"]["sum_received"]["bits_per_second"]


def within_cap(bps: float, cap: float) -> bool:
    """At most 10 % over the cap (tbf lets nothing more through, whatever the load), and at least
    3/4 of it: iperf3 starved of CPU beside the Kubernetes phase measured 170 Mbit/s under a 200mbit
    cap and 449 under 500mbit (suite, 2026-11-30; 0.9 of the cap before). The mistakes the floor is
    there for are 8x (bytes for bits) and 1000x (kbit for mbit); the rate tc holds is checked exactly
    where the test reads it back."""
    return 0.75 * cap <= bps <= 1.1 * cap


def test_network_bandwidth_caps_a_node_link(shaped):
    runtime, addrs = shaped
    bps = iperf_bps(runtime, "fast", addrs[CLIENT])
    print(f"1gbit cap: iperf3 measured {bps / 1e6:.0f} Mbit/s")
    assert within_cap(bps, 1e9), bps


def test_per_node_bandwidth_overrides_the_network_default(shaped):
    runtime, addrs = shaped
    bps = iperf_bps(runtime, "slow", addrs[CLIENT])
    print(f"200mbit cap: iperf3 measured {bps / 1e6:.0f} Mbit/s")
    assert within_cap(bps, 200e6), bps


def test_link_caps_change_in_place_and_read_back(shaped):
    runtime, addrs = shaped
    spec = parse_spec({"name": "t-shape", "network": {"bandwidth": "500mbit"},
                       "nodes": [{"name": "fast"}, {"name": "slow", "bandwidth": "200mbit"}], "ceph": {"replica_size": 1}})
    done = runtime.reshape(spec)
    assert len(done) == 1 and "read back with tc" in done[0]
    ns, dev = runtime.link_ends("fast")[0]
    qdiscs = json.loads(subprocess.run(["tc", "-j", "-n", ns, "qdisc", "show", "dev", dev], capture_output=True,
                                       text=True, check=True).stdout)
    assert [q["options"]["rate"] * 8 for q in qdiscs if q["kind"] == "tbf"] == [500_000_000]
    bps = iperf_bps(runtime, "fast", addrs[CLIENT])
    print(f"re-capped to 500mbit in place: iperf3 measured {bps / 1e6:.0f} Mbit/s")
    assert within_cap(bps, 500e6), bps
    assert runtime.reshape(spec) == []  # already so: nothing touched


def test_unshaped_link_is_much_faster(tmp_path):
    spec = parse_spec({"name": "t-free", "nodes": 1, "ceph": {"replica_size": 1}})
    state = ClusterState(spec.name)
    state.create({"name": spec.name, "runtime_kind": "local"})
    runtime = LocalNetnsRuntime(state)
    try:
        addrs = runtime.create(spec)
        state.update(addresses=addrs)
        runtime.spawn("iperf3-server", CLIENT, ["iperf3", "-s", "-B", addrs[CLIENT]])
        wait_until(lambda: f"{addrs[CLIENT]}:5201" in runtime.run(CLIENT, ["ss", "-ltnH"]).stdout, "iperf3 listening",
                   timeout=30, interval=0.1)
        bps = iperf_bps(runtime, "node1", addrs[CLIENT], seconds=2)
        print(f"unshaped: iperf3 measured {bps / 1e9:.1f} Gbit/s")
        assert bps > 2e9
    finally:
        runtime.procs.stop_all(timeout=2)
        runtime.destroy()
        state.destroy()
