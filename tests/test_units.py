import pytest

from dfslab.units import UnitError, human_bytes, parse_bandwidth, parse_duration, parse_size


@pytest.mark.parametrize("text,expected", [
    ("4GiB", 4 * 2**30), ("512MiB", 512 * 2**20), ("10GB", 10 * 10**9), ("1.5KiB", 1536), ("4 gib", 4 * 2**30),
    ("100B", 100),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("1gbit", 10**9), ("100mbit", 10**8), ("125MB/s", 10**9), ("1Gbps", 10**9), ("10kbit", 10**4),
])
def test_bandwidths(text, expected):
    assert parse_bandwidth(text) == expected


def test_bits_and_bytes_are_not_confused():
    assert parse_bandwidth("1Mb/s") == 10**6
    assert parse_bandwidth("1MB/s") == 8 * 10**6


@pytest.mark.parametrize("text,expected", [("0.5ms", 0.0005), ("30s", 30.0), ("2min", 120.0), ("250us", 0.00025)])
def test_durations(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", [4, "4", "four GiB", "4XB", True, None, [4]])
def test_bad_sizes_are_refused_with_an_example(bad):
    with pytest.raises(UnitError) as err:
        parse_size(bad)
    assert "4GiB" in str(err.value) or "valid units" in str(err.value)


def test_human_bytes():
    assert human_bytes(512) == "512 B"
    assert human_bytes(3 * 2**20) == "3.0 MiB"
